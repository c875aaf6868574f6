"""The adaptive family's report section: the headline rates per model and setting, the persuasion
measures of the run's attacks (`report.persuasion.persuasion_parts`: the flip curve figure, the
summary table whose flipped cell links to the viewer's flipped units, the curve's values; by kind of
stress when a run drew more than one), where flips were resampled the tests of each flip and the
curve of flips that stand, where the run directory holds clinicians' reviews of its successful
attacks the flip measures with the attacks judged invalid left out (`reviewed`), two models attacked
on the same items compared, a static run of the report on the same items and model beside the
adaptive ASR (`paired`), and the loop's calls and tokens by role, with their CSV tables. The
summaries are computed from the traces in each run's `loop` block (`AttackTrace.from_dict`,
`summarise`), the numbers its results block holds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any

import pandas as pd

from ....report.html import rate_units
from ....report.parts import Block, Column, Paragraph, Section, Table, count, text
from ....report.persuasion import comparison_table, persuasion_parts, standing_table, summary_table, tests_table
from ....report.rundir import RunData, family_blocks, names_of
from ....report.section import FamilySection
from ....run.results import ResampledFlip
from ....stats.persuasion import AttackTrace, ModelComparison, PersuasionSummary, summarise
from ..block import AdaptiveBlock
from ..loop import ROLES
from ..taxonomy import CONDITION, FAMILY, HEADLINE_COLUMNS
from .paired import StaticRow, attacks, model_comparisons, resampling, static_rows, static_table
from .reviewed import review_blocks, review_frame, review_rows

TITLE = "Adaptive attacks"
INTRO = (
    "Each item is asked clean; where the answer is right, an attacker model proposes a stress aimed at a wrong option, "
    "checked before the answering model sees it, and revises it turn by turn until the answer flips or the budget is "
    "spent. A curve belongs to the target, attacker, checker and budget together: a weak attacker that flips nothing "
    "says little about the target."
)
#: the counts of the loop block shown per role
CALL_KEYS = ("calls", "prompt_tokens", "completion_tokens")
CALL_COLUMNS = (
    Column("model", "Model"),
    Column("setting", "Setting"),
    Column("role", "Role"),
    Column("calls", "Calls", numeric=True),
    Column("prompt_tokens", "Prompt tokens", numeric=True),
    Column("completion_tokens", "Completion tokens", numeric=True),
)


def _label(model: str, setting: str, settings: int) -> str:
    return model if settings == 1 else f"{model}, {setting}"


def summaries(runs: Sequence[RunData], by_kind: bool = False) -> list[tuple[PersuasionSummary, str | None]]:
    """Every run's persuasion summaries (per model and setting, or model x setting x kind) from the
    traces of its `loop` block, each labelled with the model's name among the runs (and its
    setting where a run has several), beside the viewer link of its flipped units."""
    names = names_of(runs)
    out: list[tuple[PersuasionSummary, str | None]] = []
    for r in runs:
        loop: dict[str, Any] = (r.results or {}).get("loop") or {}
        for setting, block in loop.items():
            where = f"{r.name} results.json loop.{setting}.traces"
            found = [AttackTrace.from_dict(d, where=f"{where}[{i}]") for i, d in enumerate(block.get("traces", []))]
            for s in summarise(found, by_kind=by_kind):
                model = names.name(r.name, s.model)
                link = rate_units(r.name, model, setting, CONDITION, "flip", **({"kind": s.kind} if by_kind and s.kind else {}))
                out.append((replace(s, model=_label(model, setting, len(loop))), link))
    return out


def persuasion_frame(found: Sequence[tuple[PersuasionSummary, str | None]]) -> pd.DataFrame:
    """One row per summary: attacked, flipped within the budget (k, n, p, lo, hi), the median turns
    (with its interval), flips to the target (k, n, p, lo, hi), rejected candidates, turns used."""
    rows = []
    for s, _ in found:
        f, m, t = s.flipped, s.median, s.to_target
        rows.append(
            {
                "model": s.model,
                "kind": s.kind,
                "attacked": s.attacked,
                "method": s.curve.method,
                "flipped_k": f.k,
                "flipped_n": f.n,
                "flipped_p": f.p,
                "flipped_lo": f.lo,
                "flipped_hi": f.hi,
                "median_turns": m.turns,
                "median_lo": m.lo,
                "median_hi": m.hi,
                "to_target_k": t.k,
                "to_target_n": t.n,
                "to_target_p": t.p,
                "to_target_lo": t.lo,
                "to_target_hi": t.hi,
                "rejected": s.rejected,
                "turns_used": s.turns_used,
            }
        )
    return pd.DataFrame(rows)


def tests_frame(tests: Sequence[tuple[str, ResampledFlip]]) -> pd.DataFrame:
    """One row per resampled flip: the model and item, then its test's fields (the turn, the draws
    asked, right and read per side, p, adjusted p, whether it stands)."""
    return pd.DataFrame([{"model": model, "item": f.item_id, **{k: v for k, v in asdict(f).items() if k != "item_id"}} for model, f in tests])


def models_frame(compared: Sequence[ModelComparison]) -> pd.DataFrame:
    """One row per two models compared: n, each one's flipped k / n / p / lo / hi, the discordant
    items and McNemar's p, who flipped first and the sign test's p."""
    rows = []
    for c in compared:
        row: dict[str, object] = {"a": c.a, "b": c.b, "n": c.n}
        for side, r in (("a", c.a_flipped), ("b", c.b_flipped)):
            row.update({f"{side}_flipped_{k}": v for k, v in r.as_dict().items()})
        row.update(only_a=c.only_a, only_b=c.only_b, p_mcnemar=c.p_flipped, a_first=c.a_first, b_first=c.b_first, ties=c.ties, p_sign=c.p_first)
        rows.append(row)
    return pd.DataFrame(rows)


def static_frame(static: Sequence[StaticRow]) -> pd.DataFrame:
    """One row per static run and condition beside an adaptive model: n, both rates, the discordant items and McNemar's p."""
    rows = []
    for s in static:
        r = s.result
        row: dict[str, object] = {"model": s.model, "static": s.static, "turns": s.turns, "n": r.n}
        for side, rate in (("static", r.static), ("adaptive", r.adaptive)):
            row.update({f"{side}_{k}": v for k, v in rate.as_dict().items()})
        row.update(static_only=r.static_only, adaptive_only=r.adaptive_only, p_mcnemar=r.p)
        rows.append(row)
    return pd.DataFrame(rows)


