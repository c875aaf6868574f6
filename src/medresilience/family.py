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
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from typing_extensions import TypeVar as DefaultTypeVar

from .registry import Registry
from .runtime.errors import ConfigError, did_you_mean, validation_problem

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    import pandas as pd
    import typer

    from .mitigations.setting import AnswerLoop, Setting
    from .models.spec import ModelSpec
    from .records import Item, Probe
    from .report.compare import CompareSpec
    from .report.section import FamilySection
    from .report.tradeoff import TradeoffRow
    from .review.rubrics import ReviewRubric
    from .run.label_rates import LabelRate
    from .runtime.jsontypes import JSONObject
    from .score import AnyScorer
    from .store import Store
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

    def hook(*args: object, **kwargs: object) -> Any:
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
    """A paired comparison a family reports as a headline: what `medres plan` sizes (`planning`) and
    what `medres eval --until` stops on by default (`stopping`).

    `rate` is the family's label rate compared (`label_rates.LabelRate`: its key, its conditions).
    `versus` None: the rate on the same units under two sides (one model against another, or a
    setting against none); a label rate of one condition: the same model's unit of that condition
    of the same item (and epoch) is the other side of each pair. Each pair counts `event` ("right":
    a right answer; "wrong": not right, as a flip or an attack success counts). `given`: only items
    whose unit of that condition is right (on both sides) give pairs (the clean answer a flip starts
    from, a second turn's first). `pairs_per_item`: the pairs one item gives in the family's default
    design (per epoch)."""

    key: str
    title: str
    rate: LabelRate
    event: str = "right"
    versus: LabelRate | None = None
    given: str | None = None
    pairs_per_item: int = 1

    def __post_init__(self) -> None:
        if self.event not in COMPARISON_EVENTS:
            raise ValueError(f"event must be one of {', '.join(COMPARISON_EVENTS)}, not {self.event!r}")
        if self.pairs_per_item < 1:
            raise ValueError(f"comparison {self.key}: at least one pair per item")
        if self.versus is not None and len(self.versus.conditions) != 1:
            raise ValueError(f"comparison {self.key}: the rate it is compared with is of one condition")

    @property
    def conditions(self) -> tuple[str, ...]:
        """The conditions whose units pair (its rate's)."""
        return self.rate.conditions

    @property
    def versus_condition(self) -> str | None:
        """The condition whose unit of the same item is the other side of each pair (None: two sides)."""
        return None if self.versus is None else self.versus.conditions[0]

    @property
    def harm(self) -> tuple[LabelRate, LabelRate] | None:
        """A one-sided comparison's two rates (a, b) ordered so that a - b is the harm the stress does:
        counting right answers, the versus rate minus this one (a drop); counting wrong ones, this
        rate minus the versus rate (an excess). None for two sides."""
        if self.versus is None:
            return None
        return (self.versus, self.rate) if self.event == "right" else (self.rate, self.versus)


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


@dataclass(frozen=True)
class LoopTurn:
    """One turn of a unit's loop as the evidence viewer shows it (`ProbeLoop.view`): its number and
    kind; what the proposer proposed (`proposal`, None: nothing could be read from its reply,
    `proposer_reply`) and why it was refused (`problems`, empty: it passed the family's rules); the
    checker's `verdict`, its reason and its reply as given (None: not asked); whether the answering model was shown it (`used`: a refused
    proposal never is), the key of that request (`request`: its messages are the rewritten item),
    the answering model's `reply` and `label`; `outcome`: rejected, held, flipped or unread."""

    n: int
    kind: str
    proposal: str | None
    proposer_reply: str | None
    problems: tuple[str, ...]
    verdict: str | None
    verdict_reason: str | None
    checker_reply: str | None
    used: bool
    request: str | None
    reply: str | None
    label: str | None
    outcome: str


