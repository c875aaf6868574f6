"""The store's one writer: a run's record, its plan, and its calls' outcomes and scores, each
batch one transaction, so a run killed at any point leaves only whole rows behind. A store that
cannot be written (a full disk, a read-only file) raises StoreWriteError, one line naming the
cause and the path; what was committed before stays."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence

from ..runtime.fileio import storable_text
from .base import Connected, SqlValue, StoreWriteError, is_bug
from .codes import CallStatus
from .rows import CallRow, ScoreRow, UnitRow

# an ok call is final: a later error of the same request (a rerun's) never overwrites it
_UPSERT_CALL = f"""INSERT INTO calls (key, model, status, permanent, text, top_logprobs, finish_reason, prompt_tokens,
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
       WHERE calls.status != '{CallStatus.OK}'"""


def _storable(text: str | None) -> str | None:
    return None if text is None else storable_text(text)


def _call_values(c: CallRow, now: float) -> tuple[SqlValue, ...]:
    return (
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


class Writer(Connected):
    """The writes of a store opened for writing (mixed into `Store`)."""

    def _tx(self, statements: Iterable[tuple[str, Sequence[Sequence[SqlValue]]]]) -> None:
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
            if is_bug(e):
                raise
            raise StoreWriteError(self.path, e) from e

    def record_run(self, run_id: str, config: Mapping[str, object]) -> None:
        """Record a run; the units planned from now on through this store belong to it."""
        self._tx([("INSERT OR REPLACE INTO runs VALUES (?, ?, ?)", [(run_id, time.time(), json.dumps(config, default=str))])])
        self.run_id = run_id

    def retag_units(self, old_run: str, new_run: str) -> int:
        """The units of `old_run` become the units of `new_run` (a rerun that plans exactly them)."""
        with self.conn:
            return self.conn.execute("UPDATE units SET run = ? WHERE run = ?", (new_run, old_run)).rowcount

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

    @staticmethod
    def _result_statements(calls: Sequence[CallRow], scores: Sequence[ScoreRow]) -> list[tuple[str, Sequence[Sequence[SqlValue]]]]:
        """The statements that store calls' outcomes and their scores (`Writer.write_results`)."""
        now = time.time()
        return [
            (_UPSERT_CALL, [_call_values(c, now) for c in calls]),
            (
                "INSERT OR REPLACE INTO scores VALUES (?, ?, ?, ?, ?, ?)",
                [(s.key, s.scorer, _storable(s.label), s.status, None if s.detail is None else json.dumps(s.detail), s.value) for s in scores],
            ),
        ]

    def write_results(self, calls: Sequence[CallRow], scores: Sequence[ScoreRow]) -> None:
        """One transaction per batch. An ok call is never overwritten by a later error. Every text
        is stored as UTF-8 can hold it (`storable_text`), so no row can fail its batch on encoding."""
        self._tx(self._result_statements(calls, scores))
