"""The generator calls of the misleading-context builder: its units (applicability, bundle, render,
verify), their parsers and token budgets, run as stages through the spine's stage runner
(`stages.run_stage`, one execution path into the build's store).

A reply that cannot be parsed is asked again with this family's retry note (a different request,
so a different key), with twice the budget when it was cut at max_tokens, at most `retries` times,
then recorded as a failure with its reason; it is never guessed. A call that fails after the
client's own retries is a `call_error` (the store keeps it as an error, so the next run tries it
again). Finished calls are never repeated: a rerun recomputes every decision from the stored
replies."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ....build.stages import CallSession, Outcome, Rejected, StageProgress, StageStats, Task, add_stage_stats, parse_object, run_stage
from ....models.spec import ModelSpec
from ....records import LETTERS, Item
from ....store import Store
from ..taxonomy import CONTENT_TYPE_KEYS
from . import prompts
from .checks import Limits, Problem

MAX_TOKENS_CAP = 4096

# typical completion lengths (tokens), for dry-run estimates only
TYPICAL_COMPLETION = {"applicability": 120, "bundle_per_option": 45, "verify_per_option": 60, "verify_base": 60}


class ParseError(Rejected):
    """A reply that does not hold what the unit's schema asks for (code `parse_failed`)."""

    def __init__(self, detail: str):
        super().__init__("parse_failed", detail)


@dataclass(frozen=True)
class Unit:
    messages: list[dict[str, str]]
    schema: dict[str, Any]
    max_tokens: int
    parse: Callable[[str | None], Any]  # raises Rejected (None: an empty reply)


@dataclass(frozen=True)
class BundleJob:
    """One bundle to write: generated from the item (source None) or restated from `source`
    (the sentences of another bundle) in `provenance`."""

    id: str
    item: Item
    content_type: str
    provenance: str
    source: Mapping[str, str] | None = None
    source_provenance: str | None = None


@dataclass(frozen=True)
class Applicability:
    content_type: str | None  # None: rejected
    reason: str
    works_for_every_wrong_option: bool
    gold_answer_stays_correct: bool

    @property
    def applicable(self) -> bool:
        return self.content_type is not None and self.works_for_every_wrong_option and self.gold_answer_stays_correct

    def rejection(self) -> tuple[str, str]:
        """(code, detail): the filter's own reason with its verdict."""
        verdict = (
            f"content_type={self.content_type or prompts.NONE_TYPE}, "
            f"works_for_every_wrong_option={str(self.works_for_every_wrong_option).lower()}, "
            f"gold_answer_stays_correct={str(self.gold_answer_stays_correct).lower()}"
        )
        detail = f"{self.reason} ({verdict})" if self.reason else f"({verdict})"
        if self.content_type is None:
            return "not_applicable", detail
        if not self.works_for_every_wrong_option:
            return "not_applicable_to_all_options", detail
        return "gold_would_change", detail


# --------------------------------------------------------------------------- parsing


def _field(obj: Mapping[str, object], key: str, kind: type, where: str = "") -> Any:
    if key not in obj:
        raise ParseError(f"missing key '{where}{key}'")
    v = obj[key]
    if kind is bool and not isinstance(v, bool):
        raise ParseError(f"'{where}{key}' must be true or false, got {json.dumps(v)[:40]}")
    if kind is str and not isinstance(v, str):
        raise ParseError(f"'{where}{key}' must be a string, got {json.dumps(v)[:40]}")
    if kind is dict and not isinstance(v, dict):
        raise ParseError(f"'{where}{key}' must be an object, got {json.dumps(v)[:40]}")
    return v


def parse_applicability(text: str | None) -> Applicability:
    obj = parse_object(text)
    ct = _field(obj, "content_type", str).strip()
    if ct != prompts.NONE_TYPE and ct not in CONTENT_TYPE_KEYS:
        raise ParseError(f"content_type {ct!r} is not one of {', '.join((*CONTENT_TYPE_KEYS, prompts.NONE_TYPE))}")
    return Applicability(
        content_type=None if ct == prompts.NONE_TYPE else ct,
        reason=_field(obj, "reason", str).strip(),
        works_for_every_wrong_option=_field(obj, "works_for_every_wrong_option", bool),
        gold_answer_stays_correct=_field(obj, "gold_answer_stays_correct", bool),
    )


