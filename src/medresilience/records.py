"""The records that flow through the toolkit: Item, Probe and the suite manifest; JSONL reading and
writing with line-numbered errors; suite directories (suite.json + items.jsonl + probes.jsonl)
written atomically with checksums, and read whole or, for a run over a large suite, checked once
and read back from disk a chunk of items at a time (`SuiteIndex`).

An Item is one source question of any family: it may carry options and a gold letter (an MCQ), a
free-text reference (a diagnosis, a correction), or neither (a patient question). A Probe is one
stressed view of an item: its family, its condition, what it renders and its facets (the strata it
is reported under). A family with fields of its own declares a Probe subclass; the suite loader
asks the family registry for it by the probe's `family`.

Every text field read from a file is at most `max_field_chars()` characters (100,000 unless the
environment variable MEDRES_MAX_FIELD_CHARS says otherwise): a longer one is an InputError naming
file, line and field, not a prompt sent to a model.

A suite is static: every seeded choice is already made and stored in its probes. The clean
condition of an item is not a probe: it is planned once per item and model and shared by all of
that item's probes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_serializer, model_validator

from .errors import ConfigError, InputError, MedresError, validation_problem

LETTERS = "ABCDEFGHIJ"
#: Numbered options (MedJourney, some HLE rows) are keyed "1".."9": first-class labels, not letters.
NUMBERS = "123456789"


def option_labels(n: int, numbered: bool = False) -> str:
    """The labels of n options: A, B, ... or 1, 2, ..."""
    labels = NUMBERS if numbered else LETTERS
    if n > len(labels):
        raise ValueError(f"at most {len(labels)} {'numbered' if numbered else 'lettered'} options are supported, got {n}")
    return labels[:n]


#: The shared unstressed condition of every item (planned once per item, model and setting).
CLEAN = "clean"


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Item(Record):
    """One source question. Options (when present) are keyed A, B, ... (or 1, 2, ... for a
    numbered source) in display order and `answer` is one of the keys; `reference` is a
    free-text answer key (a diagnosis, a correction)."""

    id: str = Field(min_length=1)
    source: str = Field(min_length=1, description="source dataset, e.g. medqa, medmcqa, mmlu")
    question: str = Field(min_length=1)
    options: dict[str, str] | None = None
    answer: str | None = None
    reference: str | None = None
    subject: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("options")
    @classmethod
    def _options(cls, v: dict[str, str] | None) -> dict[str, str] | None:
        if v is None:
            return v
        if len(v) < 2:
            raise ValueError("an item needs at least two options")
        keys = "".join(v)
        numbered = keys[:1] == "1"
        if len(v) > len(NUMBERS if numbered else LETTERS):
            raise ValueError(f"at most {len(NUMBERS if numbered else LETTERS)} options are supported, got {len(v)}")
        expected = option_labels(len(v), numbered)
        if keys != expected:
            raise ValueError(f"option {'numbers' if numbered else 'letters'} must be {', '.join(expected)} in order, got {', '.join(v)}")
        for k, text in v.items():
            if not str(text).strip():
                raise ValueError(f"option {k} is empty")
        return v

    @model_validator(mode="after")
    def _answer_is_option(self) -> Item:
        if self.options is not None:
            if self.answer is None:
                raise ValueError("an item with options needs an answer letter")
            if self.answer not in self.options:
                raise ValueError(f"answer '{self.answer}' is not one of the option {'numbers' if self.numbered else 'letters'} {', '.join(self.options)}")
        elif self.answer is not None:
            raise ValueError("an answer letter needs options (use reference for a free-text answer)")
        return self

    @model_serializer(mode="wrap")
    def _drop_absent_reference(self, handler):
        # an MCQ item's line stays as it was before free-text references existed
        data = handler(self)
        if isinstance(data, dict) and data.get("reference") is None:
            data.pop("reference", None)
        return data

    @property
    def letters(self) -> str:
        """The option labels as one string ("ABCD", or "12345" for numbered options)."""
        return "".join(self.options or {})

    @property
    def numbered(self) -> bool:
        return self.letters[:1] == "1"

    @property
    def wrong_options(self) -> list[str]:
        return [k for k in self.options or {} if k != self.answer]


class ProbeMismatch(ValueError):
    """A probe that does not fit its item; `field` names the probe field at fault."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


