"""The SQLite store of a run directory: the plan (units), the requests, the calls' outcomes and
their scores. It is the cache and the resume point: a call whose outcome is stored `ok` is never
made again; an `error` outcome is recorded (and counted) but retried by the next run.

One writer owns the connection (WAL); rows arrive in batches and each batch is one transaction,
so a run killed at any point leaves only whole rows behind. A store that cannot be written (a full
disk, a read-only file) raises StoreWriteError, one line naming the cause and the path; what was
committed before stays.

A unit is one planned answer: (model, unit id) -> request key, with its item, probe, condition,
setting (a named mitigation, `none` without one) and scoring. `units.run` is the last run that
planned the unit: a run's results describe the units it planned, not every unit ever stored.
Stores written before settings and runs existed are migrated in place when opened.

A setting that makes a call before a unit's answer (a monitor's note) links the unit to that
call in `unit_calls` (model, unit id) -> (key, role), written with the plan; the call itself is an
ordinary row of `calls`. `linked_usage` and `setting_costs` read what those calls spent, so a
setting's cost counts every call it made."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import MedresError
from .fileio import storable_text
from .store_joins import JoinedReads, ViewReads

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    started REAL NOT NULL,
    config TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS requests (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    messages TEXT NOT NULL,
    params TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS units (
    model TEXT NOT NULL,
    unit_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    probe_id TEXT,
    condition TEXT NOT NULL,
    setting TEXT NOT NULL DEFAULT 'none',
    scoring TEXT NOT NULL,
    key TEXT NOT NULL,
    run TEXT,
    epoch INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (model, unit_id)
);
CREATE INDEX IF NOT EXISTS units_key ON units(key);
CREATE INDEX IF NOT EXISTS units_run ON units(run);
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'error')),
    permanent INTEGER NOT NULL DEFAULT 0,
    text TEXT,
    top_logprobs TEXT,
    finish_reason TEXT,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cost REAL,
    latency_s REAL,
    attempts INTEGER NOT NULL DEFAULT 1,
    error TEXT,
    updated REAL NOT NULL,
    waited_s REAL NOT NULL DEFAULT 0,
    tool_calls TEXT,
    reasoning_tokens INTEGER
);
CREATE TABLE IF NOT EXISTS unit_calls (
    model TEXT NOT NULL,
    unit_id TEXT NOT NULL,
    key TEXT NOT NULL,
    role TEXT NOT NULL,
    PRIMARY KEY (model, unit_id, role)
);
CREATE INDEX IF NOT EXISTS unit_calls_key ON unit_calls(key);
CREATE TABLE IF NOT EXISTS scores (
    key TEXT NOT NULL,
    scorer TEXT NOT NULL,
    label TEXT,
    status TEXT NOT NULL CHECK (status IN ('valid', 'invalid', 'truncated', 'unscored')),
    detail TEXT,
    value REAL,
    PRIMARY KEY (key, scorer)
);
"""

#: every table SCHEMA makes (a store from before some of them is read through a migrated copy)
_TABLES = {"runs", "requests", "units", "calls", "unit_calls", "scores"}

# Stores from before `truncated` (a reply cut at its budget before an answer): the scores table is
# rebuilt with the wider status check (SQLite cannot change a CHECK in place); its rows are kept.
_MIGRATE_SCORES = """
ALTER TABLE scores RENAME TO scores_v1;
CREATE TABLE scores (
    key TEXT NOT NULL, scorer TEXT NOT NULL, label TEXT,
    status TEXT NOT NULL CHECK (status IN ('valid', 'invalid', 'truncated', 'unscored')),
    detail TEXT, value REAL, PRIMARY KEY (key, scorer)
);
INSERT INTO scores SELECT key, scorer, label, status, detail, value FROM scores_v1;
DROP TABLE scores_v1;
"""

# Stores from before settings: `units.defense` 0/1 becomes setting none/caution (unit ids too,
# so a rerun finds its units), and units get the `run` column; scores get `value`; units get `epoch`
# (0: every store from before `--epochs` planned one repeat).
_MIGRATE_UNITS = """
ALTER TABLE units RENAME TO units_v1;
CREATE TABLE units (
    model TEXT NOT NULL, unit_id TEXT NOT NULL, item_id TEXT NOT NULL, probe_id TEXT,
    condition TEXT NOT NULL, setting TEXT NOT NULL DEFAULT 'none', scoring TEXT NOT NULL,
    key TEXT NOT NULL, run TEXT, epoch INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (model, unit_id)
);
INSERT INTO units SELECT model, replace(replace(unit_id, '|nodef|', '|none|'), '|def|', '|caution|'), item_id,
    probe_id, condition, CASE defense WHEN 1 THEN 'caution' ELSE 'none' END, scoring, key, NULL, 0 FROM units_v1;
DROP TABLE units_v1;
"""


