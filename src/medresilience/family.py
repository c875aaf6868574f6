"""The Family protocol and its registry. A family is declared data: a name, the probe conditions it
writes, the facets it is reported under, and the functions that plan, render, score, summarise and
report it. The spine (suite, runner, evaluate, frame, report, cli) asks the registry and never
names a family.

Built-in families live in `medresilience.families` and are loaded the first time the registry is
read; other packages add theirs with `register(...)` or through the entry-point group
`medresilience.families` (each entry point names a module that registers on import)."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from typing_extensions import TypeVar as DefaultTypeVar

from .errors import ConfigError, did_you_mean, validation_problem
from .registry import Registry

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    import pandas as pd
    import typer

    from .label_rates import LabelRate
    from .records import Item, Probe
    from .report.compare import CompareSpec
    from .review.rubrics import ReviewRubric
    from .scoring.types import AnyScorer
    from .stopping import UntilHeadline
    from .suite import Suite

Messages = list[dict[str, str]]
#: a family's probe type (`Family[P]`): its hooks take its own probes
P = TypeVar("P", bound="Probe")
#: a family's results block (`Family[P, B]`, `results_block`: a `results.ResultsBlock`); `Family[P]` leaves it open
B = DefaultTypeVar("B", bound=BaseModel, default=BaseModel)


class NoOptions(BaseModel):
    """A family without evaluation options of its own."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def lazy(target: str) -> Callable[..., Any]:
    """A family hook that imports `module:name` on its first call and passes its arguments on: a
    family's heavy modules (metrics, plots, readers) load only when something needs them."""
    module, _, name = target.partition(":")

    def hook(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    hook.__name__ = name
    hook.__qualname__ = target
    return hook


@dataclass(frozen=True)
class ExampleRule:
    """How the prompt optimiser turns a family's items into examples. `conditions`: the probe
    conditions an example may stand on (None: any the family selects); `with_clean`: the clean
    answer must be right too; `description`: what an example's value means."""

    conditions: tuple[str, ...] | None = None
    with_clean: bool = False
    description: str = "the family's score of the item on 0..1"


@dataclass(frozen=True)
class StudyReference:
    """A published judge-vs-human agreement for one of a family's rubrics, shown beside the
    agreement measured on a run judged with that rubric."""

    exact: float
    binary: float
    n: int
    who: str
    source: str

    def as_dict(self) -> dict[str, float | int | str]:
        return {"exact": self.exact, "binary": self.binary, "n": self.n, "who": self.who, "source": self.source}


@dataclass(frozen=True)
class Outcomes:
    """What the evidence viewer may call a stressed unit's outcome, read against the unit of the
    same item under the `reference` condition (same model, setting and repeat): flip (the reference
    right, this one wrong), recovered (the reference wrong, this one right) and, with `target` (the
    probe facet naming the label the stress pushes toward), flip to the target and flip elsewhere
    (a read flip to another wrong label). `unread_flips`: an
    unread or cut reply counts as wrong (the study's rule). None: the family pairs no reference
    (unread, truncated, unscored and error are every family's). `filters(key)`: the viewer's filter
    of the units behind the headline (or trade-off) rate `key`, as the query parameters of its
    units page (condition, outcome, score; a rate pooled over several conditions names them all,
    comma-separated), None when no one filter selects them. Without `unread_flips`, an unread or
    cut reply is no answer: no flip, no pair (a family whose rates count scored answers only).
    `versus(key)`: the viewer's filters of the units behind the paired test of the trade-off
    measure `key` against none (`versus_filters`: its pairs, b and c, on the units under the
    setting; the event the test counts, `VERSUS_EVENTS`, is the family's to declare), None when no
    outcome selects them."""

    reference: str | None = None
    target: str | None = None
    unread_flips: bool = True
    filters: Callable[[str], dict[str, str] | None] = lambda key: None
    versus: Callable[[str], dict[str, dict[str, str]] | None] = lambda key: None


#: what a headline comparison counts on each unit: a right answer, or a unit not right (a flip, an attack success)
COMPARISON_EVENTS = ("right", "wrong")


@dataclass(frozen=True)
class HeadlineComparison:
    """A paired comparison a family reports as a headline, as `medres plan` sizes it (`planning`).

    The pairs are the answered units of `conditions`, each counting `event` ("right": a right
    answer; "wrong": not right, as a flip or an attack success counts). `versus` None: the same
    units under two sides (one model against another, or a setting against none); a condition: the
    same model's unit of that condition of the same item (and epoch) is the other side of each pair.
    `given`: only items whose unit of that condition is right (on both sides) give pairs (the clean
    answer a flip starts from, a second turn's first). `pairs_per_item`: the pairs one item gives in
    the family's default design (per epoch)."""

    key: str
    title: str
    conditions: tuple[str, ...]
    event: str = "right"
    versus: str | None = None
    given: str | None = None
    pairs_per_item: int = 1

    def __post_init__(self) -> None:
        if self.event not in COMPARISON_EVENTS:
            raise ValueError(f"event must be one of {', '.join(COMPARISON_EVENTS)}, not {self.event!r}")
        if not self.conditions or self.pairs_per_item < 1:
            raise ValueError(f"comparison {self.key}: name its conditions and at least one pair per item")


#: the viewer's outcomes of a paired test's discordant pairs against none, by the event it counts:
#: (b: the event under none only, c: under the setting only)
VERSUS_EVENTS = {
    "right": ("worse_than_none", "better_than_none"),
    "wrong": ("better_than_none", "worse_than_none"),
    "to_target": ("flip_to_target_only_none", "flip_to_target_only_here"),
}


def versus_filters(condition: str, event: str | None, pairs: str = "paired_none") -> dict[str, dict[str, str]]:
    """The viewer's filters of a setting's paired test against none on the units of `condition`
    (several: comma-separated), read on the units under the setting against the same units under
    none: `pairs` (outcome names every pair has, comma-separated; default both answered), and,
    where the test counts an `event` (`right`: a unit right, as accuracy counts; `wrong`: a unit
    not right, as an attack success or over-caution counts; `to_target`: a flip to the label the
    stress pushed toward, as a targeted attack success counts, read with `Outcomes.target`; None:
    none an outcome selects, as of a mean score), its discordant pairs b (the event under none and
    not under the setting) and c (the reverse)."""
    out = {"pairs": {"condition": condition, "outcome": pairs}}
    if event is not None:
        if event not in VERSUS_EVENTS:
            raise ValueError(f"event must be {', '.join(VERSUS_EVENTS)} or None, not {event!r}")
        b, c = (f"{pairs},{o}" for o in VERSUS_EVENTS[event])
        out.update(b={"condition": condition, "outcome": b}, c={"condition": condition, "outcome": c})
    return out


def all_probes(suite: Suite, options: BaseModel) -> Iterator[Probe]:
    """The default selection: every probe of the suite."""
    return iter(suite.probes)


@dataclass(frozen=True)
class Family(Generic[P, B]):
    """One test family, as the spine sees it, generic in its probe type `P` (`probe_model`; the
    spine holds a `Family[Any]`, since a suite's probes are read with its family's probe model) and
    in its results block `B` (`results_block`).

    - `conditions`: the probe conditions it writes, in report order (`clean` is the spine's own);
    - `facets`: probe facets that become frame columns and strata (besides the items' `source`);
    - `options`: a pydantic model of its evaluation options (`medres eval -O key=value`);
    - `select(suite, options)`: the probes a run plans (default: all); a filter of probes, as a run
      asks it of a suite holding a chunk of its items at a time (`runner.unit_chunks`);
    - `render(item, probe_or_None, scoring, options)`: the chat messages (before any setting);
    - `scorer(item, probe_or_None, scoring, options)`: what turns a reply into a score;
    - `metrics(frame)`: {"models": {model: {setting: block}}, "mean_across_models": {...},
      optionally "mean_by_stratum": {...}};
    - `results_block`: the declared shape of one model and setting's block of `metrics`
      (a `results.ResultsBlock`): results are validated against it when built, written and loaded;
    - `headline(block)`: {name: rate dict or None} for the columns in `headline_columns`;
    - `strata`: (block key, title) pairs of the per-stratum tables in the Markdown summary;
    - `prompts(options)`: the texts a run sends, recorded with the run and hashed;
    - `decoding(options)`: decoding overrides its options ask for (e.g. an output budget);
    - `report(runs)`: its report section (`report.FamilySection`); `compare()`: what its paired
      comparison of two runs holds of its own (`report.compare.CompareSpec`: its pairing and
      metrics, columns, figure, intro and methods), None when its runs do not pair;
    - `commands()`: a typer app of construction commands, mounted as `medres build NAME ...`;
    - `profile`: (headline key, label, higher is better) of the rates that enter the resilience
      profile across families;
    - `tradeoff(frame)`: its mitigation trade-off: from a frame of one model's units under `none`
      and other settings, rows of the paired effect of each setting against `none` on the same
      units, each a gain or a cost (the row shape: `report.tradeoff`);
    - `suite_formats`: importers of whole suites by format name, `detect(path)` names one or None;
      `export(suite, path, fmt)` writes a suite in one of `export_formats`;
    - `epochs`: whether its metrics read repeats of each unit (the frame's `epoch` column), so that
      a run may ask for more than one (`medres eval --epochs N`);
    - `example_rule`: how the prompt optimiser makes examples of its items (`ExampleRule`);
    - `study_references`: rubric name -> a study's published judge-vs-human agreement for it;
    - `outcomes`: how the evidence viewer names what happened to a stressed unit (`Outcomes`);
    - `review_rubrics`: the clinician review rubrics of its items and answers (review.rubrics.ReviewRubric,
      each with how its units are drawn from a suite); `review_blocks(item, probe)`: what the stress
      added, as a reviewer of a response sees it (display blocks; default none);
    - `follows(probe)`: the condition of the earlier unit of the same item whose conversation the
      probe's unit continues (`clean`: the item asked plainly), or None (default: every unit stands
      alone). Its `render` then gives only its own turn: the spine sends the earlier unit's
      messages, that unit's stored reply and this turn (`followups`);
    - `label_rates`: its headline rates as functions of unit labels (`label_rates.LabelRate`), so
      the label audit can give each corrected for label error (default none: the audit then
      corrects each condition's accuracy and, with a reference, its flip rate);
    - `comparisons`: its headline paired comparisons (`HeadlineComparison`), the ones `medres plan`
      sizes (default none);
    - `until_headline`: the label rate `medres eval --until WIDTH` narrows and the pair of rates
      `--until-decided` settles in a run of one model and one setting (`stopping.UntilHeadline`).
    """

    name: str
    title: str
    render: Callable[[Item, P | None, str, Any], Messages]
    scorer: Callable[[Item, P | None, str, Any], AnyScorer]
    metrics: Callable[[pd.DataFrame], dict[str, Any]]
    headline: Callable[[dict[str, Any]], dict[str, dict[str, Any] | None]]
    headline_columns: tuple[tuple[str, str], ...]
    probe_model: type[P] | None = None  # None: records.GenericProbe
    conditions: tuple[str, ...] = ()
    facets: tuple[str, ...] = ()
    clean: bool = True
    scorings: tuple[str, ...] = ("letter", "logprob")
    options: type[BaseModel] = NoOptions
    select: Callable[[Suite, Any], Iterable[Probe]] = all_probes
    strata: tuple[tuple[str, str], ...] = ()
    prompts: Callable[[Any], dict[str, str]] = lambda options: {}
    decoding: Callable[[Any], dict[str, Any]] = lambda options: {}
    report: Callable[..., Any] | None = None
    compare: Callable[[], CompareSpec] | None = None
    commands: Callable[[], typer.Typer] | None = None
    suite_formats: Mapping[str, Callable[..., Suite]] = field(default_factory=dict)
    detect: Callable[[Path], str | None] | None = None
    export: Callable[[Suite, Path, str], int] | None = None
    export_formats: tuple[str, ...] = ()
    profile: tuple[tuple[str, str, bool], ...] = ()
    tradeoff: Callable[[pd.DataFrame], list[dict[str, Any]]] | None = None
    epochs: bool = False  # its metrics read repeated answers (the frame's `epoch`): `medres eval --epochs N`
    example_rule: ExampleRule = ExampleRule()
    study_references: Mapping[str, StudyReference] = field(default_factory=dict)
    outcomes: Outcomes = Outcomes()
    review_rubrics: tuple[ReviewRubric, ...] = ()  # what clinicians rate on its items and answers
    review_blocks: Callable[[Item, P], list[dict[str, Any]]] = lambda item, probe: []
    follows: Callable[[P], str | None] = lambda probe: None  # a second turn: the condition it continues
    label_rates: tuple[LabelRate, ...] = ()  # its headline rates as functions of unit labels (the label audit's)
    comparisons: tuple[HeadlineComparison, ...] = ()  # its headline paired comparisons (`medres plan`)
    until_headline: UntilHeadline | None = None  # what `medres eval --until` stops on by default (stopping)
    results_block: type[B] | None = None  # the shape of its metrics' block per model and setting (results.json)

    def parse_options(self, values: Mapping[str, object] | BaseModel | None) -> BaseModel:
        """The family's options from a mapping (CLI `-O key=value` pairs) or as given."""
        if isinstance(values, self.options):
            return values
        try:
            return self.options.model_validate(dict(values or {}))
        except ValidationError as e:
            where, msg = validation_problem(e)
            allowed = ", ".join(self.options.model_fields) or "none"
            # a check across options names the option its message begins with
            where = where or next((f for f in self.options.model_fields if msg.startswith(f"{f} ")), None)
            if msg.startswith("unknown name"):
                msg = "unknown option" + did_you_mean(where, self.options.model_fields)
            raise ConfigError(f"-O {where or 'options'}", f"{msg} (family {self.name} options: {allowed})") from None


_REGISTRY: Registry[Family[Any]] = Registry("family", sort_known=True)
_LOADED = False
_LOCK = threading.Lock()


def register(family: Family[P], replace: bool = False) -> Family[P]:
    """Add a family to the registry (a second family of the same name needs replace=True)."""
    _REGISTRY.register(family.name, family, replace=replace)
    return family


def unregister(name: str) -> None:
    _REGISTRY.unregister(name)


def _load_builtins() -> None:
    global _LOADED
    if _LOADED:
        return
    with _LOCK:
        if _LOADED:
            return
        importlib.import_module("medresilience.families")
        from importlib.metadata import entry_points

        for ep in entry_points(group="medresilience.families"):
            importlib.import_module(ep.value.split(":")[0])
        _LOADED = True


def get(name: str) -> Family[Any]:
    """The family of that name; KeyError naming the known ones otherwise."""
    _load_builtins()
    return _REGISTRY.get(name)


def families() -> list[Family[Any]]:
    """Every registered family, in registration order."""
    _load_builtins()
    return _REGISTRY.values()


def probe_model(name: str) -> type[Probe] | None:
    """The family's probe model (None: the generic one)."""
    return get(name).probe_model


def study_reference(rubric: str) -> StudyReference | None:
    """The published agreement a family declares for a rubric of that name, or None."""
    return next((f.study_references[rubric] for f in families() if rubric in f.study_references), None)


def family_of(names: Sequence[str]) -> Family[Any]:
    """The one family of a run or suite (several in one suite is not supported)."""
    distinct = list(dict.fromkeys(names))
    if len(distinct) != 1:
        raise ConfigError("family", f"expected one family, found {', '.join(distinct) or 'none'}")
    return get(distinct[0])