class Probe(Record):
    """One stressed view of an item: the fields every family shares. A family's probe adds what it
    renders and its facets, either as plain mappings (`GenericProbe`) or as typed fields (a
    subclass that overrides `facet_values`)."""

    id: str = Field(min_length=1)
    item_id: str = Field(min_length=1)
    family: str = Field(min_length=1)
    condition: str = Field(min_length=1)
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("condition")
    @classmethod
    def _not_clean(cls, v: str) -> str:
        if v == CLEAN:
            raise ValueError("'clean' is the shared unstressed condition, not a probe")
        return v

    def facet_values(self) -> dict[str, Any]:
        """The strata this probe is reported under (facet name -> value)."""
        return {}

    def check_against(self, item: Item) -> None:
        """Raise ValueError (ProbeMismatch names the field) when this probe does not fit its item."""


class GenericProbe(Probe):
    """A probe whose rendered parts and facets are plain mappings: enough for a family that needs
    no typed fields of its own."""

    parts: dict[str, Any] = Field(default_factory=dict, description="what the family renders (text, sentences)")
    facets: dict[str, str | None] = Field(default_factory=dict, description="strata this probe is reported under")

    def facet_values(self) -> dict[str, Any]:
        return dict(self.facets)


class SuiteManifest(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    version: str = "1"
    family: str
    seed: int = 0
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    generator: dict[str, Any] | None = None
    prompt_hashes: dict[str, str] = Field(default_factory=dict)
    counts: dict[str, Any] = Field(default_factory=dict)
    checksums: dict[str, str] = Field(default_factory=dict)
    description: str = ""


# --------------------------------------------------------------------------- limits from the environment

#: The default of MEDRES_MAX_FIELD_CHARS: the most characters one text field of an input may hold.
MAX_FIELD_CHARS = 100_000
#: The lowest MEDRES_MAX_FIELD_CHARS accepted: a shorter text is never checked (no lookup per field).
MIN_FIELD_CHARS = 1024


def env_number(name: str, default: float, *, integer: bool = False, minimum: float = 0.0) -> float:
    """A positive number (at least `minimum`) from the environment variable `name` (`default` when
    unset or blank); anything else is a ConfigError naming the variable."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value: float | None = int(raw) if integer else float(raw)
    except ValueError:
        value = None
    if value is None or not (value > 0 and value >= minimum) or value == float("inf"):
        least = f" of at least {minimum:g}" if minimum else ""
        raise ConfigError(name, f"'{raw}' is not a positive {'whole ' if integer else ''}number{least}")
    return value


def max_field_chars() -> int:
    """The most characters a text field read from a file may hold (MEDRES_MAX_FIELD_CHARS, at
    least MIN_FIELD_CHARS)."""
    return int(env_number("MEDRES_MAX_FIELD_CHARS", MAX_FIELD_CHARS, integer=True, minimum=MIN_FIELD_CHARS))


def oversized(obj: Any, limit: int, prefix: str = "") -> tuple[str, int] | None:
    """(dotted field, length) of the first string longer than `limit` in a parsed JSON value."""
    if isinstance(obj, dict):
        items: Iterable[tuple[Any, Any]] = obj.items()
    elif isinstance(obj, list):
        items = enumerate(obj)
    else:
        return None
    for k, v in items:
        if isinstance(v, str):
            if len(v) > limit:
                return f"{prefix}{k}", len(v)
        elif isinstance(v, (dict, list)):
            found = oversized(v, limit, f"{prefix}{k}.")
            if found:
                return found
    return None


def too_long(path: Path | str, line: int | None, field: str | None, length: int, limit: int) -> InputError:
    return InputError(path, line, field, f"is {length:,} characters long, over the limit of {limit:,} (set MEDRES_MAX_FIELD_CHARS to allow more)")


def check_field_sizes(obj: Any, path: Path | str, line: int | None, limit: int | None = None) -> None:
    """InputError naming the first text field of `obj` longer than the limit (default:
    `max_field_chars()`, looked up only when some text is longer than MIN_FIELD_CHARS)."""
    if limit is None:
        if oversized(obj, MIN_FIELD_CHARS) is None:
            return
        limit = max_field_chars()
    found = oversized(obj, limit)
    if found:
        raise too_long(path, line, found[0], found[1], limit)


# --------------------------------------------------------------------------- JSONL

T = TypeVar("T", bound=BaseModel)


def _field_of(err: ValidationError) -> tuple[str | None, str]:
    return validation_problem(err)


def text_lines(path: Path | str, hint: str = "") -> Iterator[tuple[int, str]]:
    """Yield (line number, text) for each line of a UTF-8 file, a leading byte-order mark dropped;
    decoded line by line, so a byte that is not UTF-8 raises an InputError naming its own line
    (the message ending with `hint`)."""
    for n, _, line in text_lines_at(path, hint):
        yield n, line


def text_lines_at(path: Path | str, hint: str = "") -> Iterator[tuple[int, int, str]]:
    """As `text_lines`, with each line's byte offset in the file: (line number, offset, text)."""
    path = Path(path)
    offset = 0
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, 1):
            at, offset = offset, offset + len(raw)
            if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            yield n, at, _decoded(raw, path, n, hint)


