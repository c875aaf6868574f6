"""The clinical-noise family's report section: key numbers (accuracy on the original case and on
each variant), the red-herring dose curve (0 / 1 / 5 / 10 sentences distributed, the block of 10
and the whitespace control in one plot), the paired drop per variant, one table per variant with
its tests, and per-epoch accuracy (mean and spread across epochs) when a run repeated its units,
as report parts; the frames they are written from go to tables/."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pydantic import TypeAdapter

from ....models.names import ModelNames, entries_phrase
from ....records import CLEAN
from ....report.html import items_url, rate_units, setting_name, units_url
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
    change,
    count,
    dash,
    num,
    p_value,
    paired_test,
    rate,
    text,
    whole,
)
from ....report.plots import PALETTE, STYLE, err, pct, plt, short, to_svg
from ....report.rundir import RunData, family_blocks, names_of
from ....report.section import FamilySection
from ....report.tables import row_label
from ....run.results import IntervalRate, MeansAcrossModels, Spread
from ..block import NoiseBlock, Variant
from ..metrics import mean_across_models
from ..taxonomy import CONDITIONS, DISTRIBUTED, DOSES, FAMILY, HEADLINE_COLUMNS, HERRINGS, TITLES, TOGETHER, WHITESPACE, facets_of

TITLE = "Clinical noise"
RATE_PARTS = ("p", "lo", "hi", "n")


#: (run, model, setting, its block) of every model and setting reported
Blocks = list[tuple[str, str, str, NoiseBlock]]


def _parts(prefix: str, r: IntervalRate | None) -> dict[str, float | int | None]:
    """A rate's RATE_PARTS under `prefix` (None each where the rate is absent)."""
    if r is None:
        return {f"{prefix}_{part}": None for part in RATE_PARTS}
    return {f"{prefix}_p": r.p, f"{prefix}_lo": r.lo, f"{prefix}_hi": r.hi, f"{prefix}_n": r.n}


def headline_table(blocks: Blocks) -> pd.DataFrame:
    rows = []
    for run, model, setting, block in blocks:
        o = block.overall
        row: dict[str, object] = {"run": run, "model": model, "setting": setting, "n_items": o.n_items}
        for k, _ in HEADLINE_COLUMNS:
            row.update(_parts(k, o.rate(k)))
        c = block.counts
        row.update(
            units=c.units,
            units_errors=c.errors,
            units_invalid=c.invalid,
            units_truncated=c.truncated,
            units_unscored=c.unscored,
        )
        rows.append(row)
    cols = [
        "run",
        "model",
        "setting",
        "n_items",
        *[f"{k}_{p}" for k, _ in HEADLINE_COLUMNS for p in RATE_PARTS],
        "units",
        "units_errors",
        "units_invalid",
        "units_truncated",
        "units_unscored",
    ]
    return pd.DataFrame(rows, columns=cols)


#: the columns of the variants table, in order
VARIANT_COLUMNS = [
    "run",
    "model",
    "setting",
    "condition",
    "perturbation",
    "dose",
    "placement",
    "acc_p",
    "acc_lo",
    "acc_hi",
    "acc_n",
    "acc_interval",
    "invalid",
    "truncated",
    "unscored",
    "errors",
    "original_p",
    "original_n",
    "drop",
    "odds_ratio",
    "p_fisher",
    "pairs",
    "b",
    "c",
    "test",
    "p_mcnemar",
    "paired_drop",
    "paired_lo",
    "paired_hi",
    "flip_p",
    "flip_lo",
    "flip_hi",
    "flip_n",
    "flip_read_p",
    "flip_read_lo",
    "flip_read_hi",
    "flip_read_n",
]


def _clean_row(run: str, model: str, setting: str, block: NoiseBlock) -> dict[str, object]:
    """The original case's accuracy of one model and setting (dose 0)."""
    clean = block.overall.clean_acc
    return {
        "run": run,
        "model": model,
        "setting": setting,
        "condition": "clean",
        "perturbation": None,
        "dose": "0",
        "placement": None,
        "acc_p": clean.p,
        "acc_lo": clean.lo,
        "acc_hi": clean.hi,
        "acc_n": clean.n,
        "acc_interval": clean.interval,
        "invalid": clean.invalid,
        "truncated": clean.truncated,
        "unscored": clean.unscored,
        "errors": clean.errors,
    }


