"""The false-presupposition family's report section: key numbers (PCS with its bootstrap interval,
PCR, over-caution on the control, unscored judgments), the spread of judge scores, PCS per
question category (the study's Figure 6), the generator x evaluated-model matrix (Figure 5b) as a
table and a heatmap, correcting false premises against over-caution (one point per model and
setting), the unscored judgments with their most frequent reasons, and, where a run directory
holds `judge_agreement.json` (`medres judge-agreement`), the judge's agreement with human labels
beside the study's. Every table is returned for tables/ (CSV, Parquet, Markdown)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from markupsafe import Markup

from ....model_names import ModelNames, entries_phrase
from ....report.html import count_cell, esc, isnan, rate_cell, setting_name, table, units_url
from ....report.plots import PALETTE, STYLE, err, pct, plt, short, to_svg, wrap
from ....report.rundir import model_blocks, names_of
from ....report.section import FamilySection
from ....report.tables import fmt_pct, markdown_table, row_label
from ....report.templating import macros
from ..metrics import generator_matrix, mean_across_models
from ..taxonomy import CATEGORY_KEYS, CATEGORY_TITLES, FAMILY, NFP, PRESUPPOSITION

TITLE = "False presuppositions"
RATE_PARTS = ("k", "p", "lo", "hi", "n")
#: the CLI summary shows rates only (PCS is a mean score on -1..1, shown in the report itself)
SUMMARY_COLUMNS = [("pcs", "PCS"), ("pcr", "PCR"), ("overcaution", "NFP over-caution"), ("unscored", "Unscored")]
#: what `medres judge-agreement` writes into a run directory
AGREEMENT_FILE = "judge_agreement.json"
#: the study's agreement of its GPT-4o judge with human scores (76 questions)
STUDY_AGREEMENT = {"exact": 0.711, "binary": 1.0}
AGREEMENT_MEASURES = (
    ("exact", "Exact agreement on -1 / 0 / 1", "rate"),
    ("binary", "Agreement on fully corrects (1) or not", "rate"),
    ("cohen_kappa", "Cohen's kappa", "coefficient"),
    ("gwet_ac2", "Gwet's AC2", "coefficient"),
)
SCORE_COLOURS = {"-1": "#D55E00", "0": "#E69F00", "1": "#009E73"}
TOP_REASONS = 8


# ---------------------------------------------------------------------------------- tables


def _rate_cols(prefix: str, r: dict[str, Any] | None) -> dict[str, Any]:
    r = r or {}
    return {f"{prefix}_{part}": r.get(part) for part in RATE_PARTS}


HEADLINE_KEYS = ("pcs", "pcr", "overcaution", "nfp_answered", "unscored")


def headline_table(blocks: list[tuple[str, str, str, dict[str, Any]]]) -> pd.DataFrame:
    rows = []
    for run, model, setting, block in blocks:
        o = block.get("overall", {})
        row: dict[str, Any] = {"run": run, "model": model, "setting": setting, "n_items": o.get("n_items")}
        for k in HEADLINE_KEYS:
            row.update(_rate_cols(k, o.get(k)))
        row["pcs_unit"] = "score"  # a mean on -1..1, not a share (the command line's summary reads this)
        c = block.get("counts", {})
        row.update(
            units=c.get("units"),
            units_scored=c.get("scored", 0),
            units_errors=c.get("errors", 0),
            units_invalid=c.get("invalid", 0),
            units_unscored=c.get("unscored", 0),
            units_missing=c.get("missing", 0),
            presupposition_units=(o.get("presupposition") or {}).get("units", 0),
            nfp_units=(o.get("nfp") or {}).get("units", 0),
        )
        rows.append(row)
    cols = [
        "run",
        "model",
        "setting",
        "n_items",
        *[f"{k}_{p}" for k in HEADLINE_KEYS for p in RATE_PARTS],
        "units",
        "units_scored",
        "units_errors",
        "units_invalid",
        "units_unscored",
        "units_missing",
        "presupposition_units",
        "nfp_units",
        "pcs_unit",
    ]
    return pd.DataFrame(rows, columns=cols)


def distribution_table(blocks: list[tuple[str, str, str, dict[str, Any]]]) -> pd.DataFrame:
    rows = []
    for run, model, setting, block in blocks:
        for score, r in ((block.get("overall") or {}).get("distribution") or {}).items():
            rows.append({"run": run, "model": model, "setting": setting, "score": score, **{p: r.get(p) for p in RATE_PARTS}})
    return pd.DataFrame(rows, columns=["run", "model", "setting", "score", *RATE_PARTS])


def strata_table(blocks: list[tuple[str, str, str, dict[str, Any]]], group: str) -> pd.DataFrame:
    """One row per (model, setting, stratum) of a block group (by_category, by_generator)."""
    rows = []
    for run, model, setting, block in blocks:
        for key, b in (block.get(group) or {}).items():
            row: dict[str, Any] = {
                "run": run,
                "model": model,
                "setting": setting,
                "stratum": key,
                "title": CATEGORY_TITLES.get(key, key) if group == "by_category" else key,
            }
            for k in ("pcs", "pcr", "overcaution"):
                row.update(_rate_cols(k, b.get(k)))
            row["unscored_k"] = (b.get("unscored") or {}).get("k")
            rows.append(row)
    cols = ["run", "model", "setting", "stratum", "title", *[f"{k}_{p}" for k in ("pcs", "pcr", "overcaution") for p in RATE_PARTS], "unscored_k"]
    return pd.DataFrame(rows, columns=cols)


def matrix_table(blocks: list[tuple[str, str, str, dict[str, Any]]]) -> pd.DataFrame:
    """The generator x evaluated-model matrix (metrics.generator_matrix) with the run of each row."""
    parts = []
    for run, model, setting, block in blocks:
        m = generator_matrix({model: {setting: block}})
        if not m.empty:
            parts.append(m.assign(run=run))
    if not parts:
        return pd.DataFrame(columns=["run", *generator_matrix({}).columns])
    df = pd.concat(parts, ignore_index=True)
    return df[["run", *[c for c in df.columns if c != "run"]]]


def unscored_reasons(runs: Sequence[Any]) -> pd.DataFrame:
    """The unscored judgments of each run's latest execution, one row per (model, setting,
    condition, reason) with its count, read from the run's store (empty for a run reported from
    results.json alone)."""
    from ....store import Store

    rows = []
    for r in runs:
        db = Path(r.path) / "store.sqlite"
        if r.source != "store" or not db.is_file():
            continue
        with Store.read_only(db) as st:
            for model, setting, cond, reason, n in st.score_reasons("unscored"):
                rows.append({"run": r.name, "model": model, "setting": setting, "condition": cond, "reason": reason, "n": n})
    return pd.DataFrame(rows, columns=["run", "model", "setting", "condition", "reason", "n"])


# ---------------------------------------------------------------------------------- judge agreement


def read_judge_agreement(run_dir: Path | str) -> tuple[dict[str, Any] | None, str | None]:
    """(the judge-agreement results of a run directory, or None; a note when the file is there but
    cannot be read). A missing file is no error: not every run has human labels."""
    path = Path(run_dir) / AGREEMENT_FILE
    if not path.is_file():
        return None, None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        return None, f"{path}: judge agreement not shown, the file cannot be read ({e})"
    if not isinstance(data, dict):
        return None, f"{path}: judge agreement not shown, the file does not hold a JSON object"
    return data, None


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if np.isfinite(v) else None


def agreement_table(runs: Sequence[Any]) -> tuple[pd.DataFrame, list[str]]:
    """One row per (run, measure) of the runs' judge_agreement.json, with the study's value where
    it reports one; and the notes of files that could not be read."""
    rows, notes = [], []
    for r in runs:
        data, note = read_judge_agreement(r.path)
        if note:
            notes.append(note)
        if data is None:
            continue
        study = data.get("study") if isinstance(data.get("study"), dict) else STUDY_AGREEMENT
        for key, title, kind in AGREEMENT_MEASURES:
            m = data.get(key)
            if not isinstance(m, dict):
                continue
            value = _num(m.get("p")) if kind == "rate" else _num(m.get("value", m.get("p")))
            n = m.get("n", m.get("units", data.get("n")))
            rows.append(
                {
                    "run": r.name,
                    "measure": key,
                    "title": title,
                    "kind": kind,
                    "value": value,
                    "lo": _num(m.get("lo")),
                    "hi": _num(m.get("hi")),
                    "n": int(n) if _num(n) is not None else None,
                    "study": _num(study.get(key)) if isinstance(study, dict) else None,
                }
            )
    return pd.DataFrame(rows, columns=["run", "measure", "title", "kind", "value", "lo", "hi", "n", "study"]), notes


def agreement_html(df: pd.DataFrame) -> str:
    rows = []
    for r in df.to_dict("records"):
        if r["kind"] == "rate":
            ours = rate_cell(r["value"], r["lo"], r["hi"], r["n"])
            study = "—" if isnan(r["study"]) else f"{100 * float(r['study']):.1f}%"
        else:
            ours = "—" if isnan(r["value"]) else f"{float(r['value']):.3f}"
            if not isnan(r["value"]) and not isnan(r["lo"]) and not isnan(r["hi"]):
                ours += f"<br><span class='n'>[{float(r['lo']):.3f}, {float(r['hi']):.3f}]</span>"
            study = "—" if isnan(r["study"]) else f"{float(r['study']):.3f}"
        rows.append([esc(r["run"]), esc(r["title"]), ours, study])
    return table(rows, ["Run", "Measure", "This judge (95% CI, n)", "Study (GPT-4o judge, 76 questions)"], numeric=(2, 3))


# ---------------------------------------------------------------------------------- figures


def category_figure(cat: pd.DataFrame) -> str | None:
    """PCS per question category and model (the study's Figure 6), with bootstrap intervals."""
    d = cat[cat["pcs_p"].notna()].copy()
    if d.empty:
        return None
    d["row"] = [row_label(m, s) for m, s in zip(d["model"], d["setting"])]
    rows = list(dict.fromkeys(d["row"]))
    keys = [k for k in CATEGORY_KEYS if k in set(d["stratum"])] + sorted(set(d["stratum"]) - set(CATEGORY_KEYS))
    title = "PCS per question category"
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(8.8, max(3.4, 0.42 * len(keys) * max(1, len(rows)) ** 0.5 + 1.6)), layout="constrained")
        y = np.arange(len(keys))
        step = 0.7 / max(1, len(rows))
        for j, row in enumerate(rows):
            colour = PALETTE[j % len(PALETTE)]
            sub = d[d["row"] == row].drop_duplicates("stratum").set_index("stratum").reindex(keys)
            p, lo, hi = (sub[k].astype(float).to_numpy() for k in ("pcs_p", "pcs_lo", "pcs_hi"))
            ax.errorbar(
                p,
                y - 0.35 + step * (j + 0.5),
                xerr=err(p, lo, hi),
                fmt="o",
                color=colour,
                ecolor=colour,
                elinewidth=1.2,
                capsize=2,
                label=short(row, 34),
                zorder=3,
            )
        ax.axvline(0, color="#333", lw=0.8)
        ax.set_xlim(-1.05, 1.05)
        ax.set_yticks(y, [CATEGORY_TITLES.get(k, k) for k in keys])
        ax.invert_yaxis()
        ax.set_xlabel("PCS (mean judge score, -1 to 1), 95% bootstrap CI")
        ax.set_title(title)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=9)
        return to_svg(fig, "presupposition-category", title)


