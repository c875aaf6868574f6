"""The records that flow through the toolkit: Item, Probe and the suite manifest; JSONL reading and
writing with line-numbered errors; suite directories (suite.json + items.jsonl + probes.jsonl)
written atomically with checksums.

A suite is static: every seeded choice (Type 1 target, provenance, order of a bundle) is already
made and stored in its probes. The clean condition of an item is not a probe: it is planned once
per item and model and shared by all of that item's probes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import InputError
from .taxonomy import content_type_key, provenance_key

LETTERS = "ABCDEFGHIJ"

Condition = Literal["clean", "type1", "type2"]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Item(Record):
    """One source question. Options are keyed by letter in display order; `answer` is a letter."""

    id: str = Field(min_length=1)
    source: str = Field(min_length=1, description="source dataset, e.g. medqa, medmcqa, mmlu")
    question: str = Field(min_length=1)
    options: dict[str, str]
    answer: str
    subject: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("options")
    @classmethod
    def _options(cls, v: dict[str, str]) -> dict[str, str]:
        if len(v) < 2:
            raise ValueError("an item needs at least two options")
        expected = LETTERS[: len(v)]
        if "".join(v) != expected:
            raise ValueError(f"option letters must be {', '.join(expected)} in order, got {', '.join(v)}")
        for k, text in v.items():
            if not str(text).strip():
                raise ValueError(f"option {k} is empty")
        return v

    @model_validator(mode="after")
    def _answer_is_option(self) -> Item:
        if self.answer not in self.options:
            raise ValueError(f"answer '{self.answer}' is not one of the option letters {', '.join(self.options)}")
        return self

    @property
    def wrong_options(self) -> list[str]:
        return [k for k in self.options if k != self.answer]


class ContextSentence(Record):
    """One option-aligned sentence of a bundle: true for the gold option, misleading otherwise."""

    option: str
    text: str = Field(min_length=1)


class Probe(Record):
    """One stressed view of an item. For the misleading family: Type 1 carries one wrong option's
    sentence (`target` is that option), Type 2 carries the whole bundle in a seeded order."""

    id: str = Field(min_length=1)
    item_id: str = Field(min_length=1)
    family: Literal["misleading"] = "misleading"
    condition: Literal["type1", "type2"]
    bundle_id: str = Field(min_length=1, description="the generation this probe's sentences come from")
    content_type: str
    provenance: str
    target: str | None = None
    sampled: bool = Field(False, description="Type 1 only: the item's one seeded target (--type1 sample)")
    context: tuple[ContextSentence, ...]
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("content_type")
    @classmethod
    def _ct(cls, v: str) -> str:
        return content_type_key(v)

    @field_validator("provenance")
    @classmethod
    def _pv(cls, v: str) -> str:
        return provenance_key(v)

    @model_validator(mode="after")
    def _shape(self) -> Probe:
        if not self.context:
            raise ValueError("a probe needs at least one context sentence")
        if self.condition == "type1":
            if self.target is None:
                raise ValueError("a type1 probe needs a target option")
            if len(self.context) != 1 or self.context[0].option != self.target:
                raise ValueError("a type1 probe carries exactly the target option's sentence")
        else:
            if self.target is not None or self.sampled:
                raise ValueError("a type2 probe has no target")
        return self

    def check_against(self, item: Item) -> None:
        """Raise ValueError naming the field when this probe does not fit its item."""
        for s in self.context:
            if s.option not in item.options:
                raise ValueError(f"context option '{s.option}' is not an option of item {item.id}")
        if self.target is not None:
            if self.target not in item.options:
                raise ValueError(f"target '{self.target}' is not an option of item {item.id}")
            if self.target == item.answer:
                raise ValueError(f"target '{self.target}' is the gold answer of item {item.id}")
        if self.condition == "type2" and {s.option for s in self.context} != set(item.options):
            raise ValueError(f"a type2 bundle must have one sentence per option of item {item.id}")


class SuiteManifest(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    version: str = "1"
    family: str = "misleading"
    seed: int = 0
    created: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    generator: dict[str, Any] | None = None
    prompt_hashes: dict[str, str] = Field(default_factory=dict)
    counts: dict[str, Any] = Field(default_factory=dict)
    checksums: dict[str, str] = Field(default_factory=dict)
    description: str = ""


# --------------------------------------------------------------------------- JSONL

T = TypeVar("T", bound=BaseModel)


def _field_of(err: ValidationError) -> tuple[str | None, str]:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ()) if p != "__root__") or None
    msg = first.get("msg", str(err))
    return loc, msg.removeprefix("Value error, ")


def iter_json_lines(path: Path | str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; bad JSON raises InputError."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, None, None, "file not found")
    with path.open(encoding="utf-8-sig") as fh:
        n = 0
        while True:
            try:
                line = fh.readline()
            except UnicodeDecodeError as e:
                raise InputError(path, n + 1, None, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
            if not line:
                return
            n += 1
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(path, n, None, f"not valid JSON ({e.msg} at column {e.colno})") from None
            if not isinstance(obj, dict):
                raise InputError(path, n, None, "expected a JSON object")
            yield n, obj


def parse_record(model: type[T], obj: dict[str, Any], path: Path | str, line: int | None) -> T:
    try:
        return model.model_validate(obj)
    except ValidationError as e:
        field, msg = _field_of(e)
        raise InputError(path, line, field, msg) from None


def read_jsonl(path: Path | str, model: type[T]) -> Iterator[T]:
    for n, obj in iter_json_lines(path):
        yield parse_record(model, obj, path, n)


def dump_line(record: BaseModel | dict[str, Any]) -> str:
    data = record.model_dump(mode="json") if isinstance(record, BaseModel) else record
    return json.dumps(data, ensure_ascii=False, sort_keys=False) + "\n"


class atomic_write:
    """Write a file through a temporary sibling, renamed into place only on success."""

    def __init__(self, path: Path | str, mode: str = "w"):
        self.path = Path(path)
        self.mode = mode

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, self._tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        self._fh = os.fdopen(fd, self.mode, **({} if "b" in self.mode else {"encoding": "utf-8"}))
        return self._fh

    def __exit__(self, exc_type, exc, tb):
        self._fh.close()
        if exc_type is None:
            os.replace(self._tmp, self.path)
        else:
            os.unlink(self._tmp)
        return False


def write_jsonl(path: Path | str, records: Iterable[BaseModel | dict[str, Any]]) -> int:
    n = 0
    with atomic_write(path) as fh:
        for r in records:
            fh.write(dump_line(r))
            n += 1
    return n


def sha256_file(path: Path | str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# --------------------------------------------------------------------------- suites


class Suite:
    """A loaded suite: manifest, items by id (in file order) and probes (in file order)."""

    def __init__(self, manifest: SuiteManifest, items: list[Item], probes: list[Probe], path: Path | None = None):
        self.manifest = manifest
        self.items = {it.id: it for it in items}
        self.probes = probes
        self.path = path

    def __len__(self) -> int:
        return len(self.items)

    @classmethod
    def load(cls, directory: Path | str, verify: bool = True) -> Suite:
        d = Path(directory)
        mpath = d / "suite.json"
        if not mpath.exists():
            raise InputError(mpath, None, None, "not a suite directory (suite.json missing)")
        try:
            raw = json.loads(mpath.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise InputError(mpath, e.lineno, None, f"not valid JSON ({e.msg})") from None
        manifest = parse_record(SuiteManifest, raw, mpath, None)
        if verify:
            for fname, digest in manifest.checksums.items():
                f = d / fname
                if f.exists() and sha256_file(f) != digest:
                    raise InputError(f, None, None, "checksum does not match suite.json (file changed after the suite was written)")
        items: list[Item] = []
        seen: set[str] = set()
        ipath = d / "items.jsonl"
        for n, obj in iter_json_lines(ipath):
            it = parse_record(Item, obj, ipath, n)
            if it.id in seen:
                raise InputError(ipath, n, "id", f"duplicate item id '{it.id}'")
            seen.add(it.id)
            items.append(it)
        by_id = {it.id: it for it in items}
        probes: list[Probe] = []
        ppath = d / "probes.jsonl"
        pseen: set[str] = set()
        if ppath.exists():
            for n, obj in iter_json_lines(ppath):
                p = parse_record(Probe, obj, ppath, n)
                if p.id in pseen:
                    raise InputError(ppath, n, "id", f"duplicate probe id '{p.id}'")
                pseen.add(p.id)
                item = by_id.get(p.item_id)
                if item is None:
                    raise InputError(ppath, n, "item_id", f"no item '{p.item_id}' in {ipath.name}")
                try:
                    p.check_against(item)
                except ValueError as e:
                    field = "target" if "target" in str(e) else "context"
                    raise InputError(ppath, n, field, str(e)) from None
                probes.append(p)
        return cls(manifest, items, probes, d)

    def save(self, directory: Path | str) -> Path:
        """Write the suite atomically: files go to a temporary directory renamed into place."""
        d = Path(directory)
        d.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{d.name}.", dir=d.parent))
        try:
            write_jsonl(tmp / "items.jsonl", self.items.values())
            write_jsonl(tmp / "probes.jsonl", self.probes)
            counts = dict(self.manifest.counts)
            counts.update(items=len(self.items), probes=len(self.probes))
            for cond in ("type1", "type2"):
                counts[cond] = sum(1 for p in self.probes if p.condition == cond)
            checksums = {f: sha256_file(tmp / f) for f in ("items.jsonl", "probes.jsonl")}
            manifest = self.manifest.model_copy(update={"counts": counts, "checksums": checksums})
            with atomic_write(tmp / "suite.json") as fh:
                fh.write(manifest.model_dump_json(indent=2) + "\n")
            if d.exists():
                old = d.with_name(f".{d.name}.old")
                shutil.rmtree(old, ignore_errors=True)
                os.replace(d, old)
                os.replace(tmp, d)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(tmp, d)
            self.manifest = manifest
            self.path = d
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return d

    def probes_for(self, item_id: str) -> list[Probe]:
        return [p for p in self.probes if p.item_id == item_id]
