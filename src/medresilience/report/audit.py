"""The report's section on the label audit (`medres audit`, `medres eval --audit N`): per run and
second reader, the run's agreement with the second reading, its wrong-letter and unread rates per
model, setting and condition (each with its 95% interval and n), the disagreements, each linked to
its unit in the evidence viewer, and the headline rates corrected for label error beside the plain
ones. Drawn from each run's results.json `audit` block."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..audit.text import CORRECTED_HEADERS, corrected_line, corrected_rows, heading
from .html import esc, rate_cell, setting_name, unit_url
from .html import table as html_table
from .tables import markdown_table

TITLE = "Label audit"
ANCHOR = "audit"
COLUMNS = ["run", "reader", "model", "setting", "condition", "audited", "measure", "k", "n", "p", "lo", "hi", "kappa"]
MEASURES = (("agreement", "Agreement"), ("wrong_letter", "Wrong letter"), ("wrong_verdict", "Wrong verdict"), ("unread", "Unread"), ("unscored", "Unscored"))
NOTE = (
    "A seeded sample of each run's read units, stratified by model, setting, condition and tier and weighted toward "
    "unread, extracted, flipped and stressed units, read a second time. Agreement: the second reading is the run's; "
    "wrong letter: of the units the run read as an option, the second reading is another or none; unread: of the units "
    "the second reading reads as an option, the run read none; wrong verdict: of the judged units, the second judge's "
    "verdict is another; unscored: of the units the second reader was asked about, it gave no reading. Shares are weighted by each stratum's size over its "
    "sample (95% Wilson interval at the effective n; n: the units counted)."
)


def audit_table(runs: Sequence[Any]) -> pd.DataFrame:
    rows = []
    for r in runs:
        for reader, found in (((r.results or {}).get("audit") or {}).get("readers") or {}).items():
            for c in found.get("cells", []):
                for key, _ in MEASURES:
                    if key not in c:
                        continue
                    s = c.get(key) or {}
                    rows.append(
                        {
                            "run": r.name,
                            "reader": reader,
                            "model": c["model"],
                            "setting": c["setting"],
                            "condition": c["condition"],
                            "audited": c.get("audited"),
                            "measure": key,
                            **{f: s.get(f) for f in ("k", "n", "p", "lo", "hi")},
                            "kappa": c.get("kappa"),
                        }
                    )
    return pd.DataFrame(rows, columns=COLUMNS)


def _reader_html(run: str, reader: str, found: dict[str, Any]) -> str:
    shown = [(k, t) for k, t in MEASURES if any(k in c for c in found.get("cells", []))]
    rows = []
    for c in found.get("cells", []):
        cells = [f"<b>{esc(c['model'])}</b>", esc(setting_name(c["setting"])), esc(c["condition"]), str(c.get("audited", 0))]
        for key, _ in shown:
            s = c.get(key) or {}
            cells.append(rate_cell(s.get("p"), s.get("lo"), s.get("hi"), s.get("n")) if key in c else "—")
        cells.append("—" if c.get("kappa") is None else f"{c['kappa']:.2f}")
        rows.append(cells)
    headers = ["Model", "Setting", "Condition", "Audited", *[t for _, t in shown], "Kappa"]
    parts = [f"<h3>{esc(heading(reader, found))}</h3>", html_table(rows, headers, numeric=range(3, len(headers)))]
    dis = found.get("disagreements", [])
    if dis:
        items = []
        for d in dis:
            url = unit_url(run, d["unit_id"])
            text = f"{d['model']} / {d['condition']}: run read {d['run_reading']}, second reading {d['second_reading']} (key {d['key']})"
            uid = f'<a class="units" href="{esc(url)}">{esc(d["unit_id"])}</a>' if url else esc(d["unit_id"])
            items.append(f"<li>{uid} {esc(text)}</li>")
        parts.append("<p>Disagreements:</p><ul class='disagreements'>" + "".join(items) + "</ul>")
    if found.get("corrected"):
        table = html_table([[esc(c) for c in r] for r in corrected_rows(found)], [esc(h) for h in CORRECTED_HEADERS], numeric=range(2, 5))
        parts.append("<p>Headline rates corrected for label error:</p>" + table)
    return "".join(parts)


def section(runs: Sequence[Any]) -> tuple[str, str, pd.DataFrame] | None:
    """(html, markdown, table), or None when no run holds an audit."""
    audited = [r for r in runs if (r.results or {}).get("audit")]
    if not audited:
        return None
    html = [f"<p class='note'>{esc(NOTE)}</p>"]
    md = [f"## {TITLE}", "", NOTE, ""]
    for r in audited:
        block = r.results["audit"]
        lead = f"{r.name}: {block['n_sampled']} of {block['population']} read units sampled (seed {block['seed']})."
        html.append(f"<p>{esc(lead)}</p>" + "".join(f"<p class='note'>{esc(n)}</p>" for n in block.get("notes", [])))
        md += [lead, ""]
        for reader, found in (block.get("readers") or {}).items():
            html.append(_reader_html(r.name, reader, found))
            md += [f"### {heading(reader, found)}", ""]
            md += [
                f"- {d['model']} / {d['condition']} {d['unit_id']}: run read {d['run_reading']}, second reading {d['second_reading']}"
                for d in found.get("disagreements", [])
            ]
            md += [f"- {corrected_line(x)}" for x in found.get("corrected", [])]
            md.append("")
    t = audit_table(runs)
    md.append(markdown_table(t, COLUMNS) if not t.empty else "")
    return "".join(html), "\n".join(md), t