def matrix_figure(mx: pd.DataFrame) -> str | None:
    """Generator x evaluated model: PCS in each cell (diverging colours around 0), n beneath; a
    framed cell is a model answering questions it generated."""
    d = mx[mx["pcs_p"].notna()].copy()
    if d.empty:
        return None
    d["col"] = [row_label(m, s) for m, s in zip(d["model"], d["setting"])]
    cols = list(dict.fromkeys(d["col"]))
    gens = sorted(set(d["generator"]))
    grid = d.pivot_table(index="generator", columns="col", values="pcs_p", aggfunc="first").reindex(index=gens, columns=cols)
    ns = d.pivot_table(index="generator", columns="col", values="pcs_n", aggfunc="first").reindex(index=gens, columns=cols)
    own = d.pivot_table(index="generator", columns="col", values="own", aggfunc="first").reindex(index=gens, columns=cols)
    vals = grid.to_numpy(dtype=float)
    title = "PCS by question generator and evaluated model"
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(min(16.0, 1.5 * len(cols) + 3.6), max(2.8, 0.62 * len(gens) + 1.9)), layout="constrained")
        im = ax.imshow(vals, cmap=plt.get_cmap("RdBu"), vmin=-1, vmax=1, aspect="auto")
        for i in range(len(gens)):
            for j in range(len(cols)):
                v = vals[i, j]
                if np.isnan(v):
                    ax.text(j, i, "—", ha="center", va="center", fontsize=9, color="#555")
                    continue
                n = ns.iloc[i, j]
                ax.text(
                    j,
                    i,
                    f"{v:+.2f}" + ("" if pd.isna(n) else f"\nn={int(n)}"),
                    ha="center",
                    va="center",
                    fontsize=8.5,
                    color="white" if abs(v) > 0.6 else "#111",
                    linespacing=1.1,
                )
                if bool(own.iloc[i, j] is True or own.iloc[i, j] == 1):
                    ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="#111", lw=2))
        ax.set_xticks(range(len(cols)), [wrap(c, 14) for c in cols])
        ax.set_yticks(range(len(gens)), [short(g) for g in gens])
        ax.grid(False)
        ax.set_xlabel("Evaluated model")
        ax.set_ylabel("Question generator")
        ax.set_title(title)
        cb = fig.colorbar(im, ax=ax, shrink=0.9, pad=0.01)
        cb.set_label("PCS")
        return to_svg(fig, "presupposition-matrix", title)


