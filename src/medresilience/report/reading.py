"""The report's section on how replies were read (every family): per run, model and setting, the
replies, how many got a label, the share an extraction model supplied, and the unread ones
(invalid; truncated: cut at the token budget, with its share; unscored) with the reasons the
reader gave for the unread ones, as a table and as Markdown. Drawn from each run's `reading` (reading.reading_summary, recomputed from the store)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from markupsafe import Markup

from ..reading import why_text
from .html import count_cell, esc, rate_cell, setting_name, units_url
from .html import table as html_table
from .rundir import names_of
from .tables import markdown_table
from .templating import macros

TITLE = "How replies were read"
#: the viewer's states of the units with a reply (a call stored ok): the table's replies
REPLIED = "valid,invalid,truncated,unscored"
ANCHOR = "reading"
COLUMNS = [
    "run",
    "model",
    "setting",
    "replies",
    "read",
    "extracted",
    "extracted_p",
    "extracted_lo",
    "extracted_hi",
    "invalid",
    "truncated",
    "truncated_p",
    "truncated_lo",
    "truncated_hi",
    "budget",
    "unscored",
    "unread_why",
]


def reading_table(runs: Sequence[Any]) -> pd.DataFrame:
    """One row per run, model (by its name among the runs, `names_of`) and setting."""
    names = names_of(runs)
    rows = []
    for r in runs:
        for model, per_setting in ((r.results or {}).get("reading") or {}).items():
            for setting, b in per_setting.items():
                e, t = b.get("extracted_share") or {}, b.get("truncated_share") or {}
                rows.append(
                    {
                        "run": r.name,
                        "model": names.name(r.name, model),
                        "setting": setting,
                        "replies": b.get("replies"),
                        "read": b.get("read"),
                        "extracted": b.get("extracted"),
                        "extracted_p": e.get("p"),
                        "extracted_lo": e.get("lo"),
                        "extracted_hi": e.get("hi"),
                        "invalid": b.get("invalid"),
                        "truncated": b.get("truncated"),
                        "truncated_p": t.get("p"),
                        "truncated_lo": t.get("lo"),
                        "truncated_hi": t.get("hi"),
                        "budget": b.get("budget"),
                        "unscored": b.get("unscored"),
                        "unread_why": why_text(b.get("unread_why")),
                    }
                )
    return pd.DataFrame(rows, columns=COLUMNS)


def section(runs: Sequence[Any]) -> tuple[str, str, pd.DataFrame] | None:
    """(html, markdown, table), or None when no run has reading counts (results from before them)."""
    t = reading_table(runs)
    if t.empty:
        return None
    several = len({r for r in t["run"]}) > 1
    rows = []
    for r in t.to_dict("records"):

        def units(outcome: str | None = None, r: dict[str, Any] = r, **state: str) -> str | None:
            return units_url(r["run"], r["model"], r["setting"], None, outcome, **state)

        rows.append(
            [
                *([esc(r["run"])] if several else []),
                f"<b>{esc(r['model'])}</b>",
                esc(setting_name(r["setting"])),
                count_cell(r["replies"], units(state=REPLIED)),
                count_cell(r["read"], units(state="valid")),
                rate_cell(r["extracted_p"], r["extracted_lo"], r["extracted_hi"], r["read"], units=units("extracted")) if r["extracted"] else "0",
                count_cell(r["invalid"], units("unread")),
                rate_cell(r["truncated_p"], r["truncated_lo"], r["truncated_hi"], r["replies"], units=units("truncated")),
                count_cell(r["unscored"], units("unscored")),
                esc(r["unread_why"]),
            ]
        )
    headers = [
        *(["Run"] if several else []),
        "Model",
        "Setting",
        "Replies",
        "Read",
        "Read by extraction model",
        "Invalid",
        "Truncated",
        "Unscored",
        "Unread because",
    ]
    first = 3 if several else 2
    html = str(macros(__package__, "report.html.j2").reading(Markup(html_table(rows, headers, numeric=range(first, len(headers) - 1)))))
    md = "\n".join(
        [
            f"## {TITLE}",
            "",
            markdown_table(
                t,
                [
                    "run",
                    "model",
                    "setting",
                    "replies",
                    "read",
                    "extracted",
                    "extracted_p",
                    "invalid",
                    "truncated",
                    "truncated_p",
                    "budget",
                    "unscored",
                    "unread_why",
                ],
            ),
        ]
    )
    return html, md, t
