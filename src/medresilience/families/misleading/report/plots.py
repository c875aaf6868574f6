"""The misleading family's figures: accuracy per condition, attack success per source, heatmaps
by content type and provenance, where flips go, the resilience profile and paired differences."""

from __future__ import annotations

from typing import Any  # noqa: F401

import numpy as np
import pandas as pd

from ....report.parts import whole
from ....report.plots import PALETTE, STYLE, err, pct, plt, short, to_svg, wrap
from ....report.tables import row_label
from .tables import CONDITION_TITLES, STRATUM_TITLES

COND_COLOURS = {"clean": "#0072B2", "type1": "#E69F00", "type2": "#D55E00"}
FLIP_COLOURS = {"to_target": "#D55E00", "elsewhere": "#E69F00", "invalid": "#999999", "truncated": "#56B4E9"}


def _rows(df: pd.DataFrame) -> list[str]:
    """Row labels (model, plus the setting when it is a mitigation) in table order."""
    return [row_label(m, s) for m, s in df[["model", "setting"]].drop_duplicates().itertuples(index=False)]


def _row_label(df: pd.DataFrame) -> pd.Series:
    return pd.Series([row_label(m, str(s)) for m, s in zip(df["model"], df["setting"])], index=df.index, dtype=object)


# ---------------------------------------------------------------------------------- figures


def accuracy_figure(metrics: pd.DataFrame) -> str | None:
    """Clean vs Type 1 vs Type 2 accuracy per model (the study's headline figure)."""
    d = metrics[(metrics["stratum_kind"] == "overall") & (metrics["metric"] == "accuracy")].copy()
    if d.empty:
        return None
    d["row"] = _row_label(d)
    rows = _rows(d)
    conds = [c for c in ("clean", "type1", "type2") if c in set(d["condition"])]
    title = "Accuracy: clean vs Type 1 vs Type 2 misleading context"
    with plt.rc_context(STYLE):
        width = min(16.0, max(7.5, 1.0 + 0.55 * len(rows) * len(conds)))
        fig, ax = plt.subplots(figsize=(width, 4.8), layout="constrained")
        x = np.arange(len(rows))
        bw = 0.8 / len(conds)
        for j, c in enumerate(conds):
            sub = d[d["condition"] == c].set_index("row").reindex(rows)
            p, lo, hi = (sub[k].map(pct).to_numpy(dtype=float) for k in ("p", "lo", "hi"))
            xs = x - 0.4 + bw * (j + 0.5)
            ax.bar(xs, p, bw * 0.92, color=COND_COLOURS[c], label=CONDITION_TITLES[c], zorder=2)
            ax.errorbar(xs, p, yerr=err(p, lo, hi), fmt="none", ecolor="#222", elinewidth=1, capsize=3, zorder=3)
            if len(rows) * len(conds) <= 24:
                for xi, pi in zip(xs, p):
                    if not np.isnan(pi):
                        ax.text(xi, 1.5, f"{pi:.0f}", ha="center", va="bottom", fontsize=9, color="white", fontweight="bold", zorder=4)
        ax.set_xticks(x, [short(r) for r in rows], rotation=25 if len(rows) > 4 else 0, ha="right" if len(rows) > 4 else "center")
        ax.set_ylim(0, 105)
        ax.set_ylabel("Accuracy (%), 95% Wilson CI")
        ax.set_xlabel("Model")
        ax.set_title(title)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, title="Condition")
        return to_svg(fig, "accuracy", title)