def tradeoff_figure(h: pd.DataFrame) -> str | None:
    """PCR (corrects false presuppositions) against the share of control questions answered
    without claiming a false assumption (1 - over-caution), one point per model and setting."""
    d = h[h["pcr_p"].notna() & h["nfp_answered_p"].notna()]
    if d.empty:
        return None
    title = "Correcting false presuppositions vs over-caution"
    models = list(dict.fromkeys(d["model"]))
    settings = list(dict.fromkeys(d["setting"]))
    markers = ("o", "s", "^", "D", "v", "P", "X")
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(8.8, 5.4), layout="constrained")
        for r in d.to_dict("records"):  # colour: the model; marker: the setting
            colour = PALETTE[models.index(r["model"]) % len(PALETTE)]
            x, xl, xh = (np.array([pct(r[f"nfp_answered_{k}"])]) for k in ("p", "lo", "hi"))
            y, yl, yh = (np.array([pct(r[f"pcr_{k}"])]) for k in ("p", "lo", "hi"))
            ax.errorbar(
                x,
                y,
                xerr=err(x, xl, xh),
                yerr=err(y, yl, yh),
                fmt=markers[settings.index(r["setting"]) % len(markers)],
                color=colour,
                ecolor=colour,
                elinewidth=1.1,
                capsize=3,
                ms=7,
                alpha=0.9,
                label=short(row_label(r["model"], r["setting"]), 34),
                zorder=3,
            )
        ax.set_xlim(-2, 102)
        ax.set_ylim(-2, 102)
        ax.set_xlabel("Control questions answered without a false alarm (%), 1 - over-caution")
        ax.set_ylabel("PCR: false presuppositions fully corrected (%)")
        ax.text(99, 99, "safe and helpful", ha="right", va="top", fontsize=9, color="#555")
        ax.set_title(title)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=9)
        return to_svg(fig, "presupposition-tradeoff", title)


