"""How a user names a model: a spec string or a JSON file -> ModelSpec.

    openai/gpt-4o-mini             PROVIDER/MODEL: the provider's OpenAI-compatible endpoint and its
                                   usual key variable (OPENAI_API_KEY); `medres models` lists them
    vllm/Qwen/Qwen2.5-7B-Instruct  a local server on its usual port (no key)
    embedded                       the embedded default (Qwen2.5-Coder-1.5B-Instruct, local)
    embedded:smollm2               the tiny embedded model (tests)
    openai:MODEL,base_url=URL,api_key_env=VAR,temperature=0,concurrency=16,rpm=500
    @path/to/model.json            the same fields as JSON

Any setting can follow after a comma (`openai/gpt-4o-mini,temperature=0.3,concurrency=8`).
`<PROVIDER>_BASE_URL` overrides a provider's URL. Several base URLs (replicas of one model) are
joined with '|': requests are spread over them. Only decoding settings and the model name enter
the identity that keys the cache, so replicas share finished calls and a changed endpoint (or
provider) does not invalidate them. The provider's quirks (models.providers) shape the decoding
parameters of each call, which are part of its request key and stored with it."""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..runtime.errors import ConfigError, did_you_mean, validation_problem
from ..runtime.jsontypes import JSONObject
from ..runtime.seeding import stable_hash
from .providers import FEATURES, PROVIDERS, REASONING_RULE, ModelRule, Provider, get_provider, known_price, provider_for_url

EMBEDDED_MODELS = ("qwen", "smollm2")
_PRICES = ("price_input", "price_output")


class ModelSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["openai", "embedded"] = "openai"
    model: str = Field(min_length=1)
    label: str = ""
    provider: str | None = Field(None, description="a provider of models.providers: its endpoint, key variable and quirks")
    base_urls: list[str] = Field(default_factory=list)
    api_key_env: str | None = None
    temperature: float = Field(0.0, ge=0.0, le=2.0, allow_inf_nan=False)
    top_p: float | None = Field(None, gt=0.0, le=1.0, allow_inf_nan=False)
    max_tokens: int = Field(512, ge=1)  # the reply budget: room for a chat model that explains before it answers (docs/concepts/reading.md); embedded: 16
    seed: int | None = 0
    concurrency: int = Field(16, ge=1, le=4096)
    rpm: float | None = Field(None, gt=0, allow_inf_nan=False)
    timeout: float = Field(60.0, gt=0, allow_inf_nan=False)
    max_retries: int = Field(6, ge=0)
    price_input: float | None = Field(None, ge=0.0, allow_inf_nan=False, description="price per 1M prompt tokens")
    price_output: float | None = Field(None, ge=0.0, allow_inf_nan=False, description="price per 1M completion tokens")
    price_source: str | None = Field(None, description="where the prices came from: spec, a config file, or table (models.providers.PRICES)")
    price_date: str | None = Field(None, description="the day the table's or config file's price was listed")
    extra_body: JSONObject = Field(default_factory=dict)
    reasoning_effort: str | None = Field(None, description="passed to providers that take it (OpenAI o-series, gpt-5, ...)")
    reasoning: bool | None = Field(None, description="None: from the provider table by model name; true: send as to OpenAI's reasoning models")

    @field_validator("model", "label")
    @classmethod
    def _printable(cls, value: str) -> str:
        """A label (and the model name a label defaults to) names the model in every table, file
        and log line: no control character (a line break, tab, escape, ...) or line separator."""
        bad = next((c for c in value if unicodedata.category(c) in ("Cc", "Zl", "Zp")), None)
        if bad is not None:
            raise ValueError(f"holds the control character U+{ord(bad):04X} ({bad!r}): use printable characters only")
        return value

    def model_post_init(self, _ctx: object) -> None:
        if not self.label:
            self.label = self.model if self.kind == "openai" else f"embedded-{self.model}"

    @model_validator(mode="after")
    def _resolve_provider(self) -> ModelSpec:
        """Fill what the provider table knows and the spec does not say: URL, key variable, the
        output budget of reasoning models, the price."""
        given = self.model_fields_set
        if self.provider is not None:
            prov = get_provider(self.provider)
            if prov is None:
                raise ValueError(PROVIDERS.unknown(self.provider))
            if self.kind != "openai":
                raise ValueError("a provider is for OpenAI-compatible models, not embedded ones")
            self.provider = prov.name
            if not self.base_urls:
                self.base_urls = [prov.url()]
            if "api_key_env" not in given:
                self.api_key_env = prov.key_env()
        rule = self.rule()
        if rule is not None and rule.min_tokens and "max_tokens" not in given:
            self.max_tokens = rule.min_tokens
        if given & set(_PRICES):
            if self.price_source is None and (self.price_input is not None or self.price_output is not None):
                self.price_source = "spec"
        elif (price := known_price(self.provider, self.model)) is not None:
            self.price_input, self.price_output = price.input, price.output
            self.price_source, self.price_date = "table", price.date
        return self

    # ---- quirks
    def provider_info(self) -> Provider | None:
        return get_provider(self.provider) if self.provider else None

    def rule(self) -> ModelRule | None:
        """The provider table's rule for this model (None: no model-specific quirks)."""
        if self.reasoning is False:
            return None
        prov = self.provider_info()
        found = prov.rule(self.model) if prov is not None else None
        return found or (REASONING_RULE if self.reasoning else None)

    def supports(self, feature: str) -> bool:
        """Whether the provider and model take a request feature (models.providers.FEATURES)."""
        if feature not in FEATURES:
            raise ValueError(f"unknown feature '{feature}' (known: {', '.join(FEATURES)})")
        prov, rule = self.provider_info(), self.rule()
        return not ((prov is not None and feature in prov.unsupported) or (rule is not None and feature in rule.unsupported))

    def why_not(self, feature: str) -> str:
        """Why a feature is not supported, in words."""
        rule = self.rule()
        if rule is not None and feature in rule.unsupported:
            return f"model {self.model} ({rule.models}) takes no {feature}"
        return f"provider {self.provider} takes no {feature}"

    def identity(self) -> JSONObject:
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

    def decoding(self, *, max_tokens: int | None = None, logprobs: int | None = None, response_format: dict | None = None) -> JSONObject:
        """The decoding parameters of one call (part of its request key), as the provider takes
        them: what it lacks is not sent; a reasoning model's budget is at least the spec's (its
        hidden reasoning counts against it) and goes by the rule's name (max_completion_tokens)."""
        rule = self.rule()
        budget = max_tokens or self.max_tokens
        if rule is not None and rule.min_tokens:
            budget = max(budget, self.max_tokens)
        p: JSONObject = {}
        if self.supports("temperature"):
            p["temperature"] = self.temperature
        p[rule.token_param if rule is not None else "max_tokens"] = budget
        if self.top_p is not None and self.supports("top_p"):
            p["top_p"] = self.top_p
        if self.seed is not None and self.supports("seed"):
            prov = self.provider_info()
            p[prov.seed_param if prov is not None else "seed"] = self.seed
        if logprobs:
            if not self.supports("logprobs"):
                raise ConfigError(f"--model {self.label}", f"{self.why_not('logprobs')}: log-probabilities cannot be read (use --scoring letter)")
            p["logprobs"] = True
            p["top_logprobs"] = logprobs
        if response_format is not None and self.supports("response_format"):
            p["response_format"] = response_format
        if self.reasoning_effort and self.supports("reasoning_effort"):
            p["reasoning_effort"] = self.reasoning_effort
        return p

    def api_key(self) -> str:
        """The API key from the named environment variable; a missing variable is an error."""
        if self.api_key_env is None:
            return "not-needed"
        value = os.environ.get(self.api_key_env)
        if not value:
            prov = self.provider_info()
            others = [k for k in (prov.key_envs if prov is not None else ()) if k != self.api_key_env]
            also = f" (nor {', '.join(others)})" if others else ""
            raise ConfigError(f"{self.label}.api_key_env", f"environment variable {self.api_key_env} is not set{also}{self._key_hint()}")
        return value

    def _key_hint(self) -> str:
        """What to do about a missing key: set the variable, or name another one; and, for a
        provider's spec, how to name a server of one's own that takes no key."""
        hint = f": export {self.api_key_env}=..., or name the variable that holds the key with api_key_env=VAR"
        if self.provider is not None:
            hint += f"; a server of your own that takes no key: openai:{self.model},base_url=URL (e.g. http://127.0.0.1:8000/v1)"
        return hint

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        if self.price_input is None and self.price_output is None:
            return None
        return (prompt_tokens * (self.price_input or 0.0) + completion_tokens * (self.price_output or 0.0)) / 1e6

    def public(self) -> JSONObject:
        """What may be stored or shown: everything but secrets (only the key variable's name is
        kept; endpoints without credentials or query strings)."""
        from .urls import redact_url

        data = self.model_dump(mode="json")
        data["base_urls"] = [redact_url(u) for u in self.base_urls]
        return data


