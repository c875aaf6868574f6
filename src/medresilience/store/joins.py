"""The store's units joined with their calls and scores (units x calls x scores, each unit's call
by its key and its score by its key and its own scoring): the one place that join is written, read
by the results frame, exports, the label audit, judge agreement, review sampling and the analyses.
`Store` inherits these readers.

Two shapes of the same join:
- `unit_results`: one typed `UnitResult` (a `UnitRow` with its call and score) per unit, streamed
  in the store's order (model, unit id), for readers that look at units one by one (judge
  verdicts, review candidates);
- `unit_records`: one `UnitRecord` (a `UnitRow` with everything joined to it) per unit with every column of the join and the request as sent
  (exports of a run), streamed in chunks;
- `joined_text`: the columns the results frame needs, streamed as chunks of plain tuples (no object
  per row: millions of units in bounded memory). Its call and score columns are codes: `CallCode`
  and `ScoreCode` name each."""

from __future__ import annotations

import sqlite3
from collections.abc import Generator, Iterator, Sequence

from .base import Connected, SqlValue
from .codes import CALL_CODE_SQL, SCORE_CODE_SQL, CallCode, CallStatus, ScoreCode
from .rows import UnitRecord, UnitResult

_JOIN = """
FROM units u
LEFT JOIN calls c ON c.key = u.key
LEFT JOIN scores s ON s.key = u.key AND s.scorer = u.scoring
"""
_CALL, _SCORE = CALL_CODE_SQL, SCORE_CODE_SQL
# each code by its number (an index, not an enum lookup per row)
_CALL_CODES, _SCORE_CODES = tuple(CallCode), tuple(ScoreCode)
# prompt and completion tokens in one integer: prompt * 2**32 + completion
_TOKENS = "(COALESCE(c.prompt_tokens, 0) * 4294967296 + COALESCE(c.completion_tokens, 0))"
#: the unit columns of few values `joined_text` reads first, in this order
SMALL = ("model", "condition", "setting", "scoring")


def _scan_where(run: str | None) -> tuple[str, list[SqlValue]]:
    return ("WHERE +u.run = ?", [run]) if run is not None else ("", [])  # "+": a scan, not the index


def _chunks(conn: sqlite3.Connection, sql: str, args: Sequence[SqlValue], chunk: int) -> Generator[list[tuple], None, None]:
    """The rows of a query, `chunk` at a time (the cursor closed when the reader stops early)."""
    cur = conn.execute(sql, args)
    try:
        while True:
            rows = cur.fetchmany(chunk)
            if not rows:
                return
            yield rows
            del rows
    finally:
        cur.close()


class JoinedReads(Connected):
    """The readers of the units x calls x scores join (mixed into `Store`)."""

    def unit_results(
        self, run: str | None, *, judged: bool = False, answered_probes: bool = False, text: bool = False, messages: bool = False
    ) -> Iterator[UnitResult]:
        """The units of `run` (None or empty: every unit) with their call and score, ordered by
        model and unit id: only those a judge scores (`judged`: scoring `judge:...`), or only the
        units of a probe whose call is stored ok (`answered_probes`); with the reply `text` and
        the request's `messages` when asked."""
        calls = f"JOIN calls c ON c.key = u.key AND c.status = '{CallStatus.OK}'" if answered_probes else "LEFT JOIN calls c ON c.key = u.key"
        requests = "LEFT JOIN requests r ON r.key = u.key" if messages else ""
        where = ["u.scoring LIKE 'judge:%'"] if judged else []
        if answered_probes:
            where.append("u.probe_id IS NOT NULL")
        args = []
        if run:
            where.append("u.run = ?")
            args.append(run)
        sql = f"""SELECT u.model, u.unit_id, u.item_id, u.probe_id, u.condition, u.setting, u.scoring, u.key, u.epoch, c.status, s.status,
                         s.label, s.value, {"c.text" if text else "NULL"}, {"r.messages" if messages else "NULL"}
                  FROM units u {calls}
                  LEFT JOIN scores s ON s.key = u.key AND s.scorer = u.scoring {requests}
                  {"WHERE " + " AND ".join(where) if where else ""} ORDER BY u.model, u.unit_id"""
        for row in self.conn.execute(sql, args):
            yield UnitResult(*row[:9], call_status=row[9], status=row[10], label=row[11], value=row[12], text=row[13], messages=row[14])

    def unit_records(self, run: str | None, chunk: int = 10_000) -> Iterator[UnitRecord]:
        """Every unit of `run` (None: every unit) with its request, call and score (`UnitRecord`),
        ordered by model and unit id, streamed `chunk` rows at a time."""
        return unit_records(self.conn, run, chunk)

    def joined_text(self, run: str | None, chunk: int) -> Generator[list[tuple], None, None]:
        """The frame's join of the units of `run` (None: every unit) as text, streamed `chunk` rows
        at a time: (model, condition, setting, scoring, item_id, probe_id, call code, score code,
        label, tokens, cost, value, epoch)."""
        where, wargs = _scan_where(run)
        sql = f"""SELECT u.model, u.condition, u.setting, u.scoring, u.item_id, u.probe_id, {_CALL}, {_SCORE}, s.label,
                         {_TOKENS}, c.cost, s.value, u.epoch {_JOIN} {where}"""
        return _chunks(self.conn, sql, wargs, chunk)


def unit_records(conn: sqlite3.Connection, run: str | None, chunk: int) -> Iterator[UnitRecord]:
    """The units of `run` (None: every unit) with everything joined to them (`UnitRecord`), in
    the store's order (model, unit id), read `chunk` rows at a time (bounded memory)."""
    where, wargs = ("WHERE u.run = ?", [run]) if run is not None else ("", [])
    sql = f"""SELECT u.model, u.unit_id, u.item_id, u.probe_id, u.condition, u.setting, u.scoring, u.key, u.epoch, r.messages,
                     {_CALL}, c.text, c.finish_reason, c.attempts, c.error, c.prompt_tokens, c.completion_tokens, c.latency_s, c.cost,
                     {_SCORE}, s.label, s.value, s.detail
              {_JOIN} LEFT JOIN requests r ON r.key = u.key {where} ORDER BY u.model, u.unit_id"""
    for rows in _chunks(conn, sql, wargs, chunk):
        for row in rows:
            yield UnitRecord(
                *row[:9],
                messages=row[9],
                call=_CALL_CODES[row[10]],
                reply=row[11],
                finish_reason=row[12],
                attempts=row[13],
                error=row[14],
                prompt_tokens=row[15],
                completion_tokens=row[16],
                latency_s=row[17],
                cost=row[18],
                score=_SCORE_CODES[row[19]],
                label=row[20],
                value=row[21],
                detail=row[22],
            )