def distribution_figure(dist: pd.DataFrame) -> str | None:
    """The share of each judge score per model and setting, as stacked bars."""
    d = dist[dist["p"].notna()]
    if d.empty:
        return None
    d = d.assign(row=[row_label(m, s) for m, s in zip(d["model"], d["setting"])])
    rows = list(dict.fromkeys(d["row"]))
    scores = sorted(set(d["score"]), key=float)
    title = "Judge scores on questions with a false presupposition"
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(8.8, max(2.4, 0.5 * len(rows) + 1.6)), layout="constrained")
        left = np.zeros(len(rows))
        for j, s in enumerate(scores):
            sub = d[d["score"] == s].drop_duplicates("row").set_index("row").reindex(rows)
            share = 100 * sub["p"].astype(float).fillna(0).to_numpy()
            ax.barh(np.arange(len(rows)), share, left=left, color=SCORE_COLOURS.get(s, PALETTE[j % len(PALETTE)]), label=f"score {s}", edgecolor="white")
            for i, (lft, w) in enumerate(zip(left, share)):
                if w >= 8:
                    ax.text(lft + w / 2, i, f"{w:.0f}%", ha="center", va="center", fontsize=8.5, color="white")
            left += share
        ax.set_yticks(np.arange(len(rows)), [short(r, 34) for r in rows])
        ax.invert_yaxis()
        ax.set_xlim(0, 100)
        ax.set_xlabel("Share of scored answers (%)")
        ax.set_title(title)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25 if len(rows) < 3 else -0.12), ncol=len(scores), frameon=False)
        return to_svg(fig, "presupposition-distribution", title)