def attack_by_source_figure(metrics: pd.DataFrame) -> str | None:
    """Type 1 ASR, Type 1 TASR and Type 2 ASR per model and source dataset (dot + CI)."""
    d = metrics[metrics["stratum_kind"].isin(["overall", "source"]) & metrics["metric"].isin(["asr", "tasr"])].copy()
    if d.empty:
        return None
    d["row"] = _row_label(d)
    rows = _rows(d)
    panels = [(c, m) for c, m in (("type1", "asr"), ("type1", "tasr"), ("type2", "asr")) if not d[(d["condition"] == c) & (d["metric"] == m)].empty]
    strata = ["Overall"] + sorted(set(d.loc[d["stratum_kind"] == "source", "stratum"]))
    colours = {s: ("#000000" if s == "Overall" else PALETTE[i % (len(PALETTE) - 1)]) for i, s in enumerate(strata)}
    title = "Attack success per model and source dataset"
    with plt.rc_context(STYLE):
        height = min(13.0, max(3.2, 0.3 * len(rows) * max(1, len(strata)) ** 0.5 + 1.8))
        fig, axes = plt.subplots(1, len(panels), figsize=(min(16, 4.6 * len(panels) + 1.5), height), sharey=True, squeeze=False, layout="constrained")
        y = np.arange(len(rows))
        step = 0.7 / max(1, len(strata))
        for ax, (c, m) in zip(axes[0], panels):
            for j, s in enumerate(strata):
                sub = d[(d["condition"] == c) & (d["metric"] == m) & (d["stratum"] == s)].set_index("row").reindex(rows)
                p, lo, hi = (sub[k].map(pct).to_numpy(dtype=float) for k in ("p", "lo", "hi"))
                ys = y - 0.35 + step * (j + 0.5)
                ax.errorbar(
                    p,
                    ys,
                    xerr=err(p, lo, hi),
                    fmt="D" if s == "Overall" else "o",
                    ms=5 if s == "Overall" else 4.5,
                    color=colours[s],
                    ecolor=colours[s],
                    elinewidth=1.2,
                    capsize=2,
                    label=s,
                    zorder=3,
                )
            ax.set_xlim(0, 100)
            ax.set_title(f"{CONDITION_TITLES[c]} {'TASR' if m == 'tasr' else 'ASR'}")
            ax.set_xlabel("% of clean-correct pairs, 95% Wilson CI")
            ax.grid(axis="y", visible=False)
        axes[0][0].set_yticks(y, [short(r) for r in rows])
        axes[0][0].invert_yaxis()
        axes[0][0].set_ylabel("Model")
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, title="Source dataset", loc="outside lower center", ncols=min(len(labels), 6), frameon=False)
        fig.suptitle(title)
        return to_svg(fig, "attack-by-source", title)


def heatmap_figure(metrics: pd.DataFrame, tests: pd.DataFrame, kind: str) -> str | None:
    """Model x stratum heatmaps of Type 1 and Type 2 ASR (cells: %, n; * = Holm-adjusted McNemar
    p < 0.05 across the strata of this kind)."""
    d = metrics[(metrics["stratum_kind"] == kind) & (metrics["metric"] == "asr")].copy()
    if d.empty:
        return None
    d["row"] = _row_label(d)
    rows = _rows(d)
    cols = sorted(set(d["stratum"]))
    t = tests[tests["stratum_kind"] == kind].copy()
    t["row"] = _row_label(t) if not t.empty else pd.Series(dtype=object)
    conds = [c for c in ("type1", "type2") if not d[d["condition"] == c].empty]
    name = STRATUM_TITLES.get(kind, kind).lower()
    title = f"ASR by {name}: model x {name}"
    cmap = plt.get_cmap("OrRd")
    with plt.rc_context(STYLE):
        cell_w, cell_h = 1.25, 0.5
        height = max(2.8, cell_h * len(rows) + 2.4)
        fig, axes = plt.subplots(1, len(conds), figsize=(min(17, len(conds) * (cell_w * len(cols) + 2.6) + 1.5), height), squeeze=False)
        fig.subplots_adjust(top=1 - 0.8 / height, bottom=1.3 / height)
        im = None
        for ax, c in zip(axes[0], conds):
            sub = d[d["condition"] == c]
            grid = sub.pivot_table(index="row", columns="stratum", values="p", aggfunc="first").reindex(index=rows, columns=cols)
            ns = sub.pivot_table(index="row", columns="stratum", values="n", aggfunc="first").reindex(index=rows, columns=cols)
            sig = (
                (t[t["condition"] == c].pivot_table(index="row", columns="stratum", values="significant", aggfunc="first").reindex(index=rows, columns=cols))
                if not t.empty
                else None
            )
            vals = 100 * grid.to_numpy(dtype=float)
            im = ax.imshow(vals, cmap=cmap, vmin=0, vmax=100, aspect="auto")
            for i in range(len(rows)):
                for j in range(len(cols)):
                    v = vals[i, j]
                    if np.isnan(v):
                        ax.text(j, i, "—", ha="center", va="center", fontsize=9, color="#555")
                        continue
                    star = "*" if sig is not None and bool(sig.iloc[i, j] is True or sig.iloc[i, j] == 1) else ""
                    n = whole(ns.iloc[i, j])
                    show_n = len(rows) <= 10 and n is not None
                    ax.text(
                        j,
                        i,
                        f"{v:.0f}%{star}\nn={n}" if show_n else f"{v:.0f}%{star}",
                        ha="center",
                        va="center",
                        fontsize=8.5,
                        color="white" if v > 55 else "#111",
                        linespacing=1.1,
                    )
            ax.set_xticks(range(len(cols)), [wrap(c_) for c_ in cols])
            ax.set_yticks(range(len(rows)), [short(r) for r in rows])
            ax.grid(False)
            ax.set_title(f"{CONDITION_TITLES[c]} ASR")
            ax.set_xlabel(STRATUM_TITLES.get(kind, kind))
            if ax is axes[0][0]:
                ax.set_ylabel("Model")
            else:
                ax.set_yticklabels([])
        if im is not None:  # a heatmap was drawn (one per condition with data)
            cb = fig.colorbar(im, ax=list(axes[0]), shrink=0.9, pad=0.01)
            cb.set_label("ASR (%)")
        fig.suptitle(title + " (* Holm-adjusted McNemar p < 0.05)" + ("" if len(rows) <= 10 else "; n in tables/metrics.csv"), y=1 - 0.2 / height)
        return to_svg(fig, f"heatmap-{kind}", title)


