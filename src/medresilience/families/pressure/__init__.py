"""Pressure after commitment: each item is asked clean (turn 1), the model's own reply stays in
the conversation, and the user pushes back in a second turn (a bare request to answer again, doubt,
a false claim for a wrong option framed by its provenance, or insistence on a wrong option); the
model answers again. Flip after commitment, flips to the pushed option, recoveries, and each
condition's excess over the `repeat` control, paired by item. The second turn is a dependent call
of the spine (`Family.evaluation.follows`): its request holds turn 1's stored reply.

This module declares the family to the registry; metrics, the report and the builder are imported
when first used.

May import: the spine (every module outside families/), and the misleading family (the clean
question it asks first, the bundles its claims come from and the builder that writes them
from an items file)."""

from __future__ import annotations

from ...family import (
    EvaluationSpec,
    ExampleRule,
    Family,
    HeadlineComparison,
    MeasureSpec,
    Outcomes,
    ProbeSpec,
    ReportSpec,
    SuiteSpec,
    lazy,
    register,
    versus_filters,
)
from ...records import CLEAN
from ...run.label_rates import accuracy, flip
from .block import PressureBlock
from .delivery import PressureOptions, follows, prompts, render, scorer
from .probe import PressureProbe
from .taxonomy import CONDITIONS, FACETS, FAMILY, HEADLINE_COLUMNS, LABELS, POOLS

#: the headline rates as functions of unit labels (the label audit corrects each): turn 1 accuracy
#: and each pool's flip after commitment (right at turn 1, not right at turn 2; unread is not right)
FLIPS = {key: flip(key, dict(HEADLINE_COLUMNS).get(key, key), conds) for key, conds in POOLS}
LABEL_RATES = (accuracy("clean_acc", "Turn 1 acc", (CLEAN,)), *FLIPS.values())

#: the headline paired comparisons, the first the headline (`medres plan` sizes each; `medres eval
#: --until` narrows the flip rate under pushback, and decides its excess over the repeat control in a
#: run of one model): the flip after commitment under pushback (every condition but repeat, one unit
#: each per item), then under each condition, against the repeat control's on the same items right at
#: turn 1 (its excess over repeat, as the metrics test it)
PUSHBACK = dict(POOLS)["flip_pushback"]
COMPARISONS = (
    HeadlineComparison(
        "flip_pushback", "Flip after commitment, pushback vs repeat", FLIPS["flip_pushback"], "wrong", FLIPS["flip_repeat"], CLEAN, len(PUSHBACK)
    ),
    *(
        HeadlineComparison(
            f"flip_{c}",
            f"Flip after commitment, {LABELS[c].lower()} vs repeat",
            FLIPS.get(f"flip_{c}") or flip(f"flip_{c}", LABELS[c], (c,)),
            "wrong",
            FLIPS["flip_repeat"],
            CLEAN,
        )
        for c in PUSHBACK
    ),
)


def viewer_filter(key: str) -> dict[str, str] | None:
    """The viewer's filter of the units behind a headline rate ("flip_doubt": the flips after
    doubt; a pooled rate, "flip_claim": the flips under any of its conditions)."""
    if key == "clean_acc":
        return {"condition": CLEAN}
    pooled = dict(POOLS).get(key)
    if pooled is not None:
        return {"condition": ",".join(pooled), "outcome": "flip"}
    kind, _, cond = key.partition("_")
    return {"condition": cond, "outcome": "flip"} if kind == "flip" and cond in CONDITIONS else None


def viewer_versus(key: str) -> dict[str, dict[str, str]] | None:
    """The viewer's filters of a measure's paired test between two sides (`medres compare`): turn-1
    accuracy on the first turns answered on both sides; a condition's flip on its second turns
    answered on both sides after a right first answer on both, b the flips on the other side only."""
    if key == "clean_acc":
        return versus_filters(CLEAN, "right")
    kind, _, cond = key.partition("_")
    if kind == "flip" and cond in CONDITIONS:
        return versus_filters(cond, "wrong", pairs="reference_right,reference_right_none")
    return None


FAMILY_SPEC = register(
    Family(
        name=FAMILY,
        title="Pressure after commitment",
        probes=ProbeSpec(PressureProbe, CONDITIONS, FACETS),
        evaluation=EvaluationSpec(
            render=render,
            scorer=scorer,
            scorings=("letter",),
            options=PressureOptions,
            prompts=prompts,
            follows=follows,
            # a second turn does not stand alone (it needs the model's first reply): examples are the clean questions
            example_rule=ExampleRule((), False, "1 when the clean answer is right"),
        ),
        measures=MeasureSpec(
            results_block=PressureBlock,
            metrics=lazy(f"{__name__}.metrics:pressure_metrics"),
            headline=lazy(f"{__name__}.headline:headline"),
            columns=HEADLINE_COLUMNS,
            profile=(("flip_pushback", "pushback, 1 - flip after commitment", False),),
            rates=LABEL_RATES,
            comparisons=COMPARISONS,
        ),
        report=ReportSpec(section=lazy(f"{__name__}.report.section:section"), compare=lazy(f"{__name__}.report.compare:compare_spec")),
        suites=SuiteSpec(commands=lazy(f"{__name__}.commands:commands")),
        # the viewer's outcomes: a second turn against the item's first (clean) answer; flips to the pushed option
        outcomes=Outcomes(reference=CLEAN, target="target", filters=viewer_filter, versus=viewer_versus),
    )
)
