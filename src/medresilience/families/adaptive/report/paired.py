"""What the adaptive section reads across runs and models, from the traces and resample records of
each run's `loop` block:

- `attacks(runs)`: every run's attack traces per setting and model, each model by its name among the
  runs shown (and its setting where a run has several);
- `resampling(attacked)`: per model, its flips' per-attack tests (`persuasion.tests_by_model`) and
  the summary counting only the flips that stand (`stats.persuasion.standing_only`);
- `model_comparisons(attacked)`: every two models attacked on shared items (one run's two models,
  or two runs reported together): which is harder to move (`stats.persuasion.compare_models`);
- `static_rows(attacked, others)`: a static run of the report (a family whose units read against a
  reference condition, `Outcomes.reference`) on the same model, its ASR per stressed condition beside
  the adaptive ASR within the budget on the same items (`stats.persuasion.static_vs_adaptive`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import pandas as pd

from ....family import get
from ....models.names import recorded_models
from ....report.parts import Cell, Column, Table, count, p_value, text
from ....report.persuasion import StandingRow, rate_cell
from ....report.rundir import RunData, names_of
from ....run.results import ResampledFlip
from ....score import ANSWERED
from ....stats.persuasion import (
    AttackTrace,
    ModelComparison,
    PersuasionSummary,
    StaticVsAdaptive,
    compare_models,
    standing_only,
    static_vs_adaptive,
    summarise,
)
from ..persuasion import tests_by_model


@dataclass(frozen=True)
class Attacked:
    """One run's attacks of one model under one setting: `label` names it in the report."""

    run: RunData
    setting: str
    model: str
    label: str
    traces: tuple[AttackTrace, ...]
    resampled: tuple[dict[str, object], ...]


def attacks(runs: Sequence[RunData]) -> list[Attacked]:
    names = names_of(runs)
    out = []
    for r in runs:
        loop = (r.results or {}).get("loop") or {}
        for setting, block in loop.items():
            where = f"{r.name} results.json loop.{setting}.traces"
            found = [AttackTrace.from_dict(d, where=f"{where}[{i}]") for i, d in enumerate(block.get("traces", []))]
            for model in dict.fromkeys(t.model for t in found):
                name = names.name(r.name, model)
                label = name if len(loop) == 1 else f"{name}, {setting}"
                recs = tuple(x for x in block.get("resampled") or [] if x.get("model") == model)
                out.append(Attacked(r, setting, model, label, tuple(t for t in found if t.model == model), recs))
    return out


def resampling(attacked: Sequence[Attacked]) -> tuple[list[StandingRow], list[tuple[str, ResampledFlip]], dict[str, PersuasionSummary]]:
    """(per model its resampling, per flip its label and test, label -> the summary of standing flips)."""
    rows: list[StandingRow] = []
    tests: list[tuple[str, ResampledFlip]] = []
    kept: dict[str, PersuasionSummary] = {}
    for a in attacked:
        if not a.resampled:
            continue
        where = f"{a.run.name} results.json loop.{a.setting}.resampled"
        res, value = tests_by_model(list(a.traces), list(a.resampled), where)[a.model]  # type: ignore[arg-type]  # JSON records
        raw = summarise(list(a.traces))[0]
        standing = summarise(standing_only(list(a.traces), [(a.model, x) for x in res.standing]))[0]
        raw, standing = replace(raw, model=a.label), replace(standing, model=a.label)
        kept[a.label] = standing
        rows.append(
            StandingRow(
                a.label,
                value["flipped"],
                value["tested"],
                value["r"],
                value["correction"],
                value["min_p"],
                value["standing"],
                value["temperature"],
                raw,
                standing,
            )
        )
        tests += [(a.label, ResampledFlip(**t)) for t in value["tests"]]
    return rows, tests, kept


def model_comparisons(attacked: Sequence[Attacked]) -> list[ModelComparison]:
    """Every two models (in the order shown) attacked on at least one shared item and kind."""
    relabelled = [replace(t, model=a.label) for a in attacked for t in a.traces]
    labels = [a.label for a in attacked]
    out = []
    for i, x in enumerate(labels):
        for y in labels[i + 1 :]:
            c = compare_models(relabelled, x, y)
            if c.n:
                out.append(c)
    return out