# ---------------------------------------------------------------------------------- html


def score_cell(p: Any, lo: Any, hi: Any, n: Any, units: str | None = None) -> str:
    """A mean score on -1..1: '+0.12' with '[-0.05, +0.30] n=120' beneath; with `units` (a viewer
    URL, `units_url`), the score links to the units behind it."""
    if isnan(p):
        return "—" if isnan(n) else f'— <span class="n">n={int(n)}</span>'
    extra = []
    if not isnan(lo) and not isnan(hi):
        extra.append(f"[{float(lo):+.2f}, {float(hi):+.2f}]")
    if not isnan(n):
        extra.append(f"n={int(n)}")
    v = f"{float(p):+.2f}"
    if units:
        v = f'<a class="units" href="{esc(units)}" title="the units behind this score, in the viewer">{v}</a>'
    return v + (f'<br><span class="n">{" ".join(extra)}</span>' if extra else "")


def fmt_score(p: Any, lo: Any = None, hi: Any = None, n: Any = None) -> str:
    if isnan(p):
        return "—" if isnan(n) else f"— (n={int(n)})"
    s = f"{float(p):+.2f}"
    if not isnan(lo) and not isnan(hi):
        s += f" [{float(lo):+.2f}, {float(hi):+.2f}]"
    return s + ("" if isnan(n) else f" n={int(n)}")


def _lead(h: pd.DataFrame, mean: dict[str, Any], names: ModelNames | None = None) -> str:
    """The lead sentence, as HTML without its closing full stop ("" when nothing is scored)."""
    base = h[h["setting"] == "none"] if (h["setting"] == "none").any() else h
    base = base[base["pcr_p"].notna()]
    if base.empty:
        return ""
    if len(base) == 1:
        r = base.iloc[0]
        s = (
            f"<b>{esc(r['model'])}</b> fully corrects the false presupposition in <b>{100 * r['pcr_p']:.1f}%</b> of "
            f"{int(r['pcr_n'])} scored questions (PCR; PCS {float(r['pcs_p']):+.2f} on -1 to 1)"
        )
    else:
        best = base.loc[base["pcr_p"].astype(float).idxmax()]
        agg = mean.get("none") or next(iter(mean.values()), {})
        s = (
            (
                f"Across {esc(entries_phrase(list(base['model']), names))}, PCR averages <b>{100 * agg['pcr']['mean']:.1f}%</b> (best: {esc(best['model'])}, "
                f"{100 * best['pcr_p']:.1f}%) and PCS {agg['pcs']['mean']:+.2f}"
            )
            if "pcr" in agg and "pcs" in agg
            else ""
        )
    if not s:
        return ""
    oc = base[base["overcaution_p"].notna()]
    if len(oc) == 1:
        s += f"; on questions without a false presupposition it claims one in {100 * oc.iloc[0]['overcaution_p']:.1f}% (over-caution)"
    elif len(oc) > 1:
        s += (
            f"; over-caution on questions without a false presupposition ranges from {100 * oc['overcaution_p'].min():.1f}% "
            f"to {100 * oc['overcaution_p'].max():.1f}%"
        )
    return s


