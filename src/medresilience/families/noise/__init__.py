"""Clinical noise (issue #11): diagnosis cases perturbed the way real clinical text is noisy, each
variant paired with the original case. Red herrings (irrelevant everyday sentences: 1, 5 or 10
spread over the case, the 10 as one block, and whitespace of the same length as the control),
clinical abbreviations, and an informal rewrite; asked as an MCQ (scored by letter) or as a free
diagnosis judged against the reference. Two runs pair unit by unit in `medres compare`.

This module declares the family to the registry; construction, metrics and the report are
imported when first used.

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
from ...records import CLEAN, Item, Probe
from ...run.label_rates import accuracy, flip, flip_read
from ...sources import register_format
from ...suite import Suite
from . import review
from .block import NoiseBlock
from .delivery import NoiseOptions, decoding, prompts, render, scorer
from .probe import NoiseProbe
from .taxonomy import CONDITIONS, FACETS, FAMILY, HEADLINE_COLUMNS, POOLED
from .taxonomy import TITLES as TITLE

STRATA = (("by_source", "By source"),)
#: the headline rates as functions of unit labels (read by letter, or judged in diagnosis mode; the
#: label audit corrects each): each variant's accuracy and the flip rates of the headline variant
_TITLES = dict(HEADLINE_COLUMNS)
ACCURACY = {c: accuracy(f"{c}_acc", _TITLES.get(f"{c}_acc", f"{c} acc"), (c,)) for c in (CLEAN, *CONDITIONS)}
LABEL_RATES = (
    *ACCURACY.values(),
    flip("redherring-10_flip", _TITLES["redherring-10_flip"], ("redherring-10",)),
    flip_read("redherring-10_flip_read", _TITLES["redherring-10_flip_read"], ("redherring-10",)),
)
#: the headline paired comparisons, the first the headline (`medres plan` sizes each; `medres eval
#: --until` narrows the accuracy with 10 red herrings, and decides the original's minus it in a run of
#: one model): the accuracy of a variant against the original of the same case (and epoch: with
#: --epochs N a case gives N pairs), as the paired McNemar reads it
COMPARISONS = tuple(
    HeadlineComparison(f"{v}_drop", f"Accuracy: {TITLE[v].lower()} vs the original case", ACCURACY[v], event="right", versus=ACCURACY[CLEAN])
    for v in ("redherring-10", "abbreviations", "rewrite")
)
#: the viewer's outcome of each rate's units, by the rate's suffix (accuracy: every unit of the condition)
RATE_OUTCOMES = {"_flip_read": "flip_read", "_flip": "flip", "_acc": None}


def viewer_filter(key: str) -> dict[str, str] | None:
    """The viewer's filter of the units behind a headline rate ("rewrite_flip": the rewrite's flips;
    "perturbed_acc": the units of every variant)."""
    if key == f"{POOLED}_acc":
        return {"condition": ",".join(CONDITIONS)}
    for suffix, outcome in RATE_OUTCOMES.items():
        cond = key[: -len(suffix)]
        if key.endswith(suffix) and cond in (CLEAN, *CONDITIONS):
            return {"condition": cond, **({"outcome": outcome} if outcome else {})}
    return None


def viewer_versus(key: str) -> dict[str, dict[str, str]] | None:
    """The viewer's filters of a trade-off accuracy's paired test against none (the original case,
    a variant, every variant pooled): the units answered on both sides."""
    flt = viewer_filter(key) if key.endswith("_acc") else None
    return None if flt is None else versus_filters(flt["condition"], "right")


def select(suite: Suite, options: NoiseOptions) -> Iterator[Probe]:
    for p in suite.probes:
        if options.variants is None or p.condition in options.variants:
            yield p


metrics = lazy(f"{__name__}.metrics:noise_metrics")


headline = lazy(f"{__name__}.headline:headline")


report = lazy(f"{__name__}.report.section:section")


compare = lazy(f"{__name__}.report.compare:compare_spec")


tradeoff = lazy(f"{__name__}.report.tradeoff:tradeoff")


def _diagnosis_cases(path: Path, skips: object = None) -> Iterator[Item]:
    from .construct.cases import read_diagnosis_cases

    return read_diagnosis_cases(path, skips)


# `medres import FILE --format diagnosis`: the diagnosis cases of any MCQ source or free-form file
register_format(
    "diagnosis",
    _diagnosis_cases,
    (),
    "diagnosis (the most-likely-diagnosis or -cause questions of any MCQ source, items file or free-form file, as diagnosis cases; the other rows counted)",
)


commands = lazy(f"{__name__}.commands:commands")


FAMILY_SPEC = register(
    Family(
        name=FAMILY,
        title="Clinical noise",
        probes=ProbeSpec(NoiseProbe, CONDITIONS, FACETS),
        evaluation=EvaluationSpec(
            render=render,
            scorer=scorer,
            scorings=("letter", "logprob", "judge"),
            options=NoiseOptions,
            select=select,
            prompts=prompts,
            decoding=decoding,
            epochs=True,
            example_rule=ExampleRule(None, False, "1 when the answer to the perturbed case is right"),
        ),
        measures=MeasureSpec(
            results_block=NoiseBlock,
            metrics=metrics,
            headline=headline,
            columns=HEADLINE_COLUMNS,
            strata=STRATA,
            profile=(
                ("clean_acc", "original accuracy", True),
                ("redherring-10_acc", "accuracy, 10 red herrings", True),
                ("abbreviations_acc", "accuracy, abbreviations", True),
                ("rewrite_acc", "accuracy, rewritten", True),
            ),
            rates=LABEL_RATES,
            comparisons=COMPARISONS,
        ),
        report=ReportSpec(section=report, compare=compare, tradeoff=tradeoff),
        suites=SuiteSpec(commands=commands),
        review=ReviewSpec(rubrics=(review.RUBRIC_NOISE,)),
        outcomes=Outcomes(reference=CLEAN, filters=viewer_filter, versus=viewer_versus),
    )
)