@dataclass(frozen=True)
class UnitRow:
    model: str
    unit_id: str
    item_id: str
    probe_id: str | None
    condition: str
    setting: str
    scoring: str
    key: str
    epoch: int = 0  # the repeat of this unit (`medres eval --epochs`): another decoding seed


@dataclass(frozen=True)
class CallRow:
    key: str
    model: str
    status: str  # ok | error
    permanent: bool = False
    text: str | None = None
    top_logprobs: Any = None
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    latency_s: float | None = None
    attempts: int = 1
    error: str | None = None
    waited_s: float = 0.0  # seconds spent waiting between its attempts (backoff and Retry-After)
    tool_calls: Any = None  # the tools an agent's step called (a list, stored as JSON), or None
    reasoning_tokens: int | None = None  # as the provider's usage reports them; None: not reported


@dataclass(frozen=True)
class ScoreRow:
    key: str
    scorer: str
    label: str | None
    status: str  # valid | invalid | unscored
    detail: Any = None
    value: float | None = None


@dataclass(frozen=True)
class RunConfig:
    """A run's configuration as recorded (`runs.config`): `data` is the JSON object as stored
    (empty when unreadable); the properties read the parts a reader of the store needs (an absent
    part is empty)."""

    run_id: str
    data: dict[str, Any]

    @property
    def options(self) -> dict[str, Any]:
        return self.data.get("options") or {}

    @property
    def model_labels(self) -> list[Any]:
        """The labels of the run's models, in the order the run listed them."""
        return [m.get("label") for m in self.data.get("models") or []]

    @property
    def prompts(self) -> dict[str, Any]:
        return self.data.get("prompts") or {}


class StoreWriteError(MedresError):
    """The store cannot be opened or written: the cause (a full disk, ...) and the path."""

    def __init__(self, path: Path, err: BaseException, action: str = "write"):
        self.path, self.cause = path, err
        cause = str(err) or type(err).__name__
        if isinstance(err, OSError) and err.strerror:
            cause = err.strerror + (f" ({err.filename})" if err.filename and str(err.filename) != str(path) else "")
        kept = "; what was committed before is kept: rerun the same command to resume once it can be written" if action == "write" else ""
        super().__init__(f"cannot {action} the store {path}: {cause}{kept}")


def _storable(text: str | None) -> str | None:
    return None if text is None else storable_text(text)


def _is_bug(e: sqlite3.Error) -> bool:
    """An error of the statements themselves (not of the file): shown as is."""
    return isinstance(e, (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError, sqlite3.DataError))