@dataclass(frozen=True)
class SpecDefaults:
    """What a config file (medres.toml) supplies below a spec's own settings: `settings` (ModelSpec
    fields) for every OpenAI-compatible model, `prices` by model ('PROVIDER/MODEL', the model name
    or its label) as (input, output, date); `source` names the file in the run's price_source."""

    settings: Mapping[str, object] = field(default_factory=dict)
    prices: Mapping[str, tuple[float | None, float | None, str | None]] = field(default_factory=dict)
    source: str = "config"


_NUMERIC = {"temperature", "top_p", "timeout", "rpm", "price_input", "price_output"}
_INT = {"max_tokens", "seed", "concurrency", "max_retries"}
_BOOL = {"reasoning"}
_HEAD = re.compile(r"([A-Za-z0-9_.-]+)([:/])(.*)$", re.S)


def _coerce(key: str, value: str) -> str | int | float | bool | None:
    if value.lower() in {"none", "null", ""}:
        return None
    if key in _INT:
        return int(value)
    if key in _NUMERIC:
        return float(value)
    if key in _BOOL:
        if value.lower() not in {"true", "false", "1", "0", "yes", "no"}:
            raise ValueError(value)
        return value.lower() in {"true", "1", "yes"}
    return value


#: the settings a spec string may give (KEY=VALUE after the head)
SPEC_SETTINGS = tuple(k for k in ModelSpec.model_fields if k not in {"kind", "model", "price_source", "price_date", "base_urls"})


def _read_head(head: str, text: str, flag: str = "--model") -> tuple[dict[str, object], bool]:
    """The model named by a spec's head: its fields, and whether it is the `openai:` form."""
    m = _HEAD.match(head)
    prefix, sep, name = (m.group(1), m.group(2), m.group(3).strip()) if m else (head, "", "")
    if prefix == "embedded":
        name = name or "qwen"
        if name not in EMBEDDED_MODELS:
            raise ConfigError(flag, f"unknown embedded model '{name}'{did_you_mean(name, EMBEDDED_MODELS)} (known: {', '.join(EMBEDDED_MODELS)})")
        # a CPU-served local model can take minutes per call under load: a long timeout
        return {"kind": "embedded", "model": name, "concurrency": 2, "max_tokens": 16, "timeout": 900.0}, False
    if name and prefix == "openai" and sep == ":":
        return {"kind": "openai", "model": name}, True
    if name and get_provider(prefix) is not None:
        return {"kind": "openai", "provider": prefix.lower(), "model": name}, False
    known = ", ".join(PROVIDERS.names())
    hint = did_you_mean(prefix, ["embedded", *PROVIDERS.names()])
    raise ConfigError(
        flag,
        f"cannot read model spec '{text}'{hint} (expected PROVIDER/MODEL with a provider of {known}; 'openai:MODEL,base_url=URL'; 'embedded[:NAME]' or '@file.json')",
    )


def _config_price(data: Mapping[str, object], defaults: SpecDefaults) -> tuple[float | None, float | None, str | None] | None:
    names = [data.get("label"), data["model"]]
    if data.get("provider"):
        names.insert(0, f"{data['provider']}/{data['model']}")
    return next((defaults.prices[n] for n in names if isinstance(n, str) and n and n in defaults.prices), None)


def _build(data: Mapping[str, object], given: Mapping[str, object], defaults: SpecDefaults | None) -> ModelSpec:
    """The spec from its head's fields, the config file's defaults and the spec's own settings (in
    that order of precedence, lowest first); the provider table fills the rest."""
    merged = dict(data)
    if defaults is not None and merged.get("kind", "openai") == "openai":
        merged.update({k: v for k, v in defaults.settings.items() if k not in given})
    merged.update(given)
    if defaults is not None and not set(_PRICES) & set(given) and merged.get("kind", "openai") == "openai":
        price = _config_price(merged, defaults)
        if price is not None:
            merged.update(price_input=price[0], price_output=price[1], price_source=defaults.source, price_date=price[2])
    return ModelSpec.model_validate(merged)


