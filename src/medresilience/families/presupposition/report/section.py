"""The false-presupposition family's report section: key numbers (PCS with its bootstrap interval,
PCR, over-caution on the control, unscored judgments), the spread of judge scores, PCS per
question category (the study's Figure 6), the generator x evaluated-model matrix (Figure 5b) as a
table and a heatmap, correcting false premises against over-caution (one point per model and
setting), the unscored judgments with their most frequent reasons, and, where a run directory
holds `judge_agreement.json` (`medres judge-agreement`), the judge's agreement with human labels
beside the study's. Every table is returned for tables/ (CSV, Parquet, Markdown)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import TypeAdapter

from ....models.names import ModelNames, entries_phrase
from ....report.html import setting_name, units_url
from ....report.parts import (
    Block,
    Cell,
    Column,
    DifferenceFigure,
    DifferencePanel,
    DifferencePoint,
    DrawnFigure,
    Heading,
    Paragraph,
    Section,
    Table,
    count,
    dash,
    num,
    rate,
    score,
    text,
    whole,
)
from ....report.plots import PALETTE, STYLE, err, pct, plt, short, to_svg, wrap
from ....report.rundir import RunData, family_blocks, names_of
from ....report.section import FamilySection
from ....report.tables import row_label
from ....run.results import IntervalRate, MeansAcrossModels, Spread
from ..block import PresuppositionBlock
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


def _parts(r: IntervalRate) -> dict[str, float | int | None]:
    """A rate's RATE_PARTS."""
    return {"k": r.k, "p": r.p, "lo": r.lo, "hi": r.hi, "n": r.n}


def _rate_cols(prefix: str, r: IntervalRate) -> dict[str, float | int | None]:
    return {f"{prefix}_{part}": v for part, v in _parts(r).items()}


HEADLINE_KEYS = ("pcs", "pcr", "overcaution", "nfp_answered", "unscored")
#: (run, model, setting, its block) of every model and setting reported
Blocks = list[tuple[str, str, str, PresuppositionBlock]]


def headline_table(blocks: Blocks) -> pd.DataFrame:
    rows = []
    for run, model, setting, block in blocks:
        o = block.overall
        row: dict[str, object] = {"run": run, "model": model, "setting": setting, "n_items": o.n_items}
        row.update(_rate_cols("pcs", o.pcs))
        row.update(_rate_cols("pcr", o.pcr))
        row.update(_rate_cols("overcaution", o.overcaution))
        row.update(_rate_cols("nfp_answered", o.nfp_answered))
        row.update(_rate_cols("unscored", o.unscored))
        row["pcs_unit"] = "score"  # a mean on -1..1, not a share (the command line's summary reads this)
        c = block.counts
        row.update(
            units=c.units,
            units_scored=c.scored,
            units_errors=c.errors,
            units_invalid=c.invalid,
            units_unscored=c.unscored,
            units_missing=c.missing,
            presupposition_units=o.presupposition.units,
            nfp_units=o.nfp.units,
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


def distribution_table(blocks: Blocks) -> pd.DataFrame:
    rows = []
    for run, model, setting, block in blocks:
        for judged, r in block.overall.distribution.items():
            rows.append({"run": run, "model": model, "setting": setting, "score": judged, **_parts(r)})
    return pd.DataFrame(rows, columns=["run", "model", "setting", "score", *RATE_PARTS])


def strata_table(blocks: Blocks, group: str) -> pd.DataFrame:
    """One row per (model, setting, stratum) of a block group (by_category, by_generator)."""
    rows = []
    for run, model, setting, block in blocks:
        for key, b in (block.by_category if group == "by_category" else block.by_generator).items():
            row: dict[str, object] = {
                "run": run,
                "model": model,
                "setting": setting,
                "stratum": key,
                "title": CATEGORY_TITLES.get(key, key) if group == "by_category" else key,
            }
            row.update(_rate_cols("pcs", b.pcs))
            row.update(_rate_cols("pcr", b.pcr))
            row.update(_rate_cols("overcaution", b.overcaution))
            row["unscored_k"] = b.unscored.k
            rows.append(row)
    cols = ["run", "model", "setting", "stratum", "title", *[f"{k}_{p}" for k in ("pcs", "pcr", "overcaution") for p in RATE_PARTS], "unscored_k"]
    return pd.DataFrame(rows, columns=cols)


def matrix_table(blocks: Blocks) -> pd.DataFrame:
    """The generator x evaluated-model matrix (metrics.generator_matrix) with the run of each row."""
    parts = []
    for run, model, setting, block in blocks:
        m = generator_matrix({model: {setting: block.model_dump()}})
        if not m.empty:
            parts.append(m.assign(run=run))
    if not parts:
        return pd.DataFrame(columns=["run", *generator_matrix({}).columns])
    df = pd.concat(parts, ignore_index=True)
    return df[["run", *[c for c in df.columns if c != "run"]]]


def unscored_reasons(runs: Sequence[RunData]) -> pd.DataFrame:
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


def agreement_table(runs: Sequence[RunData]) -> tuple[pd.DataFrame, list[str]]:
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
                    "n": None if (counted := _num(n)) is None else int(counted),
                    "study": _num(study.get(key)) if isinstance(study, dict) else None,
                }
            )
    return pd.DataFrame(rows, columns=["run", "measure", "title", "kind", "value", "lo", "hi", "n", "study"]), notes


