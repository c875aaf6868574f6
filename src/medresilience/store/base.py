"""What every part of the store stands on: the connection, the store's errors, the latest run,
and reading rows by a list of keys in chunks SQLite can bind."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..runtime.errors import MedresError

#: keys bound per statement (SQLite's default limit of bound parameters is 999)
#: a value sqlite binds to a `?` or returns in a column
SqlValue = str | int | float | bytes | None
KEY_CHUNK = 900


class StoreWriteError(MedresError):
    """The store cannot be opened or written: the cause (a full disk, ...) and the path."""

    def __init__(self, path: Path, err: BaseException, action: str = "write"):
        self.path, self.cause = path, err
        cause = str(err) or type(err).__name__
        if isinstance(err, OSError) and err.strerror:
            cause = err.strerror + (f" ({err.filename})" if err.filename and str(err.filename) != str(path) else "")
        kept = "; what was committed before is kept: rerun the same command to resume once it can be written" if action == "write" else ""
        super().__init__(f"cannot {action} the store {path}: {cause}{kept}")


def is_bug(e: sqlite3.Error) -> bool:
    """An error of the statements themselves (not of the file): shown as is."""
    return isinstance(e, (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError, sqlite3.DataError))


class Connected:
    """A store's connection and path, and the run its plan rows are tagged with (the readers and
    the writer are mixed into `Store` over it)."""

    conn: sqlite3.Connection
    path: Path
    run_id: str | None

    def latest_run(self) -> str | None:
        """The most recent run that planned units (None for a store without run-tagged units)."""
        row = self.conn.execute(
            "SELECT r.run_id FROM runs r WHERE EXISTS (SELECT 1 FROM units u WHERE u.run = r.run_id) ORDER BY r.started DESC, r.rowid DESC LIMIT 1"
        ).fetchone()
        return None if row is None else row[0]

    def by_keys(self, sql: str, keys: Iterable[str], *before: SqlValue) -> Iterator[tuple]:
        """The rows of `sql` for the given keys, its `{keys}` replaced by their placeholders and
        bound after the `before` arguments, a chunk of keys per statement."""
        keys = list(keys)
        for i in range(0, len(keys), KEY_CHUNK):
            chunk = keys[i : i + KEY_CHUNK]
            yield from self.conn.execute(sql.format(keys=",".join("?" * len(chunk))), [*before, *chunk])
