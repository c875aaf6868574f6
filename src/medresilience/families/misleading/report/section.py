"""The misleading family's report section as report parts: key numbers, accuracy and attack-success
figures, tables by stratum, where flips go, the resilience profile, the effect of each mitigation
setting (paired, against `none`) and the statistical tests; the frames they are written from go to
tables/."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ....report.parts import Block, DifferenceFigure, DrawnFigure, Heading, Paragraph, Section
from ....report.rundir import names_of
from ....report.section import FamilySection
from ..metrics import mean_across_models, mean_by_stratum
from . import plots
from .compare import Comparison, difference_panels, setting_effects
from .key import TITLE, key_parts
from .methods import METHODS
from .shown import effects_shown, flips_shown, profile_shown, strata_tables, tests_shown
from .tables import flips_table, headline_table, metrics_table, model_settings, profile_deltas, profile_table, tests_table

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


def section(runs: Sequence[Any]) -> FamilySection:
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
    merged: dict[str, dict[str, Any]] = {}
    for m in ms:
        if design_of[m.run] == (designs[0] if designs else None):
            merged.setdefault(m.model, {})[m.setting] = m.block
    mean = mean_across_models(merged)
    per_run = any(m.model != m.label for m in ms)  # a model in several runs: a mean's entries are runs
    return FamilySection(
        family="misleading",
        title=TITLE,
        key_parts=key_parts(tables["headline"], mean, designs, names),
        parts=section_parts(tables, run_of, per_run),
        tables=tables,
        headline=tables["headline"],
        summary_columns=SUMMARY_COLUMNS,
    )


INTRO = (
    "Each question is asked clean, with one misleading sentence for one wrong option (Type 1), and with the whole "
    "option-aligned bundle (Type 2: one true sentence for the gold option, one false sentence per wrong option)."
)
PROFILE_INTRO = (
    "Per model, clean accuracy beside a resilience score (resilience = 1 - ASR: the share of clean-correct answers that "
    "survive). A model can be accurate and fragile at once: clean accuracy does not predict resilience."
)
SETTINGS_INTRO = (
    "The same model and items under a mitigation setting and without one (setting none). Differences are the setting "
    "minus none on the pairs both answered; ASR is taken on items answered correctly clean under both. A mitigation's "
    "benefit is read beside its cost on clean accuracy."
)
TESTS_INTRO = (
    "Exact McNemar tests of clean vs stressed correctness on the same (item, probe) pairs: b = correct clean and wrong "
    "with context, c = the reverse. Pooled over each model's pairs:"
)


def _drawn(name: str, title: str, caption: str, svg: str | None) -> tuple[Block, ...]:
    """A figure drawn by the family, when it has something to draw."""
    return () if svg is None else (DrawnFigure(name, title, caption, svg),)


def _family_blocks(tables: dict[str, pd.DataFrame], per_run: bool) -> tuple[Block, ...]:
    """The family's own section: accuracy, attack success per source, per content type and
    provenance, where flips go and the tables by stratum."""
    m, t = tables["metrics"], tables["tests"]
    flips = flips_shown(tables["flips"])
    return (
        Paragraph(INTRO, "plain"),
        *_drawn(
            "accuracy",
            "Accuracy: clean vs Type 1 vs Type 2 misleading context",
            "Accuracy per model under each condition; error bars: 95% Wilson intervals. The drop from clean to Type 1 / Type 2 is what the misleading "
            "context costs.",
            plots.accuracy_figure(m),
        ),
        Heading("Attack success per source dataset"),
        *_drawn(
            "attack-by-source",
            "Attack success per source dataset",
            "ASR (share of clean-correct pairs flipped) and TASR (share flipped to the injected option) per model, pooled (diamond) and per source "
            "dataset (dots); 95% Wilson intervals.",
            plots.attack_by_source_figure(m),
        ),
        Heading("By content type and provenance"),
        *_drawn(
            "heatmap-content_type",
            "ASR by content type",
            "ASR per model and content corruption (what is false). Cells: ASR and the number of clean-correct pairs; * marks a Holm-adjusted McNemar "
            "p < 0.05 across content types.",
            plots.heatmap_figure(m, t, "content_type"),
        ),
        *_drawn(
            "heatmap-provenance",
            "ASR by provenance",
            "ASR per model and provenance (who says it: a neutral statement, the patient, or an authority).",
            plots.heatmap_figure(m, t, "provenance"),
        ),
        Heading("Where flips go"),
        *_drawn(
            "flips",
            "Where Type 1 flips go",
            "Type 1 flips split into answers that moved to the injected target, to another wrong option, or to an unreadable reply.",
            plots.flips_figure(tables["flips"]),
        ),
        *(() if flips is None else (flips,)),
        Heading("Tables by stratum"),
        *strata_tables(m, t, tables["means"], per_run),
    )


def section_parts(tables: dict[str, pd.DataFrame], run_of: dict[str, str], per_run: bool = False) -> list[Section]:
    """The family's sections: its own, the resilience profile, the settings effect (when a setting
    ran beside none) and the statistical tests (when a test ran)."""
    profile = profile_shown(tables["profile"])
    sections = [
        Section("misleading", TITLE, _family_blocks(tables, per_run)),
        Section(
            "profile",
            "Resilience profile",
            (
                Paragraph(PROFILE_INTRO, "plain"),
                *_drawn(
                    "profile",
                    "Resilience profile: clean accuracy beside resilience per stress family",
                    "Left: profile per model (95% Wilson intervals). Right: clean accuracy against resilience; the dotted line is equality.",
                    plots.profile_figure(tables["profile"][tables["profile"]["kind"] == "rate"]),
                ),
                *(() if profile is None else (profile,)),
            ),
        ),
    ]
    if "setting_effects" in tables:
        effects = tables["setting_effects"]
        shown = effects_shown(effects, run_of)
        figure = DifferenceFigure(
            "setting_effects",
            "Mitigation effect: each setting minus none",
            "Paired differences in percentage points with item-clustered bootstrap 95% intervals.",
            difference_panels(effects),
        )
        sections.append(Section("settings", "Settings effect", (Paragraph(SETTINGS_INTRO, "plain"), figure, *(() if shown is None else (shown,)))))
    t = tables["tests"]
    if not t.empty:
        n_overall = int((t["stratum_kind"] == "overall").sum())
        strata = (
            f"Per stratum, {len(t) - n_overall} tests with Holm's correction across the strata of one kind; {int(t['significant'].sum())} of all "
            f"{len(t)} tests have a Holm-adjusted p < 0.05 (see the tables by stratum and `tables/tests.csv`)."
        )
        blocks = (Paragraph(TESTS_INTRO, "plain"), tests_shown(t), Paragraph(strata, "plain"), Heading("Methods"), METHODS)
        sections.append(Section("tests", "Statistical tests", blocks))
    return sections
