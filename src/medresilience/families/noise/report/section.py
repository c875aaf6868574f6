"""The clinical-noise family's report section: key numbers (accuracy on the original case and on
each variant), the red-herring dose curve (0 / 1 / 5 / 10 sentences distributed, the block of 10
and the whitespace control in one plot), the paired drop per variant, one table per variant with
its tests, per-epoch accuracy (mean and spread across epochs) when a run repeated its units, and
the same in Markdown."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from markupsafe import Markup

from ....model_names import ModelNames, entries_phrase
from ....records import CLEAN
from ....report.html import count_cell, esc, fmt_p, isnan, items_url, linked, rate_cell, rate_units, setting_name, table, test_cell, units_url
from ....report.plots import PALETTE, STYLE, err, pct, plt, short, to_svg
from ....report.rundir import model_blocks, names_of
from ....report.section import FamilySection
from ....report.tables import fmt_pct, markdown_table, row_label
from ....report.templating import macros
from ..metrics import mean_across_models
from ..taxonomy import CONDITIONS, DISTRIBUTED, DOSES, FAMILY, HEADLINE_COLUMNS, HERRINGS, TITLES, TOGETHER, WHITESPACE, facets_of

TITLE = "Clinical noise"
RATE_PARTS = ("p", "lo", "hi", "n")


def headline_table(blocks: list[tuple[str, str, str, dict[str, Any]]]) -> pd.DataFrame:
    rows = []
    for run, model, setting, block in blocks:
        o = block.get("overall", {})
        row: dict[str, Any] = {"run": run, "model": model, "setting": setting, "n_items": o.get("n_items")}
        for k, _ in HEADLINE_COLUMNS:
            v = o.get(k) or {}
            for part in RATE_PARTS:
                row[f"{k}_{part}"] = v.get(part)
        c = block.get("counts", {})
        row.update(
            units=c.get("units"),
            units_errors=c.get("errors", 0),
            units_invalid=c.get("invalid", 0),
            units_truncated=c.get("truncated", 0),
            units_unscored=c.get("unscored", 0),
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


def _clean_row(run: str, model: str, setting: str, block: dict[str, Any]) -> dict[str, Any]:
    """The original case's accuracy of one model and setting (dose 0)."""
    clean = block.get("overall", {}).get("clean_acc") or {}
    return {
        "run": run,
        "model": model,
        "setting": setting,
        "condition": "clean",
        "perturbation": None,
        "dose": "0",
        "placement": None,
        "acc_p": clean.get("p"),
        "acc_lo": clean.get("lo"),
        "acc_hi": clean.get("hi"),
        "acc_n": clean.get("n"),
        "acc_interval": clean.get("interval"),
        "invalid": clean.get("invalid"),
        "truncated": clean.get("truncated"),
        "unscored": clean.get("unscored"),
        "errors": clean.get("errors"),
    }


def _variant_row(run: str, model: str, setting: str, cond: str, v: dict[str, Any]) -> dict[str, Any]:
    """One variant's accuracy, its drop from the original case (Fisher), the paired test and flips."""
    a, d, pr, f = v.get("acc", {}), v.get("drop", {}), v.get("paired", {}), v.get("flip", {})
    fr = v.get("flip_read") or {}
    fc = v.get("facets") or {}
    return {
        "run": run,
        "model": model,
        "setting": setting,
        "condition": cond,
        "perturbation": fc.get("perturbation"),
        "dose": fc.get("dose"),
        "placement": fc.get("placement"),
        "acc_p": a.get("p"),
        "acc_lo": a.get("lo"),
        "acc_hi": a.get("hi"),
        "acc_n": a.get("n"),
        "invalid": a.get("invalid"),
        "truncated": a.get("truncated"),
        "unscored": a.get("unscored"),
        "errors": a.get("errors"),
        "acc_interval": a.get("interval"),
        "original_p": (d.get("original") or {}).get("p"),
        "original_n": (d.get("original") or {}).get("n"),
        "drop": d.get("diff"),
        "odds_ratio": d.get("odds_ratio"),
        "p_fisher": d.get("p_fisher"),
        "pairs": pr.get("n"),
        "b": pr.get("b"),
        "c": pr.get("c"),
        "test": pr.get("test"),
        "p_mcnemar": pr.get("p_mcnemar"),
        "paired_drop": pr.get("drop"),
        "paired_lo": pr.get("lo"),
        "paired_hi": pr.get("hi"),
        "flip_p": f.get("p"),
        "flip_lo": f.get("lo"),
        "flip_hi": f.get("hi"),
        "flip_n": f.get("n"),
        "flip_read_p": fr.get("p"),
        "flip_read_lo": fr.get("lo"),
        "flip_read_hi": fr.get("hi"),
        "flip_read_n": fr.get("n"),
    }