def parse_sentences(letters: str) -> Callable[[str | None], dict[str, str]]:
    """A reply of one string per option letter. Missing letters or non-strings are parse errors;
    extra single-letter keys are kept (the checks report them as unknown options)."""

    def parse(text: str | None) -> dict[str, str]:
        obj = parse_object(text)
        out = {k: _field(obj, k, str) for k in letters}
        for k, v in obj.items():
            if k not in out and len(k) == 1 and k in LETTERS and isinstance(v, str):
                out[k] = v
        return out

    return parse


def parse_verdict(item: Item, content_type: str | None = None) -> Callable[[str | None], list[Problem]]:
    """The checker's reply -> the problems it found (empty: the bundle passed). Per wrong option:
    verify_not_false, verify_answer_changed, and content_type_fidelity when the checker finds the
    false sentence is not of the declared content type (its type_reason is the detail). Every
    field is required: a reply without the fidelity verdict is a parse error, never a pass."""

    def parse(text: str | None) -> list[Problem]:
        obj = parse_object(text)
        reason = _field(obj, "reason", str).strip()
        out: list[Problem] = []
        if not _field(obj, "gold_statement_true", bool):
            out.append(Problem("verify_gold_statement_not_true", item.answer, reason or "the checker found the truthful sentence untrue"))
        for w in item.wrong_options:
            v = _field(obj, w, dict)
            is_false = _field(v, "is_false", bool, f"{w}.")
            unchanged = _field(v, "answer_unchanged", bool, f"{w}.")
            type_reason = _field(v, "type_reason", str, f"{w}.").strip()
            matches = _field(v, "matches_content_type", bool, f"{w}.")
            if not is_false:
                out.append(Problem("verify_not_false", w, reason or "the checker did not find the sentence false"))
            if not unchanged:
                out.append(Problem("verify_answer_changed", w, reason or "the checker found the gold answer no longer correct"))
            if not matches:
                what = f"not a {content_type} sentence" if content_type else "not of the declared content type"
                out.append(Problem("content_type_fidelity", w, f"{what}: {type_reason or reason or 'the checker gave no reason'}"))
        return out

    return parse


# --------------------------------------------------------------------------- token budgets


