"""Defaults from a file, so long command lines are optional: `medres.toml` in the working
directory, else a `[tool.medres]` table in its pyproject.toml.

    models = ["openai/gpt-4o-mini", "anthropic/claude-haiku-4-5"]   # --model when none is given
    judge = "openai/gpt-4.1"        # -O judge= for families that take a judge
    concurrency = 8                 # for every OpenAI-compatible model whose spec sets none
    out = "runs/latest"             # --out when none is given

    [prices."openai/gpt-4o-mini"]   # USD per 1M tokens; keyed by PROVIDER/MODEL, model or label
    input = 0.15
    output = 0.60
    date = "2026-11-01"             # optional: when the price was listed

Precedence, highest first: a command-line flag (or a setting in the model spec), the file, the
provider table (models.providers), the built-in default. A key the file should not have is an
error naming the file and the key. No secret belongs here: name key variables (api_key_env) in
model specs, never keys."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..models.spec import SpecDefaults
from ..runtime.errors import ConfigError, InputError, validation_problem

if TYPE_CHECKING:  # pragma: no cover
    from ..family import Family

CONFIG_FILE = "medres.toml"
PYPROJECT = "pyproject.toml"


class PriceEntry(BaseModel):
    """A price per 1M tokens (USD), and optionally the day it was listed."""

    model_config = ConfigDict(extra="forbid")

    input: float | None = Field(None, ge=0)
    output: float | None = Field(None, ge=0)
    date: str | None = None


class MedresConfig(BaseModel):
    """What the file may hold."""

    model_config = ConfigDict(extra="forbid")

    models: list[str] = Field(default_factory=list, description="model specs used when no --model is given")
    judge: str | None = Field(None, description="judge model spec, for families that take one (-O judge=)")
    concurrency: int | None = Field(None, ge=1, le=4096, description="concurrent requests per OpenAI-compatible model")
    out: Path | None = Field(None, description="run directory used when no --out is given")
    prices: dict[str, PriceEntry] = Field(default_factory=dict, description="prices by PROVIDER/MODEL, model or label")

    @field_validator("models", mode="before")
    @classmethod
    def _one_model(cls, v: object) -> object:
        return [v] if isinstance(v, str) else v


#: how a command line overrides each key
OVERRIDDEN_BY = {
    "models": "--model",
    "judge": "-O judge=SPEC",
    "concurrency": "concurrency= in a model spec",
    "out": "--out",
    "prices": "price_input= / price_output= in a model spec",
}


@dataclass(frozen=True)
class Config:
    """The settings in effect and where they came from (`where`: the file, or None)."""

    values: MedresConfig
    path: Path | None = None
    where: str | None = None

    def source(self, key: str) -> str:
        return self.where if self.where and key in self.values.model_fields_set else "default"

    def models(self, given: Iterable[str] | None, fallback: list[str] | None = None) -> list[str]:
        """The model specs to run: the flags', else the file's, else the fallback."""
        given = list(given or [])
        if given:
            return given
        if self.values.models:
            return list(self.values.models)
        if fallback:
            return list(fallback)
        raise ConfigError("--model", f"no model given: pass --model PROVIDER/MODEL (e.g. openai/gpt-4o-mini) or set models in {CONFIG_FILE}")

    def out(self, given: Path | None, fallback: Path) -> Path:
        return given if given is not None else (self.values.out if self.values.out is not None else fallback)

    def spec_defaults(self) -> SpecDefaults:
        """What model specs take from the file where they set nothing themselves."""
        v = self.values
        settings = {} if v.concurrency is None else {"concurrency": v.concurrency}
        prices = {k: (p.input, p.output, p.date) for k, p in v.prices.items()}
        return SpecDefaults(settings, prices, self.where or "config")

    def family_options(self, given: Mapping[str, str], family: Family | str) -> dict[str, str]:
        """`-O` options plus the file's judge, when the suite's family (as the run resolved it, or
        looked up by name) takes one and no -O judge= is given."""
        out = dict(given)
        if self.values.judge and "judge" not in out:
            from ..family import get

            if "judge" in (get(family) if isinstance(family, str) else family).evaluation.options.model_fields:
                out["judge"] = self.values.judge
        return out


def _line(err: tomllib.TOMLDecodeError) -> int | None:
    m = re.search(r"at line (\d+)", str(err))
    return int(m.group(1)) if m else None


def load_config(directory: Path | str | None = None) -> Config:
    """The config of a directory (default: the working directory): medres.toml, else
    [tool.medres] in pyproject.toml, else the built-in defaults. Errors name the file and key."""
    d = Path.cwd() if directory is None else Path(directory)
    path, prefix = d / CONFIG_FILE, ""
    if path.is_file():
        data = _read(path)
        where = CONFIG_FILE
    else:
        path = d / PYPROJECT
        if not path.is_file():
            return Config(MedresConfig())
        tool = _read(path).get("tool", {})
        if not isinstance(tool, dict):
            raise InputError(path, None, "tool", "must be a table")
        table = tool.get("medres")
        if table is None:
            return Config(MedresConfig())
        if not isinstance(table, dict):
            raise InputError(path, None, "tool.medres", "must be a table")
        data, prefix, where = table, "tool.medres.", f"{PYPROJECT} [tool.medres]"
    try:
        values = MedresConfig.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        key = prefix + ".".join(str(p) for p in first["loc"])
        if first["type"] == "extra_forbidden":
            allowed = ", ".join(MedresConfig.model_fields) if len(first["loc"]) == 1 else ", ".join(PriceEntry.model_fields)
            raise InputError(path, None, key, f"unknown key (known: {allowed})") from None
        raise InputError(path, None, key, validation_problem(e)[1]) from None
    return Config(values, path, where)


def _read(path: Path) -> dict[str, object]:
    """A TOML file as UTF-8 (a byte-order mark dropped); errors name the file and line."""
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        start = e.start + (3 if raw.startswith(b"\xef\xbb\xbf") else 0)
        line = raw[:start].count(b"\n") + 1
        col = start - (raw.rfind(b"\n", 0, start) + 1) + 1
        raise InputError(path, line, None, f"not UTF-8 text ({e.reason} at byte {col} of the line)") from None
    except OSError as e:
        raise InputError(path, None, None, f"cannot be read ({e.strerror})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(path, _line(e), None, f"not valid TOML ({str(e).split(' (at line')[0]})") from None
