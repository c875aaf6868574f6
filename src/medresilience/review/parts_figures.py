"""The figures of a rubric rated part by part, drawn from the tables `parts.compute_parts` writes
beside them: the MISD distribution per source (Cancer-Myth Fig. 8) and the 1-5 paragraph scores
per source (Fig. 2 right), grouped bars, one colour per source, as the report's bar figures."""

from __future__ import annotations

import pandas as pd

from ..report.parts import BarFigure
from .parts import GROUP, MISD_POPULATIONS, PartsStats


def _grouped_bars(df: pd.DataFrame, level: str, count: str, name: str, title: str, xlabel: str, ylabel: str) -> BarFigure:
    sources = list(dict.fromkeys(df[GROUP]))
    levels = sorted(set(df[level]))
    series = {}
    for source in sources:
        sub = df[df[GROUP] == source].set_index(level)
        series[str(source)] = tuple(float(int(sub.loc[k, count])) if k in sub.index else 0.0 for k in levels)
    return BarFigure(name, title, "", xlabel, ylabel, tuple(str(k) for k in levels), series, GROUP)


def figures(res: PartsStats) -> dict[str, BarFigure]:
    """name -> its figure (`report.parts.BarFigure`): parts_misd_by_source, parts_scores_by_source (empty tables: no figure)."""
    out: dict[str, BarFigure] = {}
    rule = MISD_POPULATIONS[res.misd_population]
    if res.misd_by_source is not None and len(res.misd_by_source):
        out["parts_misd_by_source"] = _grouped_bars(
            res.misd_by_source, "misd", "paragraphs", "parts_misd_by_source", f"Maximum inter-rater score difference per source ({res.misd_population})",
            "MISD (max - min of the raters' 1-5 scores)", f"Paragraphs ({rule})"[:80],
        )  # fmt: skip
    if res.scores_by_source is not None and len(res.scores_by_source):
        out["parts_scores_by_source"] = _grouped_bars(
            res.scores_by_source, "score", "ratings", "parts_scores_by_source", "Paragraph scores per source", "Paragraph score (1-5)", "Paragraph ratings"
        )
    return out
