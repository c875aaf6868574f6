"""The reader of one unit's whole evidence, for the viewer's unit page: its plan row, the request
as sent, its call, its score and the calls linked to it (a setting's call before it, an agent's
steps)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from .base import Connected


@dataclass(frozen=True)
class UnitDetail:
    """Everything stored about one unit: its plan row, the request as sent (messages, params), its
    call (status, reply, finish reason, attempts, tokens, latency, waiting, cost, error) and its
    score under its scoring (label, status, value, scorer, detail as stored: how it was read, or
    the judge's reason), and the calls linked to it (a setting's call before it, an agent's steps,
    tool results and summary): role, key, status, text, tool_calls, finish_reason, prompt and
    completion tokens, cost, latency_s, attempts, error and model, in role order."""

    unit: dict[str, Any]
    messages: list[dict[str, Any]] | None
    params: dict[str, Any] | None
    call: dict[str, Any] | None
    score: dict[str, Any] | None
    linked: tuple[dict[str, Any], ...] = ()


class EvidenceReads(Connected):
    """The reader of one unit's evidence (mixed into `Store`)."""

    def unit_detail(self, model: str, unit_id: str) -> UnitDetail | None:
        """What the store holds about one unit (None: no such unit)."""
        cur = self.conn.execute(
            """SELECT u.model, u.unit_id, u.item_id, u.probe_id, u.condition, u.setting, u.scoring, u.key, u.epoch, u.run,
                      r.messages, r.params FROM units u LEFT JOIN requests r ON r.key = u.key WHERE u.model = ? AND u.unit_id = ?""",
            (model, unit_id),
        )
        unit = _row_dict(cur)
        if unit is None:
            return None
        messages, params = _loads(unit.pop("messages")), _loads(unit.pop("params"))
        call = _row_dict(
            self.conn.execute(
                """SELECT status, permanent, text, finish_reason, prompt_tokens, completion_tokens, cost, latency_s, attempts, error,
                          waited_s, model FROM calls WHERE key = ?""",
                (unit["key"],),
            )
        )
        score = _row_dict(
            self.conn.execute("SELECT scorer, label, status, detail, value FROM scores WHERE key = ? AND scorer = ?", (unit["key"], unit["scoring"]))
        )
        if score is not None:
            score["detail"] = _loads(score["detail"])
        cur = self.conn.execute(
            """SELECT l.role, l.key, c.status, c.text, c.tool_calls, c.finish_reason, c.prompt_tokens, c.completion_tokens, c.cost,
                      c.latency_s, c.attempts, c.error, c.model FROM unit_calls l LEFT JOIN calls c ON c.key = l.key
                WHERE l.model = ? AND l.unit_id = ? ORDER BY l.role""",
            (model, unit_id),
        )
        cols = [d[0] for d in cur.description]
        linked = tuple({**dict(zip(cols, r)), "tool_calls": _loads(r[4])} for r in cur)
        return UnitDetail(unit, messages, params, call, score, linked)


def _row_dict(cur: sqlite3.Cursor) -> dict[str, Any] | None:
    """The first row of a query as {column: value} (None: no row)."""
    row = cur.fetchone()
    return None if row is None else dict(zip((d[0] for d in cur.description), row))


def _loads(text: object) -> Any:
    """A stored JSON column (None and unreadable text stay as they are)."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text
