"""How a user names a model: a spec string or a JSON file -> ModelSpec.

    embedded                       the embedded default (Qwen2.5-Coder-1.5B-Instruct, local)
    embedded:smollm2               the tiny embedded model (tests)
    openai:MODEL,base_url=URL,api_key_env=VAR,temperature=0,concurrency=16,rpm=500
    @path/to/model.json            the same fields as JSON

Several base URLs (replicas of one model) are joined with '|': requests are spread over them.
Only decoding settings and the model name enter the identity that keys the cache, so replicas
share finished calls and a changed endpoint does not invalidate them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import ConfigError
from ..seeding import stable_hash

EMBEDDED_MODELS = ("qwen", "smollm2")


class ModelSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["openai", "embedded"] = "openai"
    model: str = Field(min_length=1)
    label: str = ""
    base_urls: list[str] = Field(default_factory=list)
    api_key_env: str | None = None
    temperature: float = 0.0
    top_p: float | None = None
    max_tokens: int = 16
    seed: int | None = 0
    concurrency: int = Field(16, ge=1, le=4096)
    rpm: float | None = Field(None, gt=0)
    timeout: float = Field(60.0, gt=0)
    max_retries: int = Field(6, ge=0)
    price_input: float | None = Field(None, description="price per 1M prompt tokens")
    price_output: float | None = Field(None, description="price per 1M completion tokens")
    extra_body: dict[str, Any] = Field(default_factory=dict)
    reasoning_effort: str | None = Field(None, description="passed to providers that take it (OpenAI o-series, gpt-5, ...)")

    def model_post_init(self, _ctx: Any) -> None:
        if not self.label:
            self.label = self.model if self.kind == "openai" else f"embedded-{self.model}"

    def identity(self) -> dict[str, Any]:
        """What makes two calls the same call (with the messages): model and decoding."""
        return {
            "kind": self.kind,
            "model": self.model,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "seed": self.seed,
            "extra_body": self.extra_body,
            **({"reasoning_effort": self.reasoning_effort} if self.reasoning_effort else {}),
        }

    @property
    def identity_hash(self) -> str:
        return stable_hash(self.identity())[:16]

    def decoding(self, *, max_tokens: int | None = None, logprobs: int | None = None, response_format: dict | None = None) -> dict[str, Any]:
        """The decoding parameters of one call (part of its request key)."""
        p: dict[str, Any] = {"temperature": self.temperature, "max_tokens": max_tokens or self.max_tokens}
        if self.top_p is not None:
            p["top_p"] = self.top_p
        if self.seed is not None:
            p["seed"] = self.seed
        if logprobs:
            p["logprobs"] = True
            p["top_logprobs"] = logprobs
        if response_format is not None:
            p["response_format"] = response_format
        if self.reasoning_effort:
            p["reasoning_effort"] = self.reasoning_effort
        return p

    def api_key(self) -> str:
        """The API key from the named environment variable; a missing variable is an error."""
        if self.api_key_env is None:
            return "not-needed"
        value = os.environ.get(self.api_key_env)
        if not value:
            raise ConfigError(f"{self.label}.api_key_env", f"environment variable {self.api_key_env} is not set")
        return value

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        if self.price_input is None and self.price_output is None:
            return None
        return (prompt_tokens * (self.price_input or 0.0) + completion_tokens * (self.price_output or 0.0)) / 1e6

    def public(self) -> dict[str, Any]:
        """What a report may show: everything but secrets (only the variable's name is kept)."""
        return self.model_dump(mode="json")


_NUMERIC = {"temperature", "top_p", "timeout", "rpm", "price_input", "price_output"}
_INT = {"max_tokens", "seed", "concurrency", "max_retries"}


def _coerce(key: str, value: str) -> Any:
    if value.lower() in {"none", "null", ""}:
        return None
    if key in _INT:
        return int(value)
    if key in _NUMERIC:
        return float(value)
    return value


def parse_model_spec(text: str) -> ModelSpec:
    """Parse a spec string or @file; errors name the setting."""
    text = text.strip()
    try:
        if text.startswith("@") or text.endswith(".json"):
            path = Path(text.lstrip("@"))
            if not path.exists():
                raise ConfigError("--model", f"model file {path} not found")
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as e:
                raise ConfigError(f"--model {path}", f"line {e.lineno}: not valid JSON ({e.msg})") from None
            if isinstance(data.get("base_urls"), str):
                data["base_urls"] = data["base_urls"].split("|")
            return ModelSpec.model_validate(data)
        head, *opts = [p.strip() for p in text.split(",")]
        kind, _, name = head.partition(":")
        data: dict[str, Any] = {}
        if kind == "embedded":
            name = name or "qwen"
            if name not in EMBEDDED_MODELS:
                raise ConfigError("--model", f"unknown embedded model '{name}' (known: {', '.join(EMBEDDED_MODELS)})")
            # a CPU-served local model can take minutes per call under load: a long timeout
            data.update(kind="embedded", model=name, concurrency=2, max_tokens=16, timeout=900.0)
        elif kind == "openai" and name:
            data.update(kind="openai", model=name)
        else:
            raise ConfigError("--model", f"cannot read model spec '{text}' (expected 'embedded[:NAME]', 'openai:MODEL,base_url=...' or '@file.json')")
        for opt in opts:
            if not opt:
                continue
            key, eq, value = opt.partition("=")
            key = key.strip().replace("-", "_")
            if not eq:
                raise ConfigError(f"--model {head}", f"option '{opt}' is not KEY=VALUE")
            if key in {"base_url", "base_urls"}:
                data["base_urls"] = [u for u in value.split("|") if u]
            elif key in ModelSpec.model_fields:
                try:
                    data[key] = _coerce(key, value)
                except ValueError:
                    raise ConfigError(f"--model {head}.{key}", f"'{value}' is not a number") from None
            else:
                raise ConfigError(f"--model {head}.{key}", "unknown setting")
        spec = ModelSpec.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"--model {text.split(',')[0]}.{loc}", first["msg"]) from None
    if spec.kind == "openai" and not spec.base_urls:
        raise ConfigError(f"--model {spec.label}.base_url", "an OpenAI-compatible model needs base_url=URL")
    return spec