@dataclass(frozen=True)
class LoopView:
    """A unit's loop as the evidence viewer shows it: `facts` ((what, value) pairs: who proposed and
    checked, the budget, the label pushed toward, how it ended), the label pushed toward (`target`,
    None: none), the turn it flipped at (None: it held), its `turns` in order, and the linked roles
    it shows (`roles`: the viewer lists no other way)."""

    facts: tuple[tuple[str, str], ...]
    target: str | None
    flipped_at: int | None
    turns: tuple[LoopTurn, ...]
    roles: tuple[str, ...]


class ProbeLoop(Protocol):
    """A family whose probe units obtain their answer through a loop of calls of its own (an adaptive
    attack: an attacker model rewrites the item turn by turn and the answering model answers each
    version fresh), declared by `EvaluationSpec.loop`. The item's clean unit is asked as any other.

    - `answer_loop(options, setting)`: the `AnswerLoop` (mitigations.setting) the runner hands the
      family's probe units under that setting to, as it hands an agent setting's units to its loop:
      it makes every call through `calls.run_calls` (keyed, stored, resumed) and stores each unit's
      final answer under the unit's key; a setting that answers through a loop or a call of its own
      is refused with it;
    - `record(store)`: what results.json keeps of the loops of the store's latest run (its `loop`
      block: per-unit records and counts, by setting; and what the run directory holds about them
      beside the store, such as people's reviews of the loops, read each time it is called);
    - `measures(loop)`: from that `loop` block, model -> setting -> the keys the loop adds to that
      model and setting's results block (declared in the family's `results_block`);
    - `models(options)`: the models the loop calls besides the run's answering models (an attacker,
      a checker), so that what they cannot do is refused before anything is sent (a batch);
    - `view(linked)`: a unit's loop from the calls linked to it (`store.UnitDetail.linked`: role,
      key, status, text, ...) as the evidence viewer shows it, turn by turn (`LoopView`), None for a
      unit that holds no loop (an item's clean unit)."""

    def answer_loop(self, options: Any, setting: Setting) -> AnswerLoop: ...

    def record(self, store: Store) -> JSONObject: ...

    def measures(self, loop: JSONObject) -> dict[str, dict[str, JSONObject]]: ...

    def models(self, options: BaseModel) -> tuple[ModelSpec, ...]: ...

    def view(self, linked: Sequence[Mapping[str, Any]]) -> LoopView | None: ...


def all_probes(suite: Suite, options: BaseModel) -> Iterator[Probe]:
    """The default selection: every probe of the suite."""
    return iter(suite.probes)


@dataclass(frozen=True)
class ProbeSpec(Generic[P]):
    """What a family's suites hold: `model`, its probe model (None: records.GenericProbe; a suite's
    probes are read with it); `conditions`, the probe conditions it writes, in report order (`clean`
    is the spine's own); `facets`, probe facets that become frame columns and strata (besides the
    items' `source`); `clean`: whether each item is also asked plainly (the `clean` condition)."""

    model: type[P] | None = None
    conditions: tuple[str, ...] = ()
    facets: tuple[str, ...] = ()
    clean: bool = True