def _variant_row(run: str, model: str, setting: str, cond: str, v: Variant) -> dict[str, object]:
    """One variant's accuracy, its drop from the original case (Fisher), the paired test and flips."""
    a, d, pr, f, fr = v.acc, v.drop, v.paired, v.flip, v.flip_read
    return {
        "run": run,
        "model": model,
        "setting": setting,
        "condition": cond,
        "perturbation": v.facets.get("perturbation"),
        "dose": v.facets.get("dose"),
        "placement": v.facets.get("placement"),
        "acc_p": a.p,
        "acc_lo": a.lo,
        "acc_hi": a.hi,
        "acc_n": a.n,
        "invalid": a.invalid,
        "truncated": a.truncated,
        "unscored": a.unscored,
        "errors": a.errors,
        "acc_interval": a.interval,
        "original_p": d.original.p,
        "original_n": d.original.n,
        "drop": d.diff,
        "odds_ratio": d.odds_ratio,
        "p_fisher": d.p_fisher,
        "pairs": pr.n,
        "b": pr.b,
        "c": pr.c,
        "test": pr.test,
        "p_mcnemar": pr.p_mcnemar,
        "paired_drop": pr.drop,
        "paired_lo": pr.lo,
        "paired_hi": pr.hi,
        "flip_p": f.p,
        "flip_lo": f.lo,
        "flip_hi": f.hi,
        "flip_n": f.n,
        "flip_read_p": fr.p,
        "flip_read_lo": fr.lo,
        "flip_read_hi": fr.hi,
        "flip_read_n": fr.n,
    }


def variants_table(blocks: Blocks) -> pd.DataFrame:
    rows = []
    for run, model, setting, block in blocks:
        rows.append(_clean_row(run, model, setting, block))
        rows.extend(_variant_row(run, model, setting, cond, v) for cond, v in block.by_variant.items())
    return pd.DataFrame(rows, columns=VARIANT_COLUMNS)


def epochs_table(blocks: Blocks) -> pd.DataFrame:
    """One row per run, model, setting, condition and epoch: that epoch's accuracy, with the mean
    and standard deviation across the epochs; empty when every run answered once."""
    rows = []
    for run, model, setting, block in blocks:
        o = block.overall
        if (o.n_epochs or 1) < 2:
            continue
        per_cond = [("clean", o.clean_epochs), *((c, v.epochs) for c, v in block.by_variant.items())]
        for cond, ep in per_cond:
            for e in ep.per_epoch:
                rows.append(
                    {
                        "run": run,
                        "model": model,
                        "setting": setting,
                        "condition": cond,
                        "epoch": e.epoch,
                        "acc_p": e.p,
                        "acc_k": e.k,
                        "acc_n": e.n,
                        "mean": ep.mean,
                        "sd": ep.sd,
                        "epochs": ep.n,
                    }
                )
    return pd.DataFrame(rows, columns=["run", "model", "setting", "condition", "epoch", "acc_p", "acc_k", "acc_n", "mean", "sd", "epochs"])


