"""The store's tables and the migrations that bring a store written by an earlier version up to
them. Every store file ever written stays readable: a writer migrates it in place when it opens
it, a reader (`Store.read_only`) migrates a copy in memory and never changes the file."""

from __future__ import annotations

import sqlite3

from .codes import CALL_STATUSES_SQL, SCORE_STATUSES_SQL

SCHEMA = f"""
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
    status TEXT NOT NULL CHECK (status IN {CALL_STATUSES_SQL}),
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
    status TEXT NOT NULL CHECK (status IN {SCORE_STATUSES_SQL}),
    detail TEXT,
    value REAL,
    PRIMARY KEY (key, scorer)
);
CREATE TABLE IF NOT EXISTS batches (
    batch_id TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    file_hash TEXT NOT NULL,
    path TEXT NOT NULL,
    remote_id TEXT,
    status TEXT NOT NULL,
    detail TEXT,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS batch_keys (
    batch_id TEXT NOT NULL,
    key TEXT NOT NULL,
    PRIMARY KEY (batch_id, key)
);
CREATE INDEX IF NOT EXISTS batch_keys_key ON batch_keys(key);
CREATE TABLE IF NOT EXISTS batch_answers (
    key TEXT PRIMARY KEY,
    batch_id TEXT NOT NULL,
    rate REAL
);
"""

#: every table SCHEMA makes (a store from before some of them is read through a migrated copy)
TABLES = frozenset({"runs", "requests", "units", "calls", "unit_calls", "scores", "batches", "batch_keys", "batch_answers"})

# Stores from before `truncated` (a reply cut at its budget before an answer): the scores table is
# rebuilt with the wider status check (SQLite cannot change a CHECK in place); its rows are kept.
_MIGRATE_SCORES = f"""
ALTER TABLE scores RENAME TO scores_v1;
CREATE TABLE scores (
    key TEXT NOT NULL, scorer TEXT NOT NULL, label TEXT,
    status TEXT NOT NULL CHECK (status IN {SCORE_STATUSES_SQL}),
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


def tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}


def _table_sql(conn: sqlite3.Connection, table: str) -> str:
    row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    return row[0] if row and row[0] else ""


def migration_script(conn: sqlite3.Connection) -> str:
    """The statements that bring a store written before a migration up to SCHEMA ("" when none)."""
    units, scores, calls = _columns(conn, "units"), _columns(conn, "scores"), _columns(conn, "calls")
    script = ""
    if "defense" in units:
        script += _MIGRATE_UNITS
    if scores and "value" not in scores:
        script += "ALTER TABLE scores ADD COLUMN value REAL;"
    if scores and "'truncated'" not in _table_sql(conn, "scores"):
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


def migrate(conn: sqlite3.Connection) -> None:
    """Migrate a store in place (one transaction) and create what SCHEMA has and it lacks."""
    script = migration_script(conn)
    if script:
        conn.executescript(f"BEGIN IMMEDIATE; {script} COMMIT;")
    conn.executescript(SCHEMA)
