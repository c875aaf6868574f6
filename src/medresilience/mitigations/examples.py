"""The optimiser's examples: a few items drawn (seeded) from each suite, each scored by its family's
own metric, as a number from 0 to 1.

An example is one item of a suite and the units its family's metric needs, as the family declares
in `Family.evaluation.example_rule`: the probe conditions an example may stand on (a seeded choice among those
the family selects) and whether its clean question must be answered right too. A family that
declares nothing, and an item without a selected probe (a plain MCQ suite), give the clean question
(right or wrong), or the probe alone for a family without clean questions.

A unit's value is its score's value rescaled to 0..1 (a letter: 1 or 0; a judge: its rubric's
range); an `invalid` reply (no readable answer) is 0, as in the families' accuracies, and an
`unscored` judgement (a verdict that cannot be read) is 0 and counted. An example's score is the
lowest value of its units. Rules are data each family declares (`Family.evaluation.example_rule`).

The draw: each suite's items are ordered by a stable hash of (seed, suite hash, item id) and the
first `per_suite` with an example are taken; a suite given for both training and validation gives
its next `per_suite` items to validation, so the two are disjoint."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..family import ExampleRule, Family, family_of
from ..runtime.errors import ConfigError
from ..runtime.seeding import stable_hash
from .candidate import ExampleRef, SplitSuite, item_hash, suite_hash

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import BaseModel

    from ..records import Item, Probe
    from ..score import AnyScorer, Score
    from ..suite import Suite


@dataclass(frozen=True)
class Example:
    """One example: a suite's item and the units its metric needs (None: the clean question)."""

    split: str
    suite_name: str
    suite_hash: str
    family: Family
    options: BaseModel
    scoring: str
    item: Item
    probe: Probe | None
    units: tuple[Probe | None, ...]
    rule: ExampleRule = field(default_factory=ExampleRule)

    @property
    def ref(self) -> str:
        return f"{self.suite_name}/{self.item.id}" + (f"/{self.probe.id}" if self.probe is not None else "")

    def as_ref(self) -> ExampleRef:
        return ExampleRef(item=self.item.id, probe=None if self.probe is None else self.probe.id, content=item_hash(self.item))


def default_scoring(family: Family) -> str:
    """The scoring a run of the family uses by default: letters where it takes them, else its first."""
    return "letter" if "letter" in family.evaluation.scorings else family.evaluation.scorings[0]


def family_options(family: Family, pairs: dict[str, str], judge: str | None) -> BaseModel:
    """The family's options for the optimiser: the given KEY=VALUE pairs the family takes, and
    the judge (when the family's options, as given, need one: a family judges only some answers)."""
    fields = family.evaluation.options.model_fields
    values = {k: v for k, v in pairs.items() if k in fields}
    if judge is not None and "judge" in fields and "judge" not in values:
        try:
            return family.parse_options(values)
        except ConfigError:
            values["judge"] = judge
    return family.parse_options(values)


def _units(family: Family, rule: ExampleRule, probe: Probe | None) -> tuple[Probe | None, ...] | None:
    if probe is None:
        return (None,) if family.probes.clean else None
    return (None, probe) if rule.with_clean and family.probes.clean else (probe,)


def candidates(suite: Suite, family: Family, options: BaseModel, rule: ExampleRule, seed: int) -> dict[str, tuple[Probe | None, tuple[Probe | None, ...]]]:
    """Per item id (items without an example left out): the probe the example stands on (None:
    clean only) and its units."""
    eligible: dict[str, list[Probe]] = {}
    for p in family.evaluation.select(suite, options):
        if rule.conditions is None or p.condition in rule.conditions:
            eligible.setdefault(p.item_id, []).append(p)
    out: dict[str, tuple[Probe | None, tuple[Probe | None, ...]]] = {}
    for item_id in suite.items:
        probes = eligible.get(item_id, [])
        probe = min(probes, key=lambda p: stable_hash("optimise-probe", seed, item_id, p.id)) if probes else None
        units = _units(family, rule, probe)
        if units is not None:
            out[item_id] = (probe, units)
    return out


def draw(
    train: list[Suite], val: list[Suite], per_suite: int, seed: int, pairs: dict[str, str] | None = None, judge: str | None = None
) -> tuple[list[Example], list[Example], list[SplitSuite], list[SplitSuite]]:
    """(train examples, val examples, train split, val split): `per_suite` items of each suite, in
    seeded order; a suite in both lists gives disjoint items to each."""
    if per_suite < 1:
        raise ConfigError("--per-suite", f"must be at least 1, got {per_suite}")
    taken: dict[str, set[str]] = {}
    labels: dict[str, str] = {}  # suite hash -> the name its examples' refs carry (two suites of one name get name#2, ...)
    out: dict[str, tuple[list[Example], list[SplitSuite]]] = {"train": ([], []), "val": ([], [])}
    used_pairs: set[str] = set()
    for split, suites in (("train", train), ("val", val)):
        flag = f"--{split}"
        if not suites:
            raise ConfigError(flag, "give at least one suite")
        for suite in suites:
            family = family_of([suite.manifest.family])
            options = family_options(family, pairs or {}, judge)
            used_pairs.update(k for k in (pairs or {}) if k in family.evaluation.options.model_fields)
            rule = family.evaluation.example_rule
            h = suite_hash(suite)
            cands = candidates(suite, family, options, rule, seed)
            order = sorted(cands, key=lambda i: stable_hash("optimise-draw", seed, h, i))
            seen = taken.setdefault(h, set())
            chosen = [i for i in order if i not in seen][:per_suite]
            if not chosen:
                why = (
                    "every item it has was drawn for training already"
                    if order
                    else "none of its items gives an example (its family selects no probe or clean question the optimiser can score)"
                )
                raise ConfigError(flag, f"suite {suite.manifest.name!r}: {why}")
            seen.update(chosen)
            scoring = default_scoring(family)
            if h not in labels:
                n = sum(1 for v in labels.values() if v.split("#")[0] == suite.manifest.name)
                labels[h] = suite.manifest.name + (f"#{n + 1}" if n else "")
            examples = [Example(split, labels[h], h, family, options, scoring, suite.items[i], cands[i][0], cands[i][1], rule) for i in chosen]
            out[split][0].extend(examples)
            out[split][1].append(
                SplitSuite(
                    name=suite.manifest.name,
                    family=family.name,
                    path=str(suite.path) if suite.path else None,
                    suite_hash=h,
                    checksums=dict(suite.manifest.checksums),
                    examples=[e.as_ref() for e in examples],
                )
            )
    unused = sorted(set(pairs or {}) - used_pairs)
    if unused:
        raise ConfigError("-O", f"no suite's family takes the option(s) {', '.join(unused)}")
    return out["train"][0], out["val"][0], out["train"][1], out["val"][1]


def unit_value(score: Score, scorer: AnyScorer) -> float:
    """A unit's score on 0..1: a valid score's value rescaled from its scorer's range (a judge's
    rubric values; 0..1 otherwise); invalid and unscored are 0."""
    if score.status != "valid" or score.value is None:
        return 0.0
    lo, hi = 0.0, 1.0
    from ..scoring.judge import JudgeScorer

    rubric = scorer.judge.rubric if isinstance(scorer, JudgeScorer) else None  # a judge declares its rubric's range
    if rubric is not None:
        values = [v.value for v in rubric.verdicts.values()]
        lo, hi = min(values), max(values)
    if hi <= lo:
        return 0.0
    return max(0.0, min(1.0, (float(score.value) - lo) / (hi - lo)))


__all__ = ["Example", "default_scoring", "draw", "family_options", "unit_value"]
