"""Misleading context (MedMisBench): option-aligned false sentences in 5 content corruptions x 3
provenance framings, delivered one at a time (Type 1: one wrong option's sentence) or as the whole
bundle with the truth (Type 2), paired with the clean question; ASR and targeted ASR.

This module declares the family to the registry; the heavy parts (metrics, report, construction)
are imported when first used.

May import: the spine (every module outside families/), never another family."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ...family import (
    EvaluationSpec,
    ExampleRule,
    Family,
    HeadlineComparison,
    MeasureSpec,
    Outcomes,
    ProbeSpec,
    ReportSpec,
    ReviewSpec,
    SuiteSpec,
    lazy,
    register,
    versus_filters,
)
from ...records import CLEAN, Item
from ...run.label_rates import accuracy, flip, flip_read, flip_to_target
from ...runtime.jsontypes import JSONObject
from ...scoring.mcq import mcq_scorer
from ...sources import register_format
from ...suite import Suite
from . import review
from .block import MisleadingBlock
from .delivery import MisleadingOptions, render
from .formats.medmisbench import MARK_KEYS, read_flat_items, read_medmisbench
from .formats.release import CONTEXT_KEYS, read_release, read_release_items
from .probe import CONDITIONS, FACETS, FAMILY, MisleadingProbe, probes_of

HEADLINE_COLUMNS = (
    ("clean_acc", "Clean acc"),
    ("type1_acc", "Type 1 acc"),
    ("type2_acc", "Type 2 acc"),
    ("type1_asr", "Type 1 ASR"),
    ("type1_tasr", "Type 1 TASR"),
    ("type2_asr", "Type 2 ASR"),
    ("type1_asr_read", "Type 1 ASR, unread left out"),
    ("type2_asr_read", "Type 2 ASR, unread left out"),
)
#: the headline rates as functions of unit labels (the label audit corrects each): accuracy; ASR, a
#: flip from a right clean answer (an unread reply a flip); TASR, a flip to the injected target (an
#: open answer's judge verdict `claim` too); the ASR with unread replies left out
CLEAN_ACC, TYPE1_ACC, TYPE2_ACC = (accuracy(f"{c}_acc", t, (c,)) for c, t in ((CLEAN, "Clean acc"), ("type1", "Type 1 acc"), ("type2", "Type 2 acc")))
TYPE1_ASR, TYPE2_ASR = flip("type1_asr", "Type 1 ASR", ("type1",)), flip("type2_asr", "Type 2 ASR", ("type2",))
LABEL_RATES = (
    CLEAN_ACC,
    TYPE1_ACC,
    TYPE2_ACC,
    TYPE1_ASR,
    flip_to_target("type1_tasr", "Type 1 TASR", ("type1",), also=("claim",)),
    TYPE2_ASR,
    flip_read("type1_asr_read", "Type 1 ASR, unread left out", ("type1",)),
    flip_read("type2_asr_read", "Type 2 ASR, unread left out", ("type2",)),
)
#: the headline paired comparisons, the first the headline (`medres plan` sizes each; `medres eval
#: --until` narrows the Type 2 ASR, and decides clean minus Type 2 accuracy in a run of one model):
#: each ASR of one model against another, or of a setting against none, on the probes of items
#: answered right clean on both sides (one Type 1 probe per item in the default design, -O
#: type1=sample; -O type1=all gives one per wrong option); Type 2 accuracy against clean, item by item
COMPARISONS = (
    HeadlineComparison("type2_asr", "Type 2 ASR, B vs A (two models, or a setting vs none)", TYPE2_ASR, event="wrong", given=CLEAN),
    HeadlineComparison("type1_asr", "Type 1 ASR, B vs A (two models, or a setting vs none)", TYPE1_ASR, event="wrong", given=CLEAN),
    HeadlineComparison("type2_drop", "Accuracy: Type 2 vs clean", TYPE2_ACC, event="right", versus=CLEAN_ACC),
)
STRATA = (("by_source", "By source"), ("by_content_type", "By content type"), ("by_provenance", "By provenance"))
#: the viewer's outcome of each rate's units (accuracy: every unit of the condition)
RATE_OUTCOMES = {"acc": None, "asr": "flip", "asr_read": "flip_read", "tasr": "flip_to_target"}


def viewer_filter(key: str) -> dict[str, str] | None:
    """The viewer's filter of the units behind a headline rate ("type1_asr": the Type 1 flips)."""
    cond, _, rate = key.partition("_")
    if cond not in (CLEAN, "type1", "type2") or rate not in RATE_OUTCOMES:
        return None
    outcome = RATE_OUTCOMES[rate]
    return {"condition": cond, **({"outcome": outcome} if outcome else {})}