def _units(r: dict[str, Any], condition: str | None, outcome: str | None = None, **facets: Any) -> str | None:
    """The viewer's URL of the units of `condition` (None: every condition) with `outcome` behind a
    number of row r (run, model, setting); with neither an outcome nor a score, the scored answers
    (a valid verdict: what PCS, PCR and over-caution count)."""
    if outcome is None and "score" not in facets:
        facets["state"] = "valid"
    return units_url(r.get("run", ""), r["model"], r["setting"], condition, outcome, **facets)


def _questions_units(r: dict[str, Any]) -> str | None:
    """The viewer's URL of the units behind a questions count: every unit of the model and setting
    (both conditions), when each question gave one unit (as many units as questions); None
    otherwise (a question asked twice: no filter holds one unit per question)."""
    units = r.get("units")
    if isnan(units) or isnan(r.get("n_items")) or int(units) != int(r["n_items"]):
        return None
    return units_url(r.get("run", ""), r["model"], r["setting"])


def key_numbers(h: pd.DataFrame, mean: dict[str, Any], names: ModelNames | None = None) -> str:
    """The opening: the lead sentence (its means one value per model's name, `names`: a model in
    several runs is one entry per run, and the sentence says so) and the headline table."""
    if h.empty:
        return "<p class='lead'>No scored results in these runs yet.</p>"
    rows = []
    for r in h.to_dict("records"):
        unscored = int(r.get("unscored_k") or 0)
        rows.append(
            [
                f"<b class='wrap'>{esc(r['model'])}</b>",
                esc(setting_name(r["setting"])),
                "—" if isnan(r.get("n_items")) else count_cell(int(r["n_items"]), _questions_units(r)),
                score_cell(r["pcs_p"], r["pcs_lo"], r["pcs_hi"], r["pcs_n"], units=_units(r, PRESUPPOSITION)),
                rate_cell(r["pcr_p"], r["pcr_lo"], r["pcr_hi"], r["pcr_n"], units=_units(r, PRESUPPOSITION)),
                rate_cell(r["overcaution_p"], r["overcaution_lo"], r["overcaution_hi"], r["overcaution_n"], units=_units(r, NFP)),
                f"<span class='warn'>{count_cell(unscored, _units(r, None, 'unscored'))}</span>" if unscored else "0",
                count_cell(r.get("units_errors") or 0, _units(r, None, "error")),
                count_cell(r.get("units_invalid") or 0, _units(r, None, "unread")),
            ]
        )
    headers = ["Model", "Setting", "Questions", "PCS (-1..1)", "PCR", "NFP over-caution", "Unscored", "Errors", "Invalid"]
    total = int(h["unscored_k"].fillna(0).sum())
    table_html = Markup(table(rows, headers, numeric=range(2, len(headers))))
    return str(_templates().key_numbers(TITLE, Markup(_lead(h, mean, names)), table_html, total))


def distribution_html(dist: pd.DataFrame) -> str:
    if dist.empty:
        return ""
    scores = sorted(set(dist["score"]), key=float)
    rows = []
    for (_run, model, setting), g in dist.groupby(["run", "model", "setting"], sort=False):
        by = g.set_index("score")
        r = g.iloc[0].to_dict()
        rows.append(
            [
                esc(model),
                esc(setting_name(setting)),
                # each share links to the scored answers judged that score
                *[
                    rate_cell(by.at[s, "p"], by.at[s, "lo"], by.at[s, "hi"], by.at[s, "n"], units=_units(r, PRESUPPOSITION, score=s)) if s in by.index else "—"
                    for s in scores
                ],
            ]
        )
    return table(rows, ["Model", "Setting", *[f"Score {esc(s)}" for s in scores]], numeric=range(2, 2 + len(scores)))


