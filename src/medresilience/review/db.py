"""The review database (REVIEW/review.sqlite): the sampled units (what each reviewer is shown, and,
apart, the facts they are blinded to), the tasks (a unit assigned to a reviewer), the reviewers
(a scrypt hash, never a password; revocation; a session epoch), the ratings and an append-only
log of every submission.

One connection, one writer: every operation holds the database lock, and every submitted rating
is its own transaction, committed (WAL, synchronous=FULL) before the reply is sent, so a server
killed at any point keeps every rating it acknowledged. Authorisation lives in the queries: a
task is read or written only `WHERE task_id = ? AND reviewer = ?`."""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..runtime.errors import InputError, MedresError
from .auth import hash_password, new_password, verify_password
from .rubrics import ReviewRubric, get_rubric

DB_NAME = "review.sqlite"
SCHEMA_VERSION = "1"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS units (
    unit_id TEXT PRIMARY KEY,
    ord INTEGER NOT NULL,
    item_id TEXT,
    strata TEXT NOT NULL,
    display TEXT NOT NULL,
    hidden TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS reviewers (
    name TEXT PRIMARY KEY,
    pw_hash TEXT,
    admin INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    revoked REAL,
    epoch INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS tasks (
    task_id INTEGER PRIMARY KEY,
    unit_id TEXT NOT NULL REFERENCES units(unit_id),
    reviewer TEXT NOT NULL REFERENCES reviewers(name),
    slot INTEGER NOT NULL,
    position INTEGER NOT NULL,
    UNIQUE (unit_id, reviewer),
    UNIQUE (unit_id, slot)
);
CREATE INDEX IF NOT EXISTS tasks_reviewer ON tasks(reviewer, position);
CREATE TABLE IF NOT EXISTS ratings (
    task_id INTEGER PRIMARY KEY REFERENCES tasks(task_id),
    status TEXT NOT NULL CHECK (status IN ('rated', 'skipped')),
    vals TEXT NOT NULL,
    flags TEXT NOT NULL,
    comment TEXT NOT NULL,
    updated REAL NOT NULL,
    revision INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS rating_log (
    id INTEGER PRIMARY KEY,
    task_id INTEGER NOT NULL,
    reviewer TEXT NOT NULL,
    status TEXT NOT NULL,
    vals TEXT NOT NULL,
    flags TEXT NOT NULL,
    comment TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY,
    at REAL NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    detail TEXT NOT NULL
);
"""


class ReviewError(MedresError):
    """A review database problem the user can act on (one line)."""


@dataclass(frozen=True)
class UnitRow:
    unit_id: str
    item_id: str | None
    strata: dict[str, Any]
    display: list[dict[str, Any]]
    hidden: dict[str, Any]


@dataclass(frozen=True)
class Reviewer:
    name: str
    admin: bool
    revoked: bool
    epoch: int
    has_password: bool


@dataclass(frozen=True)
class Task:
    task_id: int
    unit_id: str
    reviewer: str
    slot: int
    position: int
    status: str | None  # None (to do), rated, skipped
    values: dict[str, str]
    flags: list[str]
    comment: str
    display: list[dict[str, Any]] | None = None


def db_path(review: Path | str) -> Path:
    p = Path(review)
    return p / DB_NAME if p.is_dir() or p.suffix != ".sqlite" else p


@contextmanager
def opened(review: Path | str | ReviewDB) -> Iterator[ReviewDB]:
    """The review database: the one given (left open), or opened here and closed after."""
    if isinstance(review, ReviewDB):
        yield review
    else:
        with ReviewDB(review) as db:
            yield db


def valid_name(name: str) -> str:
    n = (name or "").strip()
    if not n or len(n) > 64 or not all(c.isalnum() or c in "._-@" for c in n):
        raise ReviewError(f"reviewer name '{name}' must be 1-64 letters, digits or . _ - @")
    return n


class ReviewDB:
    """The review database of one review directory."""

    def __init__(self, path: Path | str, *, create: bool = False):
        self.path = db_path(path)
        if not create and not self.path.is_file():
            raise InputError(self.path, None, None, "not a review database (run `medres review sample ... --out DIR` first)")
        self.lock = threading.RLock()
        try:
            self.conn = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None, timeout=30)
            if not create and self.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone() is None:
                self.conn.close()
                raise InputError(self.path, None, None, "not a review database (no review tables)")
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=FULL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            self.conn.execute("PRAGMA busy_timeout=30000")
            if create:
                self.conn.executescript(SCHEMA)
        except sqlite3.DatabaseError as e:
            raise InputError(self.path, None, None, f"cannot open the review database ({e})") from None
        if create:
            try:
                os.chmod(self.path, 0o600)
            except OSError:  # pragma: no cover - a file system without modes
                pass

    # ------------------------------------------------------------------ plumbing
    def close(self) -> None:
        with self.lock:
            self.conn.close()

    def __enter__(self) -> ReviewDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _tx(self, fn):
        """Run fn(conn) in one immediate transaction under the lock; committed when it returns."""
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                out = fn(self.conn)
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")
            return out

    def _q(self, sql: str, args: Sequence[object] = ()) -> list[tuple]:
        with self.lock:
            return self.conn.execute(sql, args).fetchall()

    def audit(self, actor: str, action: str, detail: str = "") -> None:
        self._tx(lambda c: c.execute("INSERT INTO audit (at, actor, action, detail) VALUES (?, ?, ?, ?)", (time.time(), actor, action, detail)))

    # ------------------------------------------------------------------ creation
    @classmethod
    def create(
        cls, out: Path | str, meta: Mapping[str, object], units: Sequence[UnitRow], assignments: Sequence[tuple[str, str, int, int]], reviewers: Iterable[str]
    ) -> ReviewDB:
        """Write a new review directory. assignments: (unit_id, reviewer, slot, position)."""
        out = Path(out)
        if db_path(out).exists():
            raise ReviewError(f"{db_path(out)} already exists: choose another --out (a review is never overwritten)")
        out.mkdir(parents=True, exist_ok=True)
        try:
            os.chmod(out, 0o700)
        except OSError:  # pragma: no cover
            pass
        db = cls(out, create=True)
        now = time.time()
        full = {**meta, "schema_version": SCHEMA_VERSION, "secret_key": secrets.token_hex(32), "created": now}

        def write(c: sqlite3.Connection) -> None:
            c.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", [(k, json.dumps(v)) for k, v in full.items()])
            c.executemany(
                "INSERT INTO units (unit_id, ord, item_id, strata, display, hidden) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (u.unit_id, i, u.item_id, json.dumps(u.strata), json.dumps(u.display, ensure_ascii=False), json.dumps(u.hidden, ensure_ascii=False))
                    for i, u in enumerate(units)
                ],
            )
            c.executemany("INSERT INTO reviewers (name, created) VALUES (?, ?)", [(valid_name(r), now) for r in reviewers])
            c.executemany("INSERT INTO tasks (unit_id, reviewer, slot, position) VALUES (?, ?, ?, ?)", assignments)
            c.execute("INSERT INTO audit (at, actor, action, detail) VALUES (?, 'cli', 'sample', ?)", (now, f"{len(units)} units, {len(assignments)} tasks"))

        db._tx(write)
        return db

    # ------------------------------------------------------------------ meta
    def meta(self, key: str, default: object = None) -> Any:
        rows = self._q("SELECT value FROM meta WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else default

    def all_meta(self) -> dict[str, Any]:
        return {k: json.loads(v) for k, v in self._q("SELECT key, value FROM meta") if k != "secret_key"}

    @property
    def rubric(self) -> ReviewRubric:
        return get_rubric(self.meta("rubric"))

    def secret_key(self) -> str:
        key = self.meta("secret_key")
        if not key:
            raise ReviewError(f"{self.path} has no secret key")
        return key

    # ------------------------------------------------------------------ reviewers
    def reviewer(self, name: str) -> Reviewer | None:
        rows = self._q("SELECT name, admin, revoked, epoch, pw_hash IS NOT NULL FROM reviewers WHERE name = ?", (name,))
        if not rows:
            return None
        n, admin, revoked, epoch, has_pw = rows[0]
        return Reviewer(n, bool(admin), revoked is not None, int(epoch), bool(has_pw))

    def reviewers(self) -> list[Reviewer]:
        return [
            Reviewer(n, bool(a), r is not None, int(e), bool(p))
            for n, a, r, e, p in self._q("SELECT name, admin, revoked, epoch, pw_hash IS NOT NULL FROM reviewers ORDER BY name")
        ]

    def add_reviewer(self, name: str, *, admin: bool = False, reset: bool = False) -> str:
        """Give a reviewer a new password (returned once, stored as a scrypt hash) and reinstate
        them; a new name is added (with no tasks). A name that already has a password needs
        `reset` (which also ends their sessions)."""
        name = valid_name(name)
        password = new_password()
        pw_hash = hash_password(password)
        now = time.time()

        def write(c: sqlite3.Connection) -> None:
            row = c.execute("SELECT pw_hash, revoked FROM reviewers WHERE name = ?", (name,)).fetchone()
            if row is None:
                c.execute("INSERT INTO reviewers (name, pw_hash, admin, created) VALUES (?, ?, ?, ?)", (name, pw_hash, int(admin), now))
            else:
                if row[0] is not None and not reset:
                    raise ReviewError(f"reviewer '{name}' already has a password (--reset issues a new one and ends their sessions)")
                c.execute(
                    "UPDATE reviewers SET pw_hash = ?, revoked = NULL, epoch = epoch + 1, admin = MAX(admin, ?) WHERE name = ?", (pw_hash, int(admin), name)
                )
            c.execute(
                "INSERT INTO audit (at, actor, action, detail) VALUES (?, 'cli', 'add-reviewer', ?)",
                (now, name + (" (admin)" if admin else "") + (" (reset)" if row is not None and row[0] is not None else "")),
            )

        self._tx(write)
        return password

    def revoke(self, name: str, actor: str = "cli") -> None:
        """Revoke a reviewer: their sessions end at once and they cannot sign in; their ratings stay."""

        def write(c: sqlite3.Connection) -> None:
            if c.execute("SELECT 1 FROM reviewers WHERE name = ?", (name,)).fetchone() is None:
                raise ReviewError(f"no reviewer '{name}'")
            c.execute("UPDATE reviewers SET revoked = ?, epoch = epoch + 1 WHERE name = ?", (time.time(), name))
            c.execute("INSERT INTO audit (at, actor, action, detail) VALUES (?, ?, 'revoke', ?)", (time.time(), actor, name))

        self._tx(write)

    def end_sessions(self, name: str) -> None:
        self._tx(lambda c: c.execute("UPDATE reviewers SET epoch = epoch + 1 WHERE name = ?", (name,)))

    def check_password(self, name: str, password: str) -> Reviewer | None:
        """The reviewer when the password is theirs and they are not revoked (one scrypt either way)."""
        rows = self._q("SELECT pw_hash FROM reviewers WHERE name = ?", (name,))
        stored = rows[0][0] if rows else None
        ok = verify_password(password, stored)
        r = self.reviewer(name) if ok else None
        return r if r is not None and not r.revoked else None

    # ------------------------------------------------------------------ tasks
    _TASK = """SELECT t.task_id, t.unit_id, t.reviewer, t.slot, t.position, r.status, r.vals, r.flags, r.comment
               FROM tasks t LEFT JOIN ratings r ON r.task_id = t.task_id"""

    @staticmethod
    def _task(row: tuple, display: str | None = None) -> Task:
        tid, uid, rev, slot, pos, status, vals, flags, comment = row[:9]
        return Task(
            int(tid),
            uid,
            rev,
            int(slot),
            int(pos),
            status,
            json.loads(vals) if vals else {},
            json.loads(flags) if flags else [],
            comment or "",
            json.loads(display) if display else None,
        )

    def tasks_for(self, reviewer: str) -> list[Task]:
        return [self._task(r) for r in self._q(self._TASK + " WHERE t.reviewer = ? ORDER BY t.position", (reviewer,))]

    def task(self, task_id: int, reviewer: str) -> Task | None:
        """The task, with what its reviewer is shown, only when it is this reviewer's."""
        rows = self._q(
            """SELECT t.task_id, t.unit_id, t.reviewer, t.slot, t.position, r.status, r.vals, r.flags, r.comment, u.display
                          FROM tasks t JOIN units u ON u.unit_id = t.unit_id LEFT JOIN ratings r ON r.task_id = t.task_id
                          WHERE t.task_id = ? AND t.reviewer = ?""",
            (int(task_id), reviewer),
        )
        return self._task(rows[0], rows[0][9]) if rows else None

    def next_task(self, reviewer: str, after: int | None = None) -> Task | None:
        """The first task to do (after position `after`, wrapping), then the first skipped one."""
        tasks = self.tasks_for(reviewer)
        todo = [t for t in tasks if t.status is None]
        if after is not None:
            later = [t for t in todo if t.position > after]
            todo = later + [t for t in todo if t.position <= after]
        if todo:
            return todo[0]
        skipped = [t for t in tasks if t.status == "skipped"]
        if after is not None:
            later = [t for t in skipped if t.position > after]
            skipped = later + [t for t in skipped if t.position <= after]
        return skipped[0] if skipped else None

    def submit(self, task_id: int, reviewer: str, status: str, values: dict[str, str], flags: list[str], comment: str) -> bool:
        """Store a rating (or a skip) for the reviewer's own task, in one committed transaction;
        False when the task is not theirs (nothing is written)."""
        if status not in ("rated", "skipped"):
            raise ValueError(f"status must be rated or skipped, not {status!r}")
        now = time.time()
        vals, fl = json.dumps(values, sort_keys=True), json.dumps(sorted(flags))

        def write(c: sqlite3.Connection) -> bool:
            if c.execute("SELECT 1 FROM tasks WHERE task_id = ? AND reviewer = ?", (int(task_id), reviewer)).fetchone() is None:
                return False
            c.execute(
                """INSERT INTO ratings (task_id, status, vals, flags, comment, updated, revision) VALUES (?, ?, ?, ?, ?, ?, 1)
                         ON CONFLICT(task_id) DO UPDATE SET status = excluded.status, vals = excluded.vals, flags = excluded.flags,
                         comment = excluded.comment, updated = excluded.updated, revision = ratings.revision + 1""",
                (int(task_id), status, vals, fl, comment, now),
            )
            c.execute(
                "INSERT INTO rating_log (task_id, reviewer, status, vals, flags, comment, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (int(task_id), reviewer, status, vals, fl, comment, now),
            )
            return True

        return self._tx(write)

    def progress(self, reviewer: str) -> dict[str, int]:
        rows = self._q(
            """SELECT COUNT(*), SUM(r.status = 'rated'), SUM(r.status = 'skipped') FROM tasks t
                          LEFT JOIN ratings r ON r.task_id = t.task_id WHERE t.reviewer = ?""",
            (reviewer,),
        )
        total, rated, skipped = rows[0]
        total, rated, skipped = int(total or 0), int(rated or 0), int(skipped or 0)
        return {"total": total, "rated": rated, "skipped": skipped, "todo": total - rated - skipped}

    # ------------------------------------------------------------------ analysis
    def units(self) -> dict[str, UnitRow]:
        return {
            uid: UnitRow(uid, item, json.loads(s), json.loads(d), json.loads(h))
            for uid, item, s, d, h in self._q("SELECT unit_id, item_id, strata, display, hidden FROM units ORDER BY ord")
        }

    def ratings(self) -> list[dict[str, Any]]:
        """Every task with its rating (None status: not yet rated), unblinded, for analysis."""
        out = []
        for tid, uid, rev, slot, status, vals, flags, comment, updated, revision in self._q(
            """SELECT t.task_id, t.unit_id, t.reviewer, t.slot, r.status, r.vals, r.flags, r.comment, r.updated, r.revision
                   FROM tasks t LEFT JOIN ratings r ON r.task_id = t.task_id ORDER BY t.unit_id, t.slot"""
        ):
            out.append(
                {
                    "task_id": tid,
                    "unit_id": uid,
                    "reviewer": rev,
                    "slot": slot,
                    "status": status,
                    "values": json.loads(vals) if vals else {},
                    "flags": json.loads(flags) if flags else [],
                    "comment": comment or "",
                    "updated": updated,
                    "revision": revision,
                }
            )
        return out
