"""The generator calls of the misleading-context builder, as batches of structured-output calls
through the one execution path (runner.run_calls) and the store.

A stage is a set of units (one per item or bundle). Each round sends every pending unit's
request; the reply text is read back from the store and parsed against the stage's schema. A
reply that cannot be parsed is asked again with a retry note (a different request, so a
different key), at most `retries` times, then recorded as a failure with its reason; it is never
guessed. A call that fails after the client's own retries is a `call_error` (the store keeps it
as an error, so the next run tries it again). Finished calls are never repeated: a rerun
recomputes every decision from the stored replies."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ....models.openai_compatible import OpenAICompatibleModel
from ....models.spec import ModelSpec
from ....records import LETTERS, Item
from ....runner import CallRequest, request_key, run_calls
from ....store import Store
from ..taxonomy import CONTENT_TYPE_KEYS
from . import prompts
from .checks import Limits, Problem

StageProgress = Callable[[str, int, int], None]

MAX_TOKENS_CAP = 4096

# typical completion lengths (tokens), for dry-run estimates only
TYPICAL_COMPLETION = {"applicability": 120, "bundle_per_option": 45, "verify_per_option": 60, "verify_base": 60}


class ParseError(ValueError):
    pass


@dataclass
class StageStats:
    """What one stage cost: unique requests used (retries included), calls made by this run and
    reused from the store, call errors, parse retries and failures, tokens and cost of every
    request the stage used (stored ones included)."""

    units: int = 0
    requests: int = 0
    calls_made: int = 0
    reused: int = 0
    call_errors: int = 0
    parse_retries: int = 0
    parse_failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def add(self, other: StageStats) -> None:
        for k, v in asdict(other).items():
            if k == "cost":
                if v is not None:
                    self.cost = (self.cost or 0.0) + v
            else:
                setattr(self, k, getattr(self, k) + v)


@dataclass
class Outcome:
    """The result of one unit: ok with its parsed value, or a failure code and detail."""

    ok: bool
    value: Any = None
    code: str | None = None
    detail: str = ""
    attempts: int = 0
    keys: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Unit:
    messages: list[dict[str, str]]
    schema: dict[str, Any]
    max_tokens: int
    parse: Callable[[str], Any]


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

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def parse_object(text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        raise ParseError("empty reply")
    t = text.strip()
    m = _FENCE.match(t)
    if m:
        t = m.group(1)
    try:
        obj = json.loads(t)
    except json.JSONDecodeError as e:
        raise ParseError(f"not valid JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    if not isinstance(obj, dict):
        raise ParseError(f"expected a JSON object, got {type(obj).__name__}")
    return obj


def _field(obj: Mapping[str, Any], key: str, kind: type, where: str = "") -> Any:
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
    return min(MAX_TOKENS_CAP, 64 + len(item.options) * (limits.max_chars // 3 + 16))


def verify_max_tokens(item: Item) -> int:
    """The reason, and per option two verdicts, a type_reason (up to 300 characters) and a third."""
    return 200 + 120 * len(item.options)


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
    letters = "".join(item.options)
    return Unit(msgs, prompts.letters_schema(letters, limits.max_chars), bundle_max_tokens(item, limits), parse_sentences(letters))


def verify_unit(item: Item, sentences: Mapping[str, str], content_type: str) -> Unit:
    return Unit(
        prompts.verify_messages(item, sentences, content_type),
        prompts.verify_schema(item.wrong_options),
        verify_max_tokens(item),
        parse_verdict(item, content_type),
    )


def estimate_tokens(messages: Sequence[Mapping[str, str]]) -> int:
    """A rough prompt-token count (four characters a token, plus a few per message)."""
    return sum(len(m.get("content", "")) // 4 + 4 for m in messages)


# --------------------------------------------------------------------------- the engine


class Engine:
    """Runs stages of structured-output calls for one generator (and an optional checker)
    against one store, and keeps per-stage accounting."""

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
        self._keys: dict[str, set[str]] = {}
        self._runner: asyncio.Runner | None = None
        self._clients: dict[str, OpenAICompatibleModel] = {}

    # ---- one event loop and one client per model for the engine's life (not one per round)
    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _run(self, coro: Any) -> Any:
        if self._runner is None:
            self._runner = asyncio.Runner()
        return self._runner.run(coro)

    def _client(self, spec: ModelSpec) -> OpenAICompatibleModel:
        if spec.label not in self._clients:

            async def make() -> OpenAICompatibleModel:
                return OpenAICompatibleModel(spec)

            self._clients[spec.label] = self._run(make())
        return self._clients[spec.label]

    def close(self) -> None:
        """Close the clients and the event loop (the engine may not be used afterwards)."""
        if self._runner is None:
            return
        clients, self._clients = list(self._clients.values()), {}

        async def close_all() -> None:
            for c in clients:
                with contextlib.suppress(Exception):
                    await c.close()

        try:
            self._runner.run(close_all())
        finally:
            self._runner.close()
            self._runner = None

    def lengths_for(self, spec: ModelSpec) -> bool:
        return use_schema_lengths(spec, self.schema_lengths)

    # ---- the generic loop
    def run_stage(self, stage: str, kind: str, spec: ModelSpec, units: Mapping[str, Unit]) -> dict[str, Outcome]:
        """Run `units` (id -> Unit) as stage `stage` (its accounting name) with the schema name of
        `kind` (applicability, bundle, render, verify). Returns id -> Outcome."""
        t0 = time.perf_counter()
        st = self.stats.setdefault(stage, StageStats())
        keys = self._keys.setdefault(stage, set())
        st.units += len(units)
        results: dict[str, Outcome] = {}
        pending: dict[str, tuple[int, str | None, int]] = {uid: (0, None, u.max_tokens) for uid, u in units.items()}
        history: dict[str, list[str]] = {uid: [] for uid in units}
        lengths = self.lengths_for(spec)
        while pending:
            reqs: dict[str, tuple[CallRequest, int, int]] = {}
            for uid, (attempt, err, max_tokens) in pending.items():
                u = units[uid]
                msgs = prompts.with_retry(u.messages, attempt, err)
                params = spec.decoding(max_tokens=max_tokens, response_format=prompts.response_format(kind, u.schema, lengths))
                key = request_key(spec, msgs, params)
                reqs[uid] = (CallRequest(spec.label, key, msgs, params), attempt, max_tokens)
            label = stage if all(a == 0 for _, a, _ in reqs.values()) else f"{stage} (retry)"

            def on_progress(done: int, total: int, _label: str = label) -> None:
                if self.progress is not None:
                    self.progress(_label, done, total)

            client = self._client(spec)
            rs = self._run(run_calls([r for r, _, _ in reqs.values()], [spec], self.store, on_progress, clients={spec.label: client}))
            st.calls_made += rs.called
            st.reused += rs.cached
            nxt: dict[str, tuple[int, str | None, int]] = {}
            for uid, (r, attempt, max_tokens) in reqs.items():
                keys.add(r.key)
                history[uid].append(r.key)
                row = self.store.call(r.key)
                if row is None or row["status"] != "ok":
                    why = (row or {}).get("error") or "no reply stored"
                    results[uid] = Outcome(False, code="call_error", detail=str(why)[:300], attempts=attempt + 1, keys=history[uid])
                    continue
                try:
                    value = units[uid].parse(row["text"])
                except ParseError as e:
                    detail = str(e)
                    if row.get("finish_reason") == "length":
                        detail += " (the reply hit max_tokens)"
                    if attempt < self.retries:
                        st.parse_retries += 1
                        more = min(MAX_TOKENS_CAP, max_tokens * 2) if row.get("finish_reason") == "length" else max_tokens
                        nxt[uid] = (attempt + 1, detail, more)
                    else:
                        st.parse_failures += 1
                        results[uid] = Outcome(False, code="parse_failed", detail=f"{attempt + 1} replies could not be parsed; last: {detail}", attempts=attempt + 1, keys=history[uid])
                else:
                    results[uid] = Outcome(True, value, attempts=attempt + 1, keys=history[uid])
            pending = nxt
        st.call_errors += sum(1 for o in results.values() if o.code == "call_error")
        self._account(stage)
        st.seconds += time.perf_counter() - t0
        return results

    def _account(self, stage: str) -> None:
        """Recompute tokens and cost of every request the stage used, from the store."""
        st = self.stats[stage]
        keys = sorted(self._keys[stage])
        st.requests = len(keys)
        u = self.store.usage_for(keys)
        st.prompt_tokens, st.completion_tokens, st.cost = u["prompt_tokens"], u["completion_tokens"], u["cost"]

    def keys(self, stage: str) -> set[str]:
        return set(self._keys.get(stage, set()))

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
            tot.add(s)
        return tot.as_dict()