class Store(JoinedReads, ViewReads):
    """A run directory's store; the readers of the units x calls x scores join come from
    `JoinedReads` and the evidence viewer's indexed readers from `ViewReads` (store_joins.py)."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        conn = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = self.conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self._migrate()
            self.conn.executescript(SCHEMA)
        except (OSError, sqlite3.Error) as e:
            if isinstance(e, sqlite3.Error) and _is_bug(e):
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
        from .lock import held

        self = cls.__new__(cls)
        self.path, self.run_id = Path(path), None
        if not self.path.is_file():
            raise StoreWriteError(self.path, FileNotFoundError(2, "no such file", str(self.path)), "open")
        wal = self.path.with_name(self.path.name + "-wal")
        mode = "mode=ro" if wal.exists() or held(self.path.parent) else "immutable=1"
        conn = None
        try:
            conn = self.conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?{mode}", uri=True, isolation_level=None, check_same_thread=False)
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not {"units", "calls"} <= tables:
                what = "an empty file" if not tables else f"no units and calls tables (has: {', '.join(sorted(tables))})"
                raise StoreWriteError(self.path, ValueError(f"not a run's store ({what})"), "open")
            script = self._migration_script()
            if script or not tables >= _TABLES:
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

    def _columns(self, table: str) -> set[str]:
        return {r[1] for r in self.conn.execute(f"PRAGMA table_info({table})")}

    def _table_sql(self, table: str) -> str:
        row = self.conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
        return row[0] if row and row[0] else ""

    def _migrate(self) -> None:
        script = self._migration_script()
        if script:
            self.conn.executescript(f"BEGIN IMMEDIATE; {script} COMMIT;")

    def _migration_script(self) -> str:
        """The statements that bring a store written before a migration up to SCHEMA ("" when none)."""
        units, scores, calls = self._columns("units"), self._columns("scores"), self._columns("calls")
        script = ""
        if "defense" in units:
            script += _MIGRATE_UNITS
        if scores and "value" not in scores:
            script += "ALTER TABLE scores ADD COLUMN value REAL;"
        if scores and "'truncated'" not in self._table_sql("scores"):
            script += _MIGRATE_SCORES
        if units and "epoch" not in units and "defense" not in units:
            script += "ALTER TABLE units ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;"
        if calls and "waited_s" not in calls:
            script += "ALTER TABLE calls ADD COLUMN waited_s REAL NOT NULL DEFAULT 0;"
        if calls and "tool_calls" not in calls:
            script += "ALTER TABLE calls ADD COLUMN tool_calls TEXT;"
        if calls and "reasoning_tokens" not in calls:  # stores from before: every call's count is not reported
            script += "ALTER TABLE calls ADD COLUMN reasoning_tokens INTEGER;"
        return script

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ writes (one writer)
    def _tx(self, statements: Iterable[tuple[str, Sequence[Sequence[Any]]]]) -> None:
        c = self.conn
        try:
            c.execute("BEGIN IMMEDIATE")
            try:
                for sql, rows in statements:
                    if rows:
                        c.executemany(sql, rows)
                c.execute("COMMIT")
            except BaseException:
                # after some errors (a full disk) SQLite has rolled back already: a second
                # rollback would fail and hide the cause
                if c.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        c.execute("ROLLBACK")
                raise
        except sqlite3.Error as e:
            if _is_bug(e):
                raise
            raise StoreWriteError(self.path, e) from e

    def record_run(self, run_id: str, config: dict[str, Any]) -> None:
        """Record a run; the units planned from now on through this store belong to it."""
        self._tx([("INSERT OR REPLACE INTO runs VALUES (?, ?, ?)", [(run_id, time.time(), json.dumps(config, default=str))])])
        self.run_id = run_id

    def run_config(self, run_id: str) -> RunConfig | None:
        """The configuration a run recorded (None: no such run)."""
        row = self.conn.execute("SELECT config FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            return None
        try:
            data = json.loads(row[0])
        except ValueError:
            data = None
        return RunConfig(run_id, data if isinstance(data, dict) else {})

    def run_settled(self, run_id: str) -> bool:
        """Whether every unit the run planned has an ok call and a valid, invalid or truncated score
        under the unit's scoring (no error, nothing missing, nothing unscored): a rerun would change
        nothing."""
        if not self.conn.execute("SELECT 1 FROM units WHERE run = ? LIMIT 1", (run_id,)).fetchone():
            return False
        row = self.conn.execute(
            "SELECT 1 FROM units u LEFT JOIN calls c ON c.key = u.key LEFT JOIN scores s ON s.key = u.key AND s.scorer = u.scoring "
            "WHERE u.run = ? AND (c.status IS NOT 'ok' OR s.status IS NULL OR s.status NOT IN ('valid', 'invalid', 'truncated')) LIMIT 1",
            (run_id,),
        ).fetchone()
        return row is None

    def retag_units(self, old_run: str, new_run: str) -> int:
        """The units of `old_run` become the units of `new_run` (a rerun that plans exactly them)."""
        with self.conn:
            return self.conn.execute("UPDATE units SET run = ? WHERE run = ?", (new_run, old_run)).rowcount

    def run_keys(self, run_id: str) -> int:
        """How many distinct calls the run's units stand on: their own keys and the keys of the
        calls linked to them (a monitor's note)."""
        return int(
            self.conn.execute(
                "SELECT COUNT(*) FROM (SELECT key FROM units WHERE run = ? UNION "
                "SELECT l.key FROM unit_calls l JOIN units u ON u.model = l.model AND u.unit_id = l.unit_id WHERE u.run = ?)",
                (run_id, run_id),
            ).fetchone()[0]
        )

    def latest_run(self) -> str | None:
        """The most recent run that planned units (None for a store without run-tagged units)."""
        row = self.conn.execute(
            "SELECT r.run_id FROM runs r WHERE EXISTS (SELECT 1 FROM units u WHERE u.run = r.run_id) ORDER BY r.started DESC, r.rowid DESC LIMIT 1"
        ).fetchone()
        return None if row is None else row[0]

    def add_plan(self, units: Sequence[UnitRow], requests: Sequence[tuple[str, str, list, dict]], links: Sequence[tuple[str, str, str, str]] = ()) -> None:
        """Insert plan rows (tagged with the current run), request payloads (idempotent) and the
        links (model, unit id, call key, role) of units to the calls a setting makes before their
        answer, in one transaction."""
        self._tx(
            [
                (
                    "INSERT OR IGNORE INTO requests VALUES (?, ?, ?, ?)",
                    [(k, m, json.dumps(msgs, ensure_ascii=False), json.dumps(params, sort_keys=True)) for k, m, msgs, params in requests],
                ),
                (
                    "INSERT OR REPLACE INTO units (model, unit_id, item_id, probe_id, condition, setting, scoring, key, run, epoch) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [(u.model, u.unit_id, u.item_id, u.probe_id, u.condition, u.setting, u.scoring, u.key, self.run_id, u.epoch) for u in units],
                ),
                ("INSERT OR REPLACE INTO unit_calls VALUES (?, ?, ?, ?)", list(links)),
            ]
        )

    def write_results(self, calls: Sequence[CallRow], scores: Sequence[ScoreRow]) -> None:
        """One transaction per batch. An ok call is never overwritten by a later error. Every text
        is stored as UTF-8 can hold it (`storable_text`), so no row can fail its batch on encoding."""
        now = time.time()
        self._tx(
            [
                (
                    """INSERT INTO calls (key, model, status, permanent, text, top_logprobs, finish_reason, prompt_tokens,
                                          completion_tokens, cost, latency_s, attempts, error, updated, waited_s, tool_calls,
                                          reasoning_tokens)
                       VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
                       ON CONFLICT(key) DO UPDATE SET
                         status=excluded.status, permanent=excluded.permanent, text=excluded.text,
                         top_logprobs=excluded.top_logprobs, finish_reason=excluded.finish_reason,
                         prompt_tokens=excluded.prompt_tokens, completion_tokens=excluded.completion_tokens,
                         cost=excluded.cost, latency_s=excluded.latency_s,
                         attempts=calls.attempts + excluded.attempts, error=excluded.error, updated=excluded.updated,
                         waited_s=calls.waited_s + excluded.waited_s, tool_calls=excluded.tool_calls,
                         reasoning_tokens=excluded.reasoning_tokens
                       WHERE calls.status != 'ok'""",
                    [
                        (
                            c.key,
                            c.model,
                            c.status,
                            int(c.permanent),
                            _storable(c.text),
                            None if c.top_logprobs is None else json.dumps(c.top_logprobs),
                            c.finish_reason,
                            c.prompt_tokens,
                            c.completion_tokens,
                            c.cost,
                            c.latency_s,
                            c.attempts,
                            _storable(c.error),
                            now,
                            c.waited_s,
                            None if c.tool_calls is None else _storable(json.dumps(c.tool_calls, ensure_ascii=False)),
                            c.reasoning_tokens,
                        )
                        for c in calls
                    ],
                ),
                (
                    "INSERT OR REPLACE INTO scores VALUES (?, ?, ?, ?, ?, ?)",
                    [(s.key, s.scorer, _storable(s.label), s.status, None if s.detail is None else json.dumps(s.detail), s.value) for s in scores],
                ),
            ]
        )

    # ------------------------------------------------------------------ reads
    def finished_keys(self, keys: Iterable[str] | None = None) -> set[str]:
        if keys is None:
            return {r[0] for r in self.conn.execute("SELECT key FROM calls WHERE status = 'ok'")}
        keys = list(keys)
        done: set[str] = set()
        for i in range(0, len(keys), 900):
            chunk = keys[i : i + 900]
            q = f"SELECT key FROM calls WHERE status = 'ok' AND key IN ({','.join('?' * len(chunk))})"
            done.update(r[0] for r in self.conn.execute(q, chunk))
        return done

    def count(self, table: str, where: str = "", args: Sequence[Any] = ()) -> int:
        return int(self.conn.execute(f"SELECT COUNT(*) FROM {table} {where}", args).fetchone()[0])

    def call(self, key: str) -> dict[str, Any] | None:
        cur = self.conn.execute("SELECT * FROM calls WHERE key = ?", (key,))
        row = cur.fetchone()
        return None if row is None else dict(zip([d[0] for d in cur.description], row))

    def score(self, key: str, scorer: str) -> dict[str, Any] | None:
        """One stored score (status, label, detail, value), or None when that scorer never scored the key."""
        row = self.conn.execute("SELECT status, label, detail, value FROM scores WHERE key = ? AND scorer = ?", (key, scorer)).fetchone()
        if row is None:
            return None
        return {"status": row[0], "label": row[1], "detail": json.loads(row[2]) if row[2] else None, "value": row[3]}

    def scored(self, keys: Iterable[str], scorer: str) -> dict[str, str]:
        """key -> the status of its score under `scorer`, for the given keys that have one."""
        keys = list(keys)
        out: dict[str, str] = {}
        for i in range(0, len(keys), 900):
            chunk = keys[i : i + 900]
            q = f"SELECT key, status FROM scores WHERE scorer = ? AND key IN ({','.join('?' * len(chunk))})"
            out.update(self.conn.execute(q, [scorer, *chunk]).fetchall())
        return out

    def replies(self, keys: Iterable[str]) -> dict[str, tuple[str, str | None]]:
        """key -> (reply text, finish reason) of each given key whose call is stored `ok`."""
        keys = list(keys)
        out: dict[str, tuple[str, str | None]] = {}
        for i in range(0, len(keys), 900):
            chunk = keys[i : i + 900]
            q = f"SELECT key, text, finish_reason FROM calls WHERE status = 'ok' AND key IN ({','.join('?' * len(chunk))})"
            out.update((k, (t or "", f)) for k, t, f in self.conn.execute(q, chunk))
        return out

    def reading(self, run: str | None = "latest") -> dict[str, dict[str, dict[str, Any]]]:
        """model -> setting -> how the replies of a run's units (default: the latest; None: every
        unit) were read: `replies` (units whose call is stored ok), `read` (a valid label),
        `extracted` (of those, labels an extraction model supplied: the score's detail says
        read_by "extract"), `invalid`, `truncated`, `unscored` (a reply with no score row is read
        as the results frame reads it: `truncated` when it was cut at its budget, else `invalid`),
        `budget`: the largest reply budget (max_tokens or max_completion_tokens) asked of a
        truncated reply (None when none was cut), and `unread_why`: the invalid and truncated
        replies by the reason the reader gave (the score detail's `unread`; "unrecorded" where none
        was stored)."""
        if run == "latest":
            run = self.latest_run()
        where, args = ("AND u.run = ?", (run,)) if run is not None else ("", ())
        status = "(CASE WHEN s.status IS NOT NULL THEN s.status WHEN c.finish_reason = 'length' THEN 'truncated' ELSE 'invalid' END)"
        joined = "FROM units u JOIN calls c ON c.key = u.key AND c.status = 'ok' LEFT JOIN scores s ON s.key = u.key AND s.scorer = u.scoring"
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for model, setting, st, read_by, why, n in self.conn.execute(
            f"SELECT u.model, u.setting, {status}, json_extract(s.detail, '$.read_by'), json_extract(s.detail, '$.unread'), COUNT(*) {joined} "
            f"WHERE 1 {where} GROUP BY 1, 2, 3, 4, 5",
            args,
        ):
            b = out.setdefault(model, {}).setdefault(
                setting, {"replies": 0, "read": 0, "extracted": 0, "invalid": 0, "truncated": 0, "unscored": 0, "budget": None, "unread_why": {}}
            )
            b["replies"] += n
            b["read" if st == "valid" else st] += n
            if st == "valid" and read_by == "extract":
                b["extracted"] += n
            if st in ("invalid", "truncated"):
                reason = str(why) if why else "unrecorded"
                b["unread_why"][reason] = b["unread_why"].get(reason, 0) + n
        for model, setting, budget in self.conn.execute(
            f"""SELECT u.model, u.setting, MAX(COALESCE(json_extract(r.params, '$.max_tokens'),
                                                       json_extract(r.params, '$.max_completion_tokens')))
                {joined} JOIN requests r ON r.key = u.key WHERE {status} = 'truncated' {where} GROUP BY 1, 2""",
            args,
        ):
            if model in out and setting in out[model]:
                out[model][setting]["budget"] = None if budget is None else int(budget)
        return out

    def sent_params(self, run: str | None = "latest") -> list[dict[str, Any]]:
        """The decoding parameters the stored requests were sent with, one row per (kind, model,
        params): kind `answer` (the units of a run, default the latest; None: every unit), a linked
        call's role (`monitor`, ...), or `scorer` for a call no unit plans (a judge's verdict or an
        extraction, made from stored replies; `system` holds its system prompt so the caller can
        tell which); `params` as sent (a dict) and `calls`, the number of requests."""
        if run == "latest":
            run = self.latest_run()
        where, args = ("WHERE u.run = ?", (run,)) if run is not None else ("", ())
        out: list[dict[str, Any]] = []
        for model, params, n in self.conn.execute(
            f"SELECT r.model, r.params, COUNT(DISTINCT r.key) FROM units u JOIN requests r ON r.key = u.key {where} GROUP BY 1, 2 ORDER BY 1, 2", args
        ):
            out.append({"kind": "answer", "model": model, "params": json.loads(params), "system": None, "calls": n})
        for role, model, params, n in self.conn.execute(
            f"""SELECT l.role, r.model, r.params, COUNT(DISTINCT r.key) FROM unit_calls l
                    JOIN units u ON u.model = l.model AND u.unit_id = l.unit_id JOIN requests r ON r.key = l.key {where}
                    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3""",
            args,
        ):
            out.append({"kind": role, "model": model, "params": json.loads(params), "system": None, "calls": n})
        first = "CASE WHEN json_extract(r.messages, '$[0].role') = 'system' THEN json_extract(r.messages, '$[0].content') END"
        for model, params, system, n in self.conn.execute(
            f"""SELECT r.model, r.params, {first}, COUNT(*) FROM requests r
                    WHERE NOT EXISTS (SELECT 1 FROM units u WHERE u.key = r.key)
                      AND NOT EXISTS (SELECT 1 FROM unit_calls l WHERE l.key = r.key)
                    GROUP BY 1, 2, 3 ORDER BY 1, 2"""
        ):
            out.append({"kind": "scorer", "model": model, "params": json.loads(params), "system": system, "calls": n})
        return out

    def request(self, key: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT model, messages, params FROM requests WHERE key = ?", (key,)).fetchone()
        return None if row is None else {"model": row[0], "messages": json.loads(row[1]), "params": json.loads(row[2])}

    def usage_for(self, keys: Iterable[str]) -> dict[str, Any]:
        """Tokens and cost summed over the given request keys (cost None when no call had a price)."""
        keys = list(keys)
        pt = ct = 0
        cost: float | None = None
        for i in range(0, len(keys), 900):
            chunk = keys[i : i + 900]
            q = f"SELECT prompt_tokens, completion_tokens, cost FROM calls WHERE key IN ({','.join('?' * len(chunk))})"
            for p, c, k in self.conn.execute(q, chunk):
                pt += p or 0
                ct += c or 0
                if k is not None:
                    cost = (cost or 0.0) + k
        return {"prompt_tokens": pt, "completion_tokens": ct, "cost": cost}

    def facts(self) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """(counts, usage) of a store in two scans. usage: per model, calls,
        prompt and completion tokens, cost (None when no call was priced) and errors."""
        con = self.conn
        usage: dict[str, dict[str, Any]] = {}
        ok = err = perm = 0
        for model, status, permanent, n, pt, ct, cost, priced in con.execute(
            """SELECT model, status, permanent, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens), SUM(cost),
                      COUNT(cost) FROM calls GROUP BY model, status, permanent"""
        ):
            u = usage.setdefault(model, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost": None, "errors": 0})
            u["calls"] += n
            u["prompt_tokens"] += pt or 0
            u["completion_tokens"] += ct or 0
            if priced:
                u["cost"] = (u["cost"] or 0.0) + cost
            if status == "error":
                u["errors"] += n
                err += n
                perm += n if permanent else 0
            else:
                ok += n
        scores = dict(con.execute("SELECT status, COUNT(*) FROM scores GROUP BY status").fetchall())
        samples = (
            [r[0] for r in con.execute("SELECT error FROM calls WHERE status = 'error' AND error IS NOT NULL GROUP BY error ORDER BY COUNT(*) DESC LIMIT 5")]
            if err
            else []
        )
        counts = {
            "scores_valid": int(scores.get("valid", 0)),
            "scores_invalid": int(scores.get("invalid", 0)),
            "scores_truncated": int(scores.get("truncated", 0)),
            "scores_unscored": int(scores.get("unscored", 0)),
            "calls_ok": ok,
            "calls_error": err,
            "calls_error_permanent": perm,
            "error_samples": samples,
        }
        return counts, usage

    def usage(self) -> dict[str, dict[str, Any]]:
        """Per model: calls, prompt and completion tokens, cost (None when no call was priced), errors."""
        return self.facts()[1]

    def ok_texts(self, keys: Iterable[str]) -> dict[str, str]:
        """The reply text of each given key whose call is stored `ok` (keys without one are left out)."""
        keys = list(keys)
        out: dict[str, str] = {}
        for i in range(0, len(keys), 900):
            chunk = keys[i : i + 900]
            q = f"SELECT key, text FROM calls WHERE status = 'ok' AND key IN ({','.join('?' * len(chunk))})"
            out.update((k, t or "") for k, t in self.conn.execute(q, chunk))
        return out

    def call_times(self, keys: Iterable[str]) -> dict[str, tuple[float | None, int, int | None]]:
        """(latency in seconds, completion tokens, reasoning tokens or None when the provider
        reported none) of each given key whose call is stored `ok`."""
        keys = list(keys)
        out: dict[str, tuple[float | None, int, int | None]] = {}
        for i in range(0, len(keys), 900):
            chunk = keys[i : i + 900]
            q = f"SELECT key, latency_s, completion_tokens, reasoning_tokens FROM calls WHERE status = 'ok' AND key IN ({','.join('?' * len(chunk))})"
            out.update((k, (lat, int(ct or 0), None if rt is None else int(rt))) for k, lat, ct, rt in self.conn.execute(q, chunk))
        return out

    def turns(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """key -> {text, tool_calls (a list or None), finish_reason, prompt_tokens, completion_tokens}
        of each given key whose call is stored `ok` (an agent's steps)."""
        keys = list(keys)
        out: dict[str, dict[str, Any]] = {}
        for i in range(0, len(keys), 900):
            chunk = keys[i : i + 900]
            q = (
                "SELECT key, text, tool_calls, finish_reason, prompt_tokens, completion_tokens FROM calls "
                f"WHERE status = 'ok' AND key IN ({','.join('?' * len(chunk))})"
            )
            for k, text, tools, finish, pt, ct in self.conn.execute(q, chunk):
                out[k] = {
                    "text": text or "",
                    "tool_calls": None if tools is None else json.loads(tools),
                    "finish_reason": finish,
                    "prompt_tokens": pt or 0,
                    "completion_tokens": ct or 0,
                }
        return out

    def linked_texts(self, role: str, run: str | None = "latest") -> list[dict[str, Any]]:
        """The stored text of the call linked to each unit of a run (default: the latest; None:
        every unit) under `role` (an agent's `agent.trajectory`), one row per unit with a linked
        call stored ok: model, setting, unit_id, item_id, probe_id, condition, key (the unit's), text."""
        if run == "latest":
            run = self.latest_run()
        where, args = ("AND u.run = ?", (role, run)) if run is not None else ("", (role,))
        cols = ("model", "setting", "unit_id", "item_id", "probe_id", "condition", "key", "text")
        rows = self.conn.execute(
            f"""SELECT u.model, u.setting, u.unit_id, u.item_id, u.probe_id, u.condition, u.key, c.text
                FROM unit_calls l JOIN units u ON u.model = l.model AND u.unit_id = l.unit_id
                JOIN calls c ON c.key = l.key AND c.status = 'ok' WHERE l.role = ? {where} ORDER BY u.model, u.setting, u.unit_id""",
            args,
        )
        return [dict(zip(cols, r)) for r in rows]

    def request_messages(self, keys: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
        """key -> the messages stored with each given request key that has them."""
        keys = list(keys)
        out: dict[str, list[dict[str, Any]]] = {}
        for i in range(0, len(keys), 900):
            chunk = keys[i : i + 900]
            q = f"SELECT key, messages FROM requests WHERE key IN ({','.join('?' * len(chunk))})"
            out.update((k, json.loads(m)) for k, m in self.conn.execute(q, chunk))
        return out

    def linked_usage(self, run: str | None = "latest") -> list[dict[str, Any]]:
        """The calls a setting made before units' answers (a monitor's note), one row per (unit,
        linked call) of a run (default: the latest; None: every unit): model and setting (the
        unit's: the monitor's tokens count for the answering model's setting, whichever model
        wrote the note), item_id, probe_id, condition, role, key, caller (the model label that
        made the call), status (ok | error | None when not made), prompt_tokens,
        completion_tokens, cost (None: unpriced or not made) and calls (1 when made, else 0).

        Attribution is per unit, as the results frame gives each unit its answer call's tokens:
        a linked call two units share counts for each. This is the reader for a setting's cost
        per item (tokens and money per item): add these rows to the frame's own
        prompt_tokens / completion_tokens / cost of the same (model, setting, item_id)."""
        if run == "latest":
            run = self.latest_run()
        where, args = ("WHERE u.run = ?", (run,)) if run is not None else ("", ())
        cols = (
            "model",
            "setting",
            "item_id",
            "probe_id",
            "condition",
            "role",
            "key",
            "caller",
            "status",
            "prompt_tokens",
            "completion_tokens",
            "cost",
            "calls",
        )
        rows = self.conn.execute(
            f"""SELECT u.model, u.setting, u.item_id, u.probe_id, u.condition, l.role, l.key, c.model, c.status,
                       COALESCE(c.prompt_tokens, 0), COALESCE(c.completion_tokens, 0), c.cost,
                       CASE WHEN c.key IS NULL THEN 0 ELSE 1 END
                FROM unit_calls l JOIN units u ON u.model = l.model AND u.unit_id = l.unit_id
                LEFT JOIN calls c ON c.key = l.key {where} ORDER BY u.model, u.setting, u.unit_id, l.role""",
            args,
        )
        return [dict(zip(cols, r)) for r in rows]

    def setting_costs(self, run: str | None = "latest") -> dict[str, dict[str, dict[str, Any]]]:
        """model -> setting -> what the setting's units of a run (default: the latest; None: every
        unit) spent, per unit as the frame counts it: units, items, answer_prompt_tokens,
        answer_completion_tokens, answer_cost (the units' own calls), linked_prompt_tokens,
        linked_completion_tokens, linked_cost, linked_calls (calls made before the answers, e.g. a
        monitor's note), and prompt_tokens, completion_tokens, cost (all of them; cost None when
        no call was priced). Divide by `items` for the cost per item."""
        if run == "latest":
            run = self.latest_run()
        where, args = ("WHERE u.run = ?", (run,)) if run is not None else ("", ())
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for model, setting, units, items, pt, ct, cost, priced in self.conn.execute(
            f"""SELECT u.model, u.setting, COUNT(*), COUNT(DISTINCT u.item_id), SUM(COALESCE(c.prompt_tokens, 0)),
                       SUM(COALESCE(c.completion_tokens, 0)), SUM(c.cost), COUNT(c.cost)
                FROM units u LEFT JOIN calls c ON c.key = u.key {where} GROUP BY u.model, u.setting""",
            args,
        ):
            out.setdefault(model, {})[setting] = {
                "units": units,
                "items": items,
                "answer_prompt_tokens": pt or 0,
                "answer_completion_tokens": ct or 0,
                "answer_cost": cost if priced else None,
                "linked_prompt_tokens": 0,
                "linked_completion_tokens": 0,
                "linked_cost": None,
                "linked_calls": 0,
            }
        for model, setting, n, pt, ct, cost, priced in self.conn.execute(
            f"""SELECT u.model, u.setting, COUNT(c.key), SUM(COALESCE(c.prompt_tokens, 0)), SUM(COALESCE(c.completion_tokens, 0)),
                       SUM(c.cost), COUNT(c.cost)
                FROM unit_calls l JOIN units u ON u.model = l.model AND u.unit_id = l.unit_id
                LEFT JOIN calls c ON c.key = l.key {where} GROUP BY u.model, u.setting""",
            args,
        ):
            b = out[model][setting]
            b.update(linked_prompt_tokens=pt or 0, linked_completion_tokens=ct or 0, linked_cost=cost if priced else None, linked_calls=n)
        for per_setting in out.values():
            for b in per_setting.values():
                b["prompt_tokens"] = b["answer_prompt_tokens"] + b["linked_prompt_tokens"]
                b["completion_tokens"] = b["answer_completion_tokens"] + b["linked_completion_tokens"]
                costs = [c for c in (b["answer_cost"], b["linked_cost"]) if c is not None]
                b["cost"] = sum(costs) if costs else None
        return out

    def unit_statuses(self, run: str | None = "latest") -> dict[str, int]:
        """How many units of a run (default: the latest) stand at each status: their score's status
        (valid, invalid, unscored, ...) when scored, else `not_scored` (answered, its deferred score
        not made: a judge call not sent), `error` (the call failed) or `missing` (not called)."""
        if run == "latest":
            run = self.latest_run()
        rows = self.conn.execute(
            "SELECT COALESCE(s.status, CASE c.status WHEN 'error' THEN 'error' WHEN 'ok' THEN 'not_scored' ELSE 'missing' END), COUNT(*) FROM units u "
            "LEFT JOIN calls c ON c.key = u.key LEFT JOIN scores s ON s.key = u.key AND s.scorer = u.scoring WHERE u.run IS ? GROUP BY 1",
            (run,),
        )
        return {status: int(n) for status, n in rows}

    def score_reasons(self, status: str = "unscored", run: str | None = "latest") -> list[tuple[str, str, str, str, int]]:
        """(model, setting, condition, reason, count) of the units of a run (default: the latest;
        None: every unit) whose score has that status, one row per distinct reason (the score
        detail's `reason`, else '(no reason recorded)'), most frequent first."""
        if run == "latest":
            run = self.latest_run()
        where, args = ("AND u.run = ?", [status, run]) if run is not None else ("", [status])
        tally: dict[tuple[str, str, str, str], int] = {}
        for model, setting, condition, detail in self.conn.execute(
            f"""SELECT u.model, u.setting, u.condition, s.detail FROM units u
                JOIN scores s ON s.key = u.key AND s.scorer = u.scoring WHERE s.status = ? {where}""",
            args,
        ):
            try:
                reason = json.loads(detail).get("reason") if detail else None
            except (ValueError, AttributeError):
                reason = None
            key = (model, setting, condition, str(reason) if reason else "(no reason recorded)")
            tally[key] = tally.get(key, 0) + 1
        return sorted(((*k, n) for k, n in tally.items()), key=lambda r: (-r[4], r[:4]))