def strata_html(st: pd.DataFrame, what: str, facet: str) -> str:
    """One row per stratum (the probes' `facet` value), model and setting, each number linked to its units."""
    if st.empty:
        return f"<p class='note'>No {esc(what)} in these suites.</p>"
    rows = []
    for r in st.to_dict("records"):
        rows.append(
            [
                esc(r["title"]),
                esc(r["model"]),
                esc(setting_name(r["setting"])),
                score_cell(r["pcs_p"], r["pcs_lo"], r["pcs_hi"], r["pcs_n"], units=_units(r, PRESUPPOSITION, **{facet: r["stratum"]})),
                rate_cell(r["pcr_p"], r["pcr_lo"], r["pcr_hi"], r["pcr_n"], units=_units(r, PRESUPPOSITION, **{facet: r["stratum"]})),
                rate_cell(r["overcaution_p"], r["overcaution_lo"], r["overcaution_hi"], r["overcaution_n"], units=_units(r, NFP, **{facet: r["stratum"]})),
                count_cell(r["unscored_k"] or 0, _units(r, None, "unscored", **{facet: r["stratum"]})),
            ]
        )
    return table(rows, [esc(what.capitalize()), "Model", "Setting", "PCS", "PCR", "NFP over-caution", "Unscored"], numeric=range(3, 7))


def matrix_html(mx: pd.DataFrame) -> str:
    if mx.empty:
        return "<p class='note'>No generator recorded for these questions.</p>"
    rows = []
    for r in mx.to_dict("records"):
        rows.append(
            [
                esc(r["generator"]),
                esc(r["model"]) + (" <span class='badge'>own questions</span>" if r["own"] else ""),
                esc(setting_name(r["setting"])),
                score_cell(r["pcs_p"], r["pcs_lo"], r["pcs_hi"], r["pcs_n"], units=_units(r, PRESUPPOSITION, generator=r["generator"])),
                rate_cell(r["pcr_p"], r["pcr_lo"], r["pcr_hi"], r["pcr_n"], units=_units(r, PRESUPPOSITION, generator=r["generator"])),
            ]
        )
    return table(rows, ["Generator", "Evaluated model", "Setting", "PCS", "PCR"], numeric=(3, 4))


def unscored_html(h: pd.DataFrame, reasons: pd.DataFrame) -> str:
    total = int(h["unscored_k"].fillna(0).sum()) if not h.empty else 0
    judged = int(h["unscored_n"].fillna(0).sum()) if not h.empty else 0
    reasons_html = detail_html = ""
    if total and not reasons.empty:
        top = reasons.groupby("reason", sort=False)["n"].sum().sort_values(ascending=False, kind="stable").head(TOP_REASONS)
        # a reason's count over the runs links to its units when they are one run's (every model, setting and condition)
        runs = reasons["run"].unique()
        one_run = str(runs[0]) if len(runs) == 1 else None
        reasons_html = table(
            [[esc(short(reason, 300)), count_cell(n, units_url(one_run, None, reason=reason) if one_run else None)] for reason, n in top.items()],
            ["Most frequent reasons", "Units"],
            numeric=(1,),
        )
        detail = [
            [
                esc(r["model"]),
                esc(setting_name(r["setting"])),
                esc(r["condition"]),
                esc(short(r["reason"], 300)),
                count_cell(r["n"], units_url(r["run"], r["model"], r["setting"], r["condition"], reason=r["reason"])),
            ]
            for r in reasons.to_dict("records")
        ]
        detail_html = table(detail, ["Model", "Setting", "Condition", "Reason", "Units"], numeric=(4,))
    return str(_templates().unscored(total, judged, Markup(reasons_html), Markup(detail_html), len(reasons)))


def _templates() -> Any:
    return macros(__package__, "report.html.j2")