def flips_figure(flips: pd.DataFrame) -> str | None:
    """Where Type 1 flips go: to the injected target, elsewhere, or to an unreadable reply."""
    d = flips[(flips["stratum_kind"] == "overall") & (flips["condition"] == "type1")].copy()
    if d.empty:
        return None
    d["row"] = _row_label(d)
    rows = _rows(d)
    d = d.set_index("row").reindex(rows)
    title = "Where Type 1 flips go"
    parts = [
        ("to_target", "to the injected target"),
        ("elsewhere", "to another wrong option"),
        ("invalid", "unreadable reply"),
        ("truncated", "cut at the token budget"),
    ]
    parts = [(k, t) for k, t in parts if f"share_{k}" in d]
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(9.5, max(2.6, 0.45 * len(rows) + 1.8)), layout="constrained")
        y = np.arange(len(rows))
        left = np.zeros(len(rows))
        flips_n = d["flips"].astype(float).to_numpy()
        for part, label in parts:
            share = 100 * d[f"share_{part}"].astype(float).fillna(0).to_numpy()
            ax.barh(y, share, left=left, color=FLIP_COLOURS[part], label=label, height=0.62, zorder=2)
            for yi, l_, s in zip(y, left, share):
                if s >= 8:
                    ax.text(
                        l_ + s / 2, float(yi), f"{s:.0f}%", ha="center", va="center", fontsize=9, color="white" if part != "elsewhere" else "#111", zorder=3
                    )
            left += share
        for yi, n in zip(y, flips_n):
            ax.text(101, float(yi), f"{0 if np.isnan(n) else int(n)} flips", va="center", fontsize=9, color="#333")
        ax.set_yticks(y, [short(r) for r in rows])
        ax.invert_yaxis()
        ax.set_xlim(0, 118)
        ax.set_xticks([0, 20, 40, 60, 80, 100])
        ax.set_xlabel("Share of Type 1 flips (%)")
        ax.set_ylabel("Model")
        ax.set_title(title)
        ax.grid(axis="y", visible=False)
        fig.legend(loc="outside lower center", ncols=len(parts), frameon=False)
        return to_svg(fig, "flips", title)