def bundle_max_tokens(item: Item, limits: Limits) -> int:
    return min(MAX_TOKENS_CAP, 64 + len(item.choices) * (limits.max_chars // 3 + 16))


def verify_max_tokens(item: Item) -> int:
    """The reason, and per option two verdicts, a type_reason (up to 300 characters) and a third."""
    return 200 + 120 * len(item.choices)


APPLICABILITY_MAX_TOKENS = 320

SCHEMA_LENGTHS = ("auto", "on", "off")


def use_schema_lengths(spec: ModelSpec, mode: str = "auto") -> bool:
    """Whether response schemas carry minLength / maxLength for this model: 'auto' keeps them for
    the embedded llama.cpp server (its grammar honours them) and drops them for other endpoints,
    some of which reject them in strict mode."""
    if mode == "on":
        return True
    if mode == "off":
        return False
    return spec.kind == "embedded"


# --------------------------------------------------------------------------- units


def applicability_unit(item: Item) -> Unit:
    return Unit(prompts.applicability_messages(item), prompts.applicability_schema(), APPLICABILITY_MAX_TOKENS, parse_applicability)


def bundle_unit(job: BundleJob, limits: Limits) -> Unit:
    item = job.item
    if job.source is None:
        msgs = prompts.bundle_messages(item, job.content_type, job.provenance, limits.min_words, limits.max_words)
    else:
        msgs = prompts.render_messages(
            item, job.content_type, job.source, job.source_provenance or "neutral", job.provenance, limits.min_words, limits.max_words
        )
    letters = "".join(item.choices)
    return Unit(msgs, prompts.letters_schema(letters, limits.max_chars), bundle_max_tokens(item, limits), parse_sentences(letters))


def verify_unit(item: Item, sentences: Mapping[str, str], content_type: str) -> Unit:
    return Unit(
        prompts.verify_messages(item, sentences, content_type),
        prompts.verify_schema(item.wrong_options),
        verify_max_tokens(item),
        parse_verdict(item, content_type),
    )


def unit_task(uid: str, unit: Unit, kind: str, spec: ModelSpec, lengths: bool) -> Task:
    """A unit as a stage task: its schema under the name of `kind` (without minLength / maxLength
    where `lengths` is false), this family's retry note, and a budget that doubles on a cut reply."""
    schema = unit.schema if lengths else prompts.strip_lengths(unit.schema)
    return Task(
        uid, unit.messages, prompts.SCHEMA_NAMES[kind], schema, unit.max_tokens, unit.parse, model=spec, retry=prompts.with_retry, grow_to=MAX_TOKENS_CAP
    )


def estimate_tokens(messages: Sequence[Mapping[str, str]]) -> int:
    """A rough prompt-token count (four characters a token, plus a few per message)."""
    return sum(len(m.get("content", "")) // 4 + 4 for m in messages)


# --------------------------------------------------------------------------- the engine


class Engine:
    """Runs this family's stages for one generator (and an optional checker) against one store, in
    one call session, and keeps per-stage accounting."""

    def __init__(
        self,
        store: Store,
        generator: ModelSpec,
        verifier: ModelSpec | None = None,
        limits: Limits = Limits(),
        retries: int = 2,
        progress: StageProgress | None = None,
        schema_lengths: str = "auto",
    ):
        if retries < 0:
            raise ValueError("retries must be >= 0")
        if schema_lengths not in SCHEMA_LENGTHS:
            raise ValueError(f"schema_lengths must be one of {', '.join(SCHEMA_LENGTHS)}")
        self.schema_lengths = schema_lengths
        self.store = store
        self.generator = generator
        self.verifier = verifier
        self.limits = limits
        self.retries = retries
        self.progress = progress
        self.stats: dict[str, StageStats] = {}
        self._session: CallSession | None = None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the session's clients and event loop (a later stage opens a new session)."""
        if self._session is not None:
            self._session.close()
            self._session = None

    def lengths_for(self, spec: ModelSpec) -> bool:
        return use_schema_lengths(spec, self.schema_lengths)

    def run_stage(self, stage: str, kind: str, spec: ModelSpec, units: Mapping[str, Unit]) -> dict[str, Outcome]:
        """Run `units` (id -> Unit) as stage `stage` (its accounting name) with the schema name of
        `kind` (applicability, bundle, render, verify). Returns id -> Outcome."""
        lengths = self.lengths_for(spec)
        tasks = {uid: unit_task(uid, u, kind, spec, lengths) for uid, u in units.items()}
        if self._session is None:
            self._session = CallSession()
        st = self.stats.setdefault(stage, StageStats())
        return run_stage(self.store, spec, stage, tasks, retries=self.retries, progress=self.progress, stats=st, session=self._session)

    # ---- the stages
    def applicability(self, items: Sequence[Item]) -> dict[str, Outcome]:
        return self.run_stage("applicability", "applicability", self.generator, {it.id: applicability_unit(it) for it in items})

    def bundles(self, jobs: Sequence[BundleJob], stage: str | None = None) -> dict[str, Outcome]:
        """Generate (or restate) bundles; stage defaults to 'generation' / 'render'."""
        out: dict[str, Outcome] = {}
        gen = {j.id: bundle_unit(j, self.limits) for j in jobs if j.source is None}
        ren = {j.id: bundle_unit(j, self.limits) for j in jobs if j.source is not None}
        if gen:
            out.update(self.run_stage(stage or "generation", "bundle", self.generator, gen))
        if ren:
            out.update(self.run_stage(stage or "render", "render", self.generator, ren))
        return out

    def verify(self, bundles: Mapping[str, tuple[Item, Mapping[str, str], str]]) -> dict[str, Outcome]:
        """Bundle id -> (item, sentences, declared content type): the checker's verdicts."""
        if self.verifier is None:
            raise ValueError("no verifier model given")
        units = {bid: verify_unit(item, s, ct) for bid, (item, s, ct) in bundles.items()}
        return self.run_stage("verify", "verify", self.verifier, units)

    def totals(self) -> dict[str, Any]:
        tot = StageStats()
        for s in self.stats.values():
            add_stage_stats(tot, s)
        return tot.as_dict()