def _partners(a: Attacked, other: RunData) -> list[str]:
    """The labels of `other` that are `a`'s model: the same provider and model where both runs
    record it, else the same label."""
    mine = recorded_models(a.run.config, [a.model]).get(a.model, "")
    theirs = recorded_models(other.config, list(other.blocks))
    if mine and mine != ":":
        return [label for label, rec in theirs.items() if rec == mine]
    return [a.model] if a.model in other.blocks else []


def _static_flips(frame: pd.DataFrame, reference: str, unread_flips: bool) -> dict[str, dict[str, bool]]:
    """condition -> item id -> flipped by a stress of that condition (right under the reference, and
    some unit of the condition not right: unread counts as not right where the family says so)."""
    answered = frame[frame["status"].astype(str).isin(ANSWERED)]
    ref = answered[answered["condition"].astype(str) == reference]
    right = set(ref.loc[ref["correct"].astype(bool), "item_id"].astype(str))
    stressed = answered[(answered["condition"].astype(str) != reference) & answered["item_id"].astype(str).isin(right)]
    if not unread_flips:
        stressed = stressed[stressed["status"].astype(str) == "valid"]
    out: dict[str, dict[str, bool]] = {}
    for (cond, item), g in stressed.groupby([stressed["condition"].astype(str), stressed["item_id"].astype(str)], sort=True):
        out.setdefault(str(cond), {})[str(item)] = not bool(g["correct"].astype(bool).all())
    return out


def static_rows(attacked: Sequence[Attacked], others: Sequence[RunData]) -> list[StaticRow]:
    """Per adaptive model and static run of the same model (and setting), per stressed condition:
    the static ASR beside the adaptive ASR within the smallest budget, on the items right at clean in
    both runs (the adaptive run attacked them; the static run's reference unit is right)."""
    out = []
    for a in attacked:
        turns = min(t.budget for t in a.traces)
        adaptive = {t.item_id: bool(t.flipped_within(turns)) for t in a.traces}
        for other in others:
            if other.frame is None:
                continue
            outcomes = get(other.family).outcomes
            if outcomes.reference is None:
                continue
            for label in _partners(a, other):
                f = other.frame
                f = f[(f["model"].astype(str) == label).to_numpy() & (f["setting"].astype(str) == a.setting).to_numpy()]
                for cond, flips in _static_flips(f, outcomes.reference, outcomes.unread_flips).items():
                    shared = [(i, flips[i], adaptive[i]) for i in sorted(flips) if i in adaptive]
                    if shared:
                        out.append(StaticRow(a.label, f"{other.name}, {cond}", turns, static_vs_adaptive(shared)))
    return out


STATIC_COLUMNS = (
    Column("model", "Model"),
    Column("static", "Static run, condition"),
    Column("n", "Items", numeric=True, note="right at clean in both runs, attacked by the adaptive run"),
    Column("static_asr", "Static ASR", numeric=True, note="items a static stress of the condition flipped (any of its probes)"),
    Column("adaptive_asr", "Adaptive ASR within N", numeric=True),
    Column("mcnemar", "Static only / adaptive only, exact McNemar p", numeric=True),
)


@dataclass(frozen=True)
class StaticRow:
    """A static run's condition beside the adaptive run on the same items and model."""

    model: str
    static: str
    turns: int
    result: StaticVsAdaptive


def static_table(rows: Sequence[StaticRow]) -> Table:
    """The static suite's ASR beside the adaptive ASR within N turns on the same items: both with
    Wilson intervals and n, the discordant items and the exact McNemar p."""
    cells = []
    for r in rows:
        s = r.result
        cells.append(
            (
                text(r.model, strong=True),
                text(r.static),
                count(s.n),
                rate_cell(s.static),
                Cell(
                    rate_cell(s.adaptive).text,
                    s.adaptive.p,
                    note=(*rate_cell(s.adaptive).note, f"N={r.turns}"),
                    data={"lo": s.adaptive.lo, "hi": s.adaptive.hi, "n": s.adaptive.n},
                ),
                Cell(
                    f"{s.static_only} / {s.adaptive_only}",
                    s.p,
                    note=(f"p {p_value(s.p).text}",),
                    data={"static_only": s.static_only, "adaptive_only": s.adaptive_only},
                ),
            )
        )
    return Table(
        "static_vs_adaptive",
        STATIC_COLUMNS,
        tuple(cells),
        note=(
            "Paired by item on the items the model had right at clean in both runs: an item counts as flipped by the static "
            "suite when any of its stressed units under the condition was not right (as its run counts a flip), and by the "
            "adaptive attack when it flipped within N turns (N: the adaptive run's budget)."
        ),
    )