def profile_figure(profile: pd.DataFrame) -> str | None:
    """Resilience profile: per model, clean accuracy beside each family's resilience score, and a
    scatter of clean accuracy against resilience (clean accuracy does not predict resilience)."""
    if profile.empty:
        return None
    d = profile.copy()
    d["row"] = _row_label(d)
    rows = _rows(d)
    dims = list(dict.fromkeys(d["dimension"]))
    labels = dict(zip(d["dimension"], d["label"]))
    colours = {"clean_accuracy": "#0072B2", "resilience_type1": "#E69F00", "resilience_type2": "#D55E00"}
    title = "Resilience profile: clean accuracy beside resilience per stress family"
    with plt.rc_context(STYLE):
        fig, (ax, ax2) = plt.subplots(
            1, 2, figsize=(14, min(11.0, max(4.6, 0.3 * len(rows) * len(dims) ** 0.5 + 2.4))), gridspec_kw={"width_ratios": [1.35, 1]}, layout="constrained"
        )
        ax2.set_box_aspect(1)
        y = np.arange(len(rows))
        bh = 0.8 / len(dims)
        for j, dim in enumerate(dims):
            sub = d[d["dimension"] == dim].set_index("row").reindex(rows)
            p, lo, hi = (100 * sub[k].astype(float).to_numpy() for k in ("value", "lo", "hi"))
            ys = y - 0.4 + bh * (j + 0.5)
            ax.barh(ys, p, bh * 0.9, color=colours.get(dim, PALETTE[j % len(PALETTE)]), label=labels[dim], zorder=2)
            ax.errorbar(p, ys, xerr=err(p, lo, hi), fmt="none", ecolor="#222", elinewidth=1, capsize=2, zorder=3)
        ax.set_yticks(y, [short(r) for r in rows])
        ax.invert_yaxis()
        ax.set_xlim(0, 100)
        ax.set_xlabel("%, 95% Wilson CI (resilience = 100 - ASR)")
        ax.set_ylabel("Model")
        ax.set_title("Profile per model")
        ax.grid(axis="y", visible=False)

        clean = d[d["dimension"] == "clean_accuracy"].set_index("row")["value"]
        res_dims = [x for x in dims if x != "clean_accuracy"]
        tops: dict[str, tuple[float, float]] = {}
        for j, dim in enumerate(res_dims):
            res = d[d["dimension"] == dim].set_index("row")["value"]
            common = [r for r in rows if r in clean.index and r in res.index]
            xs, ys = 100 * clean.reindex(common).to_numpy(float), 100 * res.reindex(common).to_numpy(float)
            ax2.scatter(xs, ys, s=50, color=colours.get(dim, PALETTE[j]), zorder=3, edgecolor="white", linewidth=0.8)
            for r, xi, yi in zip(common, xs, ys):
                if r not in tops or yi > tops[r][1]:
                    tops[r] = (xi, yi)
        for r in rows:  # one model's points share its clean accuracy: join them, label once
            pts = [100 * d[(d["row"] == r) & (d["dimension"] == dim)]["value"].astype(float) for dim in res_dims]
            vals = [float(v.iloc[0]) for v in pts if len(v)]
            if r in tops and len(vals) > 1:
                ax2.plot([tops[r][0]] * 2, [min(vals), max(vals)], color="#888", lw=1, zorder=2)
        if len(tops) <= 12:  # one label per position (models that coincide share it)
            spots: dict[tuple[float, float], list[str]] = {}
            for r, (xi, yi) in tops.items():
                spots.setdefault((round(xi, 1), round(yi, 1)), []).append(short(r, 22))
            for (xi, yi), names in spots.items():
                ax2.annotate("\n".join(names), (xi, yi), xytext=(0, 6), textcoords="offset points", fontsize=8.5, color="#333", ha="center", va="bottom")
        ax2.set_xlim(0, 102)
        ax2.set_ylim(0, 108)
        ax2.plot([0, 100], [0, 100], ls=":", color="#999", lw=1, zorder=1)
        ax2.set_xlabel("Clean accuracy (%)")
        ax2.set_ylabel("Resilience (100 - ASR, %)")
        ax2.set_title("Clean accuracy vs resilience")
        handles, hl = ax.get_legend_handles_labels()
        fig.suptitle(title)
        fig.legend(handles, hl, loc="outside lower center", ncols=len(hl), frameon=False)
        return to_svg(fig, "profile", title)
