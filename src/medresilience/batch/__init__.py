"""Runs at scale through provider batch APIs, as an execution mode of the one call path
(`calls.batch_mode`): the calls a run has left are written as batch request lines whose
`custom_id` is the call's store key (`lines`), recorded in the store before they are sent, sent
to OpenAI's Batch API or Anthropic's Message Batches, or written for your own engine (vLLM's
run_batch, Ray Data) (`providers`), looked at again by the next `medres eval`, which stores each
result as a live call's (`executor`); batch prices and the dry run's estimate (`cost`). Scoring,
reports and resume stay as they are.

May import: calls, models, runtime, store."""

from .cost import Estimate, batch_spec, estimate
from .executor import PROVIDERS, BatchExecutor
from .lines import anthropic_request, openai_line, read_anthropic_results, read_openai_results

__all__ = [
    "PROVIDERS",
    "BatchExecutor",
    "Estimate",
    "anthropic_request",
    "batch_spec",
    "estimate",
    "openai_line",
    "read_anthropic_results",
    "read_openai_results",
]