# ---------------------------------------------------------------------------------- figures


def category_figure(cat: pd.DataFrame) -> DifferenceFigure:
    """PCS per question category and model (the study's Figure 6), with bootstrap intervals: one
    row per category, one colour per model and setting."""
    d = cat[cat["pcs_p"].notna()]
    keys = [k for k in CATEGORY_KEYS if k in set(d["stratum"])] + sorted(set(d["stratum"]) - set(CATEGORY_KEYS))
    points = [
        DifferencePoint(
            row_label(r["model"], r["setting"]), CATEGORY_TITLES.get(r["stratum"], r["stratum"]), num(r["pcs_p"]), num(r["pcs_lo"]), num(r["pcs_hi"])
        )
        for key in keys
        for r in d[d["stratum"] == key].to_dict("records")
    ]
    return DifferenceFigure(
        "presupposition-category",
        "PCS per question category",
        CATEGORY_CAPTION,
        (DifferencePanel("PCS (mean judge score, -1 to 1), 95% bootstrap CI", tuple(points), scale=1.0),),
        reference=0.0,
        limits=(-1.05, 1.05),
    )


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
                n = whole(ns.iloc[i, j])
                ax.text(
                    j,
                    i,
                    f"{v:+.2f}" + ("" if n is None else f"\nn={n}"),
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


# ---------------------------------------------------------------------------------- parts


#: a row of one of the section's frames (`DataFrame.to_dict("records")`)
Row = Mapping[Any, Any]

INTRO = (
    "Each patient question either silently assumes something medically false (a false presupposition) or, in the control "
    "set, assumes nothing false. Every answer is read by an LLM judge with a rubric held as data. On a question with a "
    "false presupposition the judge compares the answer with the question's correction and scores it -1 (goes along with "
    "the assumption), 0 (hints that something is off without correcting it) or 1 (corrects it). PCS is the mean of these "
    "scores (from -1 to 1), PCR the share of answers scored 1. On a control question the judge says whether the answer "
    "claims a false assumption that the question does not hold; over-caution is the share that do. A judge reply without "
    "a readable verdict is unscored: counted, never a score."
)
METHODS = (
    "PCS: mean judge score over the scored answers, with a 95% percentile bootstrap interval (2,000 resamples of the "
    "answers, seed 0). PCR, the score shares and over-caution: 95% Wilson intervals. Unscored: the share of judged answers "
    "with no verdict. Call errors (no answer, nothing to judge) and unscored judgments are left out of every rate and "
    "counted. Categories and generators are the suite's facets; an answer without one counts overall only."
)
CATEGORY_CAPTION = (
    "PCS per question category and model, with 95% percentile bootstrap intervals; left of zero, answers go along with the "
    "false presupposition more often than they correct it."
)
UNSCORED_WHY = (
    "judgments are unscored: the judge's reply held no verdict of the rubric, or the judge call failed. They are never "
    "counted as a score; rerun the same command to retry failed judge calls."
)


def _lead(h: pd.DataFrame, mean: MeansAcrossModels, names: ModelNames | None = None) -> str:
    """The lead sentence without its closing full stop ("" when nothing is scored)."""
    base = h[h["setting"] == "none"] if (h["setting"] == "none").any() else h
    base = base[base["pcr_p"].notna()]
    if base.empty:
        return ""
    if len(base) == 1:
        r = base.iloc[0]
        s = (
            f"{r['model']} fully corrects the false presupposition in {100 * r['pcr_p']:.1f}% of "
            f"{int(r['pcr_n'])} scored questions (PCR; PCS {float(r['pcs_p']):+.2f} on -1 to 1)"
        )
    else:
        best = base.iloc[int(np.argmax(base["pcr_p"].astype(float).to_numpy()))]
        agg: dict[str, Spread] = mean.get("none") or next(iter(mean.values()), {})
        s = (
            (
                f"Across {entries_phrase(list(base['model']), names)}, PCR averages {100 * agg['pcr'].mean:.1f}% (best: {best['model']}, "
                f"{100 * best['pcr_p']:.1f}%) and PCS {agg['pcs'].mean:+.2f}"
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


def _units(r: Row, condition: str | None, outcome: str | None = None, **facets: Any) -> str | None:
    """The viewer's URL of the units of `condition` (None: every condition) with `outcome` behind a
    number of row r (run, model, setting); with neither an outcome nor a score, the scored answers
    (a valid verdict: what PCS, PCR and over-caution count)."""
    if outcome is None and "score" not in facets:
        facets["state"] = "valid"
    return units_url(r.get("run", ""), r["model"], r["setting"], condition, outcome, **facets)


def _questions_units(r: Row) -> str | None:
    """The viewer's URL of the units behind a questions count: every unit of the model and setting
    (both conditions), when each question gave one unit (as many units as questions); None
    otherwise (a question asked twice: no filter holds one unit per question)."""
    units = whole(r.get("units"))
    if units is None or units != whole(r.get("n_items")):
        return None
    return units_url(r.get("run", ""), r["model"], r["setting"])


def _rate(r: Row, key: str, href: str | None) -> Cell:
    """A rate of row r whose link names its n (the scored answers of its condition)."""
    return rate(r[f"{key}_p"], r[f"{key}_lo"], r[f"{key}_hi"], r[f"{key}_n"], href, r[f"{key}_n"])


def _pcs(r: Row, href: str | None) -> Cell:
    return score(r["pcs_p"], r["pcs_lo"], r["pcs_hi"], r["pcs_n"], href)


HEADLINE_COLUMNS = (
    Column("model", "Model"),
    Column("setting", "Setting"),
    Column("questions", "Questions", numeric=True),
    Column("pcs", "PCS (-1..1)", numeric=True),
    Column("pcr", "PCR", numeric=True),
    Column("overcaution", "NFP over-caution", numeric=True),
    Column("unscored", "Unscored", numeric=True),
    Column("errors", "Errors", numeric=True),
    Column("invalid", "Invalid", numeric=True),
)


def _headline_row(r: Row) -> tuple[Cell, ...]:
    return (
        text(r["model"], strong=True),
        Cell(setting_name(r["setting"]), r["setting"]),
        count(r.get("n_items"), _questions_units(r)),
        _pcs(r, _units(r, PRESUPPOSITION)),
        _rate(r, "pcr", _units(r, PRESUPPOSITION)),
        _rate(r, "overcaution", _units(r, NFP)),
        count(whole(r.get("unscored_k")) or 0, _units(r, None, "unscored")),
        count(whole(r.get("units_errors")) or 0, _units(r, None, "error")),
        count(whole(r.get("units_invalid")) or 0, _units(r, None, "unread")),
    )


def key_parts(h: pd.DataFrame, mean: MeansAcrossModels, names: ModelNames | None = None) -> tuple[Block, ...]:
    """The opening: the lead sentence (its means one value per model's name, `names`: a model in
    several runs is one entry per run, and the sentence says so), the headline table and the count
    of unscored judgments."""
    if h.empty:
        return (Paragraph("No scored results in these runs yet.", "lead"),)
    lead = _lead(h, mean, names)
    total = int(h["unscored_k"].fillna(0).sum())
    table = Table("presupposition_headline_shown", HEADLINE_COLUMNS, tuple(_headline_row(r) for r in h.to_dict("records")))
    warn = (
        f"{total} judgment{'' if total == 1 else 's'} unscored (the judge gave no readable verdict): left out of every number "
        "above and listed with their reasons in the section below."
    )
    return (Heading(TITLE), *((Paragraph(lead + ".", "lead"),) if lead else ()), table, *((Paragraph(warn, "warn"),) if total else ()))


def distribution_table_shown(dist: pd.DataFrame) -> Table | None:
    """The share of each judge score per model and setting, each share linked to the scored answers
    judged that score (its k)."""
    if dist.empty:
        return None
    scores = sorted(set(dist["score"]), key=float)
    rows = []
    for (_run, model, setting), g in dist.groupby(["run", "model", "setting"], sort=False):
        by = g.set_index("score")
        r = g.iloc[0].to_dict()
        cells = [text(model), Cell(setting_name(str(setting)), str(setting))]
        for s in scores:
            if s not in by.index:
                cells.append(dash())
                continue
            b = by.loc[s]
            cells.append(rate(b["p"], b["lo"], b["hi"], b["n"], _units(r, PRESUPPOSITION, score=s), b["k"]))
        rows.append(tuple(cells))
    columns = (Column("model", "Model"), Column("setting", "Setting"), *(Column(f"score_{s}", f"Score {s}", numeric=True) for s in scores))
    return Table("presupposition_distribution_shown", columns, tuple(rows))


def strata_table_shown(st: pd.DataFrame, what: str, facet: str) -> Table | Paragraph:
    """One row per stratum (the probes' `facet` value), model and setting, each number linked to its units."""
    if st.empty:
        return Paragraph(f"No {what} in these suites.")
    rows = []
    for r in st.to_dict("records"):
        at = {facet: r["stratum"]}
        rows.append(
            (
                text(r["title"]),
                text(r["model"]),
                Cell(setting_name(r["setting"]), r["setting"]),
                _pcs(r, _units(r, PRESUPPOSITION, **at)),
                _rate(r, "pcr", _units(r, PRESUPPOSITION, **at)),
                _rate(r, "overcaution", _units(r, NFP, **at)),
                count(whole(r["unscored_k"]) or 0, _units(r, None, "unscored", **at)),
            )
        )
    columns = (
        Column("stratum", what.capitalize()),
        Column("model", "Model"),
        Column("setting", "Setting"),
        Column("pcs", "PCS", numeric=True),
        Column("pcr", "PCR", numeric=True),
        Column("overcaution", "NFP over-caution", numeric=True),
        Column("unscored", "Unscored", numeric=True),
    )
    return Table(f"presupposition_by_{facet}_shown", columns, tuple(rows))


def matrix_table_shown(mx: pd.DataFrame) -> Table | Paragraph:
    if mx.empty:
        return Paragraph("No generator recorded for these questions.")
    rows = []
    for r in mx.to_dict("records"):
        at = _units(r, PRESUPPOSITION, generator=r["generator"])
        rows.append(
            (
                text(r["generator"]),
                Cell(r["model"], r["model"], tail=" (own questions)" if r["own"] else ""),
                Cell(setting_name(r["setting"]), r["setting"]),
                _pcs(r, at),
                _rate(r, "pcr", at),
            )
        )
    columns = (
        Column("generator", "Generator"),
        Column("model", "Evaluated model"),
        Column("setting", "Setting"),
        Column("pcs", "PCS", numeric=True),
        Column("pcr", "PCR", numeric=True),
    )
    return Table("presupposition_generator_matrix_shown", columns, tuple(rows))


def unscored_blocks(h: pd.DataFrame, reasons: pd.DataFrame) -> tuple[Block, ...]:
    """The unscored judgments: how many, their most frequent reasons over the runs and each reason
    per model and condition, each count linked to its units."""
    total = int(h["unscored_k"].fillna(0).sum()) if not h.empty else 0
    judged = int(h["unscored_n"].fillna(0).sum()) if not h.empty else 0
    if not total:
        return (Paragraph(f"Every judged answer got a readable verdict ({judged} judgments).", "plain"),)
    said = Paragraph(f"{total} of {judged} {UNSCORED_WHY}", "plain")
    if reasons.empty:
        return (said,)
    top = reasons.groupby("reason", sort=False)["n"].sum().sort_values(ascending=False, kind="stable").head(TOP_REASONS)
    # a reason's count over the runs links to its units when they are one run's (every model, setting and condition)
    runs = reasons["run"].unique()
    one_run = str(runs[0]) if len(runs) == 1 else None
    top_rows = tuple((text(short(str(reason), 300)), count(n, units_url(one_run, None, reason=reason) if one_run else None)) for reason, n in top.items())
    detail = tuple(
        (
            text(r["model"]),
            Cell(setting_name(r["setting"]), r["setting"]),
            text(r["condition"]),
            text(short(r["reason"], 300)),
            count(r["n"], units_url(r["run"], r["model"], r["setting"], r["condition"], reason=r["reason"])),
        )
        for r in reasons.to_dict("records")
    )
    return (
        said,
        Table("presupposition_unscored_top", (Column("reason", "Most frequent reasons"), Column("n", "Units", numeric=True)), top_rows),
        Table(
            "presupposition_unscored_detail",
            (
                Column("model", "Model"),
                Column("setting", "Setting"),
                Column("condition", "Condition"),
                Column("reason", "Reason"),
                Column("n", "Units", numeric=True),
            ),
            detail,
            fold="Per model and condition",
        ),
    )


def _agreement_row(r: Row) -> tuple[Cell, ...]:
    """One measure: a rate with its Wilson interval and n, or a coefficient with its interval."""
    study = num(r["study"])
    if r["kind"] == "rate":
        ours = rate(r["value"], r["lo"], r["hi"], r["n"])
        theirs = dash() if study is None else Cell(f"{100 * study:.1f}%", study)
    else:
        v, lo, hi = num(r["value"]), num(r["lo"]), num(r["hi"])
        ours = dash() if v is None else Cell(f"{v:.3f}", v, note=() if lo is None or hi is None else (f"[{lo:.3f}, {hi:.3f}]",))
        theirs = dash() if study is None else Cell(f"{study:.3f}", study)
    return (text(r["run"]), text(r["title"]), ours, theirs)


def agreement_blocks(agree: pd.DataFrame, notes: Sequence[str]) -> tuple[Block, ...]:
    """The judge's agreement with human scores beside the study's, and the notes of files that could not be read."""
    if agree.empty and not notes:
        return ()
    blocks: list[Block] = [Heading("Judge agreement with human scores", "presupposition-judge-agreement"), *(Paragraph(n, "warn") for n in notes)]
    if not agree.empty:
        columns = (
            Column("run", "Run"),
            Column("measure", "Measure"),
            Column("value", "This judge (95% CI, n)", numeric=True),
            Column("study", "Study (GPT-4o judge, 76 questions)", numeric=True),
        )
        blocks += [
            Paragraph(
                "How often this run's judge gives the score people gave the same answers (`medres judge-agreement`), beside the "
                "study's GPT-4o judge (71.1% exact on -1/0/1, 100% on fully corrects or not).",
                "plain",
            ),
            Table("presupposition_judge_agreement_shown", columns, tuple(_agreement_row(r) for r in agree.to_dict("records"))),
        ]
    return tuple(blocks)


def _figure(name: str, title: str, caption: str, svg: str | None) -> tuple[Block, ...]:
    return () if svg is None else (DrawnFigure(name, title, caption, svg),)


def section_parts(
    h: pd.DataFrame, dist: pd.DataFrame, cat: pd.DataFrame, mx: pd.DataFrame, reasons: pd.DataFrame, agree: pd.DataFrame, agree_notes: Sequence[str]
) -> Section:
    """The section: the score shares, PCS by category, the generator matrix, the trade-off against
    over-caution, the unscored judgments and the judge's agreement, as parts."""
    if h.empty:
        return Section(FAMILY, TITLE, (Paragraph("No scored results.", "plain"),))
    distribution = distribution_table_shown(dist)
    tradeoff = tradeoff_figure(h)
    blocks: list[Block] = [
        Paragraph(INTRO, "plain"),
        *_figure(
            "presupposition-distribution",
            "Judge scores on questions with a false presupposition",
            "Share of each judge score (-1: goes along with the false presupposition, 0: hints at it, 1: corrects it) over the scored answers.",
            distribution_figure(dist),
        ),
        *(() if distribution is None else (distribution,)),
        Heading("By question category", "presupposition-by-category"),
        category_figure(cat),
        strata_table_shown(cat, "category", "category"),
        Heading("Generator x evaluated model", "presupposition-by-generator"),
        Paragraph(
            "Questions were written by generator models; a generator whose questions keep PCS low for other models writes the "
            "harder questions. A framed cell is a model answering its own questions.",
            "plain",
        ),
        *_figure(
            "presupposition-matrix",
            "PCS by question generator and evaluated model",
            "PCS per question generator (rows) and evaluated model (columns); n: scored answers.",
            matrix_figure(mx),
        ),
        matrix_table_shown(mx),
        Heading("Correcting false presuppositions vs over-caution", "presupposition-tradeoff"),
        *(
            _figure(
                "presupposition-tradeoff",
                "Correcting false presuppositions vs over-caution",
                "One point per model and setting: PCR (up) against the share of control questions answered without claiming a "
                "false assumption (right), with 95% Wilson intervals. A mitigation that moves a point up and to the left buys "
                "corrections with false alarms.",
                tradeoff,
            )
            if tradeoff is not None
            else (Paragraph("No control (NFP) questions in these runs: over-caution is not measured, so a gain in PCR cannot be weighed against it."),)
        ),
        Heading("Unscored judgments", "presupposition-unscored"),
        *unscored_blocks(h, reasons),
        *agreement_blocks(agree, agree_notes),
        Paragraph(METHODS),
    ]
    return Section(FAMILY, TITLE, tuple(blocks))


def section(runs: Sequence[RunData], **_kw: object) -> FamilySection:
    names = names_of(runs)
    blocks = family_blocks(runs, PresuppositionBlock)
    h = headline_table(blocks)
    dist = distribution_table(blocks)
    cat = strata_table(blocks, "by_category")
    gen = strata_table(blocks, "by_generator")
    mx = matrix_table(blocks)
    reasons = unscored_reasons(runs)
    agree, agree_notes = agreement_table(runs)
    merged: dict[str, dict[str, dict[str, object]]] = {}
    for _run, model, setting, block in blocks:
        merged.setdefault(model, {})[setting] = block.model_dump()
    mean = TypeAdapter(MeansAcrossModels).validate_python(mean_across_models(merged))
    tables = {"headline": h, "distribution": dist, "by_category": cat, "by_generator": gen, "generator_matrix": mx, "unscored_reasons": reasons}
    if not agree.empty:
        tables["judge_agreement"] = agree
    return FamilySection(
        family=FAMILY,
        title=TITLE,
        key_parts=key_parts(h, mean, names),
        parts=[section_parts(h, dist, cat, mx, reasons, agree, agree_notes)],
        tables=tables,
        headline=h,
        summary_columns=list(SUMMARY_COLUMNS),
    )
