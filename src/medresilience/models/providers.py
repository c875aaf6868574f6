"""The providers a model can be named by, as data: `PROVIDER/MODEL` (as inspect_ai, lm-eval and
LiteLLM write it) -> an OpenAI-compatible endpoint, the usual key variable, and the quirks of the
provider and of some of its models. Every provider is reached the same way (the OpenAI
chat-completions protocol through `openai_compatible`); the table only says where, with which key
variable, and which request parameters the endpoint rejects or ignores.

`<PROVIDER>_BASE_URL` (e.g. OPENAI_BASE_URL, VLLM_BASE_URL) overrides a provider's URL. Only the
*name* of a key variable is ever stored, never its value.

A quirk is a feature (see FEATURES) the provider or a model lacks: an unsupported parameter is not
sent (`seed`, `temperature`, ...), and logprob scoring asked of a model without `logprobs` stops
with one line before anything is called. Models whose output budget also pays for hidden reasoning
get a larger default budget (`min_tokens`), and OpenAI's reasoning models get
`max_completion_tokens` instead of `max_tokens`.

PRICES is a small dated table of list prices (USD per 1M input / output tokens) used when a model
spec gives none; the run records which prices it used and their date."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..registry import Registry

#: the request features a provider or model may lack. `response_format` means a JSON schema
#: (`{"type": "json_schema", ...}`, strict) that the server decodes under: structured judge verdicts
#: and `-O answer_format=schema` answers are asked for only where it is not declared missing (a
#: provider with JSON mode alone, `json_object`, lacks it).
FEATURES = ("temperature", "top_p", "seed", "logprobs", "response_format", "reasoning_effort", "tools")

#: OpenAI's advice: reserve at least 25,000 tokens for reasoning and output when starting out
REASONING_BUDGET = 25_000


@dataclass(frozen=True)
class ModelRule:
    """Quirks of some of a provider's models, chosen by name (`pattern`, a regex matched at the
    start of the model name)."""

    pattern: str
    models: str  # the models it covers, in words
    unsupported: frozenset[str] = frozenset()
    token_param: str = "max_tokens"  # the request's name for the output budget
    min_tokens: int | None = None  # default output budget (hidden reasoning counts against it)
    note: str = ""

    def matches(self, model: str) -> bool:
        return re.match(self.pattern, model) is not None


@dataclass(frozen=True)
class Provider:
    """One provider: its OpenAI-compatible base URL, key variables and quirks."""

    name: str
    title: str
    base_url: str
    key_envs: tuple[str, ...] = ()  # the usual variable first; later ones are read when it is unset
    local: bool = False
    unsupported: frozenset[str] = frozenset()
    seed_param: str = "seed"  # the request's name for the seed
    rules: tuple[ModelRule, ...] = ()
    notes: tuple[str, ...] = ()
    schema_note: str = ""  # where its json_schema support depends on the model or server version

    @property
    def base_url_env(self) -> str:
        return f"{self.name.upper()}_BASE_URL"

    def url(self, environ: Mapping[str, str] | None = None) -> str:
        """The base URL: `<PROVIDER>_BASE_URL` when set, else the table's."""
        env = os.environ if environ is None else environ
        return env.get(self.base_url_env) or self.base_url

    def key_env(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The name of the key variable to read: the first one set, else the usual one (None: no
        key needed)."""
        env = os.environ if environ is None else environ
        return next((k for k in self.key_envs if env.get(k)), self.key_envs[0] if self.key_envs else None)

    def rule(self, model: str) -> ModelRule | None:
        return next((r for r in self.rules if r.matches(model)), None)

    @property
    def structured_answers(self) -> str:
        """Whether `-O answer_format=schema` is sent to this provider's models (`medres models`)."""
        if "response_format" in self.unsupported:
            return "no"
        return self.schema_note or "yes"

    @property
    def agent_protocol(self) -> str:
        """How the `agent` setting gives this provider's models its tools: the OpenAI tools API
        (function calling), or plain-text SEARCH / READ lines where the provider takes no tools."""
        return "text actions" if "tools" in self.unsupported else "tools (function calling)"

    def quirks(self) -> list[str]:
        """The quirks in words (for `medres models`)."""
        missing = [f for f in FEATURES if f in self.unsupported]
        out = ["no " + ", ".join(missing)] if missing else []
        if self.seed_param != "seed":
            out.append(f"seed sent as {self.seed_param}")
        for r in self.rules:
            out.append(f"{r.models}: {r.note}")
        return out + list(self.notes)


#: OpenAI's reasoning models; also what `reasoning=true` applies to a model the table does not know
REASONING_RULE = ModelRule(
    r"^(?!.*-chat)(o\d+(-|$)|gpt-5)",
    "o1, o3, o4-mini, gpt-5 (not -chat)",
    frozenset({"temperature", "top_p", "logprobs"}),
    token_param="max_completion_tokens",
    min_tokens=REASONING_BUDGET,
    note=f"max_completion_tokens (default {REASONING_BUDGET:,}), no temperature/top_p/logprobs",
)

#: the providers a model is named by (PROVIDER/MODEL), in the order `medres models` lists them
PROVIDERS: Registry[Provider] = Registry("provider", error=ValueError)
for _provider in (
    Provider("openai", "OpenAI", "https://api.openai.com/v1", ("OPENAI_API_KEY",), rules=(REASONING_RULE,)),
    Provider(
        "anthropic",
        "Anthropic",
        "https://api.anthropic.com/v1/",
        ("ANTHROPIC_API_KEY",),
        unsupported=frozenset({"seed", "logprobs", "response_format"}),
        notes=("temperature capped at 1; extended thinking via extra_body",),
    ),
    Provider(
        "gemini",
        "Google Gemini",
        "https://generativelanguage.googleapis.com/v1beta/openai/",
        ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        unsupported=frozenset({"seed", "logprobs"}),
        rules=(
            ModelRule(
                r"^gemini-(2\.5|[3-9])",
                "gemini-2.5 and later (thinking)",
                min_tokens=REASONING_BUDGET,
                note=f"the output budget includes thinking (default {REASONING_BUDGET:,})",
            ),
        ),
        notes=("GOOGLE_API_KEY is read when GEMINI_API_KEY is unset",),
    ),
    Provider("mistral", "Mistral AI", "https://api.mistral.ai/v1", ("MISTRAL_API_KEY",), unsupported=frozenset({"logprobs"}), seed_param="random_seed"),
    Provider(
        "together",
        "Together AI",
        "https://api.together.xyz/v1",
        ("TOGETHER_API_KEY",),
        unsupported=frozenset({"logprobs"}),
        notes=("log-probabilities come back in a shape the client does not read",),
        schema_note="some models",
    ),
    Provider(
        "openrouter",
        "OpenRouter",
        "https://openrouter.ai/api/v1",
        ("OPENROUTER_API_KEY",),
        notes=("model names carry the vendor (openrouter/openai/gpt-4o-mini); features depend on the routed provider",),
        schema_note="if routed so",
    ),
    Provider(
        "groq",
        "Groq",
        "https://api.groq.com/openai/v1",
        ("GROQ_API_KEY",),
        unsupported=frozenset({"logprobs"}),
        notes=("temperature 0 is run as 1e-8",),
        schema_note="some models",
    ),
    Provider(
        "deepseek",
        "DeepSeek",
        "https://api.deepseek.com/v1",
        ("DEEPSEEK_API_KEY",),
        unsupported=frozenset({"seed", "response_format"}),
        notes=("JSON mode (json_object) only: no JSON schema",),
        rules=(
            ModelRule(
                r"^deepseek-reasoner",
                "deepseek-reasoner (thinking)",
                frozenset({"temperature", "top_p", "logprobs"}),
                min_tokens=32_768,
                note="no temperature/top_p/logprobs; the budget includes reasoning (default 32,768)",
            ),
        ),
    ),
    Provider(
        "vllm",
        "vLLM server",
        "http://localhost:8000/v1",
        local=True,
        notes=(
            "started with --api-key? add api_key_env=VLLM_API_KEY",
            "the agent's tools need the server started with --enable-auto-tool-choice --tool-call-parser NAME (else agent:...,protocol=text)",
        ),
    ),
    Provider(
        "sglang",
        "SGLang server",
        "http://localhost:30000/v1",
        local=True,
        notes=("the agent's tools need the server started with --tool-call-parser NAME (else agent:...,protocol=text)",),
    ),
    Provider(
        "ollama",
        "Ollama",
        "http://localhost:11434/v1",
        local=True,
        notes=("logprobs need Ollama 0.12.11 or later",),
        schema_note="Ollama 0.5+",
    ),
    Provider("llamacpp", "llama.cpp server", "http://localhost:8080/v1", local=True),
):
    PROVIDERS.register(_provider.name, _provider)


def get_provider(name: str) -> Provider | None:
    name = name.lower()
    return PROVIDERS.get(name) if name in PROVIDERS else None


def provider_for_url(url: str) -> Provider | None:
    """The hosted provider whose default endpoint is on this URL's host (None otherwise): an
    `openai:MODEL,base_url=...` spec pointing at a known API gets that provider's quirks."""
    host = urlsplit(url).hostname
    if not host:
        return None
    return next((p for p in PROVIDERS.values() if not p.local and urlsplit(p.base_url).hostname == host), None)


@dataclass(frozen=True)
class Price:
    """A list price in USD per 1M tokens, and the day it was listed."""

    provider: str
    model: str
    input: float
    output: float
    date: str


#: list prices as published by the providers on the date given (prompt-cache and batch discounts
#: and long-context surcharges are not modelled). Override with price_input= / price_output=.
PRICES: tuple[Price, ...] = (
    Price("openai", "gpt-4o", 2.50, 10.00, "2026-03-21"),
    Price("openai", "gpt-4o-mini", 0.15, 0.60, "2026-03-21"),
    Price("openai", "gpt-4.1", 2.00, 8.00, "2026-03-21"),
    Price("openai", "gpt-4.1-mini", 0.40, 1.60, "2026-03-21"),
    Price("openai", "gpt-4.1-nano", 0.10, 0.40, "2026-03-21"),
    Price("openai", "o3", 2.00, 8.00, "2026-03-21"),
    Price("openai", "o4-mini", 1.10, 4.40, "2026-03-21"),
    Price("openai", "gpt-5", 1.25, 10.00, "2026-03-21"),
    Price("openai", "gpt-5-mini", 0.25, 2.00, "2026-03-21"),
    Price("openai", "gpt-5-nano", 0.05, 0.40, "2026-03-21"),
    Price("anthropic", "claude-sonnet-4-5", 3.00, 15.00, "2026-03-21"),
    Price("anthropic", "claude-haiku-4-5", 1.00, 5.00, "2026-03-21"),
    Price("anthropic", "claude-opus-4-1", 15.00, 75.00, "2026-03-21"),
    Price("gemini", "gemini-2.5-pro", 1.25, 10.00, "2025-06-17"),
    Price("gemini", "gemini-2.5-flash", 0.30, 2.50, "2025-06-17"),
)

#: the share of the list price a provider's batch API charges (OpenAI's Batch API and Anthropic's
#: Message Batches: half price, both sides, as listed on the dates above)
BATCH_RATES: dict[str, float] = {"openai": 0.5, "anthropic": 0.5}


def batch_rates(models: Iterable[Mapping[str, object]]) -> dict[str, float | None]:
    """label -> the share of the list price its provider's batches charge (None: a model of no
    provider with a batch API), from a run's recorded model specs."""
    return {str(m.get("label")): BATCH_RATES.get(str(m.get("provider") or "")) for m in models}


# a dated snapshot of a listed model: gpt-4o-2024-08-06, claude-sonnet-4-5-20250929
_SNAPSHOT = re.compile(r"-\d{4}-?\d{2}-?\d{2}$")


def known_price(provider: str | None, model: str) -> Price | None:
    """The table's price of a model (exact name, or a dated snapshot of a listed name)."""
    if provider is None:
        return None
    base = _SNAPSHOT.sub("", model)
    return next((p for p in PRICES if p.provider == provider and p.model in (model, base)), None)
