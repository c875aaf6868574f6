"""Reading and writing files, one way for the whole toolkit: UTF-8 text and JSON lines with
line-exact errors (file, line and field in every InputError), records validated from them, rows of
CSV and Parquet files, files written atomically (a temporary sibling renamed into place), JSON
lines and checksums.

Files and folders written follow the process's umask (0644 and 0755 under the common 022), as
`open` and `mkdir` would make them, so a report can be shared or served; a file that holds a
secret is written with `private=True` (0600 whatever the umask).

Every text field read from a file is at most `max_field_chars()` characters (100,000 unless the
environment variable MEDRES_MAX_FIELD_CHARS says otherwise): a longer one is an InputError naming
file, line and field, not a prompt sent to a model. It imports only errors.py."""

from __future__ import annotations

import contextlib
import csv
import errno
import hashlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import ConfigError, InputError, MedresError, validation_problem
from .jsontypes import JSONObject, JSONValue

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

# --------------------------------------------------------------------------- limits from the environment

#: csv's quoting modes (csv.QUOTE_MINIMAL, QUOTE_ALL, QUOTE_NONNUMERIC, QUOTE_NONE)
Quoting = Literal[0, 1, 2, 3]
#: The default of MEDRES_MAX_FIELD_CHARS: the most characters one text field of an input may hold.
MAX_FIELD_CHARS = 100_000
#: The lowest MEDRES_MAX_FIELD_CHARS accepted: a shorter text is never checked (no lookup per field).
MIN_FIELD_CHARS = 1024


#: A lone UTF-16 surrogate: valid JSON can carry one (`"\\ud800"`), no UTF-8 can encode it.
_SURROGATE = re.compile("[\ud800-\udfff]")


def storable_text(text: str) -> str:
    """`text` as UTF-8 (and so the store, a file) can hold it: each lone UTF-16 surrogate becomes
    U+FFFD, the replacement character; everything else is kept as is. Every text a server returns
    goes through it before it is read or stored, so one such reply costs only itself."""
    return _SURROGATE.sub("\ufffd", text)


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


def oversized(obj: object, limit: int, prefix: str = "") -> tuple[str, int] | None:
    """(dotted field, length) of the first string longer than `limit` in a parsed JSON value."""
    if isinstance(obj, dict):
        items: Iterable[tuple[object, object]] = obj.items()
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


def check_field_sizes(obj: object, path: Path | str, line: int | None, limit: int | None = None) -> None:
    """InputError naming the first text field of `obj` longer than the limit (default:
    `max_field_chars()`, looked up only when some text is longer than MIN_FIELD_CHARS)."""
    if limit is None:
        if oversized(obj, MIN_FIELD_CHARS) is None:
            return
        limit = max_field_chars()
    found = oversized(obj, limit)
    if found:
        raise too_long(path, line, found[0], found[1], limit)


# --------------------------------------------------------------------------- text and JSON lines

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


def iter_json_lines(path: Path | str) -> Iterator[tuple[int, JSONObject]]:
    """Yield (line number, object) for each non-blank line; bad JSON, a byte that is not UTF-8 (on
    its own line) and a text field over `max_field_chars()` raise InputError. A UTF-8 byte-order
    mark is skipped."""
    for n, _, obj in iter_json_lines_at(path):
        yield n, obj


def iter_json_lines_at(path: Path | str) -> Iterator[tuple[int, int, JSONObject]]:
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


def json_line_at(fh: BinaryIO, path: Path, offset: int, line: int | None = None) -> JSONObject:
    """The JSON object of the line at byte `offset` of the open file `fh` (of `path`), checked as
    `iter_json_lines` checks it; `line` is its number, for errors."""
    fh.seek(offset)
    raw = fh.readline()
    if offset == 0 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    return _json_object(_decoded(raw, path, line), path, line, max_field_chars())