def calls_frame(runs: Sequence[RunData]) -> pd.DataFrame:
    """One row per (model, setting, role) of the loop block's counts: calls and tokens (the draws of
    resampled flips under `resample` where the run resampled)."""
    names = names_of(runs)
    rows = []
    for r in runs:
        for setting, block in ((r.results or {}).get("loop") or {}).items():
            for model, c in block.get("counts", {}).items():
                for role in (*ROLES, *(["resample"] if "resample" in c["calls"] else [])):
                    got = c["calls"].get(role, {})
                    rows.append({"model": names.name(r.name, model), "setting": setting, "role": role, **{k: got.get(k, 0) for k in CALL_KEYS}})
    return pd.DataFrame(rows, columns=["model", "setting", "role", *CALL_KEYS])


def headline_table(runs: Sequence[RunData]) -> pd.DataFrame:
    rows = []
    for _run, model, setting, block in family_blocks(runs, AdaptiveBlock):
        row: dict[str, object] = {"model": model, "setting": setting}
        for k, _ in HEADLINE_COLUMNS:
            r = block.overall.get(k)
            row.update({f"{k}_{x}": None if r is None else getattr(r, x) for x in ("p", "lo", "hi", "n")})
        rows.append(row)
    return pd.DataFrame(rows)


def _calls_table(calls: pd.DataFrame) -> Table:
    rows = tuple(
        (text(r.model, strong=True), text(r.setting), text(r.role), count(r.calls), count(r.prompt_tokens), count(r.completion_tokens))
        for r in calls.itertuples()
    )
    return Table(
        "adaptive_calls",
        CALL_COLUMNS,
        rows,
        note="The loop's calls and tokens by role: the clean question, the attacker, the checker and the target's answers to the attacks.",
    )


def section(runs: Sequence[RunData], others: Sequence[RunData] = ()) -> FamilySection:
    """The section of the adaptive runs, with a static run among `others` (the report's runs of
    other families) on the same items and model set beside them."""
    overall = summaries(runs)
    kinds = summaries(runs, by_kind=True)
    links = {(s.model, s.kind): link for s, link in [*overall, *kinds]}

    def link(s: PersuasionSummary) -> str | None:
        return links.get((s.model, s.kind))

    calls = calls_frame(runs)
    attacked = attacks(runs)
    standing, tests, kept = resampling(attacked)
    compared = model_comparisons(attacked)
    static = static_rows(attacked, others)
    shown = [s for s, _ in overall]
    blocks: list[Block] = [Paragraph(INTRO, "plain"), *persuasion_parts(shown, link, [kept.get(s.model) for s in shown])]
    if len({s.kind for s, _ in kinds}) > 1:
        blocks.append(summary_table([s for s, _ in kinds], link, name="persuasion_by_kind"))
    if standing:
        blocks += [standing_table(standing), tests_table(tests)]
    reviewed = review_rows(attacked)
    blocks += review_blocks(reviewed)
    if compared:
        blocks.append(comparison_table(compared))
    if static:
        blocks.append(static_table(static))
    if not calls.empty:
        blocks.append(_calls_table(calls))
    h = headline_table(runs)
    return FamilySection(
        family=FAMILY,
        title=TITLE,
        key_parts=(Paragraph("No scored results." if h.empty else INTRO, "plain"),),
        parts=[Section(FAMILY, TITLE, tuple(blocks))],
        tables={
            "adaptive_headline": h,
            "adaptive_persuasion": persuasion_frame([*overall, *kinds]),
            "adaptive_calls": calls,
            **({"adaptive_attack_tests": tests_frame(tests)} if tests else {}),
            **({"adaptive_reviewed": review_frame(reviewed)} if reviewed else {}),
            **({"adaptive_models": models_frame(compared)} if compared else {}),
            **({"adaptive_static": static_frame(static)} if static else {}),
        },
        headline=h,
        summary_columns=list(HEADLINE_COLUMNS),
    )
