"""The audit block of results.json as text: the rows of the CLI table and the Markdown of
results.md. Each share is shown as a percentage with its 95% interval and the n it counts."""

from __future__ import annotations

from typing import TypedDict


class Share(TypedDict, total=False):
    """A weighted share as the audit writes it (`stats.weighted_share`): k of n, p and its interval."""

    k: float
    n: int
    p: float | None
    lo: float | None
    hi: float | None


class AuditCell(TypedDict, total=False):
    """One (model, setting, condition) of a second reader's findings, or all of them (`overall`)."""

    model: str
    setting: str
    condition: str
    reading: str  # letter or verdict
    audited: int
    agreement: Share | None
    kappa: float | None
    wrong_letter: Share | None
    wrong_verdict: Share | None
    unread: Share | None
    unscored: Share | None


class Disagreement(TypedDict, total=False):
    """A sampled unit the second reader read otherwise than the run (`audit.summary.disagreement`)."""

    model: str
    setting: str
    condition: str
    unit_id: str
    item_id: str
    tier: str
    run_reading: str
    second_reading: str
    key: str
    kind: str
    viewer_path: str
    viewer_url: str | None


class CorrectedRate(TypedDict, total=False):
    """A label-corrected rate beside the plain one (`audit.corrected.corrected_rates`)."""

    model: str
    setting: str
    condition: str
    metric: str
    title: str | None
    plain: float | None
    plain_lo: float | None
    plain_hi: float | None
    estimate: float | None
    lo: float | None
    hi: float | None
    n_total: int
    n_audited: int
    line: str


class ReaderFindings(TypedDict, total=False):
    """One second reader's findings (`audit.summary.summarise_reader`, with its corrected rates)."""

    sampled: int
    read: int
    unscored: int
    unscored_reasons: dict[str, int]
    not_read: int
    cells: list[AuditCell]
    overall: AuditCell
    disagreements: list[Disagreement]
    corrected: list[CorrectedRate]


class AuditBlock(TypedDict, total=False):
    """results.json's `audit` block as these texts read it (validated as `run.results.AuditRecord`)."""

    run_id: str | None
    seed: int
    n_requested: int
    n_sampled: int
    population: int
    design: str
    notes: list[str]
    readers: dict[str, ReaderFindings]


HEADERS = ["Model", "Setting", "Condition", "Audited", "Agreement", "Kappa", "Wrong letter", "Unread", "Unscored"]


def share(r: Share | None) -> str:
    if not r:
        return "—"
    p, lo, hi = r.get("p"), r.get("lo"), r.get("hi")
    if p is None or lo is None or hi is None:
        return f"— (n={r.get('n', 0)})"
    return f"{100 * p:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] n={r['n']}"


def _kappa(k: float | None) -> str:
    return "—" if k is None else f"{k:.2f}"


def _kinds(found: ReaderFindings) -> set[str]:
    return {c.get("reading", "letter") for c in found.get("cells", [])} or {"letter"}


def headers(found: ReaderFindings) -> list[str]:
    """The table's columns for one reader: a judged run's cells have a wrong-verdict share and no
    unread one."""
    kinds = _kinds(found)
    if kinds == {"verdict"}:
        return [*HEADERS[:6], "Wrong verdict", "Unscored"]
    if kinds == {"letter"}:
        return list(HEADERS)
    return [*HEADERS[:6], "Wrong letter/verdict", "Unread", "Unscored"]


def reader_rows(found: ReaderFindings) -> list[list[str]]:
    """One row per (model, setting, condition) and one for the whole sample, in `headers`' columns."""
    unread = "Unread" in headers(found)
    rows = []
    overall: AuditCell = {"model": "all", "setting": "", "condition": "", **(found.get("overall") or {})}
    for c in [*found.get("cells", []), overall]:
        row = [str(c["model"]), str(c["setting"]), str(c["condition"]), str(c.get("audited", 0)), share(c.get("agreement")), _kappa(c.get("kappa"))]
        row.append(share(c.get("wrong_letter") or c.get("wrong_verdict")))
        if unread:
            row.append(share(c.get("unread")))
        row.append(share(c.get("unscored")))
        rows.append(row)
    return rows


def _pct(p: float | None, lo: float | None, hi: float | None) -> str:
    return "—" if p is None or lo is None or hi is None else f"{100 * p:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def corrected_line(row: CorrectedRate) -> str:
    """One label-corrected rate beside the plain one, with how much wider label error makes it."""
    plain = _pct(row["plain"], row["plain_lo"], row["plain_hi"])
    fixed = _pct(row["estimate"], row["lo"], row["hi"])
    where = f"{row['model']}" + ("" if row["setting"] == "none" else f" ({row['setting']})")
    what = row.get("title") or f"{row['condition']} {row['metric']}"
    return f"{where}: {what} {plain} on the run's reading (n={row['n_total']}), {fixed} label-corrected ({row['n_audited']} audited); {row['line']}"


CORRECTED_HEADERS = ["Model / setting", "Rate", "Run's reading", "Label-corrected", "Audited", "Label error"]


def corrected_rows(found: ReaderFindings) -> list[list[str]]:
    """The label-corrected rates as table rows: where, the rate, its plain and corrected values
    with their intervals, the audited units of all, and what label error costs."""
    rows = []
    for r in found.get("corrected", []):
        where = r["model"] + ("" if r["setting"] == "none" else f" ({r['setting']})")
        rows.append(
            [
                where,
                r.get("title") or f"{r['condition']} {r['metric']}",
                _pct(r["plain"], r["plain_lo"], r["plain_hi"]),
                _pct(r["estimate"], r["lo"], r["hi"]),
                f"{r['n_audited']} of {r['n_total']}",
                r["line"].removeprefix("label error ").removeprefix("no label-corrected interval: "),
            ]
        )
    return rows


def heading(name: str, found: ReaderFindings) -> str:
    who = "people" if name == "people" else f"the reader model {name.split(':', 1)[-1]}"
    extra = f", {found['unscored']} unscored" if found.get("unscored") else ""
    missing = f", {found['not_read']} not read" if found.get("not_read") else ""
    return f"Second reading by {who}: {found['read']} of {found['sampled']} sampled units read{extra}{missing}; {len(found.get('disagreements', []))} disagreements"


def audit_markdown(block: AuditBlock | None) -> list[str]:
    """The audit's section of results.md (nothing without an audit)."""
    if not block:
        return []
    lines = [
        "## Label audit",
        "",
        f"{block['n_sampled']} of {block['population']} read units sampled (seed {block['seed']}; {block['design']}). "
        "Agreement: the second reading is the run's; wrong letter: of the units the run read as an option, the second "
        "reading is another or none; unread: of the units the second reading reads as an option, the run read none; "
        "wrong verdict: of the judged units, the second judge's verdict is another; unscored: the second reader gave "
        "no reading.",
        "",
    ]
    lines += [f"> {n}" for n in block.get("notes", [])]
    for name, found in (block.get("readers") or {}).items():
        cols = headers(found)
        lines += [f"### {heading(name, found)}", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(r) + " |" for r in reader_rows(found)]
        lines.append("")
        for d in found.get("disagreements", []):
            lines.append(
                f"- {d['model']} / {d['condition']} {d['unit_id']}: run read {d['run_reading']}, second reading {d['second_reading']} (key {d['key']}) {d['viewer_url'] or d['viewer_path']}"
            )
        if found.get("corrected"):
            lines += ["", "Label-corrected rates:", ""] + [f"- {corrected_line(r)}" for r in found["corrected"]]
        lines.append("")
    return lines
