"""Pressure after commitment: each item is asked clean (turn 1), the model's own reply stays in
the conversation, and the user pushes back in a second turn (a bare request to answer again, doubt,
a false claim for a wrong option framed by its provenance, or insistence on a wrong option); the
model answers again. Flip after commitment, flips to the pushed option, recoveries, and each
condition's excess over the `repeat` control, paired by item. The second turn is a dependent call
of the spine (`Family.follows`): its request holds turn 1's stored reply.

This module declares the family to the registry; metrics, the report and the builder are imported
when first used.

May import: the spine (every module outside families/), and the misleading family (the clean
question it asks first, the bundles its claims come from and the builder that writes them
from an items file)."""

from __future__ import annotations

from ...family import ExampleRule, Family, HeadlineComparison, Outcomes, lazy, register, versus_filters
from ...label_rates import accuracy, flip
from ...records import CLEAN
from ...stopping import UntilHeadline
from .block import PressureBlock
from .delivery import PressureOptions, follows, prompts, render, scorer
from .probe import PressureProbe
from .taxonomy import CONDITIONS, FACETS, FAMILY, HEADLINE_COLUMNS, LABELS, POOLS, REPEAT

#: the headline rates as functions of unit labels (the label audit corrects each): turn 1 accuracy
#: and each pool's flip after commitment (right at turn 1, not right at turn 2; unread is not right)
LABEL_RATES = (accuracy("clean_acc", "Turn 1 acc", (CLEAN,)), *(flip(key, dict(HEADLINE_COLUMNS).get(key, key), conds) for key, conds in POOLS))

#: the paired comparisons `medres plan` sizes: each condition's flip after commitment against the
#: repeat control's on the same items right at turn 1 (its excess over repeat, as the metrics test it)
COMPARISONS = tuple(
    HeadlineComparison(f"flip_{c}", f"Flip after commitment, {LABELS[c].lower()} vs repeat", (c,), event="wrong", versus=REPEAT, given=CLEAN)
    for c in CONDITIONS
    if c != REPEAT
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
        render=render,
        scorer=scorer,
        metrics=lazy(f"{__name__}.metrics:pressure_metrics"),
        headline=lazy(f"{__name__}.headline:headline"),
        headline_columns=HEADLINE_COLUMNS,
        probe_model=PressureProbe,
        conditions=CONDITIONS,
        facets=FACETS,
        scorings=("letter",),
        options=PressureOptions,
        prompts=prompts,
        report=lazy(f"{__name__}.report.section:section"),
        compare=lazy(f"{__name__}.report.compare:compare_spec"),
        commands=lazy(f"{__name__}.commands:commands"),
        profile=(("flip_pushback", "pushback, 1 - flip after commitment", False),),
        # a second turn does not stand alone (it needs the model's first reply): examples are the clean questions
        example_rule=ExampleRule((), False, "1 when the clean answer is right"),
        follows=follows,
        # the viewer's outcomes: a second turn against the item's first (clean) answer; flips to the pushed option
        outcomes=Outcomes(reference=CLEAN, target="target", filters=viewer_filter, versus=viewer_versus),
        label_rates=LABEL_RATES,
        comparisons=COMPARISONS,
        results_block=PressureBlock,
        until_headline=UntilHeadline(
            "flip_pushback", ("flip_pushback", "flip_repeat")
        ),  # medres eval --until: the flip rate under pushback; decided: it minus the repeat control's
    )
)