@dataclass(frozen=True)
class EvaluationSpec(Generic[P]):
    """How a run asks and scores a family's probes.

    - `render(item, probe_or_None, scoring, options)`: the chat messages (before any setting);
    - `scorer(item, probe_or_None, scoring, options)`: what turns a reply into a score;
    - `scorings`: the scorings it accepts (`medres eval --scoring`);
    - `options`: a pydantic model of its evaluation options (`medres eval -O key=value`);
    - `select(suite, options)`: the probes a run plans (default: all); a filter of probes, as a run
      asks it of a suite holding a chunk of its items at a time (`runner.unit_chunks`);
    - `prompts(options)`: the texts a run sends, recorded with the run and hashed;
    - `decoding(options)`: decoding overrides its options ask for (e.g. an output budget);
    - `follows(probe)`: the condition of the earlier unit of the same item whose conversation the
      probe's unit continues (`clean`: the item asked plainly), or None (default: every unit stands
      alone). Its `render` then gives only its own turn: the spine sends the earlier unit's
      messages, that unit's stored reply and this turn (`followups`);
    - `epochs`: whether its metrics read repeats of each unit (the frame's `epoch` column), so that
      a run may ask for more than one (`medres eval --epochs N`);
    - `example_rule`: how the prompt optimiser makes examples of its items (`ExampleRule`);
    - `loop`: a family whose probe units are answered through a loop of calls of its own (`ProbeLoop`),
      None for one whose every unit is one request (default)."""

    render: Callable[[Item, P | None, str, Any], Messages]
    scorer: Callable[[Item, P | None, str, Any], AnyScorer]
    scorings: tuple[str, ...] = ("letter", "logprob")
    options: type[BaseModel] = NoOptions
    select: Callable[[Suite, Any], Iterable[Probe]] = all_probes
    prompts: Callable[[Any], dict[str, str]] = lambda options: {}
    decoding: Callable[[Any], dict[str, Any]] = lambda options: {}
    follows: Callable[[P], str | None] = lambda probe: None
    epochs: bool = False
    example_rule: ExampleRule = ExampleRule()
    loop: ProbeLoop | None = None


@dataclass(frozen=True)
class MeasureSpec(Generic[B]):
    """What a family measures and calls its headline.

    - `metrics(frame)`: {"models": {model: {setting: block}}, "mean_across_models": {...},
      optionally "mean_by_stratum": {...}};
    - `results_block`: the declared shape of one model and setting's block of `metrics`
      (a `results.ResultsBlock`): results are validated against it when built, written and loaded;
    - `headline(block)`: {name: rate dict or None} for the columns in `columns`;
    - `columns`: (headline key, title) of the headline table;
    - `strata`: (block key, title) pairs of the per-stratum tables in the Markdown summary;
    - `profile`: (headline key, label, higher is better) of the rates that enter the resilience
      profile across families;
    - `rates`: its headline rates as functions of unit labels (`label_rates.LabelRate`), so the
      label audit can give each corrected for label error (default none: the audit then corrects
      each condition's accuracy and, with a reference, its flip rate);
    - `comparisons`: its headline paired comparisons (`HeadlineComparison`), the ones `medres plan`
      sizes; the first is the headline `medres eval --until WIDTH` narrows (its rate), and the first
      comparing two rates of one model is the pair `--until-decided` settles in a run of one model
      and one setting (`stopping`)."""

    metrics: Callable[[pd.DataFrame], dict[str, Any]]
    headline: Callable[[dict[str, Any]], Mapping[str, Mapping[str, object] | None]]
    columns: tuple[tuple[str, str], ...]
    strata: tuple[tuple[str, str], ...] = ()
    profile: tuple[tuple[str, str, bool], ...] = ()
    rates: tuple[LabelRate, ...] = ()
    comparisons: tuple[HeadlineComparison, ...] = ()
    results_block: type[B] | None = None  # the shape of its metrics' block per model and setting (results.json)


@dataclass(frozen=True)
class ReportSpec:
    """A family's parts of the report: `section(runs)`, its report section (`report.FamilySection`),
    given the report's runs of other families as `others` too when `others` is set;
    `compare()`, what its paired comparison of two runs holds of its own
    (`report.compare.CompareSpec`: its pairing and metrics, columns, figure, intro and methods), None
    when its runs do not pair; `tradeoff(frame)`, its mitigation trade-off: from a frame of one
    model's units under `none` and other settings, rows of the paired effect of each setting against
    `none` on the same units, each a gain or a cost (the row shape: `report.tradeoff`)."""

    section: Callable[..., FamilySection] | None = None
    #: the section also reads the report's runs of other families (`section(runs, others=...)`):
    #: a measure set beside another family's on the same items
    others: bool = False
    compare: Callable[[], CompareSpec] | None = None
    tradeoff: Callable[[pd.DataFrame], list[TradeoffRow]] | None = None


