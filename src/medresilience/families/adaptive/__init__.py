"""Adaptive attacks: how much persuasion does it take to flip a right answer? Each item is answered
clean; where the answer is right, an attacker model proposes a stress of a declared kind (misleading
context, a false presupposition, clinical noise, patient characteristics) aimed at a wrong option,
checked by the family's fidelity rules and a checker model before the answering model sees it, and
revised over up to `budget` turns from the answering model's replies until the answer flips
(`loop`). The family's probe units are answered through that loop (`Family.evaluation.loop`).

This module declares the family to the registry; the loop, metrics, the report and the builder are
imported when first used. The roles its calls are linked to units with (`taxonomy.ROLE_*`) are not
registered with `mitigations.roles`: those roles describe a setting's agent steps and summaries, which an attack's
turns are not; the cost counts read every linked call whatever its role.

May import: the spine (every module outside families/), and the misleading family (the clean
question it asks first, its taxonomy, sentence checks and items reader)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...family import EvaluationSpec, ExampleRule, Family, MeasureSpec, Outcomes, ProbeSpec, ReportSpec, ReviewSpec, SuiteSpec, lazy, register
from ...records import CLEAN
from ...run.label_rates import accuracy, flip
from . import review
from .block import AdaptiveBlock
from .delivery import AdaptiveOptions, prompts, render, scorer
from .probe import AdaptiveProbe
from .taxonomy import CONDITION, FACETS, FAMILY, HEADLINE_COLUMNS

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Mapping, Sequence

    from ...family import LoopView
    from ...mitigations.setting import AnswerLoop, Setting
    from ...models.spec import ModelSpec
    from ...runtime.jsontypes import JSONObject
    from ...store import Store


class AttackLoops:
    """The family's probe loop (`family.ProbeLoop`): an attack loop per run's options and setting."""

    def answer_loop(self, options: Any, setting: Setting) -> AnswerLoop:
        from .loop import AdaptiveLoop

        return AdaptiveLoop(options, setting)

    def record(self, store: Store) -> JSONObject:
        from .traces import loop_record

        return review.with_reviews(loop_record(store), store)

    def measures(self, loop: JSONObject) -> dict[str, dict[str, JSONObject]]:
        from .persuasion import loop_measures

        return loop_measures(loop)  # type: ignore[return-value]  # plain JSON dicts

    def models(self, options: object) -> tuple[ModelSpec, ...]:
        """The attacker and the checker (one model when the checker is the attacker)."""
        from .loop import attack_models

        if not isinstance(options, AdaptiveOptions) or not options.attacker:
            return ()
        attacker, checker = attack_models(options)
        return (attacker,) if checker.identity() == attacker.identity() else (attacker, checker)

    def view(self, linked: Sequence[Mapping[str, Any]]) -> LoopView | None:
        from .view import attack_view

        return attack_view(linked)


#: the headline rates as functions of unit labels: clean accuracy and the adaptive flip (right at
#: clean, not right after the attack)
LABEL_RATES = (accuracy("clean_acc", "Clean acc", (CLEAN,)), flip("asr", "Adaptive ASR", (CONDITION,)))

FAMILY_SPEC = register(
    Family(
        name=FAMILY,
        title="Adaptive attacks",
        probes=ProbeSpec(AdaptiveProbe, (CONDITION,), FACETS),
        evaluation=EvaluationSpec(
            render=render,
            scorer=scorer,
            scorings=("letter",),
            options=AdaptiveOptions,
            prompts=prompts,
            # an attacked item's answer comes from a loop of calls: examples are the clean questions
            example_rule=ExampleRule((), False, "1 when the clean answer is right"),
            loop=AttackLoops(),
        ),
        measures=MeasureSpec(
            results_block=AdaptiveBlock,
            metrics=lazy(f"{__name__}.metrics:adaptive_metrics"),
            headline=lazy(f"{__name__}.metrics:headline"),
            columns=HEADLINE_COLUMNS,
            rates=LABEL_RATES,
        ),
        suites=SuiteSpec(commands=lazy(f"{__name__}.commands:commands")),
        # the section sets a static run of the same items and model beside the adaptive ASR
        report=ReportSpec(section=lazy(f"{__name__}.report.section:section"), others=True),
        # clinicians judge whether each successful attack kept the right answer (`medres review sample --rubric attack`)
        review=ReviewSpec(rubrics=(review.RUBRIC_ATTACK,)),
        outcomes=Outcomes(reference=CLEAN, target="target"),
    )
)