def variants_table(blocks: list[tuple[str, str, str, dict[str, Any]]]) -> pd.DataFrame:
    rows = []
    for run, model, setting, block in blocks:
        rows.append(_clean_row(run, model, setting, block))
        rows.extend(_variant_row(run, model, setting, cond, v) for cond, v in (block.get("by_variant") or {}).items())
    return pd.DataFrame(rows, columns=VARIANT_COLUMNS)


def epochs_table(blocks: list[tuple[str, str, str, dict[str, Any]]]) -> pd.DataFrame:
    """One row per run, model, setting, condition and epoch: that epoch's accuracy, with the mean
    and standard deviation across the epochs; empty when every run answered once."""
    rows = []
    for run, model, setting, block in blocks:
        o = block.get("overall", {})
        if (o.get("n_epochs") or 1) < 2:
            continue
        per_cond = [("clean", o.get("clean_epochs") or {})]
        per_cond += [(c, v.get("epochs") or {}) for c, v in (block.get("by_variant") or {}).items()]
        for cond, ep in per_cond:
            for e in ep.get("per_epoch", []):
                rows.append(
                    {
                        "run": run,
                        "model": model,
                        "setting": setting,
                        "condition": cond,
                        "epoch": e["epoch"],
                        "acc_p": e["p"],
                        "acc_k": e["k"],
                        "acc_n": e["n"],
                        "mean": ep.get("mean"),
                        "sd": ep.get("sd"),
                        "epochs": ep.get("n"),
                    }
                )
    return pd.DataFrame(rows, columns=["run", "model", "setting", "condition", "epoch", "acc_p", "acc_k", "acc_n", "mean", "sd", "epochs"])


def _epoch_rows(e: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the per-epoch table: each condition's mean +- sd, then each epoch."""
    epochs = sorted(set(e["epoch"]))
    rows = []
    for (model, setting, cond), g in e.groupby(["model", "setting", "condition"], sort=False):
        by = {int(r["epoch"]): r for r in g.to_dict("records")}
        first = g.iloc[0]
        spread = "—" if first["sd"] is None or isnan(first["sd"]) else f"± {100 * first['sd']:.1f}"
        mean = "—" if first["mean"] is None or isnan(first["mean"]) else f"{100 * first['mean']:.1f}%"
        rows.append(
            [
                model,
                setting_name(setting),
                TITLES.get(cond, "Original" if cond == "clean" else cond),
                f"{mean} {spread}",
                *[("—" if ep not in by or by[ep]["acc_p"] is None else f"{100 * by[ep]['acc_p']:.1f}% (n={by[ep]['acc_n']})") for ep in epochs],
            ]
        )
    return ["Model", "Setting", "Variant", "Mean ± sd across epochs", *[f"Epoch {ep}" for ep in epochs]], rows


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


def drop_figure(v: pd.DataFrame) -> str | None:
    """Paired drop (original minus variant, percentage points) per variant and model, with the
    item-clustered bootstrap interval."""
    d = v[(v["condition"] != "clean") & v["paired_drop"].notna()]
    if d.empty:
        return None
    conds = [c for c in CONDITIONS if c in set(d["condition"])] + sorted(set(d["condition"]) - set(CONDITIONS))
    rows = list(dict.fromkeys(zip(d["model"], d["setting"])))
    title = "Paired accuracy drop per variant (original minus variant)"
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(8.6, max(3.2, 0.5 * len(conds) * max(1, len(rows)) ** 0.5 + 1.4)), layout="constrained")
        y = np.arange(len(conds))
        step = 0.7 / max(1, len(rows))
        for j, (model, setting) in enumerate(rows):
            colour = PALETTE[j % len(PALETTE)]
            sub = d[(d["model"] == model) & (d["setting"] == setting)].set_index("condition").reindex(conds)
            p, lo, hi = (sub[k].map(pct).to_numpy(dtype=float) for k in ("paired_drop", "paired_lo", "paired_hi"))
            ys = y - 0.35 + step * (j + 0.5)
            ax.errorbar(
                p,
                ys,
                xerr=err(p, lo, hi),
                fmt="o",
                color=colour,
                ecolor=colour,
                elinewidth=1.2,
                capsize=2,
                label=short(row_label(model, setting), 34),
                zorder=3,
            )
        ax.axvline(0, color="#333", lw=0.8)
        ax.set_yticks(y, [TITLES.get(c, c) for c in conds])
        ax.invert_yaxis()
        ax.set_xlabel("Drop in accuracy (percentage points), 95% case-clustered bootstrap CI")
        ax.set_title(title)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=9)
        return to_svg(fig, "noise-drop", title)


