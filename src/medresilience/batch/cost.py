"""What a batch costs: a call answered through a provider's batch API is priced at that provider's
batch rate (`models.providers.BATCH_RATES`, a share of the list price the spec carries); a call run
on your own engine (`files`) at the spec's prices as they are (none, unless you give them).

`estimate` is the dry run: the calls a run has left (planned, deduplicated, not stored ok), their
prompt tokens (about four characters a token) and at most their output budget, priced live and
as a batch, before anything is sent. Calls that depend on replies (judges, extraction, second
turns) are not known before those replies exist and are not in it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..calls import CallRequest
from ..models.providers import BATCH_RATES
from ..models.spec import ModelSpec
from .tool_schema import TOOL_PROMPT_TOKENS, asked_schema, tool_prompt_chars

#: characters per token in the dry run's estimate of prompt tokens
CHARS_PER_TOKEN = 4.0


def batch_rate(spec: ModelSpec, backend_name: str) -> float | None:
    """The share of the list price a batch of `backend_name` charges for this model (None: the
    spec's prices as they are, e.g. your own engine)."""
    if backend_name == "files":
        return None
    return BATCH_RATES.get(backend_name)


def batch_spec(spec: ModelSpec, backend_name: str) -> ModelSpec:
    """The model priced as its batch calls are (the spec itself when the rate does not apply)."""
    rate = batch_rate(spec, backend_name)
    if rate is None or (spec.price_input is None and spec.price_output is None):
        return spec
    return spec.model_copy(
        update={
            "price_input": None if spec.price_input is None else spec.price_input * rate,
            "price_output": None if spec.price_output is None else spec.price_output * rate,
            "price_source": f"{spec.price_source or 'spec'} x batch rate {rate:g}",
        }
    )


@dataclass
class Estimate:
    """A dry run's numbers for one model: calls, prompt tokens (estimated), output tokens (at most:
    the budgets), and the cost live and as a batch (None: the model has no price)."""

    model: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    live_cost: float | None
    batch_cost: float | None

    def line(self) -> str:
        def money(v: float | None) -> str:
            return "no price" if v is None else f"${v:,.2f}"

        return (
            f"{self.model}: {self.calls:,} calls, about {self.prompt_tokens:,} prompt tokens and at most {self.completion_tokens:,} "
            f"output tokens; live {money(self.live_cost)}, batch {money(self.batch_cost)}"
        )


def estimate(requests: Iterable[CallRequest], specs: Iterable[ModelSpec], backend_name: str) -> list[Estimate]:
    """The dry run of these calls (already deduplicated and without the ones stored ok), by model.
    Through Anthropic's message batches a schema call's prompt also holds its forced tool (name,
    description, schema) and the tool-use system prompt Anthropic adds (`tool_schema`)."""
    by_label = {s.label: s for s in specs}
    sums: dict[str, list[int]] = {}
    for r in requests:
        chars = sum(len(str(m.get("content") or "")) for m in r.messages)
        tool = tool_prompt_chars(asked_schema(r)) if backend_name == "anthropic" else 0
        budget = r.params.get("max_tokens") or r.params.get("max_completion_tokens") or by_label[r.model].max_tokens
        acc = sums.setdefault(r.model, [0, 0, 0])
        acc[0] += 1
        acc[1] += round((chars + tool) / CHARS_PER_TOKEN) + (TOOL_PROMPT_TOKENS if tool else 0)
        acc[2] += int(budget) if isinstance(budget, int) else by_label[r.model].max_tokens
    out = []
    for label, (n, pt, ct) in sums.items():
        spec = by_label[label]
        out.append(Estimate(label, n, pt, ct, spec.cost(pt, ct), batch_spec(spec, backend_name).cost(pt, ct)))
    return out