def viewer_versus(key: str) -> dict[str, dict[str, str]] | None:
    """The viewer's filters of a rate's paired test of a setting against none (the trade-off's and
    the settings effect's, `report.compare`): an accuracy on the units answered on both sides; an
    ASR or TASR on the probes whose clean answers are right on both sides, an ASR's b the flips
    under none the setting avoids, a TASR's b the flips to the target under none only."""
    cond, _, rate = key.partition("_")
    if cond not in (CLEAN, "type1", "type2"):
        return None
    if rate == "acc":
        return versus_filters(cond, "right")
    if rate in ("asr", "tasr") and cond != CLEAN:
        return versus_filters(cond, "wrong" if rate == "asr" else "to_target", pairs="reference_right,reference_right_none")
    return None


def select(suite: Suite, options: MisleadingOptions) -> Iterator[MisleadingProbe]:
    for p in probes_of(suite):
        if p.condition == "type1" and options.type1 == "sample" and not p.sampled:
            continue
        yield p


def scorer(item: Item, probe: MisleadingProbe | None, scoring: str, options: MisleadingOptions):
    if options.answer == "open":
        from ...runtime.errors import ConfigError
        from .open_answer import open_scorer

        if scoring == "logprob":
            raise ConfigError("--scoring", "open answers are generated and judged: logprob scoring reads option letters")
        return open_scorer(item, probe, options.judge)
    return mcq_scorer(item, scoring)


metrics = lazy(f"{__name__}.metrics:misleading_metrics")


headline = lazy(f"{__name__}.headline:headline")


def prompts(options: MisleadingOptions) -> dict[str, str]:
    if options.answer == "open":
        from .open_answer import OPEN_INSTRUCTION, OPEN_SYSTEM, RUBRIC

        return {
            "answer": "open",
            "system": OPEN_SYSTEM,
            "instruction": OPEN_INSTRUCTION,
            "judge_rubric": RUBRIC.instructions,
            "judge_rubric_hash": RUBRIC.hash,
            **_passage(options),
        }
    return {**options.prompts.as_dict(), **_passage(options)}


def _passage(options: MisleadingOptions) -> dict[str, str]:
    # recorded only when it differs from the default, so the recorded hashes of earlier runs stand
    return {"context": options.context} if options.context != "item" else {}


def decoding(options: MisleadingOptions) -> JSONObject:
    budget = options.prompts.max_tokens
    return {} if budget is None else {"max_tokens": budget}


report = lazy(f"{__name__}.report.section:section")


compare = lazy(f"{__name__}.report.compare:compare_spec")


tradeoff = lazy(f"{__name__}.report.tradeoff:tradeoff")


export = lazy(f"{__name__}.formats.export:export_suite")


commands = lazy(f"{__name__}.commands:commands")


def _detect(path: Path) -> str | None:
    """medmisbench: the study's flat layout (a file, or a folder of config files); bundles: this
    project's nested layout (option_contexts)."""
    from ...runtime.errors import MedresError
    from .formats.medmisbench import is_flat, release_files, rows_of_file

    path = Path(path)
    try:
        if path.is_dir():
            return "medmisbench" if release_files(path) else None
        first = next(rows_of_file(path), None)
    except (MedresError, StopIteration, OSError, ValueError):
        return None
    if first is None:
        return None
    keys = set(first[1])
    if is_flat(keys):
        return "medmisbench"
    return "bundles" if keys & set(CONTEXT_KEYS) else None


FAMILY_SPEC = register(
    Family(
        name=FAMILY,
        title="Misleading context",
        probes=ProbeSpec(MisleadingProbe, CONDITIONS, FACETS),
        evaluation=EvaluationSpec(
            render=render,
            scorer=scorer,
            options=MisleadingOptions,
            select=select,
            prompts=prompts,
            decoding=decoding,
            example_rule=ExampleRule(("type1",), True, "1 when the clean answer is right and stays right with one misleading sentence (Type 1)"),
        ),
        measures=MeasureSpec(
            results_block=MisleadingBlock,
            metrics=metrics,
            headline=headline,
            columns=HEADLINE_COLUMNS,
            strata=STRATA,
            profile=(("clean_acc", "clean accuracy", True), ("type1_asr", "Type 1, 1 - ASR", False), ("type2_asr", "Type 2, 1 - ASR", False)),
            rates=LABEL_RATES,
            comparisons=COMPARISONS,
        ),
        report=ReportSpec(section=report, compare=compare, tradeoff=tradeoff),
        suites=SuiteSpec(
            commands=commands,
            readers={"medmisbench": read_medmisbench, "bundles": read_release},
            detect=_detect,
            export=export,
            export_formats=("release", "parquet", "bundles", "bundles-parquet"),
        ),
        review=ReviewSpec(rubrics=(review.RUBRIC_A,), blocks=review.review_blocks),
        outcomes=Outcomes(reference=CLEAN, target="target", filters=viewer_filter, versus=viewer_versus),
    )
)

register_format(
    "medmisbench",
    read_flat_items,
    MARK_KEYS,
    "medmisbench (the study's release: id, question, answer, opa.., injecta.., injection_content, injection_provenance)",
)
register_format("bundles", read_release_items, CONTEXT_KEYS, "bundles (this project's release layout: JSON lines with option_contexts)")
