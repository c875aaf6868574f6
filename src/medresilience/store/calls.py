"""Readers of stored requests, calls and scores by request key: what the runner resumes from
(finished keys), what scorers read (replies, stored scores), what an agent's loop and follow-up
turns continue from (turns, messages), and what a set of calls spent."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from ..runtime.jsontypes import JSONObject
from .base import Connected, SqlValue
from .codes import CallStatus
from .rows import StoredRequest, StoredScore, Usage

_OK = f"status = '{CallStatus.OK}'"


class CallReads(Connected):
    """The readers by request key (mixed into `Store`)."""

    def finished_keys(self, keys: Iterable[str] | None = None) -> set[str]:
        """The keys (of the given ones; None: of every call) whose call is stored ok: never made again."""
        if keys is None:
            return {r[0] for r in self.conn.execute(f"SELECT key FROM calls WHERE {_OK}")}
        return {r[0] for r in self.by_keys(f"SELECT key FROM calls WHERE {_OK} AND key IN ({{keys}})", keys)}

    def count(self, table: str, where: str = "", args: Sequence[SqlValue] = ()) -> int:
        return int(self.conn.execute(f"SELECT COUNT(*) FROM {table} {where}", args).fetchone()[0])

    def call(self, key: str) -> dict[str, Any] | None:
        cur = self.conn.execute("SELECT * FROM calls WHERE key = ?", (key,))
        row = cur.fetchone()
        return None if row is None else dict(zip([d[0] for d in cur.description], row))

    def score(self, key: str, scorer: str) -> StoredScore | None:
        """One stored score (status, label, detail, value), or None when that scorer never scored the key."""
        row = self.conn.execute("SELECT status, label, detail, value FROM scores WHERE key = ? AND scorer = ?", (key, scorer)).fetchone()
        if row is None:
            return None
        return {"status": row[0], "label": row[1], "detail": json.loads(row[2]) if row[2] else None, "value": row[3]}

    def scored(self, keys: Iterable[str], scorer: str) -> dict[str, str]:
        """key -> the status of its score under `scorer`, for the given keys that have one."""
        return dict(self.by_keys("SELECT key, status FROM scores WHERE scorer = ? AND key IN ({keys})", keys, scorer))

    def replies(self, keys: Iterable[str]) -> dict[str, tuple[str, str | None]]:
        """key -> (reply text, finish reason) of each given key whose call is stored `ok`."""
        rows = self.by_keys(f"SELECT key, text, finish_reason FROM calls WHERE {_OK} AND key IN ({{keys}})", keys)
        return {k: (t or "", f) for k, t, f in rows}

    def ok_texts(self, keys: Iterable[str]) -> dict[str, str]:
        """The reply text of each given key whose call is stored `ok` (keys without one are left out)."""
        return {k: t or "" for k, t in self.by_keys(f"SELECT key, text FROM calls WHERE {_OK} AND key IN ({{keys}})", keys)}

    def call_times(self, keys: Iterable[str]) -> dict[str, tuple[float | None, int, int | None]]:
        """(latency in seconds, completion tokens, reasoning tokens or None when the provider
        reported none) of each given key whose call is stored `ok`."""
        rows = self.by_keys(f"SELECT key, latency_s, completion_tokens, reasoning_tokens FROM calls WHERE {_OK} AND key IN ({{keys}})", keys)
        return {k: (lat, int(ct or 0), None if rt is None else int(rt)) for k, lat, ct, rt in rows}

    def turns(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """key -> {text, tool_calls (a list or None), finish_reason, prompt_tokens, completion_tokens}
        of each given key whose call is stored `ok` (an agent's steps)."""
        rows = self.by_keys(f"SELECT key, text, tool_calls, finish_reason, prompt_tokens, completion_tokens FROM calls WHERE {_OK} AND key IN ({{keys}})", keys)
        return {
            k: {
                "text": text or "",
                "tool_calls": None if tools is None else json.loads(tools),
                "finish_reason": finish,
                "prompt_tokens": pt or 0,
                "completion_tokens": ct or 0,
            }
            for k, text, tools, finish, pt, ct in rows
        }

    def request(self, key: str) -> StoredRequest | None:
        row = self.conn.execute("SELECT model, messages, params FROM requests WHERE key = ?", (key,)).fetchone()
        return None if row is None else {"model": row[0], "messages": json.loads(row[1]), "params": json.loads(row[2])}

    def request_messages(self, keys: Iterable[str]) -> dict[str, list[JSONObject]]:
        """key -> the messages stored with each given request key that has them."""
        return {k: json.loads(m) for k, m in self.by_keys("SELECT key, messages FROM requests WHERE key IN ({keys})", keys)}

    def usage_for(self, keys: Iterable[str]) -> Usage:
        """Tokens and cost summed over the given request keys (cost None when no call had a price)."""
        pt = ct = 0
        cost: float | None = None
        for p, c, k in self.by_keys("SELECT prompt_tokens, completion_tokens, cost FROM calls WHERE key IN ({keys})", keys):
            pt += p or 0
            ct += c or 0
            if k is not None:
                cost = (cost or 0.0) + k
        return {"prompt_tokens": pt, "completion_tokens": ct, "cost": cost}

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
                JOIN calls c ON c.key = l.key AND c.{_OK} WHERE l.role = ? {where} ORDER BY u.model, u.setting, u.unit_id""",
            args,
        )
        return [dict(zip(cols, r)) for r in rows]
