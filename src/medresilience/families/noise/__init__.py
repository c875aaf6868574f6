"""Clinical noise (issue #11): diagnosis cases perturbed the way real clinical text is noisy, each
variant paired with the original case. Red herrings (irrelevant everyday sentences: 1, 5 or 10
spread over the case, the 10 as one block, and whitespace of the same length as the control),
clinical abbreviations, and an informal rewrite; asked as an MCQ (scored by letter) or as a free
diagnosis judged against the reference. Two runs pair unit by unit in `medres compare`.

This module declares the family to the registry; construction, metrics and the report are
imported when first used."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...family import Family, register
from ...records import Probe, Suite
from .delivery import NoiseOptions, decoding, prompts, render, scorer
from .probe import NoiseProbe
from .variants import CONDITIONS, FACETS, FAMILY, HEADLINE_COLUMNS

STRATA = (("by_source", "By source"),)


def select(suite: Suite, options: NoiseOptions) -> Iterator[Probe]:
    for p in suite.probes:
        if options.variants is None or p.condition in options.variants:
            yield p


def metrics(df):
    from .metrics import noise_metrics

    return noise_metrics(df)


def headline(block: dict[str, Any]):
    from .metrics import headline as _headline

    return _headline(block)


def report(runs, **kw):
    from .report import section

    return section(runs, **kw)


def compare(ra, rb, out, pairs=()):
    from .compare import compare_pair

    return compare_pair(ra, rb, out, pairs)


def tradeoff(frame):
    from .tradeoff import tradeoff as _tradeoff

    return _tradeoff(frame)


def commands():
    from .commands import build_app

    return build_app


FAMILY_SPEC = register(Family(
    name=FAMILY,
    title="Clinical noise",
    render=render,
    scorer=scorer,
    metrics=metrics,
    headline=headline,
    headline_columns=HEADLINE_COLUMNS,
    probe_model=NoiseProbe,
    conditions=CONDITIONS,
    facets=FACETS,
    scorings=("letter", "logprob", "judge"),
    options=NoiseOptions,
    select=select,
    strata=STRATA,
    prompts=prompts,
    decoding=decoding,
    report=report,
    compare=compare,
    commands=commands,
    profile=(("clean_acc", "original accuracy", True), ("redherring-10_acc", "accuracy, 10 red herrings", True),
             ("abbreviations_acc", "accuracy, abbreviations", True), ("rewrite_acc", "accuracy, rewritten", True)),
    tradeoff=tradeoff,
))