def _decoded(raw: bytes, path: Path, n: int | None, hint: str = "") -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(path, n, None, f"not UTF-8 text ({e.reason} at byte {e.start + 1} of the line){hint}") from None


def read_text(path: Path | str) -> str:
    """A whole UTF-8 text file (a byte-order mark dropped); a missing file, a folder, a byte that is
    not UTF-8 or a read failure raise InputError."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, None, None, "file not found")
    if path.is_dir():
        raise InputError(path, None, None, "is a directory, expected a file")
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(path, None, None, f"not UTF-8 text ({e.reason} at byte {e.start + 1})") from None
    except OSError as e:
        raise InputError(path, None, None, f"cannot read ({e.strerror or e})") from None


def iter_json_lines(path: Path | str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; bad JSON, a byte that is not UTF-8 (on
    its own line) and a text field over `max_field_chars()` raise InputError. A UTF-8 byte-order
    mark is skipped."""
    for n, _, obj in iter_json_lines_at(path):
        yield n, obj


def iter_json_lines_at(path: Path | str) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """As `iter_json_lines`, with each line's byte offset: (line number, offset, object); the
    object is read again from its offset with `json_line_at`."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, None, None, "file not found")
    limit = max_field_chars()
    for n, at, line in text_lines_at(path):
        if not line.strip():
            continue
        yield n, at, _json_object(line, path, n, limit)


def json_line_at(fh: BinaryIO, path: Path, offset: int, line: int | None = None) -> dict[str, Any]:
    """The JSON object of the line at byte `offset` of the open file `fh` (of `path`), checked as
    `iter_json_lines` checks it; `line` is its number, for errors."""
    fh.seek(offset)
    raw = fh.readline()
    if offset == 0 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    return _json_object(_decoded(raw, path, line), path, line, max_field_chars())


def _json_object(line: str, path: Path, n: int | None, limit: int) -> dict[str, Any]:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise InputError(path, n, None, f"not valid JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(obj, dict):
        raise InputError(path, n, None, "expected a JSON object")
    if len(line) > limit:  # no field of a shorter line can be over the limit
        check_field_sizes(obj, path, n, limit)
    return obj


def open_parquet(path: Path | str) -> Any:
    """A Parquet file opened for reading (pyarrow.parquet.ParquetFile); a missing pyarrow, a
    missing file or one that is not Parquet raise InputError."""
    path = Path(path)
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(path, None, None, "reading a Parquet file needs pyarrow (pip install pyarrow)") from None
    if not path.exists():
        raise InputError(path, None, None, "file not found")
    try:
        return pq.ParquetFile(path)
    except Exception as e:  # pyarrow raises ArrowInvalid / OSError for a file that is not Parquet
        raise InputError(path, None, None, f"not a readable Parquet file ({e})") from None


def iter_parquet_rows(path: Path | str, columns: list[str] | None = None, file: Any = None, batch_size: int = 4096) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (row number from 1, row) of a Parquet file (`file`: one already opened with
    open_parquet), reading `columns` only when given; a row that cannot be read raises InputError
    with its number."""
    pf = file if file is not None else open_parquet(path)
    n = 0
    try:
        for batch in pf.iter_batches(batch_size=batch_size, columns=columns):
            for row in batch.to_pylist():
                n += 1
                yield n, row
    except OSError as e:
        raise InputError(Path(path), n + 1, None, f"cannot read this Parquet row ({e})") from None