# ---------------------------------------------------------------------------------- html


def _pp(v: Any, lo: Any = None, hi: Any = None) -> str:
    if isnan(v):
        return "—"
    s = f"{100 * float(v):+.1f} pp"
    if not isnan(lo) and not isnan(hi):
        s += f'<br><span class="n">[{100 * float(lo):+.1f}, {100 * float(hi):+.1f}]</span>'
    return s


#: the viewer's outcome of the units behind each rate (accuracy: every unit of the variant)
OUTCOMES = {"flip": "flip", "flip_read": "flip_read", "recovered": "recovered"}


def _units(r: dict[str, Any], key: str) -> str | None:
    """The viewer's URL of the units behind rate `key` (variant_rate) of row r (run, model, setting)."""
    variant, _, rate = key.partition("_")
    return rate_units(r.get("run", ""), r["model"], r["setting"], variant, OUTCOMES.get(rate))


def _originals(r: dict[str, Any], variant: str) -> str | None:
    """The viewer's URL of the originals of the cases a variant covers (the clean units of the items
    with a unit of the variant's facets: scope=item), answered: the study's baseline of its drop."""
    try:
        facets = {k: v for k, v in facets_of(variant).items() if v is not None}
    except ValueError:  # a variant this version does not know: no facets to select its cases by
        return None
    return rate_units(r.get("run", ""), r["model"], r["setting"], CLEAN, **facets, scope="item")


def key_numbers(h: pd.DataFrame, mean: dict[str, Any], names: ModelNames | None = None) -> str:
    """The opening: the mean drops across models (one value per model's name, `names`: a model in
    several runs is one entry per run, and the sentence says so) and the headline table."""
    if h.empty:
        return "<p class='lead'>No scored results in these runs yet.</p>"
    setting = "none" if "none" in mean else next(iter(mean), "none")
    agg = mean.get(setting, {})
    shown = list(dict.fromkeys(h.loc[h["setting"] == setting, "model"]))
    rh = agg.get("redherring-10_drop")
    entries = entries_phrase(shown, names) if rh and rh.get("models") == len(shown) else None
    cols = [(k, t) for k, t in HEADLINE_COLUMNS if not h[f"{k}_n"].isna().all()]
    rows = []
    for r in h.to_dict("records"):
        rows.append(
            [
                f"<b class='wrap'>{esc(r['model'])}</b>",
                esc(setting_name(r["setting"])),
                # the cases: one original (clean) unit each
                count_cell(r.get("n_items"), items_url(r.get("run", ""), r["model"], r["setting"], CLEAN)),
                *[rate_cell(r.get(f"{k}_p"), r.get(f"{k}_lo"), r.get(f"{k}_hi"), r.get(f"{k}_n"), units=_units(r, k)) for k, _ in cols],
                *[
                    count_cell(r.get(f"units_{k}") or 0, units_url(r.get("run", ""), r["model"], r["setting"], None, outcome))
                    for k, outcome in (("errors", "error"), ("invalid", "unread"), ("truncated", "truncated"), ("unscored", "unscored"))
                ],
            ]
        )
    headers = ["Model", "Setting", "Cases", *[t for _, t in cols], "Errors", "Invalid", "Truncated", "Unscored"]
    table_html = Markup(table(rows, headers, numeric=range(2, len(headers))))
    return str(_templates().key_numbers(TITLE, rh, agg.get("whitespace_drop"), table_html, entries))


