"""Which units a run plans: its items (the suite's order, or a sample seed's random order; the first
`limit`), and for each item the clean unit and the probes the family selects, in pieces of whole
items read from the suite when they are reached. Planning (runner) and resolution (resolved) both
read the run's units through here."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..records import CLEAN, Item, Probe
from ..runtime.seeding import sample_order

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import BaseModel

    from ..family import Family
    from ..suite import Suite
    from .resolved import EvalOptions


def select_units(suite: Suite, family: Family, family_options: BaseModel, opts: EvalOptions) -> list[tuple[Item, Probe | None]]:
    """(item, None) for clean, then (item, probe) for each selected probe, item by item: the
    suite's order, or the sample seed's random order; the first `limit` items of it."""
    return [pair for chunk in unit_chunks(suite, family, family_options, opts) for pair in chunk]


def run_items(suite: Suite, opts: EvalOptions) -> list[str]:
    """The ids of the items a run plans, in its order: the suite's, or the sample seed's random
    order; the first `limit` of it."""
    ids = suite.item_ids()
    if opts.sample_seed is not None:
        ids = sample_order(ids, opts.sample_seed)
    if opts.limit is not None:
        ids = ids[: opts.limit]
    return ids


def unit_chunks(
    suite: Suite, family: Family, family_options: BaseModel, opts: EvalOptions, records: int | None = None
) -> Iterator[list[tuple[Item, Probe | None]]]:
    """`select_units` in pieces of whole items, about `records` items and probes a piece (None:
    one piece), each read from the suite when it is reached (`Suite.batches`): a lazily loaded
    suite is held one piece at a time. The family's `select` is applied to each piece's probes
    (a selection is a filter of probes)."""
    for _, pairs in pieces(suite, family, family_options, opts, records):
        yield pairs


def pieces(
    suite: Suite, family: Family, family_options: BaseModel, opts: EvalOptions, records: int | None, first: int | None = None
) -> Iterator[tuple[int, list[tuple[Item, Probe | None]]]]:
    """(records read, pairs) of each piece of `unit_chunks`; `first`: the items of the first piece
    at most (the others are of about `records` records)."""
    ids = run_items(suite, opts)
    wanted = None if opts.conditions is None else set(opts.conditions)
    clean = family.probes.clean and (wanted is None or CLEAN in wanted)
    size = records or len(ids) + 1
    head = len(ids) if first is None else min(first, len(ids))
    parts = itertools.chain(suite.batches(ids[:head], size), suite.batches(ids[head:], size) if head < len(ids) else ())
    for part in parts:
        by_item: dict[str, list[Probe]] = {}
        for p in family.evaluation.select(part, family_options):
            if wanted is None or p.condition in wanted:
                by_item.setdefault(p.item_id, []).append(p)
        out: list[tuple[Item, Probe | None]] = []
        for it in part.items.values():
            # a probe whose turn follows the item asked clean brings the clean unit along
            if clean or any(family.evaluation.follows(p) == CLEAN for p in by_item.get(it.id, [])):
                out.append((it, None))
            out += [(it, p) for p in by_item.get(it.id, [])]
        yield len(part.items) + len(part.probes), out