def parse_record(model: type[T], obj: dict[str, Any], path: Path | str, line: int | None, *, sized: bool = False) -> T:
    """Validate one record; errors name file, line and field. Its text fields are checked against
    `max_field_chars()` first, unless `sized` says it came from `iter_json_lines` (checked there)."""
    if not sized:
        check_field_sizes(obj, path, line)
    try:
        return model.model_validate(obj)
    except ValidationError as e:
        field, msg = _field_of(e)
        raise InputError(path, line, field, msg) from None


def read_jsonl(path: Path | str, model: type[T]) -> Iterator[T]:
    for n, obj in iter_json_lines(path):
        yield parse_record(model, obj, path, n, sized=True)


def dump_line(record: BaseModel | dict[str, Any]) -> str:
    data = record.model_dump(mode="json") if isinstance(record, BaseModel) else record
    return json.dumps(data, ensure_ascii=False, sort_keys=False) + "\n"


class OutputError(MedresError):
    """A file or directory that cannot be written: its path and why (one line)."""

    def __init__(self, path: Path | str, err: OSError):
        path = Path(path)
        why = err.strerror or str(err)
        blocker = next((a for a in path.parents if a.exists() and not a.is_dir()), None)
        if blocker is not None:
            why = f"{blocker} is a file, not a directory"
        super().__init__(f"cannot write {path}: {why}")


class atomic_write:
    """Write a file through a temporary sibling, renamed into place only on success. A place that
    cannot be written (a path under a file, a read-only directory) is an OutputError."""

    def __init__(self, path: Path | str, mode: str = "w"):
        self.path = Path(path)
        self.mode = mode

    def __enter__(self):
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, self._tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        except OSError as e:
            raise OutputError(self.path, e) from None
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


def parse_item(obj: dict[str, Any], path: Path, line: int | None) -> Item:
    """One item line of a suite's items.jsonl (read by `iter_json_lines`), validated."""
    return parse_record(Item, obj, path, line, sized=True)


def parse_probe(obj: dict[str, Any], path: Path, line: int | None, manifest: SuiteManifest) -> Probe:
    """One probe line of a suite's probes.jsonl (read by `iter_json_lines`), validated as its
    family's probe (the line's `family`, else the suite's)."""
    family = obj.get("family") or manifest.family
    from .family import probe_model

    try:
        model = probe_model(family) or GenericProbe
    except KeyError as e:
        raise InputError(path, line, "family", str(e).strip("'\"")) from None
    return parse_record(model, {**obj, "family": family}, path, line, sized=True)


def check_probe(p: Probe, item: Item | None, path: Path, line: int | None, items_path: Path) -> None:
    """InputError unless the probe's item exists and the probe fits it."""
    if item is None:
        raise InputError(path, line, "item_id", f"no item '{p.item_id}' in {items_path.name}")
    try:
        p.check_against(item)
    except ValueError as e:
        raise InputError(path, line, getattr(e, "field", None), str(e)) from None


def probes_path(d: Path, manifest: SuiteManifest) -> Path | None:
    """The suite directory's probes.jsonl, None when it has none (InputError when the manifest
    counts probes)."""
    ppath = d / "probes.jsonl"
    if ppath.exists():
        return ppath
    if manifest.counts.get("probes"):
        raise InputError(ppath, None, None, f"is missing (suite.json counts {manifest.counts['probes']} probes)")
    return None