def _json_object(line: str, path: Path, n: int | None, limit: int) -> JSONObject:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise InputError(path, n, None, f"not valid JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(obj, dict):
        raise InputError(path, n, None, f"expected a JSON object, got {show(obj)}")
    if len(line) > limit:  # no field of a shorter line can be over the limit
        check_field_sizes(obj, path, n, limit)
    return obj


# --------------------------------------------------------------------------- rows of data files (JSON, CSV, Parquet)


def open_parquet(path: Path | str) -> pq.ParquetFile:
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


def iter_parquet_rows(
    path: Path | str, columns: list[str] | None = None, file: pq.ParquetFile | None = None, batch_size: int = 4096
) -> Iterator[tuple[int, JSONObject]]:
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


def table_rows(path: Path) -> tuple[str, list[str], Iterator[tuple[int | None, JSONObject]]]:
    """(kind, header, (line, row) ...) of a CSV, TSV (by its suffix) or Parquet file: kind `csv`
    or `parquet`; each row a dict of its cells by header name, numbered by its line (a CSV row's
    first line; a Parquet row's number from 1); blank CSV lines skipped; a CSV cell the CSV rule
    quoted (see `csv_cell`) read back as typed. An unreadable file, a row with more or fewer cells
    than the header, an unclosed quote swallowing rows, or bad text raise InputError with file and
    line."""
    if path.suffix.lower() == ".parquet":
        pf = open_parquet(path)
        return "parquet", list(pf.schema_arrow.names), iter_parquet_rows(path, file=pf)
    records = csv_records(path, "\t" if path.suffix.lower() == ".tsv" else ",", shaped=True)
    try:
        first = next(records, None)
    except OSError as e:
        raise InputError(path, None, None, f"cannot read ({e.strerror or e})") from None
    if first is None:
        raise InputError(path, None, None, "is empty (expected a header line and one row per labelled answer)")
    header = [csv_text(h.strip()) for h in first[1]]

    def crows() -> Iterator[tuple[int | None, JSONObject]]:
        for line, rec in records:
            if len(rec) != len(header):
                raise InputError(path, line, None, f"has {len(rec)} cells, the header has {len(header)}")
            yield line, dict(zip(header, map(csv_text, rec)))

    return "csv", header, crows()


def csv_records(
    path: Path | str, delimiter: str = ",", *, quoting: Quoting = csv.QUOTE_MINIMAL, hint: str = "", shaped: bool = False
) -> Iterator[tuple[int, list[str]]]:
    """(line where it starts, cells) of each record of a CSV file (TSV with delimiter "\\t") that
    has a non-blank cell. Decoded line by line as `text_lines` does (a byte-order mark dropped, a
    byte that is not UTF-8 an InputError naming its line); a record that is not valid CSV is an
    InputError naming the line where it starts.

    With `shaped` (a file whose first record is its header), a record whose quoted field runs over
    a line that, read alone, has as many cells as the header is an InputError naming the line where
    the field opens: an unclosed quote would otherwise swallow the rows after it into one cell."""
    path = Path(path)
    held: list[str] = []  # the physical lines of the record being read (csv reads no further ahead)

    def feed() -> Iterator[str]:
        for _, text in text_lines(path, hint):
            held.append(text)
            yield text

    reader = csv.reader(feed(), delimiter=delimiter, quoting=quoting)
    width: int | None = None
    while True:
        start = reader.line_num + 1
        held.clear()
        try:
            rec = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise InputError(path, start, None, f"not valid CSV ({e})") from None
        if shaped and width is not None and len(held) > 1:
            _refuse_swallowed_rows(path, start, held, width, delimiter, quoting)
        if rec and any(c.strip() for c in rec):
            width = len(rec) if width is None else width
            yield start, rec


def _refuse_swallowed_rows(path: Path, start: int, lines: list[str], width: int, delimiter: str, quoting: Quoting) -> None:
    for n, text in enumerate(lines[1:], start + 1):
        cells = next(csv.reader([text], delimiter=delimiter, quoting=quoting), [])
        if len(cells) == width:
            raise InputError(
                path,
                start,
                None,
                f"a quoted field opens here and runs to line {start + len(lines) - 1}, swallowing line {n}, which reads as a row "
                f"of the header's {width} cells: an unclosed quote? (close it; a line break inside a quoted field is kept only "
                "when that line is not shaped like a row)",
            )


def show(value: object, limit: int = 60) -> str:
    """A short, one-line rendering of a value for an error message."""
    s = repr(value) if not isinstance(value, str) else repr(value.replace("\n", " "))
    return s if len(s) <= limit else s[: limit - 4] + "...'"


def json_lines(path: Path | str) -> Iterator[tuple[int, JSONObject]]:
    """fileio.iter_json_lines (which names the line of a non-UTF-8 byte, skips a byte-order mark
    and checks field sizes), with unreadable files as InputErrors too."""
    path = Path(path)
    if path.is_dir():
        raise InputError(path, None, None, "is a directory, expected a file")
    last = 0
    try:
        for n, obj in iter_json_lines(path):
            last = n
            yield n, obj
    except UnicodeDecodeError as e:
        raise InputError(path, None, None, f"not UTF-8 text (at or after line {last + 1}: {e.reason})") from None
    except OSError as e:
        raise InputError(path, None, None, f"cannot read ({e.strerror or e})") from None


_DECODER = json.JSONDecoder()


def json_value_at(text: str, pos: int, path: Path | str) -> tuple[JSONValue, int]:
    """The JSON value starting at `pos` of a file's text and the position after it; bad JSON is an
    InputError naming its line and column."""
    try:
        return _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as e:
        raise InputError(path, e.lineno, None, f"not valid JSON ({e.msg} at column {e.colno})") from None


def _is_parquet(path: Path) -> bool:
    return path.suffix.lower() == ".parquet"


_JSON_WS = re.compile(r"[ \t\r\n]*")
#: About how many characters `json_values` holds of a file it streams (more while one value is longer).
JSON_CHUNK = 1 << 20


def json_values(path: Path | str, text: str | None = None, *, hint: str = "", chunk: int = JSON_CHUNK) -> Iterator[tuple[int, JSONValue]]:
    """(line where it starts, value) for each top-level JSON value of a file holding one or more
    values one after another (JSON lines, a JSON array, pretty-printed objects); the elements of a
    top-level array come one by one, each with its own line. Parsed from `text` (the file's text,
    already read) when given, else streamed from the file: decoded line by line (a byte that is not
    UTF-8 is an InputError naming its line, the message ending with `hint`) and parsed about
    `chunk` characters at a time. Bad JSON is an InputError naming its line and column."""
    path = Path(path)
    pieces = iter((text,)) if text is not None else (t for _, t in text_lines(path, hint))
    stream = _JsonStream(path, pieces, chunk)
    while stream.skip_ws():
        if stream.buf[stream.pos] != "[":
            yield stream.value()
            continue
        stream.pos += 1
        if stream.skip_ws() and stream.buf[stream.pos] == "]":
            stream.pos += 1
            continue
        yield from stream.elements()


class _JsonStream:
    """The text of a JSON file read a piece at a time (`chunk` characters or more) into a buffer,
    parsed from `pos`: what is parsed is dropped as more is read, and a position's line and column
    are counted on from the last one asked for (`where`)."""

    def __init__(self, path: Path, pieces: Iterator[str], chunk: int) -> None:
        self.path, self.pieces, self.chunk = path, pieces, chunk
        self.buf, self.pos, self.eof = "", 0, False
        self.base = (1, 0)  # the line and 0-based column of buf[0]
        self.mark, self.mark_line, self.mark_col = 0, 1, 0  # the last position asked for in buf, its line and column

    def where(self, p: int) -> tuple[int, int]:
        """The line and 1-based column of buf[p], counted on from the last position asked for."""
        if p < self.mark:
            self.mark, (self.mark_line, self.mark_col) = 0, self.base
        nl = self.buf.count("\n", self.mark, p)
        if nl:
            self.mark_line, self.mark_col = self.mark_line + nl, p - self.buf.rfind("\n", self.mark, p) - 1
        else:
            self.mark_col += p - self.mark
        self.mark = p
        return self.mark_line, self.mark_col + 1

    def more(self) -> bool:
        """Read about `chunk` more characters into the buffer, dropping what is parsed (before
        `pos`); False at the end of the input."""
        parts, size = [], 0
        if not self.eof:
            for piece in self.pieces:
                parts.append(piece)
                size += len(piece)
                if size >= self.chunk:
                    break
        if not parts:
            self.eof = True
            return False
        at, column = self.where(self.pos)
        self.base = (at, column - 1)
        self.buf, self.pos = self.buf[self.pos :] + "".join(parts), 0
        self.mark, (self.mark_line, self.mark_col) = 0, self.base
        return True

    def skip_ws(self) -> bool:
        """Move past whitespace; False at the end of the input."""
        while True:
            m = _JSON_WS.match(self.buf, self.pos)  # matches the empty string
            self.pos = m.end() if m is not None else self.pos
            if self.pos < len(self.buf):
                return True
            if not self.more():
                return False

    def value(self) -> tuple[int, JSONValue]:
        """(its line, the value) of the JSON value at `pos`, reading on while it is cut."""
        while True:
            try:
                v, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as e:
                if self.more():
                    continue
                at, column = self.where(e.pos)
                raise InputError(self.path, at, None, f"not valid JSON ({e.msg} at column {column})") from None
            if end == len(self.buf) and self.more():
                continue  # a number may go on in the next piece
            start, self.pos = self.where(self.pos)[0], end
            return start, v

    def elements(self) -> Iterator[tuple[int, JSONValue]]:
        """The elements of the array opened before `pos`, one by one, up to its closing bracket."""
        while True:
            yield self.value()
            if self.skip_ws() and self.buf[self.pos] == ",":
                self.pos += 1
                self.skip_ws()
                continue
            if self.pos < len(self.buf) and self.buf[self.pos] == "]":
                self.pos += 1
                return
            raise InputError(self.path, self.where(self.pos)[0], None, "not valid JSON (expected ',' or ']' after an array element)")


def _first_line(path: Path) -> str | None:
    """The first non-blank line of a text file (a byte-order mark dropped); None when empty."""
    for _, line in text_lines(path):
        if line.strip():
            return line
    return None


def _one_object_per_line(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except json.JSONDecodeError:
        return False


def iter_rows(path: Path | str) -> Iterator[tuple[int, JSONObject]]:
    """(line, row) for each row of a file: JSON lines (streamed), a JSON array or a stream of
    pretty-printed objects (line: where the row starts), or Parquet (line: the row number). A row
    that is not an object, bad JSON and an oversized field are InputErrors naming the line."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, None, None, "file not found")
    if path.is_dir():
        raise InputError(path, None, None, "is a directory, expected a file")
    if _is_parquet(path):
        yield from iter_parquet_rows(path)
        return
    try:
        first = _first_line(path)
        if first is None:
            return
        if _one_object_per_line(first):
            yield from json_lines(path)
            return
        text = read_text(path)
    except OSError as e:
        raise InputError(path, None, None, f"cannot read ({e.strerror or e})") from None
    for line, value in json_values(path, text):
        if not isinstance(value, dict):
            raise InputError(path, line, None, f"expected a JSON object, got {show(value)}")
        check_field_sizes(value, path, line)
        yield line, value


# --------------------------------------------------------------------------- records


def parse_record(model: type[T], obj: Mapping[str, object], path: Path | str, line: int | None, *, sized: bool = False) -> T:
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


# --------------------------------------------------------------------------- writing


def dump_line(record: BaseModel | Mapping[str, object]) -> str:
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


def node_kind(path: Path | str) -> str | None:
    """What `path` itself is when it exists and is not a regular file ("a symbolic link", "a
    directory", "a named pipe (FIFO)", "a device", "a socket"); None when it is a regular file or
    does not exist. A link is a link (lstat), whatever it points to."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # absent, or under a file: the write names the blocker
        return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a socket" if stat.S_ISSOCK(mode) else "not a regular file"


def refuse_non_regular(path: Path | str) -> None:
    """OutputError when `path` exists and is not a regular file: an output never replaces a link, a
    pipe, a device or a directory with a file (as root a device would be gone)."""
    kind = node_kind(path)
    if kind is not None:
        raise OutputError(path, OSError(errno.EEXIST, f"it is {kind}, not a regular file; not replaced (choose another path)"))


def umask() -> int:
    """The process's umask, read without changing it where Linux tells it (/proc/self/status);
    elsewhere set and put back at once."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def output_mode(directory: bool = False) -> int:
    """The mode `open` (0666) or `mkdir` (0777) gives a new file or folder under the umask."""
    return (0o777 if directory else 0o666) & ~umask()


def temp_dir(parent: Path, prefix: str) -> Path:
    """A new temporary folder in `parent` (to be renamed into place) with the mode `mkdir` would
    give it (mkdtemp makes 0700)."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    os.chmod(tmp, output_mode(directory=True))
    return tmp


class atomic_write:
    """Write a file through a temporary sibling, renamed into place only on success. A place that
    cannot be written (a path under a file, a read-only directory) or that exists and is not a
    regular file (`refuse_non_regular`, checked before writing and again just before the rename)
    is an OutputError; the temporary file is removed on every failure. The file gets the mode
    `open` would give it under the umask; with `private` 0600 (a file holding a secret)."""

    def __init__(self, path: Path | str, mode: str = "w", private: bool = False):
        self.path = Path(path)
        self.mode = mode
        self.private = private

    def __enter__(self):
        refuse_non_regular(self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, self._tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)  # 0600
            if not self.private:
                os.fchmod(fd, output_mode())
        except OSError as e:
            raise OutputError(self.path, e) from None
        self._fh = os.fdopen(fd, self.mode, **({} if "b" in self.mode else {"encoding": "utf-8"}))
        return self._fh

    def __exit__(self, exc_type, exc, tb):
        placed = False
        try:
            try:
                self._fh.close()
            except OSError as e:  # the last bytes could not be written (a full disk)
                if exc_type is None:
                    raise OutputError(self.path, e) from None
            if exc_type is None:
                refuse_non_regular(self.path)
                try:
                    os.replace(self._tmp, self.path)
                except OSError as e:
                    raise OutputError(self.path, e) from None
                placed = True
        finally:
            if not placed:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self._tmp)
        return False


def write_jsonl(path: Path | str, records: Iterable[BaseModel | Mapping[str, object]]) -> int:
    n = 0
    with atomic_write(path) as fh:
        for r in records:
            fh.write(dump_line(r))
            n += 1
    return n


# --------------------------------------------------------------------------- CSV output
# The CSV-injection rule (OWASP), kept here for every CSV the toolkit writes (`write_csv`,
# `write_csv_frame`; no other module writes CSV): a text cell whose first character, after any
# leading single quotes, is `=`, `+`, `-`, `@`, a tab or a carriage return gets one more single
# quote in front, so a spreadsheet shows it as text instead of running it as a formula. A text
# cell that is a plain number ("-0.5", "+3", "1e-3") is left as it is, and numbers are never text:
# only str cells (and header names) are touched. `csv_text` undoes it exactly (the quote added to
# a cell that began with quotes makes the rule one-to-one), so reading the toolkit's own CSV gives
# back every cell as typed.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _plain_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _formula_like(text: str) -> bool:
    core = text.lstrip("'")
    return core.startswith(FORMULA_STARTS) and not _plain_number(core)


def csv_cell(value: object) -> object:
    """A cell as the toolkit writes it to CSV: a text a spreadsheet would run as a formula gets a
    leading single quote (the rule above); anything that is not text is returned unchanged."""
    return "'" + value if isinstance(value, str) and _formula_like(value) else value


def csv_text(cell: str) -> str:
    """A cell of a CSV the toolkit wrote, as it was typed: the inverse of `csv_cell`."""
    return cell[1:] if cell.startswith("'") and _formula_like(cell[1:]) else cell


def write_csv(path: Path | str, rows: Iterable[Iterable[object]]) -> int:
    """Write rows (the header first) as a CSV file ("\n" line ends), atomically, every cell through
    `csv_cell`; the number of rows written."""
    n = 0
    with atomic_write(path) as fh:
        w = csv.writer(fh, lineterminator="\n")
        for row in rows:
            w.writerow([csv_cell(c) for c in row])
            n += 1
    return n


def write_csv_frame(path: Path | str, df: pd.DataFrame) -> None:
    """Write a pandas DataFrame as a CSV file (no index), atomically, its text cells and column
    names through `csv_cell`; numeric columns as they are."""
    safe = df.copy()
    for col in safe.columns:
        if getattr(safe[col].dtype, "kind", "O") not in "biufcmM":  # not a column of numbers, booleans or times
            safe[col] = safe[col].astype(object).map(csv_cell)
    safe.columns = [csv_cell(c) for c in safe.columns]
    with atomic_write(path) as fh:
        safe.to_csv(fh, index=False)


def sha256_file(path: Path | str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_parquet_table(path: Path | str, table: pa.Table) -> None:
    """Write a pyarrow Table as a Parquet file, atomically (as `atomic_write`)."""
    write_parquet_batches(path, table.schema, [table])


def write_parquet_batches(path: Path | str, schema: object, parts: Iterable[object]) -> None:
    """Write pyarrow Tables or RecordBatches of one schema as a Parquet file as they come (one
    row group or more each; bounded memory), atomically (as `atomic_write`: a failure while the
    parts are made leaves no file)."""
    import pyarrow.parquet as pq

    with atomic_write(path, "wb") as fh, pq.ParquetWriter(fh, schema) as writer:
        for part in parts:
            if hasattr(part, "to_batches"):
                writer.write_table(part)
            else:
                writer.write_batch(part)
