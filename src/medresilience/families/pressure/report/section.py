"""The pressure family's report section: per model and setting, one row per condition with the
flip after commitment, the flips to the pushed option, the recoveries, turn-2 accuracy and the
excess flip over the `repeat` control (paired by item: difference with its item-clustered
interval and the paired McNemar), as HTML, Markdown and a CSV table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ....report import html as H
from ....report.rundir import names_of
from ....report.section import FamilySection
from ....report.tables import fmt_p, fmt_pct
from ..taxonomy import CONDITIONS, FAMILY, HEADLINE_COLUMNS, LABELS

TITLE = "Pressure after commitment"
RATES = ("flip", "flip_to_pushed", "recovery", "turn2_acc")
#: the viewer outcome behind each rate's count (its k); turn-2 accuracy links to every unit of the condition
OUTCOMES = {"flip": "flip", "flip_to_pushed": "flip_to_target", "recovery": "recovered", "turn2_acc": None}
INTRO = (
    "Each item is asked clean (turn 1); the model's own reply stays in the conversation and the user pushes back in a "
    "second turn; the model answers again. Flip: right at turn 1, not right at turn 2. Excess: the condition's flip minus "
    "the repeat control's on the same items (item-clustered interval; the exact McNemar with one pair per item, Durkalski's "
    "clustered McNemar where an item gives several)."
)


def conditions_table(runs: Sequence[Any]) -> pd.DataFrame:
    """One row per (run, model, setting, condition) with each rate's p, lo, hi, n and the excess over
    repeat, each model by its name among the runs (`names_of`)."""
    names = names_of(runs)
    rows = []
    for r in runs:
        for model, settings in (r.results.get("models") or {}).items():
            for setting, block in settings.items():
                for cond in CONDITIONS:
                    b = (block.get("by_condition") or {}).get(cond)
                    if b is None:
                        continue
                    row: dict[str, Any] = {
                        "run": r.name,
                        "model": names.name(r.name, model),
                        "setting": setting,
                        "condition": cond,
                        "pairs": b["pairs"],
                        "items": b["items"],
                    }
                    for k in RATES:
                        v = b.get(k) or {}
                        row.update({f"{k}_{x}": v.get(x) for x in ("p", "lo", "hi", "n")})
                    e = b.get("excess_over_repeat") or {}
                    t = e.get("test") or {}
                    row.update(
                        excess=e.get("diff"),
                        excess_lo=e.get("lo"),
                        excess_hi=e.get("hi"),
                        excess_b=t.get("b"),
                        excess_c=t.get("c"),
                        excess_p=t.get("p"),
                        excess_test=t.get("test"),
                    )
                    rows.append(row)
    return pd.DataFrame(rows)


def headline_table(runs: Sequence[Any]) -> pd.DataFrame:
    names = names_of(runs)
    rows = []
    for r in runs:
        for model, settings in (r.results.get("models") or {}).items():
            for setting, block in settings.items():
                o = block.get("overall", {})
                rows.append(
                    {
                        "model": names.name(r.name, model),
                        "setting": setting,
                        **{f"{k}_{x}": (o.get(k) or {}).get(x) for k, _ in HEADLINE_COLUMNS for x in ("p", "lo", "hi", "n")},
                    }
                )
    return pd.DataFrame(rows)


def _html(t: pd.DataFrame) -> str:
    if t.empty:
        return "<p>No scored results.</p>"
    rows = []
    for r in t.itertuples():
        # the pairs: the second turns answered after an answered first turn
        cells = [
            H.esc(r.model),
            H.esc(r.setting),
            H.esc(LABELS[r.condition]),
            H.count_cell(r.pairs, H.units_url(r.run, r.model, r.setting, r.condition, "paired")),
        ]
        cells += [
            H.rate_cell(*(getattr(r, f"{k}_{x}") for x in ("p", "lo", "hi", "n")), units=H.rate_units(r.run, r.model, r.setting, r.condition, OUTCOMES[k]))
            for k in RATES
        ]
        cells.append(H.diff_cell(r.excess, r.excess_lo, r.excess_hi))
        cells.append(H.test_cell(r.excess_test if not H.isnan(r.excess_p) else None, r.excess_b, r.excess_c, r.excess_p))
        rows.append(cells)
    headers = ["Model", "Setting", "Condition", "Pairs", "Flip", "Flip to pushed", "Recovery", "Turn 2 acc", "Excess over repeat", "Test"]
    return f"<p>{H.esc(INTRO)}</p>" + H.table(rows, headers, numeric=range(3, len(headers)))


def _markdown(t: pd.DataFrame) -> str:
    lines = [f"## {TITLE}", "", INTRO, ""]
    if t.empty:
        return "\n".join([*lines, "No scored results.", ""])
    lines += [
        "| Model | Setting | Condition | Pairs | Flip | Flip to pushed | Recovery | Turn 2 acc | Excess over repeat | p (McNemar) |",
        "|" + "---|" * 10,
    ]
    for r in t.itertuples():
        rates = [fmt_pct(*(None if H.isnan(v) else v for v in (getattr(r, f"{k}_{x}") for x in ("p", "lo", "hi", "n")))) for k in RATES]
        excess = (
            "—"
            if H.isnan(r.excess)
            else f"{100 * r.excess:+.1f} pp" + ("" if H.isnan(r.excess_lo) else f" [{100 * r.excess_lo:+.1f}, {100 * r.excess_hi:+.1f}]")
        )
        p = "—" if H.isnan(r.excess_p) else f"{fmt_p(r.excess_p)} ({'clustered' if r.excess_test == 'cluster_mcnemar' else 'exact'})"
        lines.append(f"| {r.model} | {r.setting} | {LABELS[r.condition]} | {r.pairs} | " + " | ".join(rates) + f" | {excess} | {p} |")
    return "\n".join([*lines, ""])


def section(runs: Sequence[Any]) -> FamilySection:
    t = conditions_table(runs)
    h = headline_table(runs)
    key = "<p>No scored results.</p>" if h.empty else f"<p>{H.esc(INTRO)}</p>"
    return FamilySection(
        family=FAMILY,
        title=TITLE,
        key_html=key,
        sections=[(FAMILY, TITLE, _html(t))],
        markdown=_markdown(t),
        tables={"pressure_conditions": t, "pressure_headline": h},
        headline=h,
        summary_columns=list(HEADLINE_COLUMNS),
    )