def epochs_table_shown(e: pd.DataFrame) -> Table:
    """The per-epoch table: each condition's mean +- sd across epochs, then each epoch's accuracy."""
    epochs = sorted(set(e["epoch"]))
    rows = []
    for (model, setting, cond), g in e.groupby(["model", "setting", "condition"], sort=False):
        by = {int(r["epoch"]): r for r in g.to_dict("records")}
        first = g.iloc[0]
        mean, sd = num(first["mean"]), num(first["sd"])
        spread = "—" if sd is None else f"± {100 * sd:.1f}"
        shown = "—" if mean is None else f"{100 * mean:.1f}%"
        per_epoch = [
            dash() if ep not in by or num(by[ep]["acc_p"]) is None else Cell(f"{100 * by[ep]['acc_p']:.1f}% (n={by[ep]['acc_n']})", float(by[ep]["acc_p"]))
            for ep in epochs
        ]
        rows.append(
            (
                text(model),
                Cell(setting_name(str(setting)), str(setting)),
                Cell(TITLES.get(str(cond), "Original" if cond == "clean" else str(cond)), str(cond)),
                Cell(f"{shown} {spread}", mean, data={"sd": sd}),
                *per_epoch,
            )
        )
    columns = (
        Column("model", "Model"),
        Column("setting", "Setting"),
        Column("condition", "Variant"),
        Column("mean", "Mean ± sd across epochs", numeric=True),
        *(Column(f"epoch_{ep}", f"Epoch {ep}", numeric=True) for ep in epochs),
    )
    return Table("noise_epochs_shown", columns, tuple(rows))


# ---------------------------------------------------------------------------------- figures


def dose_figure(v: pd.DataFrame) -> str | None:
    """Accuracy against the number of red herrings (0 = the original): distributed (line), the
    block of 10 (square) and the whitespace control (triangle), per model; 95% intervals (Wilson, or case-clustered bootstrap with epochs)."""
    wanted = ["clean", *DISTRIBUTED, TOGETHER, WHITESPACE]
    d = v[v["condition"].isin(wanted)]
    if d[d["condition"] != "clean"].empty:
        return None
    title = "Red herrings: accuracy by number of sentences"
    rows = list(dict.fromkeys(zip(d["model"], d["setting"])))
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(8.6, 4.8), layout="constrained")
        for j, (model, setting) in enumerate(rows):
            colour = PALETTE[j % len(PALETTE)]
            sub = d[(d["model"] == model) & (d["setting"] == setting)].set_index("condition")
            line = [c for c in ("clean", *DISTRIBUTED) if c in sub.index]
            xs = np.array([0 if c == "clean" else DOSES[c] for c in line], dtype=float)
            p, lo, hi = (sub.loc[line, k].map(pct).to_numpy(dtype=float) for k in ("acc_p", "acc_lo", "acc_hi"))
            ax.errorbar(
                xs,
                p,
                yerr=err(p, lo, hi),
                fmt="-o",
                color=colour,
                ecolor=colour,
                elinewidth=1,
                capsize=3,
                ms=5,
                label=short(row_label(model, setting), 34),
                zorder=3,
            )
            for cond, marker, dx in ((TOGETHER, "s", 0.35), (WHITESPACE, "^", -0.35)):
                if cond in sub.index:
                    pp, ll, hh = (np.array([pct(sub.loc[cond, k])], dtype=float) for k in ("acc_p", "acc_lo", "acc_hi"))
                    ax.errorbar(
                        [HERRINGS + dx],
                        pp,
                        yerr=err(pp, ll, hh),
                        fmt=marker,
                        color=colour,
                        ecolor=colour,
                        mfc="white" if cond == WHITESPACE else colour,
                        elinewidth=1,
                        capsize=3,
                        ms=7,
                        zorder=4,
                    )
        ax.errorbar([], [], fmt="-o", color="#555", label="distributed (line)")
        ax.errorbar([], [], fmt="s", color="#555", label="10 as one block")
        ax.errorbar([], [], fmt="^", color="#555", mfc="white", label="whitespace control")
        ax.set_xticks([0, 1, 5, 10], ["0\n(original)", "1", "5", "10"])
        ax.set_xlim(-0.8, 11.2)
        ax.set_ylim(0, 105)
        ax.set_xlabel("Red-herring sentences inserted")
        ax.set_ylabel("Accuracy (%), 95% CI")
        ax.set_title(title)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=9)
        return to_svg(fig, "noise-dose", title)


