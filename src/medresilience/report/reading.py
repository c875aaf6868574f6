"""The report's section on how replies were read (every family): per run, model and setting, the
replies, how many got a label, the share an extraction model supplied, and the unread ones
(invalid; truncated: cut at the token budget, with its share; unscored) with the reasons the
reader gave for the unread ones, as one table of report parts. Drawn from each run's `reading` (reading.reading_summary, recomputed from the store)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ..run.reading import why_text
from ..run.results import ReadingSummary
from .html import setting_name, units_url
from .parts import Cell, Column, Paragraph, Section, Table, count, rate, text
from .render_data import table_frame
from .rundir import RunData, names_of

TITLE = "How replies were read"
#: the viewer's states of the units with a reply (a call stored ok): the table's replies
REPLIED = "valid,invalid,truncated,unscored"
ANCHOR = "reading"


NOTE = (
    "Every reply a model returned, by how it was read. Unread replies (invalid: no readable answer; truncated: cut at the "
    "token budget before an answer) count as not correct in every rate unless the rate says it leaves them out; an "
    "extraction model (`-O extract=SPEC`) reads only replies the rules leave unread (never a truncated one) and never "
    "overrides a rule reading."
)


def _columns(several: bool) -> tuple[Column, ...]:
    return (
        Column("run", "Run", shown=several),
        Column("model", "Model"),
        Column("setting", "Setting"),
        Column("replies", "Replies", numeric=True),
        Column("read", "Read", numeric=True),
        Column("extracted", "Read by extraction model (count)", numeric=True, shown=False),
        Column("extracted_p", "Read by extraction model", numeric=True, fields={"lo": "extracted_lo", "hi": "extracted_hi"}),
        Column("invalid", "Invalid", numeric=True),
        Column("truncated", "Truncated (count)", numeric=True, shown=False),
        Column("truncated_p", "Truncated", numeric=True, fields={"lo": "truncated_lo", "hi": "truncated_hi"}),
        Column("budget", "Token budget", numeric=True, shown=False),
        Column("unscored", "Unscored", numeric=True),
        Column("unread_why", "Unread because"),
    )


def _row(r: RunData, b: ReadingSummary, model: str, setting: str) -> tuple[Cell, ...]:
    """One run, model and setting: its counts, each linked to its units."""

    def units(outcome: str | None = None, **state: str) -> str | None:
        return units_url(r.name, model, setting, None, outcome, **state)

    e, t = b.extracted_share, b.truncated_share
    extracted = rate(e.p, e.lo, e.hi, b.read, units("extracted"), b.extracted)
    return (
        text(r.name),
        text(model, strong=True),
        Cell(setting_name(setting), setting),
        count(b.replies, units(state=REPLIED)),
        count(b.read, units(state="valid")),
        count(b.extracted),
        extracted if b.extracted else Cell("0", extracted.value, data=extracted.data),
        count(b.invalid, units("unread")),
        count(b.truncated),
        rate(t.p, t.lo, t.hi, b.replies, units("truncated"), b.truncated),
        count(b.budget),
        count(b.unscored, units("unscored")),
        text(why_text(b.unread_why)),
    )


def reading_table(runs: Sequence[RunData]) -> Table:
    """One row per run, model (by its name among the runs, `names_of`) and setting."""
    names = names_of(runs)
    rows = [_row(r, b, names.name(r.name, model), setting) for r in runs for model, per_setting in r.readings.items() for setting, b in per_setting.items()]
    return Table("reading", _columns(len({r[0].text for r in rows}) > 1), tuple(rows))


def section(runs: Sequence[RunData]) -> tuple[Section, dict[str, pd.DataFrame]] | None:
    """The section and its data table (tables/reading: its table's values), or None when no run has
    reading counts (results from before them)."""
    t = reading_table(runs)
    if not t.rows:
        return None
    return Section(ANCHOR, TITLE, (Paragraph(NOTE), t)), {t.name: table_frame(t)}
