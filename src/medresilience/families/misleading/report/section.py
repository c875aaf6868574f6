"""The misleading family's report section: key numbers, accuracy and attack-success figures, tables
by stratum, where flips go, the resilience profile, the effect of each mitigation setting (paired,
against `none`), the statistical tests, and the same in Markdown."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from markupsafe import Markup

from ....report.html import count_cell, esc, setting_name, units_url
from ....report.html import fmt_p as html_fmt_p
from ....report.html import table as html_table
from ....report.parts import DifferenceFigure
from ....report.plots import difference
from ....report.rundir import names_of
from ....report.section import FamilySection
from ....report.templating import macros
from ..metrics import mean_across_models, mean_by_stratum
from . import html as H
from . import plots
from .compare import Comparison, difference_panels, setting_effects
from .tables import (
    flips_table,
    fmt_pct,
    headline_table,
    markdown_table,
    metrics_table,
    model_settings,
    profile_deltas,
    profile_table,
    tests_table,
)

TITLE = H.TITLE
SUMMARY_COLUMNS = [
    ("clean_acc", "Clean acc"),
    ("type1_acc", "Type 1 acc"),
    ("type2_acc", "Type 2 acc"),
    ("type1_asr", "Type 1 ASR"),
    ("type1_tasr", "Type 1 TASR"),
    ("type2_asr", "Type 2 ASR"),
    ("type1_asr_read", "Type 1 ASR, unread left out"),
    ("type2_asr_read", "Type 2 ASR, unread left out"),
]


def type1_design(run) -> str:
    """`sample` (one seeded target per item) or `all` (one probe per wrong option) for a run; runs
    recorded before the option existed planned `all`."""
    opts = (run.config or {}).get("options") or {}
    return str((opts.get("family") or {}).get("type1") or opts.get("type1") or "all")


def means_table(ms: Sequence, design_of: dict[str, str]) -> pd.DataFrame:
    """Means across models per Type 1 design, setting, stratum and rate: never pooled over designs."""
    rows = []
    for design in dict.fromkeys(design_of[m.run] for m in ms):
        merged: dict[str, dict] = {}
        for m in ms:
            if design_of[m.run] == design:
                merged.setdefault(m.model, {})[m.setting] = m.block
        overall, strata = mean_across_models(merged), mean_by_stratum(merged)
        for setting, agg in overall.items():
            # the run whose models the mean averages, when they are one run's (its links: every model of it)
            runs_of = {m.run for m in ms if design_of[m.run] == design and m.setting == setting}
            run = next(iter(runs_of)) if len(runs_of) == 1 else None
            blocks = [("overall", "Overall", agg)]
            for group, kind in (("by_source", "source"), ("by_content_type", "content_type"), ("by_provenance", "provenance")):
                blocks += [(kind, name, a) for name, a in strata.get(setting, {}).get(group, {}).items()]
            for kind, name, a in blocks:
                for rate, v in a.items():
                    rows.append(
                        {
                            "type1": design,
                            "run": run,
                            "setting": setting,
                            "stratum_kind": kind,
                            "stratum": name,
                            "rate": rate,
                            "mean": v["mean"],
                            "min": v["min"],
                            "max": v["max"],
                            "models": v["models"],
                        }
                    )
    return pd.DataFrame(rows, columns=["type1", "run", "setting", "stratum_kind", "stratum", "rate", "mean", "min", "max", "models"])


def section(runs: Sequence) -> FamilySection:
    pairs = [(r.name, r.results) for r in runs]
    names = names_of(runs)
    ms = model_settings(pairs, names)
    design_of = {r.name: type1_design(r) for r in runs}
    headline = headline_table(ms)
    if not headline.empty:
        headline.insert(3, "type1", [design_of[m.run] for m in ms])
    tables: dict[str, pd.DataFrame] = {
        "headline": headline,
        "means": means_table(ms, design_of),
        "metrics": metrics_table(ms),
        "tests": tests_table(ms),
        "flips": flips_table(ms),
        "profile": profile_table(ms),
    }
    effects: list[Comparison] = []
    run_of: dict[str, str] = {}  # a model's name -> its run, for the settings effect's links
    for r in runs:
        if r.frame is not None:
            for c in setting_effects(r.name, r.frame):
                if len(c.table):  # its model by its name (model_names): a label in two runs is two rows
                    c.table["pair"] = [names.name(r.name, str(p)) for p in c.table["pair"]]
                effects.append(c)
    if effects:
        tables["setting_effects"] = pd.concat([c.table for c in effects], ignore_index=True)
        run_of = {c.table["pair"].iloc[0]: c.run for c in effects if len(c.table)}
        deltas = profile_deltas(tables["setting_effects"], run_of)
        if not deltas.empty:
            tables["profile"] = pd.concat([tables["profile"], deltas], ignore_index=True)
    # the key numbers' means: over the runs of one Type 1 design (the first met), never pooled
    designs = list(dict.fromkeys(design_of[m.run] for m in ms))
    merged: dict[str, dict] = {}
    for m in ms:
        if design_of[m.run] == (designs[0] if designs else None):
            merged.setdefault(m.model, {})[m.setting] = m.block
    mean = mean_across_models(merged)
    per_run = any(m.model != m.label for m in ms)  # a model in several runs: a mean's entries are runs
    figs = _figures(tables)
    return FamilySection(
        family="misleading",
        title=TITLE,
        key_html=H.key_numbers(tables["headline"], mean, designs, names),
        sections=_sections(tables, figs, run_of, per_run),
        markdown=_markdown(tables, mean, per_run),
        tables=tables,
        headline=tables["headline"],
        summary_columns=SUMMARY_COLUMNS,
    )


def _figures(tables: dict[str, pd.DataFrame]) -> dict[str, str | None]:
    m, t = tables["metrics"], tables["tests"]
    figs = {
        "accuracy": plots.accuracy_figure(m),
        "attack_by_source": plots.attack_by_source_figure(m),
        "heatmap_content_type": plots.heatmap_figure(m, t, "content_type"),
        "heatmap_provenance": plots.heatmap_figure(m, t, "provenance"),
        "flips": plots.flips_figure(tables["flips"]),
        "profile": plots.profile_figure(tables["profile"][tables["profile"]["kind"] == "rate"]),
    }
    if "setting_effects" in tables:
        effects = DifferenceFigure("setting_effects", "Mitigation effect: each setting minus none", "", difference_panels(tables["setting_effects"]))
        figs["setting_effects"] = difference(effects)
    return figs


def _sections(tables: dict[str, pd.DataFrame], figs: dict[str, str | None], run_of: dict[str, str], per_run: bool = False) -> list[tuple[str, str, str]]:
    body = macros(__package__, "sections.html.j2")
    svgs = {k: None if v is None else Markup(v) for k, v in figs.items()}
    sections: list[tuple[str, str, str]] = [
        (
            "misleading",
            TITLE,
            str(
                body.misleading(
                    svgs, Markup(H.flips_table_html(tables["flips"])), Markup(H.strata_tables(tables["metrics"], tables["tests"], tables["means"], per_run))
                )
            ),
        ),
        ("profile", "Resilience profile", str(body.profile(svgs, Markup(H.profile_table_html(tables["profile"]))))),
    ]
    if "setting_effects" in tables:
        sections.append(
            (
                "settings",
                "Settings effect",
                str(
                    body.settings(
                        svgs,
                        Markup(
                            H.diff_table_html(
                                tables["setting_effects"], "Model", "None", "Setting", H.setting_effect_units(run_of), H.setting_effect_versus(run_of)
                            )
                        ),
                    )
                ),
            )
        )
    t = tables["tests"]
    if not t.empty:
        ov = t[t["stratum_kind"] == "overall"]
        rows = [
            [
                esc(r.model),
                esc(setting_name(r.setting)),
                esc({"type1": "Type 1", "type2": "Type 2"}[r.condition]),
                # b: the flips, c: the recoveries of the condition
                count_cell(r.b, units_url(r.run, r.model, r.setting, r.condition, "flip")),
                count_cell(r.c, units_url(r.run, r.model, r.setting, r.condition, "recovered")),
                count_cell(r.n, units_url(r.run, r.model, r.setting, r.condition, "paired")),
                html_fmt_p(r.p),
            ]
            for r in ov.itertuples(index=False)
        ]
        pooled = html_table(rows, ["Model", "Setting", "Condition", "b (correct → wrong)", "c (wrong → correct)", "Pairs", "p"], numeric=range(3, 7))
        tests = body.tests(Markup(pooled), len(t) - len(ov), int(t["significant"].sum()), len(t), Markup(H.METHODS))
        sections.append(("tests", "Statistical tests", str(tests)))
    return sections


def _markdown(tables: dict[str, pd.DataFrame], mean: dict, per_run: bool = False) -> str:
    lines = [f"## {TITLE}", ""]
    counted = "entries (one per run of a model)" if per_run else "models"
    h = tables["headline"]
    if not h.empty:
        for setting, agg in mean.items():
            if agg:
                lines.append(
                    f"- Mean across models ({setting}): "
                    + ", ".join(
                        f"{k} {100 * v['mean']:.1f}% (range {100 * v['min']:.1f}–{100 * v['max']:.1f}%, {v['models']} {counted})" for k, v in agg.items()
                    )
                )
        lines.append("")
        lines.append("| Model | Setting | " + " | ".join(t for _, t in SUMMARY_COLUMNS) + " |")
        lines.append("|---|---|" + "---|" * len(SUMMARY_COLUMNS))
        for r in h.to_dict("records"):
            cells = [fmt_pct(r.get(f"{k}_p"), r.get(f"{k}_lo"), r.get(f"{k}_hi"), r.get(f"{k}_n")) for k, _ in SUMMARY_COLUMNS]
            lines.append(f"| {r['model']} | {r['setting']} | " + " | ".join(cells) + " |")
        lines.append("")
    f = tables["flips"]
    ov = f[f["stratum_kind"] == "overall"]
    if not ov.empty:
        lines += [
            "### Where flips go (overall)",
            "",
            markdown_table(ov, ["model", "setting", "condition", "clean_correct_pairs", "flips", "to_target", "elsewhere", "invalid", "truncated"]),
            "",
        ]
    t = tables["tests"]
    if not t.empty:
        sig = t[t["significant"] & (t["stratum_kind"] != "overall")]
        lines += ["### Strata with a significant McNemar test (Holm-adjusted p < 0.05)", ""]
        lines.append(
            markdown_table(sig, ["model", "setting", "stratum_kind", "stratum", "condition", "b", "c", "p", "p_holm"], max_rows=60)
            if not sig.empty
            else "None."
        )
        lines.append("")
    p = tables["profile"]
    if not p.empty:
        lines += ["### Resilience profile", "", markdown_table(p, ["model", "setting", "dimension", "value", "lo", "hi", "n"]), ""]
    if "setting_effects" in tables:
        lines += [
            "### Settings effect (setting - none, paired)",
            "",
            markdown_table(
                tables["setting_effects"],
                ["pair", "setting", "condition", "metric", "a_p", "b_p", "diff", "lo", "hi", "test", "p_test", "p_holm", "n", "items"],
            ),
            "",
        ]
    return "\n".join(lines)
