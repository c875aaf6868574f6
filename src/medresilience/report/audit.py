"""The report's section on the label audit (`medres audit`, `medres eval --audit N`): per run and
second reader, the run's agreement with the second reading, its wrong-letter and unread rates per
model, setting and condition (each with its 95% interval and n), the disagreements, each linked to
its unit in the evidence viewer, and the headline rates corrected for label error beside the plain
ones, as report parts; its data table (tables/audit) has one row per measure. Drawn from each run's
results.json `audit` block."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from ..run.audit_text import CORRECTED_HEADERS, ReaderFindings, corrected_rows, heading
from .html import setting_name, unit_url
from .parts import Block, Cell, Column, Heading, ItemList, Paragraph, Section, Table, dash, rate, text

if TYPE_CHECKING:
    from .rundir import RunData

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


def audit_table(runs: Sequence[RunData]) -> pd.DataFrame:
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


def _reader_table(run: str, reader: str, found: ReaderFindings) -> Table:
    """One second reader's measures per model, setting and condition."""
    shown = [(k, t) for k, t in MEASURES if any(k in c for c in found.get("cells", []))]
    rows = []
    for c in found.get("cells", []):
        cells = [
            text(c["model"], strong=True),
            Cell(setting_name(c["setting"]), c["setting"]),
            text(c["condition"]),
            Cell(str(c.get("audited", 0)), c.get("audited", 0)),
        ]
        for key, _ in shown:
            m = c.get(key)
            m = m if isinstance(m, dict) else {}
            cells.append(rate(m.get("p"), m.get("lo"), m.get("hi"), m.get("n")) if key in c else dash())
        kappa = c.get("kappa")
        cells.append(dash() if kappa is None else Cell(f"{kappa:.2f}", kappa))
        rows.append(tuple(cells))
    columns = (
        Column("model", "Model"),
        Column("setting", "Setting"),
        Column("condition", "Condition"),
        Column("audited", "Audited", numeric=True),
        *(Column(key, title, numeric=True) for key, title in shown),
        Column("kappa", "Kappa", numeric=True),
    )
    return Table(f"audit_{run}_{reader}", columns, tuple(rows))


def _reader_blocks(run: str, reader: str, found: ReaderFindings) -> list[Block]:
    """A second reader's heading, table, disagreements (each linked to its unit) and corrected rates."""
    blocks: list[Block] = [Heading(heading(reader, found)), _reader_table(run, reader, found)]
    dis = found.get("disagreements", [])
    if dis:
        items = tuple(
            Cell(
                d["unit_id"],
                d["unit_id"],
                unit_url(run, d["unit_id"]),
                link_kind="unit",
                tail=f" {d['model']} / {d['condition']}: run read {d['run_reading']}, second reading {d['second_reading']} (key {d['key']})",
            )
            for d in dis
        )
        blocks.append(ItemList(items, lead="Disagreements:", name="disagreements"))
    if found.get("corrected"):
        columns = tuple(Column(f"c{i}", h, numeric=2 <= i < 5) for i, h in enumerate(CORRECTED_HEADERS))
        blocks += [
            Paragraph("Headline rates corrected for label error:", "plain"),
            Table(f"audit_corrected_{run}_{reader}", columns, tuple(tuple(text(c) for c in r) for r in corrected_rows(found))),
        ]
    return blocks


def section(runs: Sequence[RunData]) -> tuple[Section, dict[str, pd.DataFrame]] | None:
    """The section and its data table (tables/audit), or None when no run holds an audit."""
    audited = [r for r in runs if (r.results or {}).get("audit")]
    if not audited:
        return None
    blocks: list[Block] = [Paragraph(NOTE)]
    for r in audited:
        block = r.results["audit"]
        blocks.append(Paragraph(f"{r.name}: {block['n_sampled']} of {block['population']} read units sampled (seed {block['seed']}).", "plain"))
        blocks += [Paragraph(n) for n in block.get("notes", [])]
        for reader, found in (block.get("readers") or {}).items():
            blocks += _reader_blocks(r.name, reader, found)
    return Section(ANCHOR, TITLE, tuple(blocks)), {"audit": audit_table(runs)}
