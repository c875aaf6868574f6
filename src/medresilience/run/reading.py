"""How each model's replies were read, per setting, and the warning a run gives about cut replies.

From the store (`Store.reading`): the replies (units whose call is stored ok), how many got a label
(`read`), how many of those labels an extraction model supplied (`extracted`, with its share of
the labels as a rate), and the replies left unread: `invalid` (complete, no readable answer),
`truncated` (cut at the token budget before one, with its share of the replies as a rate) and
`unscored` (the scorer could not decide), and the unread ones by the reason the reader gave
(`unread_why`). A run warns when more than TRUNCATION_WARN of a model's
replies under one setting were truncated, naming the budget they were cut at and the setting that
raises it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..family import Family
from ..runtime.errors import MedresError
from ..store import ReadingCounts, Store

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import BaseModel

#: the share of a model's replies cut at their budget above which a run warns
TRUNCATION_WARN = 0.05


def reading_summary(store: Store, run: str | None = "latest") -> dict[str, dict[str, ReadingCounts]]:
    """model -> setting -> the reading counts of a run's units (Store.reading) with two rates:
    `extracted_share` (extracted / read) and `truncated_share` (truncated / replies)."""
    from .. import stats  # loads numpy and pandas: the summary's text helpers (why_text) stay light for the command's process

    out = store.reading(run)
    for per_setting in out.values():
        for b in per_setting.values():
            b["extracted_share"] = stats.wilson(b["extracted"], b["read"]).as_dict()
            b["truncated_share"] = stats.wilson(b["truncated"], b["replies"]).as_dict()
    return out


def why_text(counts: dict[str, int] | None) -> str:
    """The unread replies by the reason the reader gave, most first: "several_options 3, withdrawn 1"."""
    return ", ".join(f"{k} {v}" for k, v in sorted((counts or {}).items(), key=lambda kv: (-kv[1], kv[0])))


def family_sets_budget(family: Family, options: Mapping[str, object] | BaseModel | None) -> bool:
    """Whether a family's options (as recorded with a run) set the reply budget: it then wins over
    the model spec's max_tokens."""
    try:
        parsed = options if isinstance(options, family.evaluation.options) else family.parse_options(options)  # as resolved, or as recorded
        return "max_tokens" in family.evaluation.decoding(parsed)
    except MedresError:
        return False


def budget_hint(family_sets_budget: bool) -> str:
    """Where a run's reply budget is raised: the family's option when the family sets the budget
    (it wins over the model spec's), else the model spec's max_tokens."""
    if family_sets_budget:
        return "raise it with -O max_tokens=N"
    return "raise it with max_tokens=N in the model spec (--model 'SPEC,max_tokens=N')"


def truncation_warnings(reading: Mapping[str, Mapping[str, ReadingCounts]], family_sets_budget: bool = False) -> list[str]:
    """One line per model and setting whose truncated share exceeds TRUNCATION_WARN."""
    lines = []
    for model, per_setting in reading.items():
        for setting, b in per_setting.items():
            n, k = b.get("replies", 0), b.get("truncated", 0)
            if not n or k / n <= TRUNCATION_WARN:
                continue
            where = "" if setting == "none" else f" under setting {setting}"
            budget = f" of {b['budget']} tokens" if b.get("budget") else ""
            lines.append(
                f"model {model}{where}: {k} of {n} replies ({k / n:.0%}) were cut at their token budget{budget} before a "
                f"readable answer (truncated, counted as not correct); {budget_hint(family_sets_budget)}"
            )
    return lines