def variant_tables(v: pd.DataFrame) -> str:
    out = []  # (title, condition, table)
    conds = [c for c in CONDITIONS if c in set(v["condition"])] + sorted(set(v["condition"]) - set(CONDITIONS) - {"clean"})
    for cond in conds:
        d = v[v["condition"] == cond]
        rows = []
        for r in d.to_dict("records"):
            original = "—" if isnan(r["original_p"]) else linked(f"{100 * float(r['original_p']):.1f}%", _originals(r, cond)) + f" (n={int(r['original_n'])})"
            rows.append(
                [
                    esc(r["model"]),
                    esc(setting_name(r["setting"])),
                    rate_cell(r["acc_p"], r["acc_lo"], r["acc_hi"], r["acc_n"], units=_units(r, f"{cond}_acc")),
                    original,
                    _pp(r["drop"]),
                    fmt_p(r["p_fisher"]),
                    _pp(r["paired_drop"], r["paired_lo"], r["paired_hi"]),
                    # b: right on the original, wrong here (the flips); c: the reverse (recovered)
                    count_cell(r["b"] or 0, _units(r, f"{cond}_flip")) + " / " + count_cell(r["c"] or 0, _units(r, f"{cond}_recovered")),
                    test_cell(r["test"], None, None, r["p_mcnemar"]),
                    rate_cell(r["flip_p"], r["flip_lo"], r["flip_hi"], r["flip_n"], units=_units(r, f"{cond}_flip")),
                    rate_cell(r["flip_read_p"], r["flip_read_lo"], r["flip_read_hi"], r["flip_read_n"], units=_units(r, f"{cond}_flip_read")),
                ]
            )
        sig = ["sig" if (not isnan(r["p_fisher"]) and r["p_fisher"] < 0.05) else "" for r in d.to_dict("records")]
        out.append(
            (
                TITLES.get(cond, cond),
                cond,
                Markup(
                    table(
                        rows,
                        [
                            "Model",
                            "Setting",
                            "Accuracy",
                            "Original, same cases",
                            "Drop",
                            "Study's Fisher p (one-sided, unpaired)",
                            "Paired drop [95% CI]",
                            "b / c",
                            "Paired test p",
                            "Flip rate",
                            "Flip rate, unread left out",
                        ],
                        numeric=range(2, 11),
                        row_classes=sig,
                    )
                ),
            )
        )
    return str(_templates().variant_tables(out))


def _templates() -> Any:
    return macros(__package__, "report.html.j2")


def section(runs: Sequence[Any]) -> FamilySection:
    names = names_of(runs)
    blocks = model_blocks(runs)
    h = headline_table(blocks)
    v = variants_table(blocks)
    merged: dict[str, dict[str, Any]] = {}
    for _run, model, setting, block in blocks:
        merged.setdefault(model, {})[setting] = block
    mean = mean_across_models(merged)
    figs = {"dose": dose_figure(v), "drop": drop_figure(v)}
    e = epochs_table(blocks)
    epochs_html = ""
    if not e.empty:
        headers, rows = _epoch_rows(e)
        epochs_html = table([[esc(c) for c in r] for r in rows], headers, numeric=range(3, len(headers)))
    svgs = {k: None if x is None else Markup(x) for k, x in figs.items()}
    body = str(_templates().section(svgs, Markup(variant_tables(v)), Markup(epochs_html)))
    tables = {"headline": h, "variants": v, **({"epochs": e} if not e.empty else {})}
    return FamilySection(
        family=FAMILY,
        title=TITLE,
        key_html=key_numbers(h, mean, names),
        sections=[(FAMILY, TITLE, body)],
        markdown=_markdown(h, v, mean, e),
        tables=tables,
        headline=h,
        summary_columns=list(HEADLINE_COLUMNS),
    )


def _markdown(h: pd.DataFrame, v: pd.DataFrame, mean: dict[str, Any], e: pd.DataFrame | None = None) -> str:
    lines = [f"## {TITLE}", ""]
    if h.empty:
        return "\n".join([*lines, "No scored results.", ""])
    for setting, agg in mean.items():
        drops = {k: a for k, a in agg.items() if k.endswith("_drop")}
        if drops:
            lines.append(
                f"- Mean paired drop across models ({setting}): " + ", ".join(f"{k.removesuffix('_drop')} {100 * a['mean']:+.1f} pp" for k, a in drops.items())
            )
    lines.append("")
    cols = [(k, t) for k, t in HEADLINE_COLUMNS if not h[f"{k}_n"].isna().all()]
    lines.append("| Model | Setting | " + " | ".join(t for _, t in cols) + " |")
    lines.append("|---|---|" + "---|" * len(cols))
    for r in h.to_dict("records"):
        lines.append(
            f"| {r['model']} | {r['setting']} | "
            + " | ".join(fmt_pct(r.get(f"{k}_p"), r.get(f"{k}_lo"), r.get(f"{k}_hi"), r.get(f"{k}_n")) for k, _ in cols)
            + " |"
        )
    lines += [
        "",
        "### Per variant (drop: original minus variant)",
        "",
        markdown_table(
            v[v["condition"] != "clean"],
            [
                "model",
                "setting",
                "condition",
                "acc_p",
                "acc_n",
                "original_p",
                "original_n",
                "drop",
                "p_fisher",
                "paired_drop",
                "paired_lo",
                "paired_hi",
                "b",
                "c",
                "test",
                "p_mcnemar",
                "flip_p",
                "flip_read_p",
                "invalid",
                "truncated",
            ],
        ),
        "",
    ]
    if e is not None and not e.empty:
        headers, rows = _epoch_rows(e)
        lines += ["### Per epoch", "", markdown_table(pd.DataFrame(rows, columns=headers)), ""]
    return "\n".join(lines)
