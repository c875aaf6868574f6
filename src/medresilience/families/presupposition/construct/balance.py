"""Category-wise balancing, as the study's Algorithm 1 (Cancer-Myth, appendix B.3), for one
generator's candidates:

    bins <- candidates by category
    for each category in the category list (in order):
        if |bin| <= per_category: select the whole bin
        else: select per_category of the bin at random; the rest of the bin goes to `rest`
    fill <- per_generator - |selected|
    if fill > 0: select `fill` of `rest` at random (all of `rest` when it holds fewer)

What this keeps of the algorithm, literally: only candidates of a listed category are ever selected
(an `uncategorised` candidate is dropped by balancing, with that reason); the quotas are never
trimmed to per_generator (when the quotas already select more, all of them stay); the fill draws
from the whole rest, so a category can end above per_category. Which flags mean what:
per_category only: at most that many per category (no fill); per_generator only: a random
subset of that size (every category's quota is 0); neither: no balancing (every candidate stays,
uncategorised ones too). Each random choice is a seeded sample (rng_for of the suite seed, the
generator and the category, or 'fill'); the selection keeps the candidates' order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from ....runtime.seeding import rng_for

T = TypeVar("T")


@dataclass
class Balanced(Generic[T]):
    selected: list[T]
    dropped: list[T]  # not selected, for any reason
    uncategorised: list[T]  # of dropped: no listed category
    before: dict[str, int]
    after: dict[str, int]


def _counts(entries: Sequence[T], category_of: Callable[[T], str | None]) -> dict[str, int]:
    out: dict[str, int] = {}
    for e in entries:
        c = category_of(e) or "uncategorised"
        out[c] = out.get(c, 0) + 1
    return out


def balance(
    entries: Sequence[T],
    category_of: Callable[[T], str | None],
    categories: Sequence[str],
    seed: int,
    generator: str,
    per_category: int | None = None,
    per_generator: int | None = None,
) -> Balanced[T]:
    """Algorithm 1 on one generator's entries (see the module docstring); both None: no balancing."""
    before = _counts(entries, category_of)
    if per_category is None and per_generator is None:
        return Balanced(list(entries), [], [], before, dict(before))
    quota = per_category if per_category is not None else 0
    bins: dict[str, list[int]] = {c: [] for c in categories}
    for i, e in enumerate(entries):
        c = category_of(e)
        if c in bins:
            bins[c].append(i)
    chosen: set[int] = set()
    rest: list[int] = []
    for c in categories:
        b = bins[c]
        if len(b) <= quota:
            chosen.update(b)
        else:
            picked = set(rng_for(seed, generator, f"balance:{c}").sample(b, quota))
            chosen |= picked
            rest += [i for i in b if i not in picked]
    if per_generator is not None:
        fill = per_generator - len(chosen)
        if fill > 0:
            chosen.update(rng_for(seed, generator, "balance:fill").sample(rest, min(fill, len(rest))))
    selected = [e for i, e in enumerate(entries) if i in chosen]
    dropped = [e for i, e in enumerate(entries) if i not in chosen]
    uncategorised = [e for e in dropped if category_of(e) not in bins]
    return Balanced(selected, dropped, uncategorised, before, _counts(selected, category_of))
