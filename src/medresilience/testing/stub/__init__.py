"""A small, fast, local OpenAI-compatible chat-completions server for tests, benchmarks and dry
runs. Answers come from a policy (a callable or a named built-in); faults (429 with Retry-After,
500, 503, timeouts, malformed bodies, permanent 400s, and the hostile replies of a hardening
test: a 200 whose message content is null or whose message is null, a 429 whose Retry-After is
huge (an hour by default), a 401 whose message echoes the API key the client sent, a 404 for an
unknown model, a 200 whose content is a list of text parts or a number, a 200 whose answer is the
API key the client sent, a reply dripped one byte at a time, a reply without the log-probabilities
asked for) are injected deterministically: which request gets which fault depends only on
(seed, canonical request body), never on call order, so results do not depend on concurrency.
Transient faults (429, 500, 503, timeouts, malformed bodies, null content or message, the long
Retry-After, a numeric content, the drip) hit a request body only on its first `transient_attempts`
attempts, so a retrying client eventually succeeds; permanent ones (400, 401, 404) and the
persistent reply shapes (text parts, the echoed key, no log-probabilities) hit every attempt.

In-process (background thread with its own event loop)::

    with StubServer(policy="hash", faults=Faults(rate_429=0.1), log_path="req.jsonl") as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="stub")

As a subprocess (prints ``LISTENING http://127.0.0.1:PORT/v1`` first, serves until SIGTERM)::

    python -m medresilience.testing.stub --port 0 --policy hash --rate-429 0.1 --log req.jsonl

or from Python: ``with StubProcess(policy="hash", faults=...) as proc: proc.base_url``.

A policy may answer like a thinking model: a dict ``{"content": ..., "reasoning_tokens": N,
"reasoning_content": ...}`` sends the count as ``usage.completion_tokens_details.reasoning_tokens``
(and among the completion tokens) and the text as the message's ``reasoning_content``; each only
when the policy gives it.

A request's ``response_format`` json_schema is ignored by default (the policy's text is sent as
is); ``response_format="honour"`` sends a JSON object of the schema instead (``fit_to_schema``:
the policy's letter in the enum property, its text in a string property), ``"reject"`` answers
400 naming ``response_format``, as a server without structured output does.

Endpoints: ``POST /v1/chat/completions`` (non-streaming), ``GET /v1/models``, ``GET /health``;
with ``batches=BatchEndpoints(...)`` also OpenAI's files + batches and Anthropic's message batches,
answered by the same policy, with their own fault model (``batches``).

The package holds one module per job: ``bodies`` (canonical request bodies), ``faults`` (the fault
model), ``policies`` (the answers), ``agent_policy`` (a scripted search agent answering with tool
calls or text actions), ``team_policy`` (a scripted clinical team, keyed on the team setting's
prompts), ``batches`` (the batch endpoints), ``app`` (the request handling), ``server`` (in-process),
``process`` (as a child process) and ``cli`` (the command line, ``__main__``). Its API is this
package: the names in ``__all__`` below (``from medresilience.testing.stub import StubServer``).
It imports nothing of medresilience outside itself; the families' scripted fake replies live in
the families (``families/*/testing.py``) and use ``uniform`` and ``band_of`` from here.
"""

from .agent_policy import is_agent_request, scripted_agent
from .batches import BatchEndpoints, BatchFaults
from .bodies import canonical_body, request_key
from .faults import FAULT_OUTCOMES, OUTCOMES, PERMANENT_FAULTS, TRANSIENT_FAULTS, Faults, assign_fault, band_of, uniform
from .policies import POLICIES, RESPONSE_FORMAT_MODES, Policy, answer_letter, fit_to_schema, hash_letter, make_policy, message_text, option_letters
from .process import StubProcess, policy_server
from .server import StubServer, StubStats
from .team_policy import scripted_team

__all__ = [
    "FAULT_OUTCOMES",
    "OUTCOMES",
    "PERMANENT_FAULTS",
    "POLICIES",
    "RESPONSE_FORMAT_MODES",
    "TRANSIENT_FAULTS",
    "BatchEndpoints",
    "BatchFaults",
    "Faults",
    "Policy",
    "StubProcess",
    "StubServer",
    "StubStats",
    "answer_letter",
    "assign_fault",
    "band_of",
    "canonical_body",
    "fit_to_schema",
    "hash_letter",
    "is_agent_request",
    "make_policy",
    "message_text",
    "option_letters",
    "policy_server",
    "request_key",
    "scripted_agent",
    "scripted_team",
    "uniform",
]