class Suite:
    """A loaded suite: manifest, items by id (in file order) and probes (in file order).

    A lazily loaded suite holds no record until one is asked for: `items` and `probes` read them
    all into memory; `check()`, `item_ids()`, `batches()`, `iter_items()` and `iter_probes()` read
    them from disk as they go (checked once, then read again by offset: `SuiteIndex`), so that a
    run over a large suite holds one chunk of records at a time."""

    def __init__(self, manifest: SuiteManifest, items: list[Item], probes: list[Probe], path: Path | None = None):
        self.manifest = manifest
        self._items = {it.id: it for it in items}
        self._probes = probes
        self._unread: Callable[[], tuple[list[Item], list[Probe]]] | None = None  # a lazy load's records, read on first use
        self._index: SuiteIndex | None = None  # a lazy load's index, once checked
        self.path = path

    def read(self) -> Suite:
        """Read a lazily loaded suite's records now (InputError on bad input); a no-op otherwise."""
        if self._unread is not None:
            items, probes = self._unread()
            self._unread, self._index = None, None
            self._items, self._probes = {it.id: it for it in items}, probes
        return self

    def check(self) -> Suite:
        """Check a lazily loaded suite's records now, streaming (InputError on bad input), keeping
        where each is rather than the records; a no-op when they are in memory."""
        if self._unread is not None and self._index is None:
            assert self.path is not None
            self._index = SuiteIndex.build(self.path, self.manifest)
        return self

    def _streamed(self) -> SuiteIndex | None:
        """The suite's index when its records are read from disk as needed (None: in memory)."""
        return self.check()._index if self._unread is not None else None

    def item_ids(self) -> list[str]:
        """Every item id, in file order."""
        index = self._streamed()
        return index.item_ids() if index is not None else list(self._items)

    def records_of(self, item_ids: Sequence[str]) -> int:
        """How many items and probes these items are."""
        index = self._streamed()
        if index is not None:
            return len(item_ids) + sum(index.probe_count(i) for i in item_ids)
        wanted = set(item_ids)
        return len(item_ids) + sum(p.item_id in wanted for p in self._probes)

    def batches(self, item_ids: Sequence[str], records: int) -> Iterator[Suite]:
        """The items of `item_ids`, in that order, with their probes (each item's in file order),
        as suites in memory of about `records` records (an item and its probes) each, at least
        one item each: read from disk a batch at a time when the suite is read lazily."""
        index = self._streamed()
        if index is not None:
            count, read = index.probe_count, index.records
        else:
            by_item: dict[str, list[Probe]] = {}
            for p in self._probes:
                by_item.setdefault(p.item_id, []).append(p)

            def count(item_id: str) -> int:
                return len(by_item.get(item_id, ()))

            def read(ids: Sequence[str]) -> tuple[list[Item], list[Probe]]:
                return [self._items[i] for i in ids], [p for i in ids for p in by_item.get(i, ())]

        batch: list[str] = []
        size = 0
        for item_id in item_ids:
            batch.append(item_id)
            size += 1 + count(item_id)
            if size >= records:
                yield Suite(self.manifest, *read(batch), self.path)
                batch, size = [], 0
        if batch:
            yield Suite(self.manifest, *read(batch), self.path)

    def iter_items(self) -> Iterator[Item]:
        """Every item in file order; read from disk as it goes when the suite is read lazily."""
        index = self._streamed()
        return index.items() if index is not None else iter(self._items.values())

    def iter_probes(self) -> Iterator[Probe]:
        """Every probe in file order; read from disk as it goes when the suite is read lazily."""
        index = self._streamed()
        return index.probes() if index is not None else iter(self._probes)

    @property
    def items(self) -> dict[str, Item]:
        self.read()
        return self._items

    @items.setter
    def items(self, value: dict[str, Item]) -> None:
        self.read()
        self._items = value

    @property
    def probes(self) -> list[Probe]:
        self.read()
        return self._probes

    @probes.setter
    def probes(self, value: list[Probe]) -> None:
        self.read()
        self._probes = value

    def __len__(self) -> int:
        return len(self.items)

    @classmethod
    def load(cls, directory: Path | str, verify: bool = True, lazy: bool = False) -> Suite:
        """The suite in `directory`: its manifest read and its files checked against the manifest's
        checksums now; its items and probes read and checked now, or with `lazy` on first use (a
        rerun that needs no record, such as a settled evaluation, never reads them). Bad input is
        an InputError naming the file, line and field either way."""
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
                if not f.is_file():
                    raise InputError(f, None, None, "is missing (suite.json lists it with a checksum)")
                if sha256_file(f) != digest:
                    raise InputError(f, None, None, "checksum does not match suite.json (file changed after the suite was written)")
        if lazy:
            suite = cls(manifest, [], [], d)
            suite._unread = lambda: cls._records(d, manifest)
            return suite
        items, probes = cls._records(d, manifest)
        return cls(manifest, items, probes, d)

    @staticmethod
    def _records(d: Path, manifest: SuiteManifest) -> tuple[list[Item], list[Probe]]:
        """The items and probes of the suite directory `d`, read and checked (InputError otherwise)."""
        items: list[Item] = []
        seen: set[str] = set()
        ipath = d / "items.jsonl"
        for n, obj in iter_json_lines(ipath):
            it = parse_item(obj, ipath, n)
            if it.id in seen:
                raise InputError(ipath, n, "id", f"duplicate item id '{it.id}'")
            seen.add(it.id)
            items.append(it)
        by_id = {it.id: it for it in items}
        probes: list[Probe] = []
        ppath = probes_path(d, manifest)
        pseen: set[str] = set()
        if ppath is not None:
            for n, obj in iter_json_lines(ppath):
                p = parse_probe(obj, ppath, n, manifest)
                if p.id in pseen:
                    raise InputError(ppath, n, "id", f"duplicate probe id '{p.id}'")
                pseen.add(p.id)
                check_probe(p, by_id.get(p.item_id), ppath, n, ipath)
                probes.append(p)
        return items, probes

    def save(self, directory: Path | str) -> Path:
        """Write the suite atomically: files go to a temporary directory renamed into place."""
        d = Path(directory)
        try:
            d.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{d.name}.", dir=d.parent))
        except OSError as e:
            raise OutputError(d, e) from None
        try:
            write_jsonl(tmp / "items.jsonl", self.items.values())
            write_jsonl(tmp / "probes.jsonl", self.probes)
            counts = dict(self.manifest.counts)
            counts.update(items=len(self.items), probes=len(self.probes))
            counts.update(Counter(p.condition for p in self.probes))
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