def drop_figure(v: pd.DataFrame) -> DifferenceFigure:
    """Paired drop (original minus variant, percentage points) per variant and model, with the
    item-clustered bootstrap interval."""
    d = v[(v["condition"] != "clean") & v["paired_drop"].notna()]
    conds = [c for c in CONDITIONS if c in set(d["condition"])] + sorted(set(d["condition"]) - set(CONDITIONS))
    points = [
        DifferencePoint(row_label(r["model"], r["setting"]), TITLES.get(str(c), str(c)), num(r["paired_drop"]), num(r["paired_lo"]), num(r["paired_hi"]))
        for c in conds
        for r in d[d["condition"] == c].to_dict("records")
    ]
    return DifferenceFigure(
        "noise-drop",
        "Paired accuracy drop per variant (original minus variant)",
        DROP_CAPTION,
        (DifferencePanel("Drop in accuracy (percentage points), 95% case-clustered bootstrap CI", tuple(points)),),
    )


# ---------------------------------------------------------------------------------- parts

INTRO = (
    "Each diagnosis case is asked as written (the original) and perturbed: with 1, 5 or 10 irrelevant sentences about the "
    "patient's everyday life spread over its sentence boundaries, with the same 10 as one block, with whitespace of the same "
    "length in their place (the control for a longer prompt), with clinical abbreviations, and rewritten as an informal "
    "note. Each variant is compared with the original on the same cases."
)
DOSE_CAPTION = (
    "Accuracy against the number of red-herring sentences (0: the original case); squares: the 10 as one block, open "
    "triangles: whitespace of the same length. Error bars: 95% Wilson intervals (case-clustered bootstrap ones when cases "
    "were answered in several epochs)."
)
DROP_CAPTION = (
    "Paired drop from the original per variant, in percentage points; error bars: 95% item-clustered bootstrap intervals. "
    "Right of zero: the variant is answered worse."
)
VARIANTS_NOTE = (
    "Accuracy: correct over answered units (an unreadable reply counts as wrong and is counted: invalid, or truncated when "
    "it was cut at its token budget; a judge without a verdict is unscored and left out, counted), with 95% Wilson "
    "intervals when each case was answered once and case-clustered bootstrap intervals when a case was answered several "
    "times (epochs). Drop: the accuracy of the originals of the same cases (the cases the variant covers) minus the "
    "variant's, with the study's one-sided Fisher exact test, which compares the two as unpaired groups and pools the "
    "epochs (highlighted rows: p < 0.05). Paired drop: over the (case, epoch) pairs answered both ways, mean of original "
    "minus variant correctness, with a 95% bootstrap interval that resamples cases; b / c: right on the original and wrong "
    "on the variant / the reverse, tested by the exact McNemar test, or by the clustered McNemar test (Durkalski) when a "
    "case gives several pairs. Flip rate: among pairs answered right on the original, the share answered wrong on the "
    "variant (interval as for accuracy); beside it the same rate with the pairs whose variant reply was unread (invalid or "
    "truncated) left out. p-values come only from exact or clustered tests; the bootstrap gives intervals."
)
EPOCHS_NOTE = (
    "Each unit was answered once per epoch (epoch e decodes with seed + e at the run's temperature). The accuracies above "
    "pool the epochs; here each epoch alone, with the mean and standard deviation across epochs (the study reports the mean "
    "of 3 runs)."
)

#: the viewer's outcome of the units behind each rate (accuracy: every answered unit of the variant)
OUTCOMES = {"flip": "flip", "flip_read": "flip_read", "recovered": "recovered"}
#: a row of one of the section's frames (`DataFrame.to_dict("records")`)
Row = Mapping[Any, Any]


def _units(r: Row, key: str) -> str | None:
    """The viewer's URL of the units behind rate `key` (variant_rate) of row r (run, model, setting)."""
    variant, _, rate_key = key.partition("_")
    return rate_units(r.get("run", ""), r["model"], r["setting"], variant, OUTCOMES.get(rate_key))


def _rate(r: Row, key: str, prefix: str | None = None) -> Cell:
    """Rate `key` (variant_rate) of row r, its columns named `prefix` (default: the key), linked to
    the units it counts: its k for a rate of an outcome (flips), its n for an accuracy."""
    prefix = prefix or key
    p, lo, hi, n = (r.get(f"{prefix}_{x}") for x in ("p", "lo", "hi", "n"))
    fp, nn = num(p), whole(n)
    units = None if fp is None or nn is None else (nn if OUTCOMES.get(key.partition("_")[2]) is None else round(fp * nn))
    return rate(p, lo, hi, n, _units(r, key), units)


