"""`compare_runs(run_a, run_b)`: two run directories of the same family, paired on shared items.
The pairing and the metrics are the family's (`Family.compare`); this module loads the runs,
checks they can be compared, and writes the page around the family's body."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ConfigError
from ..family import get
from ..records import atomic_write
from . import html as H
from .rundir import RunData, load_run, redact_url, scrub, secrets_of
from .tables import write_tables


@dataclass
class CompareResult:
    table: pd.DataFrame
    comparisons: list[Any]
    out_dir: Path
    html: Path
    markdown: Path
    csv: Path
    parquet: Path


@dataclass
class Side:
    """One side of a comparison: a run's frame restricted to one model and setting."""

    run: str
    model: str
    setting: str  # none, or a mitigation's name
    frame: pd.DataFrame

    def label(self, with_run: bool) -> str:
        return (f"{self.run}: " if with_run else "") + self.model + ("" if self.setting == "none" else f" ({self.setting})")

    @property
    def scorers(self) -> list[str]:
        """The scorer names of its units (a judge's name carries its model and rubric hash)."""
        return sorted({str(s) for s in self.frame["scoring"].dropna().unique()}) if "scoring" in self.frame else []


@dataclass
class Comparison:
    """B against A (two sides' labels): the family's table of paired differences and its counts
    (units paired, units on one side only, ...)."""

    a: str
    b: str
    table: pd.DataFrame
    counts: dict[str, int] = field(default_factory=dict)


def side(run: str, frame: pd.DataFrame, model: str, setting: str) -> Side:
    f = frame[(frame["model"].astype(str) == model).to_numpy() & (frame["setting"].astype(str) == setting).to_numpy()]
    return Side(run, model, setting, f)


def compare_runs(run_a: Path | str, run_b: Path | str, out_dir: Path | str | None = None, pairs: Sequence[str] = ()) -> CompareResult:
    """Compare two run directories on shared items; write compare.{html,md,csv,parquet} to out_dir
    (default: RUN_B/compare-<name of RUN_A>). Returns the table and the paths written."""
    ra, rb = load_run(run_a), load_run(run_b)
    for r in (ra, rb):
        if r.frame is None:
            raise ValueError(f"{r.path}: cannot compare: the store and suite are needed ({'; '.join(r.notes) or 'no store'})")
    if ra.family != rb.family:
        raise ConfigError("compare", f"run A is family {ra.family}, run B is family {rb.family}: only runs of one family pair")
    family = get(ra.family)
    if family.compare is None:
        raise ConfigError("compare", f"family {family.name} has no paired comparison")
    if ra.name == rb.name:
        rb.name = f"{rb.name} (B)"
    out = Path(out_dir) if out_dir else Path(run_b) / f"compare-{Path(run_a).resolve().name}"
    return family.compare(ra, rb, out, pairs)


def match_models(a: dict[str, Any], b: dict[str, Any], pairs: Sequence[str] = ()) -> list[tuple[str, str, str, str]]:
    """(model A, setting A, model B, setting B) to compare. Explicit ``pairs`` ("MODEL_A=MODEL_B",
    each optionally "MODEL:SETTING") win; otherwise each model label in both runs is matched with
    itself (a setting with the same setting, or the one setting each run has), and with no label
    shared and one model on each side, those two are compared. Family-neutral: it reads only the
    model and setting names of two runs' results."""
    ma, mb = a.get("models", {}), b.get("models", {})

    def parse(text: str, models: dict[str, Any], which: str) -> tuple[str, str | None]:
        label, _, setting = text.partition(":")
        if label not in models:
            raise ValueError(f"--pair: model '{label}' is not in run {which} (models: {', '.join(models) or 'none'})")
        if setting and setting not in models[label]:
            raise ValueError(f"--pair: model '{label}' has no setting '{setting}' in run {which} (settings: {', '.join(models[label])})")
        return label, setting or None

    def settings(la: str, va: dict, lb: str, vb: dict, sa: str | None, sb: str | None) -> list[tuple[str, str, str, str]]:
        if sa or sb:
            return [(la, sa or ("none" if "none" in va else next(iter(va))), lb, sb or ("none" if "none" in vb else next(iter(vb))))]
        if len(va) == 1 and len(vb) == 1:
            return [(la, next(iter(va)), lb, next(iter(vb)))]
        return [(la, s, lb, s) for s in sorted((s for s in va if s in vb), key=lambda s: s != "none")]

    if pairs:
        out: list[tuple[str, str, str, str]] = []
        for p in pairs:
            left, eq, right = p.partition("=")
            if not eq:
                raise ValueError(f"--pair '{p}' is not MODEL_A=MODEL_B")
            (la, sa), (lb, sb) = parse(left, ma, "A"), parse(right, mb, "B")
            out += settings(la, ma[la], lb, mb[lb], sa, sb)
        return out
    shared = [m for m in ma if m in mb]
    if not shared and len(ma) == 1 and len(mb) == 1:
        (la, va), (lb, vb) = next(iter(ma.items())), next(iter(mb.items()))
        return settings(la, va, lb, vb, None, None)
    return [t for m in shared for t in settings(m, ma[m], m, mb[m], None, None)]


def pair_models(ra: RunData, rb: RunData, pairs: Sequence[str] = ()) -> list[tuple[str, str, str, str]]:
    """`match_models` on two loaded runs; ValueError naming both runs' models when nothing pairs."""
    matched = match_models(ra.results, rb.results, pairs)
    if not matched:
        raise ValueError(
            f"no model to compare: run A has {', '.join(ra.results.get('models', {})) or 'none'}, run B has "
            f"{', '.join(rb.results.get('models', {})) or 'none'}; name pairs with --pair MODEL_A=MODEL_B")
    return matched


def finish_compare(ra: RunData, rb: RunData, body: str, markdown: str, table: pd.DataFrame, out: Path) -> dict[str, Path]:
    """Write a comparison page (the family's body, then both runs' facts), its Markdown, and the
    table as CSV / Parquet / Markdown under tables/."""
    out.mkdir(parents=True, exist_ok=True)
    sections = [("compare", "Paired differences", body), ("facts", "Run facts", H.run_facts([ra, rb], redact_url))]
    page = H.page("medresilience comparison", [f"B: {H.esc(rb.name)} &middot; A: {H.esc(ra.name)}"], sections,
                  "Self-contained: no scripts, no network.")
    secrets = secrets_of([ra, rb])
    with atomic_write(out / "compare.html") as fh:
        fh.write(scrub(page, secrets))
    with atomic_write(out / "compare.md") as fh:
        fh.write(scrub(markdown, secrets))
    paths = write_tables({"compare": table}, out / "tables")  # beside, not over, compare.md
    return {"html": out / "compare.html", "md": out / "compare.md", "csv": paths["compare"]["csv"], "parquet": paths["compare"]["parquet"]}