class SuiteIndex:
    """A suite directory's records checked once, streaming, and then read again by byte offset:
    what a run over a large suite holds instead of the records themselves.

    `build` reads items.jsonl and probes.jsonl line by line with every check of `Suite.load`
    (line-exact errors, duplicate ids, each probe against its item) and keeps, per item, its id
    and the offset of its line, and per probe the offset and number of its line, grouped by item
    in file order (packed arrays: about 20 bytes a record besides the item ids). `records(ids)`
    reads the items of some ids and their probes back from disk, so a run holds one chunk of
    records at a time; `items()` and `probes()` stream them in file order."""

    def __init__(
        self, directory: Path, manifest: SuiteManifest, ids: dict[str, int], item_at: Any, item_line: Any, probe_at: Any, probe_line: Any, start: Any
    ):  # numpy arrays
        self.directory, self.manifest = directory, manifest
        self.items_path, self.probes_path = directory / "items.jsonl", probes_path(directory, manifest)
        self._ids = ids  # item id -> position in items.jsonl
        self._item_at, self._item_line = item_at, item_line
        self._probe_at, self._probe_line, self._start = probe_at, probe_line, start  # probes of item i: [start[i], start[i+1])

    @classmethod
    def build(cls, directory: Path | str, manifest: SuiteManifest) -> SuiteIndex:
        """Check every record of the suite directory, streaming (InputError naming file, line and
        field on the first bad one), and keep where each is."""
        import numpy as np  # only a run over a suite read lazily needs it

        d = Path(directory)
        ipath = d / "items.jsonl"
        ids: dict[str, int] = {}
        item_at, item_line = array("q"), array("q")  # packed as they grow: 8 bytes a record, not a Python int
        for n, at, obj in iter_json_lines_at(ipath):
            it = parse_item(obj, ipath, n)
            if it.id in ids:
                raise InputError(ipath, n, "id", f"duplicate item id '{it.id}'")
            ids[it.id] = len(item_at)
            item_at.append(at)
            item_line.append(n)
        owner, probe_at, probe_line = array("q"), array("q"), array("q")
        ppath = probes_path(d, manifest)
        if ppath is not None:
            seen: set[str] = set()
            last: tuple[int, Item | None] = (-1, None)  # probes usually follow their item: read it once
            with open(ipath, "rb") as ifh:
                for n, at, obj in iter_json_lines_at(ppath):
                    p = parse_probe(obj, ppath, n, manifest)
                    if p.id in seen:
                        raise InputError(ppath, n, "id", f"duplicate probe id '{p.id}'")
                    seen.add(p.id)
                    i = ids.get(p.item_id, -1)
                    if i >= 0 and last[0] != i:
                        last = (i, parse_item(json_line_at(ifh, ipath, item_at[i], item_line[i]), ipath, item_line[i]))
                    check_probe(p, last[1] if i >= 0 else None, ppath, n, ipath)
                    owner.append(i)
                    probe_at.append(at)
                    probe_line.append(n)
            del seen
        own = np.frombuffer(owner, dtype=np.int64)
        order = np.argsort(own, kind="stable")  # grouped by item, file order within an item
        start = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(np.bincount(own, minlength=len(ids)), out=start[1:])
        return cls(
            d,
            manifest,
            ids,
            np.frombuffer(item_at, dtype=np.int64),
            np.frombuffer(item_line, dtype=np.int64).astype(np.int32),
            np.frombuffer(probe_at, dtype=np.int64)[order],
            np.frombuffer(probe_line, dtype=np.int64)[order].astype(np.int32),
            start,
        )

    def item_ids(self) -> list[str]:
        """Every item id, in file order."""
        return list(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def n_probes(self) -> int:
        return len(self._probe_at)

    def probe_count(self, item_id: str) -> int:
        i = self._ids[item_id]
        return int(self._start[i + 1] - self._start[i])

    def records(self, item_ids: Sequence[str]) -> tuple[list[Item], list[Probe]]:
        """The items of `item_ids` (in that order) and their probes (item by item, each item's in
        file order), read again from disk."""
        items: list[Item] = []
        probes: list[Probe] = []
        ipath, ppath = self.items_path, self.probes_path
        with open(ipath, "rb") as ifh, open(ppath, "rb") if ppath is not None else nullcontext() as pfh:
            for item_id in item_ids:
                i = self._ids[item_id]
                line = int(self._item_line[i])
                items.append(parse_item(json_line_at(ifh, ipath, int(self._item_at[i]), line), ipath, line))
                for j in range(int(self._start[i]), int(self._start[i + 1])):
                    line = int(self._probe_line[j])
                    assert ppath is not None
                    probes.append(parse_probe(json_line_at(pfh, ppath, int(self._probe_at[j]), line), ppath, line, self.manifest))
        return items, probes

    def items(self) -> Iterator[Item]:
        """Every item, in file order, read again from disk."""
        for n, obj in iter_json_lines(self.items_path):
            yield parse_item(obj, self.items_path, n)

    def probes(self) -> Iterator[Probe]:
        """Every probe, in file order, read again from disk."""
        if self.probes_path is None:
            return
        for n, obj in iter_json_lines(self.probes_path):
            yield parse_probe(obj, self.probes_path, n, self.manifest)
