"""The typed rows the store writes and reads.

`UnitRow` is a unit's identity and plan, declared once: who answers (model, setting), what
(item, probe, condition, repeat), how it is scored and the request key of its answer; `unit_id`
names it within its model. The readers' results extend it with what the store holds about the
unit (`UnitResult`: its call's status and its score; `UnitRecord`: everything joined to it), so
a unit's identity fields are read under the same names wherever it comes from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from ..runtime.jsontypes import JSONObject, JSONValue
from .codes import CallCode, ScoreCode


@dataclass(frozen=True, slots=True)
class UnitRow:
    """One planned answer: (model, unit id) -> request key, with its item, probe (None: the clean
    unit of its item), condition, setting (a named mitigation, `none` without one), scoring and
    repeat."""

    model: str
    unit_id: str
    item_id: str
    probe_id: str | None
    condition: str
    setting: str
    scoring: str
    key: str
    epoch: int = 0  # the repeat of this unit (`medres eval --epochs`): another decoding seed

    @property
    def unit(self) -> UnitRow:
        """The unit's identity and plan alone (a result's without what was joined to it)."""
        if type(self) is UnitRow:
            return self
        return UnitRow(self.model, self.unit_id, self.item_id, self.probe_id, self.condition, self.setting, self.scoring, self.key, self.epoch)


#: the unit columns of the store's `units` table that make a `UnitRow`, in its field order
UNIT_COLUMNS = ("model", "unit_id", "item_id", "probe_id", "condition", "setting", "scoring", "key", "epoch")


@dataclass(frozen=True)
class CallRow:
    key: str
    model: str
    status: str  # a CallStatus: ok | error
    permanent: bool = False
    text: str | None = None
    top_logprobs: list[dict[str, float]] | None = None  # per generated position: token -> logprob
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    latency_s: float | None = None
    attempts: int = 1
    error: str | None = None
    waited_s: float = 0.0  # seconds spent waiting between its attempts (backoff and Retry-After)
    tool_calls: list[JSONObject] | None = None  # the tools an agent's step called (a list, stored as JSON), or None
    reasoning_tokens: int | None = None  # as the provider's usage reports them; None: not reported


@dataclass(frozen=True)
class ScoreRow:
    key: str
    scorer: str
    label: str | None
    status: str  # a ScoreStatus: valid | invalid | truncated | unscored
    detail: JSONValue = None
    value: float | None = None


@dataclass(frozen=True)
class RunConfig:
    """A run's configuration as recorded (`runs.config`): `data` is the JSON object as stored
    (empty when unreadable); the properties read the parts a reader of the store needs (an absent
    part is empty)."""

    run_id: str
    data: dict[str, Any]

    @property
    def options(self) -> dict[str, Any]:
        return self.data.get("options") or {}

    @property
    def model_labels(self) -> list[str]:
        """The labels of the run's models, in the order the run listed them."""
        return [m.get("label") for m in self.data.get("models") or []]

    @property
    def prompts(self) -> dict[str, Any]:
        return self.data.get("prompts") or {}


class StoredScore(TypedDict):
    """One stored score of a key under one scorer."""

    status: str  # a score status: valid | invalid | truncated | unscored
    label: str | None
    detail: JSONValue  # the scorer's detail, as it was stored (JSON)
    value: float | None


class StoredRequest(TypedDict):
    """A stored request: the model it was sent to, its messages and its parameters."""

    model: str
    messages: list[JSONObject]
    params: JSONObject


class SentRow(TypedDict):
    """The parameters one kind of call of one model was sent with (`sent_params`): kind `answer`, a
    linked call's role, or `scorer` (with its system prompt, else None), and the number of requests."""

    kind: str
    model: str
    params: JSONObject
    system: str | None
    calls: int


class Usage(TypedDict):
    """Tokens and cost summed over some calls (cost None when no call had a price)."""

    prompt_tokens: int
    completion_tokens: int
    cost: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class UnitResult(UnitRow):
    """A unit with its call and its score under the unit's scoring. `call_status` is ok, error or
    None (never called); `status`, `label` and `value` are the score's (None: not scored); `text`
    (the reply) and `messages` (the request as sent, JSON text) are read only when asked for."""

    call_status: str | None
    status: str | None
    label: str | None
    value: float | None
    text: str | None = None
    messages: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UnitRecord(UnitRow):
    """Everything the store holds about one unit: the request as sent (`messages`, JSON text), its
    call (`call`: its `CallCode`; the reply, how it ended, attempts, the error, tokens, latency,
    cost) and its score under the unit's scoring (`score`: its `ScoreCode`; label, value, `detail`
    as JSON text: how the label was read, a judge's reason, why it is unscored)."""

    messages: str | None
    call: CallCode
    reply: str | None
    finish_reason: str | None
    attempts: int | None
    error: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float | None
    cost: float | None
    score: ScoreCode
    label: str | None
    value: float | None
    detail: str | None