@dataclass(frozen=True)
class SuiteSpec:
    """How a family's suites are made and moved: `commands()`, a typer app of construction commands
    (`medres build NAME ...`); `readers`, importers of whole suites by format name (`medres import`),
    `detect(path)` naming one or None; `export(suite, path, fmt)` writing a suite in one of
    `export_formats`."""

    commands: Callable[[], typer.Typer] | None = None
    readers: Mapping[str, Callable[..., Suite]] = field(default_factory=dict)
    detect: Callable[[Path], str | None] | None = None
    export: Callable[[Suite, Path, str], int] | None = None
    export_formats: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReviewSpec(Generic[P]):
    """What clinicians review: `rubrics`, the review rubrics of its items and answers
    (review.rubrics.ReviewRubric, each with how its units are drawn from a suite); `blocks(item,
    probe)`, what the stress added, as a reviewer of a response sees it (display blocks; default
    none); `study_references`, rubric name -> a study's published judge-vs-human agreement for it."""

    rubrics: tuple[ReviewRubric, ...] = ()
    blocks: Callable[[Item, P], list[dict[str, object]]] = lambda item, probe: []
    study_references: Mapping[str, StudyReference] = field(default_factory=dict)


#: the sub-specs a Family is made of, by field name (tests/spine/test_family_plugin.py holds Family to them)
SUB_SPECS: dict[str, type] = {
    "probes": ProbeSpec,
    "evaluation": EvaluationSpec,
    "measures": MeasureSpec,
    "report": ReportSpec,
    "suites": SuiteSpec,
    "review": ReviewSpec,
    "outcomes": Outcomes,
}


@dataclass(frozen=True)
class Family(Generic[P, B]):
    """One test family, as the spine sees it, generic in its probe type `P` (`probes.model`; the
    spine holds a `Family[Any]`, since a suite's probes are read with its family's probe model): a
    name and title, and its hooks grouped by job in typed sub-specs (`SUB_SPECS`): `probes` (what
    its suites hold), `evaluation` (how a run asks and scores), `measures` (metrics, headline,
    label rates, comparisons), `report` (its report section, comparison page, trade-off), `suites`
    (build commands, import, export), `review` (clinician rubrics) and `outcomes` (how the viewer
    names what happened to a unit, against which reference)."""

    name: str
    title: str
    probes: ProbeSpec[P]
    evaluation: EvaluationSpec[P]
    measures: MeasureSpec[B]
    report: ReportSpec = ReportSpec()
    suites: SuiteSpec = SuiteSpec()
    review: ReviewSpec[P] = ReviewSpec()
    outcomes: Outcomes = Outcomes()

    def parse_options(self, values: Mapping[str, object] | BaseModel | None) -> BaseModel:
        """The family's options from a mapping (CLI `-O key=value` pairs) or as given."""
        options = self.evaluation.options
        if isinstance(values, options):
            return values
        try:
            return options.model_validate(dict(values or {}))
        except ValidationError as e:
            where, msg = validation_problem(e)
            allowed = ", ".join(options.model_fields) or "none"
            # a check across options names the option its message begins with
            where = where or next((f for f in options.model_fields if msg.startswith(f"{f} ")), None)
            if msg.startswith("unknown name"):
                msg = "unknown option" + did_you_mean(where, options.model_fields)
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
    return get(name).probes.model


def study_reference(rubric: str) -> StudyReference | None:
    """The published agreement a family declares for a rubric of that name, or None."""
    return next((f.review.study_references[rubric] for f in families() if rubric in f.review.study_references), None)


def family_of(names: Sequence[str]) -> Family[Any]:
    """The one family of a run or suite (several in one suite is not supported)."""
    distinct = list(dict.fromkeys(names))
    if len(distinct) != 1:
        raise ConfigError("family", f"expected one family, found {', '.join(distinct) or 'none'}")
    return get(distinct[0])
