"""One resolved run: what a run is asked to do, looked up and checked once where the work enters.

`resolve_run(suite, specs, opts)` looks the suite's family up, parses the family's options, gets
every named setting and the models those settings call, checks each model's API key variable (the
answering models, the extraction model, a setting's own models) and every option against the
family, the settings and the models (scoring, answer format, extraction model, epochs,
log-probabilities), and checks the run's first unit can be scored as asked; any problem is one
ConfigError before anything is written or called. What it returns, `ResolvedRun`, is the one value
`evaluation.evaluate`, the planner and the runner take: nothing below it looks a family, an option
or a setting up by name again, nor checks a key again.

The command (`medres eval`) builds it once from its flags (it looks the family up itself, for the
family's default scoring and judge option, and hands it in); the library entry points
(`evaluate(suite, specs, out, opts)`, `runner.plan`, `runner.execute_plan`) build the same value
from their arguments. `ResolvedRun.served(live)` is the same run on the endpoints the models are
served at for its calls (an embedded model's local server)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import mitigations
from ..family import Family, family_of
from ..mitigations import Setting
from ..models.spec import ModelSpec
from ..runtime.errors import ConfigError
from ..scoring.extract import Extractor, ExtractScorer, check_extractor
from ..scoring.mcq import LetterScorer, mcq_params
from .answer_format import PROMPT, SCHEMA, check_answer_format, schema_scorer_of
from .selection import select_units
from .stopping import Stopping, StopRule

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import BaseModel

    from ..records import Item
    from ..score import AnyScorer
    from ..suite import Suite

__all__ = [
    "AuditRequest",
    "EvalOptions",
    "ResolvedRun",
    "check_answer_units",
    "check_extract",
    "check_options",
    "models_of",
    "resolve_run",
    "setting_models",
    "with_extractor",
]


@dataclass(frozen=True)
class EvalOptions:
    """What a run plans. `family` holds the suite family's own options (a mapping validated by
    the family, or its options model); `conditions` None means clean plus every condition."""

    settings: tuple[str, ...] = (mitigations.NONE,)
    scoring: str = "letter"
    limit: int | None = None
    sample_seed: int | None = None  # items in this seed's random order before the limit (seeding.sample_order)
    conditions: tuple[str, ...] | None = None
    family: Mapping[str, object] | BaseModel | None = None
    epochs: int = 1
    extract: ModelSpec | None = None  # the extraction model for replies the rules leave unread (-O extract=SPEC)
    answer_format: str = PROMPT  # prompt, or schema: a response_format JSON answer where the model takes one (answer_format)
    until: StopRule | None = None  # stop early when this rule is met (stopping; needs sample_seed: a random order)

    def __post_init__(self) -> None:
        if self.epochs < 1:
            raise ConfigError("--epochs", f"at least one epoch is needed, not {self.epochs}")
        if self.limit is not None and self.limit < 1:
            raise ConfigError("--limit", f"the number of items must be at least 1, not {self.limit}")
        if not self.settings:
            raise ConfigError("--setting", "at least one setting is needed (none for no mitigation)")
        if len(set(self.settings)) != len(self.settings):
            raise ConfigError("--setting", f"a setting is named twice: {', '.join(self.settings)}")


@dataclass(frozen=True)
class AuditRequest:
    """A label audit asked with the run (`medres eval --audit N --reader SPEC`): how many units, and
    the reader model (its key checked with the run's)."""

    n: int
    reader: ModelSpec


@dataclass(frozen=True)
class ResolvedRun:
    """A run, resolved: the suite and its family, the options as asked and the family's parsed
    options, the answering models (distinct labels, keys checked), the settings (in the order
    asked) and the models they call that no answering model is (keys checked), and the audit
    asked with it."""

    suite: Suite
    family: Family
    options: EvalOptions
    family_options: BaseModel
    specs: tuple[ModelSpec, ...]
    settings: tuple[Setting, ...]
    setting_models: tuple[ModelSpec, ...] = ()
    audit: AuditRequest | None = None

    @property
    def epochs(self) -> int:
        return self.options.epochs

    @property
    def scoring(self) -> str:
        return self.options.scoring

    @property
    def answer_format(self) -> str:
        return self.options.answer_format

    @property
    def extract(self) -> ModelSpec | None:
        return self.options.extract

    def served(self, live: Sequence[ModelSpec]) -> ResolvedRun:
        """The run on the endpoints its models are served at: `live` holds the answering models,
        then the setting models (as `models.serving.serving` returns them), or the answering ones alone."""
        n = len(self.specs)
        helpers = tuple(live[n:]) if len(live) > n else self.setting_models
        return dataclasses.replace(self, specs=tuple(live[:n]), setting_models=helpers)


def resolve_run(
    suite: Suite,
    specs: Iterable[ModelSpec],
    opts: EvalOptions = EvalOptions(),
    family: Family | None = None,
    audit: AuditRequest | None = None,
    check_keys: bool = True,
) -> ResolvedRun:
    """The run of `suite` on `specs` with `opts`, resolved and checked (ConfigError on the first
    problem). `family`: the suite's family when the caller looked it up already (the command);
    `check_keys` False: the key variables are not checked here (planning alone, which calls nothing)."""
    specs = tuple(specs)
    labels = [s.label for s in specs]
    if len(set(labels)) != len(labels):
        raise ConfigError("--model", f"two models share the label {sorted(labels)}; give each a distinct label=")
    if check_keys:
        for s in specs:
            s.api_key()  # a missing key variable fails before anything is written or called
    if family is None:
        family = family_of([suite.manifest.family])
    fopts = family.parse_options(opts.family)
    settings = tuple(mitigations.get(n) for n in opts.settings)
    called = models_of(settings)
    _check(family, fopts, settings, called, opts, specs)
    helpers = tuple(m for m in called if m.label not in labels)  # a monitor:SPEC's model
    if check_keys:
        for m in [*([opts.extract] if opts.extract is not None else []), *helpers, *([audit.reader] if audit is not None else [])]:
            m.api_key()
    _check_first_unit(suite, family, fopts, opts)
    if opts.until is not None:
        _check_until(opts, family, specs)
    return ResolvedRun(suite, family, opts, fopts, specs, settings, helpers, audit)


def _check_until(opts: EvalOptions, family: Family, specs: Sequence[ModelSpec]) -> None:
    """A stopping rule needs the items in a random order (the sample seed's), and a rate of the
    family to stop on (stopping.Stopping resolves it)."""
    if opts.sample_seed is None:
        raise ConfigError(
            "--until",
            "stopping early needs the items in a seeded random order: give --sample-seed N too (and the same N when you resume)",
        )
    assert opts.until is not None
    Stopping.of(opts.until, family, [s.label for s in specs], opts.settings, 0)


def models_of(settings: Iterable[Setting]) -> list[ModelSpec]:
    """The models the settings call besides the answering ones (a monitor:SPEC's), one per label,
    in order: they are served and checked with the run."""
    out: dict[str, ModelSpec] = {}
    for setting in settings:
        for spec in setting.models:
            known = out.setdefault(spec.label, spec)
            if known.identity() != spec.identity():
                raise ConfigError("--setting", f"two settings call different models labelled {spec.label}; give one another label=")
    return list(out.values())


def setting_models(settings: Iterable[str]) -> list[ModelSpec]:
    """`models_of` the settings of those names."""
    return models_of(mitigations.get(n) for n in settings)


def _check(family: Family, fopts: BaseModel, settings: Sequence[Setting], called: Sequence[ModelSpec], opts: EvalOptions, specs: Sequence[ModelSpec]) -> None:
    """The scoring, settings, answer format, extraction model and epochs fit the family and the
    models, and each model takes what the scoring needs (log-probabilities) (ConfigError otherwise)."""
    if opts.scoring not in family.evaluation.scorings:
        raise ConfigError("--scoring", f"family {family.name} scores by {', '.join(family.evaluation.scorings)}, not {opts.scoring}")
    answering = {s.label: s for s in specs}
    for m in called:
        other = answering.get(m.label)
        if other is not None and other.identity() != m.identity():
            raise ConfigError("--setting", f"the model {m.label} a setting calls is not the answering model of that label; give it another label=")
    check_answer_format(family, opts, settings)
    _check_probe_loop(family, settings)
    if opts.extract is not None:
        if opts.scoring != "letter":
            raise ConfigError("-O extract", f"the extraction model reads generated replies: it needs --scoring letter, not {opts.scoring}")
        check_extractor(opts.extract, specs)
    if opts.epochs > 1:
        if not family.evaluation.epochs:
            raise ConfigError("--epochs", f"family {family.name} pairs single answers; it reads no repeats (use --epochs 1)")
        for spec in specs:
            if spec.supports("temperature") and spec.temperature == 0:
                raise ConfigError(
                    f"--model {spec.label}",
                    "temperature 0 decodes greedily, so every epoch would give the same answer: give the model a sampling temperature (e.g. temperature=0.7)",
                )
    if {**family.evaluation.decoding(fopts), **mcq_params(opts.scoring)}.get("logprobs"):
        for spec in specs:
            if not spec.supports("logprobs"):
                raise ConfigError(
                    f"--model {spec.label}", f"{spec.why_not('logprobs')}: --scoring {opts.scoring} needs log-probabilities (use --scoring letter)"
                )
        for setting in settings:
            if setting.agent is not None:
                raise ConfigError(
                    f"--setting {setting.name}",
                    "the setting answers in text after calls of its own (an agent's steps, a team's discussion): score it with --scoring letter",
                )


def _check_probe_loop(family: Family, settings: Sequence[Setting]) -> None:
    """A family that answers its probes through a loop of its own calls takes no setting that makes calls of its own."""
    if family.evaluation.loop is None:
        return
    for setting in settings:
        if setting.agent is not None or setting.precall is not None:
            raise ConfigError(
                f"--setting {setting.name}", f"family {family.name} answers its probes through a loop of its own calls; this setting makes calls of its own"
            )


def check_options(family: Family, opts: EvalOptions, specs: Iterable[ModelSpec] = ()) -> BaseModel:
    """The family's options, after checking the scoring and settings, and that each model takes
    what the scoring needs (log-probabilities) (ConfigError otherwise): `resolve_run`'s checks of
    the options alone."""
    fopts = family.parse_options(opts.family)
    settings = [mitigations.get(n) for n in opts.settings]
    _check(family, fopts, settings, models_of(settings), opts, list(specs))
    return fopts


def _check_first_unit(suite: Suite, family: Family, fopts: BaseModel, opts: EvalOptions) -> None:
    """With an extraction model or the schema answer format, the suite's replies must be read as
    option letters (a family or mode that judges its replies takes neither): ConfigError otherwise,
    read on the run's first unit."""
    if opts.extract is None and opts.answer_format != SCHEMA:
        return
    for item, probe in select_units(suite, family, fopts, dataclasses.replace(opts, limit=1))[:1]:
        scorer = family.evaluation.scorer(item, probe, opts.scoring, fopts)
        if opts.extract is not None:
            with_extractor(scorer, item, Extractor(opts.extract), opts.scoring, family)
        if opts.answer_format == SCHEMA:
            schema_scorer_of(scorer, family)


def check_extract(suite: Suite, family: Family, family_options: BaseModel, opts: EvalOptions) -> None:
    """With an extraction model, the suite's replies must be read as option letters (ConfigError otherwise)."""
    if opts.extract is not None:
        _check_first_unit(suite, family, family_options, dataclasses.replace(opts, answer_format=PROMPT))


def check_answer_units(suite: Suite, family: Family, family_options: BaseModel, opts: EvalOptions) -> None:
    """With the schema answer format, the suite's replies must be read as option letters (ConfigError otherwise)."""
    if opts.answer_format == SCHEMA:
        _check_first_unit(suite, family, family_options, dataclasses.replace(opts, extract=None))


def with_extractor(scorer: AnyScorer, item: Item, extractor: Extractor | None, scoring: str, family: Family) -> AnyScorer:
    """The unit's scorer, read with the extraction model where the run has one."""
    if extractor is None:
        return scorer
    if not isinstance(scorer, LetterScorer):
        raise ConfigError(
            "-O extract",
            f"family {family.name} does not read option letters from these replies (they are judged): "
            "an extraction model reads multiple-choice letter answers only",
        )
    return ExtractScorer(scorer, extractor, scoring, item.options)