def _originals(r: Row, variant: str) -> str | None:
    """The viewer's URL of the originals of the cases a variant covers (the clean units of the items
    with a unit of the variant's facets: scope=item), answered: the study's baseline of its drop."""
    try:
        facets = {k: v for k, v in facets_of(variant).items() if v is not None}
    except ValueError:  # a variant this version does not know: no facets to select its cases by
        return None
    return rate_units(r.get("run", ""), r["model"], r["setting"], CLEAN, **facets, scope="item")


def _lead(h: pd.DataFrame, mean: MeansAcrossModels, names: ModelNames | None) -> tuple[Block, ...]:
    """The mean drop of ten red herrings across models (one value per model's name, `names`: a model
    in several runs is one entry per run, and the sentence says so), and the whitespace control's."""
    setting = "none" if "none" in mean else next(iter(mean), "none")
    agg: dict[str, Spread] = mean.get(setting, {})
    rh, ws = agg.get("redherring-10_drop"), agg.get("whitespace_drop")
    if rh is None:
        return ()
    shown = list(dict.fromkeys(h.loc[h["setting"] == setting, "model"]))
    entries = entries_phrase(shown, names) if rh.models == len(shown) else None
    who = "the model" if rh.models == 1 else f"the {entries or str(rh.models) + ' models'}"
    s = f"Ten irrelevant sentences spread through the case cost {who} {100 * rh.mean:.1f} percentage points of accuracy"
    s += (" on average" if rh.models != 1 else "") + " (paired, original minus variant)"
    if ws is not None:
        s += f"; the same length of whitespace costs {100 * ws.mean:.1f}"
    return (Paragraph(s + ".", "lead"),)


#: the counts of the headline table: (column, its header, the viewer's outcome of its units)
COUNTS = (("errors", "Errors", "error"), ("invalid", "Invalid", "unread"), ("truncated", "Truncated", "truncated"), ("unscored", "Unscored", "unscored"))


def key_parts(h: pd.DataFrame, mean: MeansAcrossModels, names: ModelNames | None = None) -> tuple[Block, ...]:
    """The opening: the mean drops across models and the headline table."""
    if h.empty:
        return (Paragraph("No scored results in these runs yet.", "lead"),)
    cols = [(k, t) for k, t in HEADLINE_COLUMNS if not h[f"{k}_n"].isna().all()]
    rows = tuple(
        (
            text(r["model"], strong=True),
            Cell(setting_name(r["setting"]), r["setting"]),
            # the cases: one original (clean) unit each
            count(r.get("n_items"), items_url(r.get("run", ""), r["model"], r["setting"], CLEAN)),
            *(_rate(r, k) for k, _ in cols),
            *(count(whole(r.get(f"units_{k}")) or 0, units_url(r.get("run", ""), r["model"], r["setting"], None, outcome)) for k, _, outcome in COUNTS),
        )
        for r in h.to_dict("records")
    )
    columns = (
        Column("model", "Model"),
        Column("setting", "Setting"),
        Column("cases", "Cases", numeric=True),
        *(Column(k, t, numeric=True) for k, t in cols),
        *(Column(k, t, numeric=True) for k, t, _ in COUNTS),
    )
    return (Heading(TITLE), *_lead(h, mean, names), Table("noise_headline_shown", columns, rows))


VARIANT_COLUMNS_SHOWN = (
    Column("model", "Model"),
    Column("setting", "Setting"),
    Column("acc", "Accuracy", numeric=True),
    Column("original", "Original, same cases", numeric=True),
    Column("drop", "Drop", numeric=True),
    Column("p_fisher", "Study's Fisher p (one-sided, unpaired)", numeric=True),
    Column("paired_drop", "Paired drop [95% CI]", numeric=True),
    Column("b", "b", numeric=True, note="right on the original, wrong on the variant (the flips)"),
    Column("c", "c", numeric=True, note="wrong on the original, right on the variant (recovered)"),
    Column("p_mcnemar", "Paired test p", numeric=True),
    Column("flip", "Flip rate", numeric=True),
    Column("flip_read", "Flip rate, unread left out", numeric=True),
)


