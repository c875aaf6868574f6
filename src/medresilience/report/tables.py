"""Table primitives every family's report uses: Markdown rendering, CSV / Parquet / Markdown output,
number formatting, and the usage table (calls, tokens, cost per model)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..runtime.fileio import atomic_write, write_csv_frame


def usage_table(runs: Sequence[tuple[str, dict[str, Any]]]) -> pd.DataFrame:
    rows = []
    for run, res in runs:
        for model, u in (res.get("usage") or {}).items():
            rows.append(
                {
                    "run": run,
                    "model": model,
                    "calls": u.get("calls"),
                    "errors": u.get("errors"),
                    "prompt_tokens": u.get("prompt_tokens"),
                    "completion_tokens": u.get("completion_tokens"),
                    "cost": u.get("cost"),
                    "batch_calls": u.get("batch_calls", 0),
                    "live_calls": u.get("live_calls"),
                    "cost_live": u.get("cost_live"),
                    "cost_batch": u.get("cost_batch"),
                }
            )
    df = pd.DataFrame(
        rows,
        columns=["run", "model", "calls", "errors", "prompt_tokens", "completion_tokens", "cost", "batch_calls", "live_calls", "cost_live", "cost_batch"],
    )
    for c in ("calls", "errors", "prompt_tokens", "completion_tokens"):
        df[c] = df[c].astype("Int64")
    df["cost"] = df["cost"].astype("float64")
    return df


# ---------------------------------------------------------------------------------- output


def _md_cell(v: object) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
        return "—"
    if isinstance(v, (float, np.floating)):
        return f"{v:.4g}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def markdown_table(df: pd.DataFrame, columns: Sequence[str] | None = None, max_rows: int | None = None) -> str:
    cols = list(columns or df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    view = df if max_rows is None else df.head(max_rows)
    for rec in view[cols].itertuples(index=False):
        lines.append("| " + " | ".join(_md_cell(v) for v in rec) + " |")
    if max_rows is not None and len(df) > max_rows:
        lines.append(f"\n({len(df) - max_rows} more rows in the CSV / Parquet table)")
    return "\n".join(lines)


def write_tables(tables: dict[str, pd.DataFrame], out_dir: Path) -> dict[str, dict[str, Path]]:
    """Each table as CSV and Parquet (and Markdown) under out_dir; returns {name: {fmt: path}}."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: dict[str, dict[str, Path]] = {}
    for name, df in tables.items():
        p = {"csv": out_dir / f"{name}.csv", "parquet": out_dir / f"{name}.parquet", "md": out_dir / f"{name}.md"}
        write_csv_frame(p["csv"], df)
        with atomic_write(p["parquet"], "wb") as fh:
            df.to_parquet(fh, index=False)
        with atomic_write(p["md"]) as fh:
            fh.write(markdown_table(df) + "\n")
        paths[name] = p
    return paths


def row_label(model: str, setting: str) -> str:
    """A table row's name: the model, with its setting unless it is `none`."""
    return model if setting == "none" else f"{model} ({setting})"


def fmt_pct(p: float | None, lo: float | None = None, hi: float | None = None, n: int | None = None, digits: int = 1) -> str:
    """'71.2% [65.4, 76.4] n=250' (any part may be missing)."""
    if p is None or (isinstance(p, float) and np.isnan(p)):
        return "—" if n is None else f"— (n={n})"
    s = f"{100 * p:.{digits}f}%"
    if lo is not None and hi is not None and not (np.isnan(lo) or np.isnan(hi)):
        s += f" [{100 * lo:.{digits}f}, {100 * hi:.{digits}f}]"
    if n is not None and n is not pd.NA:
        s += f" n={int(n)}"
    return s


def fmt_score(p: float | None, lo: float | None = None, hi: float | None = None) -> str:
    """A mean score (not a share) as a signed number with its interval: '+0.31 [+0.12, +0.48]'."""
    if p is None or p != p:
        return "—"
    s = f"{p:+.2f}"
    if lo is not None and hi is not None and lo == lo and hi == hi:
        s += f" [{lo:+.2f}, {hi:+.2f}]"
    return s


def fmt_p(p: float | None) -> str:
    if p is None or (isinstance(p, float) and np.isnan(p)):
        return "—"
    if p < 1e-4:
        return f"{p:.1e}"
    return f"{p:.4f}" if p < 0.01 else f"{p:.3f}"
