"""The figures of a rubric rated part by part, drawn from the tables `parts.compute_parts` writes
beside them: the MISD distribution per source (Cancer-Myth Fig. 8) and the 1-5 paragraph scores
per source (Fig. 2 right), grouped bars, one colour per source; each is returned as inline SVG."""

from __future__ import annotations

import pandas as pd

from .parts import GROUP, MISD_POPULATIONS, PartsStats


def _grouped_bars(df: pd.DataFrame, level: str, count: str, name: str, title: str, xlabel: str, ylabel: str) -> str:
    from ..report import plots

    plt = plots.plt
    with plt.rc_context(plots.STYLE):
        fig, ax = plt.subplots(figsize=(7.5, 4.2), layout="constrained")
        sources = list(dict.fromkeys(df[GROUP]))
        levels = sorted(set(df[level]))
        width = 0.8 / max(len(sources), 1)
        for i, source in enumerate(sources):
            sub = df[df[GROUP] == source].set_index(level)
            xs = [x + (i - (len(sources) - 1) / 2) * width for x in range(len(levels))]
            ax.bar(xs, [int(sub.loc[k, count]) if k in sub.index else 0 for k in levels], width, label=str(source), color=plots.PALETTE[i % len(plots.PALETTE)])
        ax.set_xticks(range(len(levels)), [str(k) for k in levels])
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        if sources:
            ax.legend(title=GROUP, frameon=False)
        return plots.to_svg(fig, name, title)


def figures(res: PartsStats) -> dict[str, str]:
    """name -> inline SVG: parts_misd_by_source, parts_scores_by_source (empty tables: no figure)."""
    out = {}
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