def _variant_cells(r: Row, cond: str) -> tuple[Cell, ...]:
    op, on = num(r["original_p"]), whole(r["original_n"])
    href = _originals(r, cond)
    original = dash() if op is None else Cell(f"{100 * op:.1f}%", op, href, on if href else None, "rate", tail="" if on is None else f" (n={on})")
    return (
        text(r["model"]),
        Cell(setting_name(r["setting"]), r["setting"]),
        _rate(r, f"{cond}_acc", "acc"),
        original,
        change(r["drop"], None, None),
        p_value(r["p_fisher"]),
        change(r["paired_drop"], r["paired_lo"], r["paired_hi"]),
        # b: right on the original, wrong here (the flips); c: the reverse (recovered)
        count(whole(r["b"]) or 0, _units(r, f"{cond}_flip")),
        count(whole(r["c"]) or 0, _units(r, f"{cond}_recovered")),
        paired_test(r["test"], r["p_mcnemar"]),
        _rate(r, f"{cond}_flip", "flip"),
        _rate(r, f"{cond}_flip_read", "flip_read"),
    )


def variant_blocks(v: pd.DataFrame) -> list[Block]:
    """One table per variant, under a heading naming it; a row whose Fisher p is below 0.05 is marked."""
    out: list[Block] = []
    conds = [c for c in CONDITIONS if c in set(v["condition"])] + sorted(set(v["condition"]) - set(CONDITIONS) - {"clean"})
    for cond in conds:
        d = v[v["condition"] == cond].to_dict("records")
        sig = tuple("sig" if (p := num(r["p_fisher"])) is not None and p < 0.05 else "" for r in d)
        out += [
            Heading(f"{TITLES.get(cond, cond)} ({cond})"),
            Table(f"noise_{cond}_shown", VARIANT_COLUMNS_SHOWN, tuple(_variant_cells(r, cond) for r in d), sig),
        ]
    return out


def section_parts(v: pd.DataFrame, e: pd.DataFrame) -> Section:
    """The section: the dose curve, the paired drops, one table per variant and the epochs, as parts."""
    dose = dose_figure(v)
    blocks: list[Block] = [
        Paragraph(INTRO, "plain"),
        *(() if dose is None else (DrawnFigure("noise-dose", "Red herrings: accuracy by number of sentences", DOSE_CAPTION, dose),)),
        drop_figure(v),
        Heading("Per variant"),
        Paragraph(VARIANTS_NOTE),
        *variant_blocks(v),
    ]
    if not e.empty:
        blocks += [Heading("Per epoch"), Paragraph(EPOCHS_NOTE), epochs_table_shown(e)]
    return Section(FAMILY, TITLE, tuple(blocks))


def section(runs: Sequence[RunData]) -> FamilySection:
    names = names_of(runs)
    blocks = family_blocks(runs, NoiseBlock)
    h = headline_table(blocks)
    v = variants_table(blocks)
    merged: dict[str, dict[str, dict[str, object]]] = {}
    for _run, model, setting, block in blocks:
        merged.setdefault(model, {})[setting] = block.model_dump()
    mean = TypeAdapter(MeansAcrossModels).validate_python(mean_across_models(merged))
    e = epochs_table(blocks)
    tables = {"headline": h, "variants": v, **({"epochs": e} if not e.empty else {})}
    return FamilySection(
        family=FAMILY,
        title=TITLE,
        key_parts=key_parts(h, mean, names),
        parts=[Section(FAMILY, TITLE, (Paragraph("No scored results.", "plain"),)) if h.empty else section_parts(v, e)],
        tables=tables,
        headline=h,
        summary_columns=list(HEADLINE_COLUMNS),
    )
