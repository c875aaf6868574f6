"""`Store`: a run directory's SQLite store opened for writing (one writer owns the connection,
WAL) or for reading only, with every reader mixed in over the one connection."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..runtime.lock import held
from .base import StoreWriteError, is_bug
from .batches import BatchRecords
from .calls import CallReads
from .evidence import EvidenceReads
from .joins import JoinedReads
from .runs import RunReads
from .schema import SCHEMA, TABLES, migrate, migration_script, tables
from .usage import UsageReads
from .writer import Writer


class Store(BatchRecords, Writer, RunReads, CallReads, UsageReads, JoinedReads, EvidenceReads):
    """A run directory's store: the writer (`Writer`) and the readers grouped by what they serve
    (runs, calls by key, spending and reading, the units x calls x scores join, one unit's
    evidence)."""

    #: opened with `read_only` (nothing can change the file; `reading_connection` is handed out)
    readonly: bool = False

    def __init__(self, path: Path | str):
        self.path = Path(path)
        conn = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = self.conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            migrate(self.conn)
        except (OSError, sqlite3.Error) as e:
            if isinstance(e, sqlite3.Error) and is_bug(e):
                raise
            if conn is not None:
                conn.close()
            raise StoreWriteError(self.path, e, "open") from e
        self.run_id: str | None = None

    @classmethod
    def read_only(cls, path: Path | str) -> Store:
        """The store opened for reading only: nothing is migrated or created in its directory and
        no statement can change the file, so a run on read-only storage can be read.

        When nothing has the store open (no `-wal` file beside it: a WAL connection keeps one while
        open; and no live process holds the run directory's lock, `lock.held`) it is opened with
        SQLite's `immutable=1`: no locking and no `-wal`/`-shm` files, which read-only storage
        could not hold. Otherwise (a run in progress, or one killed with its WAL unmerged) it is
        opened `mode=ro`, which reads the writer's WAL and so sees its commits; on read-only
        storage that needs the `-shm` file to be there. The choice is made once, at the open: a
        reader that stays open (the viewer) while a writer starts on the run afterwards does not see
        its commits and may fail on pages it moves; reopen it once the writer is done. A store written before a migration is
        copied into memory and migrated there. A missing, unreadable or empty file, or one without
        a run's tables, raises StoreWriteError naming it. Temporary tables (a reader's own indexes)
        live in SQLite's temporary database, never in the file."""
        self = cls.__new__(cls)
        self.path, self.run_id, self.readonly = Path(path), None, True
        if not self.path.is_file():
            raise StoreWriteError(self.path, FileNotFoundError(2, "no such file", str(self.path)), "open")
        wal = self.path.with_name(self.path.name + "-wal")
        mode = "mode=ro" if wal.exists() or held(self.path.parent) else "immutable=1"
        conn = None
        try:
            conn = self.conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?{mode}", uri=True, isolation_level=None, check_same_thread=False)
            found = tables(conn)
            if not {"units", "calls"} <= found:
                what = "an empty file" if not found else f"no units and calls tables (has: {', '.join(sorted(found))})"
                raise StoreWriteError(self.path, ValueError(f"not a run's store ({what})"), "open")
            script = migration_script(conn)
            if script or not found >= TABLES:
                self.conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
                conn.backup(self.conn)
                conn.close()
                self.conn.executescript(f"BEGIN; {script} COMMIT;")
                self.conn.executescript(SCHEMA)
        except sqlite3.Error as e:
            if conn is not None:
                conn.close()
            raise StoreWriteError(self.path, e, "open") from e
        except BaseException:
            if conn is not None:
                conn.close()
            raise
        return self

    def reading_connection(self) -> sqlite3.Connection:
        """The connection of a store opened with `read_only`, for a reader that keeps its own
        tables in SQLite's temporary database (the viewer's index); it can change nothing in the
        file. A store opened for writing hands out none: its one writer owns its connection."""
        if not self.readonly:
            raise ValueError(f"{self.path}: a store opened for writing hands out no connection; open it with Store.read_only")
        return self.conn

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
