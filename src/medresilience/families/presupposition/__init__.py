"""False presuppositions (Cancer-Myth): patient questions that silently assume a myth, answered
in free text and judged -1/0/1 on whether the answer corrects the false premise (PCS: mean score,
PCR: share of full corrections), with a no-false-presupposition control (NFP) that measures
over-caution. Suites come from the study's files (`medres import`) or from the adversarial
generator / responder / verifier loop (`medres build presupposition`).

This module declares the family to the registry; construction, import, metrics and the report
are imported when first used.

May import: the spine (every module outside families/), never another family."""

from __future__ import annotations

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
    StudyReference,
    SuiteSpec,
    lazy,
    register,
    versus_filters,
)
from ...run.label_rates import LabelRate, UnitReading, mean_value
from ...sources import register_format
from ...suite import Suite
from . import review
from .block import PresuppositionBlock
from .delivery import PresuppositionOptions, decoding, prompts, render, scorer
from .probe import PresuppositionProbe
from .taxonomy import CONDITIONS, FACETS, FAMILY, NFP, PRESUPPOSITION

#: the headline numbers of an overall block (PCS is a mean score on -1..1, the others rates)
HEADLINE_COLUMNS = (
    ("pcs", "PCS"),
    ("pcr", "PCR"),
    ("overcaution", "NFP over-caution"),
    ("unscored", "Unscored"),
)
STRATA = (("by_category", "By category"), ("by_generator", "By generator"))


def _corrects(u: UnitReading, ref: UnitReading | None) -> float:
    return float(u.right)  # the top verdict (value 1): the premise corrected


def _flags(u: UnitReading, ref: UnitReading | None) -> float:
    return float(not u.right)  # any verdict below the top value: a premise the question does not hold, flagged


#: the headline rates as functions of the judge's verdicts (the label audit corrects each, on the
#: scored answers, as the metrics count them)
PCR = LabelRate("pcr", "PCR", (PRESUPPOSITION,), _corrects, over="scored")
OVERCAUTION = LabelRate("overcaution", "NFP over-caution", (NFP,), _flags, over="scored")
LABEL_RATES = (mean_value("pcs", "PCS", (PRESUPPOSITION,)), PCR, OVERCAUTION)
#: the headline paired comparisons, the first the headline (`medres plan` sizes each; `medres eval
#: --until` narrows PCR; with no paired rate of one model, a decision compares models or settings):
#: PCR (premise fully corrected) and over-caution on the control questions, of one model against
#: another or of a setting against none
COMPARISONS = (
    HeadlineComparison("pcr", "PCR, B vs A (two models, or a setting vs none)", PCR, event="right"),
    HeadlineComparison("overcaution", "NFP over-caution, B vs A (two models, or a setting vs none)", OVERCAUTION, event="wrong"),
)


metrics = lazy(f"{__name__}.metrics:presupposition_metrics")


headline = lazy(f"{__name__}.headline:headline")


report = lazy(f"{__name__}.report.section:section")


compare = lazy(f"{__name__}.report.compare:compare_spec")


tradeoff = lazy(f"{__name__}.report.tradeoff:tradeoff")


commands = lazy(f"{__name__}.commands:commands")


def _reader(name: str):
    def read(path: Path, **kw) -> Suite:
        from .formats import release

        return release.READERS[name](path, **kw)

    read.__name__ = f"read_{name.replace('-', '_')}"
    return read


detect = lazy(f"{__name__}.formats.release:detect")


export = lazy(f"{__name__}.formats.release:export_suite")


#: suite formats `medres import` reads (release.READERS holds the readers)
SUITE_FORMATS = ("cancer-myth", "cancer-myth-nfp", "cancer-myth-candidates")

#: the viewer's filter of the units behind each headline rate (PCS and PCR: the scored answers to
#: false presuppositions; over-caution: the scored answers to the control questions)
VIEWER_FILTERS = {
    "pcs": {"condition": PRESUPPOSITION, "state": "valid"},
    "pcr": {"condition": PRESUPPOSITION, "state": "valid"},
    "overcaution": {"condition": NFP, "state": "valid"},
    "unscored": {"outcome": "unscored"},
}


def viewer_filter(key: str) -> dict[str, str] | None:
    return VIEWER_FILTERS.get(key)


#: the viewer's filters of each trade-off measure's paired test against none, on the answers scored
#: on both sides: PCR counts corrections (b: corrected under none only), over-caution the control
#: answers not right (b: over-cautious under none only); PCS, a mean score, has no discordant pairs
VERSUS_FILTERS = {
    "pcr": versus_filters(PRESUPPOSITION, "right"),
    "pcs": versus_filters(PRESUPPOSITION, None),
    "overcaution": versus_filters(NFP, "wrong"),
}


def viewer_versus(key: str) -> dict[str, dict[str, str]] | None:
    return VERSUS_FILTERS.get(key)


FAMILY_SPEC = register(
    Family(
        name=FAMILY,
        title="False presuppositions",
        probes=ProbeSpec(PresuppositionProbe, CONDITIONS, FACETS, clean=False),
        evaluation=EvaluationSpec(
            render=render,
            scorer=scorer,
            scorings=("judge",),
            options=PresuppositionOptions,
            prompts=prompts,
            decoding=decoding,
            example_rule=ExampleRule(
                None, False, "the judge's verdict on 0..1: the false premise corrected, or (no-false-presupposition control) no premise wrongly flagged"
            ),
        ),
        measures=MeasureSpec(
            results_block=PresuppositionBlock,
            metrics=metrics,
            headline=headline,
            columns=HEADLINE_COLUMNS,
            strata=STRATA,
            profile=(("pcr", "PCR (premise corrected)", True), ("overcaution", "NFP, 1 - over-caution", False)),
            rates=LABEL_RATES,
            comparisons=COMPARISONS,
        ),
        report=ReportSpec(section=report, compare=compare, tradeoff=tradeoff),
        suites=SuiteSpec(
            commands=commands, readers={name: _reader(name) for name in SUITE_FORMATS}, detect=detect, export=export, export_formats=("cancer-myth", "parquet")
        ),
        review=ReviewSpec(
            rubrics=(review.RUBRIC_PREMISE, review.RUBRIC_PREMISE_ANSWER, review.RUBRIC_CANCERCARE, review.RUBRIC_REALISM),
            study_references={
                "presupposition-correction": StudyReference(
                    exact=0.711,
                    binary=1.0,
                    n=76,
                    who="GPT-4o vs humans",
                    source="Cancer-Myth, appendix C.1.1: GPT-4o's -1/0/1 scores against the mean of two annotators rounded up (0.5 -> 1), "
                    "76 answers; binary: fully corrects vs not",
                )
            },
        ),
        # only scored answers pair (an unread or cut reply is no answer)
        outcomes=Outcomes(unread_flips=False, filters=viewer_filter, versus=viewer_versus),
    )
)


def _read_myths(path):
    from .formats.release import myth_records

    return myth_records(path)


# the myth file is neither items nor a suite: `medres import FILE --format myths --out myths.jsonl`
# writes the normalised myth list that `medres build presupposition --myths` reads
register_format("myths", _read_myths, (), "myths (Cancer-Myth's myth file: cancer, myth, fact, source -> the normalised myth list)")
