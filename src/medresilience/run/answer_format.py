"""How a run asks for a multiple-choice answer (`EvalOptions.answer_format`, `-O answer_format=`):
`prompt` (the default: the family's prompt asks for the letter, the reply's text is read by the
rules) or `schema` (the same messages, and a `response_format` json_schema whose `answer` is an
enum of the item's labels, read from that field alone: scoring.schema_answer).

Which models get the schema, decided per model before its first answer is planned:
- a model whose provider (or model rule) is declared without `response_format`
  (models.providers) is asked in the prompt format; the run says so once, in its warnings;
- every other model is first sent one probe request (`probe_request`: a short chat that asks for
  no JSON, under a two-value schema). The probe is stored and keyed like every call (its key names
  the model identity), with its outcome as a score under PROBE_SCORER, so a rerun or a resumed run
  reads the outcome and sends nothing. A reply that is the JSON object asked for: the model's
  answers are asked with the schema. A 4xx that does not stop a model (400, 422: the server
  rejects the parameter or the schema): `rejected`. A reply that is not that object (a server
  that drops the parameter and lets the model talk): `ignored`. In both cases the model's answers
  are asked in the prompt format and the run says so once (`RunStats.fallbacks`); the probe's
  error is not one of the run's errors. Any other failure (a refused connection, a rejected key,
  retries given up) decides nothing: the schema is kept, the answers meet the same fault and are
  reported as usual, and the next run probes again.

A fallback answer is another request than the schema answer: it carries no `response_format`, so
its key is the key of the prompt-format request, exactly as a run without the option would send
it (and it reuses such a run's stored reply in the same store). Nothing sent under the schema is
ever re-read as a prompt-format reply or the reverse: the unit's key, and so its stored request,
says which format its answer was asked in (`medres view` shows the request's `response_format`).

The schema is for replies read as option letters: a family or mode that judges its replies
(free-text answers), logprob scoring, an extraction model and an agent setting are refused with
a clear error before anything is written."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..calls import CallRequest, RunStats, add_stats, request_key, run_calls
from ..runtime.errors import ConfigError
from ..runtime.jsontypes import JSONObject, JSONValue
from ..score import AnyScorer, Score
from ..scoring.mcq import LetterScorer
from ..scoring.schema_answer import answer_response_format

if TYPE_CHECKING:  # pragma: no cover
    from ..family import Family
    from ..mitigations.setting import Setting
    from ..models.openai_compatible import Completion, ModelCallError, OpenAICompatibleModel
    from ..models.spec import ModelSpec
    from ..store import Store

_MCQ_ONLY = "answer_format=schema asks for one of the item's option labels, for multiple-choice answers only"
PROMPT, SCHEMA = "prompt", "schema"
FORMATS = (PROMPT, SCHEMA)
#: the scorer name the probe's outcome is stored under (label: schema, rejected or ignored)
PROBE_SCORER = "answer_format_probe"
#: the probe's chat: it asks for no JSON, so only a server that decodes under the schema answers with it
PROBE_MESSAGES = [{"role": "user", "content": "Say hello."}]
PROBE_LABELS = ("yes", "no")
#: the probe's output budget: room for {"answer": "yes"} in any tokenizer
PROBE_TOKENS = 32


#: a schema answer's least output budget: its reasoning field comes first, so a budget made for a
#: terse "Answer: X" (the embedded models' 16 tokens) would cut every schema reply before its answer
#: (the embedded Qwen's schema replies ran to 171 tokens); a larger budget given is kept
SCHEMA_MIN_TOKENS = 512


def schema_params(params: Mapping[str, JSONValue], letters: str) -> JSONObject:
    """An answer's decoding parameters asked with the schema: the item's response_format, and a
    `max_tokens` below SCHEMA_MIN_TOKENS raised to it (`max_completion_tokens`, a reasoning model's
    budget, is its provider's and is kept)."""
    out: JSONObject = {**params, "response_format": answer_response_format(letters)}
    budget = out.get("max_tokens")
    if isinstance(budget, int) and budget < SCHEMA_MIN_TOKENS:
        out["max_tokens"] = SCHEMA_MIN_TOKENS
    return out


def check_answer_format(family: Family, opts: Any, settings: Iterable[Setting]) -> None:
    """The run's options and settings can take the schema format (ConfigError otherwise)."""
    fmt = opts.answer_format
    if fmt not in FORMATS:
        raise ConfigError("-O answer_format", f"must be {' or '.join(FORMATS)}, not {fmt!r}")
    if fmt == PROMPT:
        return
    if "letter" not in family.evaluation.scorings:
        raise ConfigError("-O answer_format", f"family {family.name} does not read option letters from its replies (they are judged): {_MCQ_ONLY}")
    if opts.scoring != "letter":
        raise ConfigError("-O answer_format", f"a schema answer is generated and read from its answer field: it needs --scoring letter, not {opts.scoring}")
    if opts.extract is not None:
        raise ConfigError("-O answer_format", "a schema answer is read from its answer field, never by an extraction model: drop -O extract")
    for s in settings:
        if s.agent is not None:
            raise ConfigError(
                f"--setting {s.name}",
                "the setting answers in text after calls of its own (an agent's steps, a team's discussion): -O answer_format=schema is not for it",
            )


def schema_scorer_of(scorer: AnyScorer, family: Family) -> None:
    """A unit's family scorer can be replaced by the schema reading: it reads option letters
    (ConfigError naming the family otherwise: its replies are judged, not read as letters)."""
    if not isinstance(scorer, LetterScorer):
        raise ConfigError("-O answer_format", f"family {family.name} does not read option letters from these replies (they are judged): {_MCQ_ONLY}")


def declared_formats(specs: Iterable[ModelSpec], fmt: str) -> dict[str, str]:
    """model label -> the format its answers are asked in, by the provider table alone."""
    return {s.label: SCHEMA if fmt == SCHEMA and s.supports("response_format") else PROMPT for s in specs}


def declared_warnings(specs: Iterable[ModelSpec], fmt: str) -> list[str]:
    """One line per model the provider table declares without `response_format` (schema asked)."""
    if fmt != SCHEMA:
        return []
    return [
        f"model {s.label}: {s.why_not('response_format')}, so its answers are asked in the prompt format, not with -O answer_format=schema"
        for s in specs
        if not s.supports("response_format")
    ]


def probe_request(spec: ModelSpec) -> CallRequest:
    """The probe of one model: stored under its key with its outcome as a PROBE_SCORER score."""
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": list(PROBE_LABELS)}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    rf = {"type": "json_schema", "json_schema": {"name": "format_probe", "strict": True, "schema": schema}}
    params = spec.decoding(max_tokens=PROBE_TOKENS, response_format=rf)
    key = request_key(spec, PROBE_MESSAGES, params)
    return CallRequest(spec.label, key, PROBE_MESSAGES, params, _probe_reply, PROBE_SCORER, on_error=_probe_error)


def _probe_reply(c: Completion) -> Score:
    try:
        data = json.loads(c.text)
    except ValueError:
        data = None
    if isinstance(data, dict) and data.get("answer") in PROBE_LABELS:
        return Score(SCHEMA, "valid", None, {"reply": c.text[:200]})
    return Score("ignored", "invalid", None, {"reason": "the reply to a schema request was not the JSON object asked for", "reply": c.text[:200]})


def _probe_error(e: ModelCallError) -> Score | None:
    """A 4xx that does not stop a model rejects the parameter; any other failure decides nothing."""
    if e.permanent and e.status is not None and 400 <= e.status < 500 and e.stops_model is None:
        return Score("rejected", "invalid", None, {"reason": " ".join(str(e).split())[:300], "status": e.status})
    return None


async def resolve_formats(
    specs: list[ModelSpec], fmt: str, store: Store, total: RunStats, clients: Mapping[str, OpenAICompatibleModel] | None = None
) -> dict[str, str]:
    """model label -> the format its answers are asked in: the declared formats, then the probe's
    outcome for each model declared able (sent only when none is stored). The probe's call counts
    among the run's calls, its failure not among its errors; a fallback is said once in
    `total.fallbacks`."""
    formats = declared_formats(specs, fmt)
    probes = {s.label: probe_request(s) for s in specs if formats[s.label] == SCHEMA}
    if not probes:
        return formats
    todo = [r for r in probes.values() if store.score(r.key, PROBE_SCORER) is None]
    if todo:
        part = await run_calls(todo, specs, store, None, dict(clients) if clients else None, RunStats(), stop_after=0)
        quiet = dataclasses.replace(part, errors=0, permanent_errors=0, error_samples=[], unique_calls=0, cached=0, stopped=[])
        add_stats(total, quiet)
    for label, r in probes.items():
        s = store.score(r.key, PROBE_SCORER)
        if s is None or s["label"] == SCHEMA:
            continue
        formats[label] = PROMPT
        why = s["detail"].get("reason", "") if isinstance(s["detail"], dict) else ""
        what = "rejects response_format" if s["label"] == "rejected" else "ignores response_format"
        total.fallbacks.append(f"model {label} {what} ({why}): its answers are asked in the prompt format, not with -O answer_format=schema")
    return formats