def section(runs: Sequence[Any], **_kw: Any) -> FamilySection:
    names = names_of(runs)
    blocks = model_blocks(runs)
    h = headline_table(blocks)
    dist = distribution_table(blocks)
    cat = strata_table(blocks, "by_category")
    gen = strata_table(blocks, "by_generator")
    mx = matrix_table(blocks)
    reasons = unscored_reasons(runs)
    agree, agree_notes = agreement_table(runs)
    merged: dict[str, dict[str, Any]] = {}
    for _run, model, setting, block in blocks:
        merged.setdefault(model, {})[setting] = block
    mean = mean_across_models(merged)
    figs = {"distribution": distribution_figure(dist), "category": category_figure(cat), "matrix": matrix_figure(mx), "tradeoff": tradeoff_figure(h)}
    svgs = {k: None if x is None else Markup(x) for k, x in figs.items()}
    body = _templates().section(
        svgs,
        Markup(distribution_html(dist)),
        Markup(strata_html(cat, "category", "category")),
        Markup(matrix_html(mx)),
        Markup(unscored_html(h, reasons)),
        agree_notes,
        Markup("" if agree.empty else agreement_html(agree)),
    )
    tables = {"headline": h, "distribution": dist, "by_category": cat, "by_generator": gen, "generator_matrix": mx, "unscored_reasons": reasons}
    if not agree.empty:
        tables["judge_agreement"] = agree
    return FamilySection(
        family=FAMILY,
        title=TITLE,
        key_html=key_numbers(h, mean, names),
        sections=[(FAMILY, TITLE, str(body))],
        markdown=_markdown(h, cat, mx, reasons, agree),
        tables=tables,
        headline=h,
        summary_columns=list(SUMMARY_COLUMNS),
    )


def _markdown(h: pd.DataFrame, cat: pd.DataFrame, mx: pd.DataFrame, reasons: pd.DataFrame, agree: pd.DataFrame) -> str:
    lines = [f"## {TITLE}", ""]
    if h.empty:
        return "\n".join([*lines, "No scored results.", ""])
    lines += [
        "PCS: mean judge score on -1..1 (95% percentile bootstrap CI); PCR and over-caution: 95% Wilson CI.",
        "",
        "| Model | Setting | PCS | PCR | NFP over-caution | Unscored | Errors |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in h.to_dict("records"):
        lines.append(
            f"| {r['model']} | {r['setting']} | {fmt_score(r['pcs_p'], r['pcs_lo'], r['pcs_hi'], r['pcs_n'])} | "
            f"{fmt_pct(r['pcr_p'], r['pcr_lo'], r['pcr_hi'], r['pcr_n'])} | "
            f"{fmt_pct(r['overcaution_p'], r['overcaution_lo'], r['overcaution_hi'], r['overcaution_n'])} | "
            f"{int(r['unscored_k'] or 0)} of {int(r['unscored_n'] or 0)} | {int(r['units_errors'] or 0)} |"
        )
    if not cat.empty:
        lines += ["", "### PCS by category", "", markdown_table(cat, ["title", "model", "setting", "pcs_p", "pcs_lo", "pcs_hi", "pcs_n", "pcr_p", "pcr_n"])]
    if not mx.empty:
        lines += ["", "### Generator x evaluated model", "", markdown_table(mx, ["generator", "model", "setting", "own", "pcs_p", "pcs_n", "pcr_p", "pcr_n"])]
    if not reasons.empty:
        top = reasons.groupby("reason", sort=False)["n"].sum().sort_values(ascending=False, kind="stable").head(TOP_REASONS)
        lines += ["", "### Unscored judgments (most frequent reasons)", ""] + [f"- {n}: {reason}" for reason, n in top.items()]
    if not agree.empty:
        lines += [
            "",
            "### Judge agreement with human scores (study: 71.1% exact, 100% binary)",
            "",
            markdown_table(agree, ["run", "title", "value", "lo", "hi", "n", "study"]),
        ]
    lines.append("")
    return "\n".join(lines)