def _no_repeats(pairs: list[tuple[str, object]]) -> dict[str, object]:
    keys = [k for k, _ in pairs]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise ValueError(f"'{twice[0]}' is given twice")
    return dict(pairs)


def _spec_file(path: Path, flag: str) -> dict[str, object]:
    """The settings of a model file (`@file`, JSON; a setting given twice is an error)."""
    if not path.exists():
        raise ConfigError(flag, f"model file {path} not found")
    try:
        data = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_no_repeats)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{flag} {path}", f"line {e.lineno}: not valid JSON ({e.msg})") from None
    except ValueError as e:
        raise ConfigError(f"{flag} {path}", str(e)) from None
    if isinstance(data.get("base_urls"), str):
        data["base_urls"] = data["base_urls"].split("|")
    return data


def _settings(opts: list[str], head: str, flag: str) -> dict[str, object]:
    """The KEY=VALUE settings after a spec's head, each read as its field's type (base_url: one or
    several URLs separated by |); an unknown setting, or one given twice, is an error."""
    given: dict[str, object] = {}
    for opt in opts:
        if not opt:
            continue
        key, eq, value = opt.partition("=")
        key = key.strip().replace("-", "_")
        if not eq:
            raise ConfigError(f"{flag} {head}", f"option '{opt}' is not KEY=VALUE")
        field_name = "base_urls" if key in {"base_url", "base_urls"} else key
        if field_name in given:
            raise ConfigError(f"{flag} {head}.{key}", "given twice (give each setting once)")
        if key in {"base_url", "base_urls"}:
            given["base_urls"] = [u for u in value.split("|") if u]
        elif key in ModelSpec.model_fields and key not in {"kind", "model", "price_source", "price_date"}:
            try:
                given[key] = _coerce(key, value)
            except ValueError:
                what = "true or false" if key in _BOOL else "a number"
                raise ConfigError(f"{flag} {head}.{key}", f"'{value}' is not {what}") from None
        else:
            raise ConfigError(f"{flag} {head}.{key}", "unknown setting" + did_you_mean(key, [*SPEC_SETTINGS, "base_url"]))
    return given


def parse_model_spec(text: str, defaults: SpecDefaults | None = None, flag: str = "--model") -> ModelSpec:
    """Parse a spec string or @file; errors name the setting (`flag`: the option that gave the
    spec, e.g. -O judge). `defaults` (a config file's) apply to whatever the spec does not set. A
    setting given twice is an error, not the last one winning."""
    text = text.strip()
    try:
        if text.startswith("@") or text.endswith(".json"):
            spec = _build({}, _spec_file(Path(text.lstrip("@")), flag), defaults)
        else:
            head, *opts = [p.strip() for p in text.split(",")]
            data, legacy = _read_head(head, text, flag)
            given = _settings(opts, head, flag)
            if legacy and "provider" not in given:
                # openai:MODEL alone is OpenAI's; with base_url= it is any endpoint (a known API's
                # host still gets that provider's quirks)
                urls = given.get("base_urls")
                known = provider_for_url(urls[0]) if isinstance(urls, list) and urls else get_provider("openai")
                if known is not None:
                    data["provider"] = known.name
            spec = _build(data, given, defaults)
    except ValidationError as e:
        loc, msg = validation_problem(e)
        raise ConfigError(f"{flag} {text.split(',')[0]}" + (f".{loc}" if loc else ""), msg) from None
    if spec.kind == "openai" and not spec.base_urls:
        raise ConfigError(
            f"{flag} {spec.label}.base_url", "an OpenAI-compatible model needs base_url=URL (or name a provider: PROVIDER/MODEL, see medres models)"
        )
    for url in spec.base_urls:
        check_base_url(url, f"{flag} {spec.label}.base_url")
    return spec


def check_base_url(url: str, where: str) -> None:
    """An endpoint must be an http:// or https:// URL with a host (ConfigError otherwise)."""
    from urllib.parse import urlsplit

    from .urls import redact_url

    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        parts, host = None, None
    if parts is None or parts.scheme.lower() not in ("http", "https") or not host:
        raise ConfigError(where, f"'{redact_url(url)}' is not an http:// or https:// URL with a host")
