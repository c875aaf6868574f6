"""Readers of what a run's calls spent and how its replies were read, for the run's summary and
report: usage per model, the facts of a store, what a setting cost (its units' calls and the calls
linked to them), the decoding parameters sent, and how replies were read."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import NotRequired, TypedDict

from .base import Connected
from .codes import CallStatus, ScoreStatus
from .rows import SentRow

# how a reply stored ok was read: its score's status, else (no score row) truncated when it was cut
# at its budget, else invalid, as the results frame reads it
_READ_STATUS = f"(CASE WHEN s.status IS NOT NULL THEN s.status WHEN c.finish_reason = 'length' THEN '{ScoreStatus.TRUNCATED}' ELSE '{ScoreStatus.INVALID}' END)"


class ReadingCounts(TypedDict):
    """How one model's replies under one setting were read (see `UsageReads.reading`); the
    shares are added by `reading.reading_summary`."""

    replies: int
    read: int
    extracted: int
    invalid: int
    truncated: int
    unscored: int
    budget: int | None
    unread_why: dict[str, int]
    extracted_share: NotRequired[dict[str, int | float | None]]
    truncated_share: NotRequired[dict[str, int | float | None]]


class ModelUsage(TypedDict):
    """What one model's calls spent: calls, tokens, cost (None when no call was priced), errors.
    Live vs batch: `batch_calls` replies came through a batch and `live_calls` were made live
    (calls = batch_calls + live_calls + errors + the rows that stand for no call of their own: an
    answer loop's final answer, its summaries and tool results, stored without a latency); `cost` is
    what they cost at the price each was
    made at (a batch reply at its batch rate), `cost_live` what every reply would have cost live
    and `cost_batch` as a batch (None: unpriced, or no batch rate is known for the model)."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost: float | None
    errors: int
    batch_calls: int
    live_calls: int
    cost_live: float | None
    cost_batch: float | None


class SettingCost(TypedDict):
    """What one setting's units spent (see `UsageReads.setting_costs`)."""

    units: int
    items: int
    answer_prompt_tokens: int
    answer_completion_tokens: int
    answer_cost: float | None
    linked_prompt_tokens: int
    linked_completion_tokens: int
    linked_cost: float | None
    linked_calls: int
    prompt_tokens: NotRequired[int]
    completion_tokens: NotRequired[int]
    cost: NotRequired[float | None]


def _both_ways(u: ModelUsage, batch_paid: float, batch_live: float, rate: float | None) -> None:
    """A model's cost every reply live and every reply as a batch, from what its replies cost as
    made (`u["cost"]`: batch replies at their rate, `batch_paid` of it) and the batch replies'
    live price (`batch_live`); `rate`: the batch share of the list price (None: unknown)."""
    if u["cost"] is None:
        return
    live_paid = u["cost"] - batch_paid
    u["cost_live"] = live_paid + batch_live
    u["cost_batch"] = batch_paid + live_paid * rate if rate is not None else (batch_paid if not u["live_calls"] else None)


class UsageReads(Connected):
    """The readers of spending and reading (mixed into `Store`)."""

    def reading(self, run: str | None = "latest") -> dict[str, dict[str, ReadingCounts]]:
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
        status = _READ_STATUS
        joined = f"FROM units u JOIN calls c ON c.key = u.key AND c.status = '{CallStatus.OK}' LEFT JOIN scores s ON s.key = u.key AND s.scorer = u.scoring"
        out: dict[str, dict[str, ReadingCounts]] = {}
        for model, setting, st, read_by, why, n in self.conn.execute(
            f"SELECT u.model, u.setting, {status}, json_extract(s.detail, '$.read_by'), json_extract(s.detail, '$.unread'), COUNT(*) {joined} "
            f"WHERE 1 {where} GROUP BY 1, 2, 3, 4, 5",
            args,
        ):
            b = out.setdefault(model, {}).setdefault(
                setting, {"replies": 0, "read": 0, "extracted": 0, "invalid": 0, "truncated": 0, "unscored": 0, "budget": None, "unread_why": {}}
            )
            b["replies"] += n
            if st == ScoreStatus.VALID:
                b["read"] += n
            elif st == ScoreStatus.INVALID:
                b["invalid"] += n
            elif st == ScoreStatus.TRUNCATED:
                b["truncated"] += n
            elif st == ScoreStatus.UNSCORED:
                b["unscored"] += n
            else:
                raise ValueError(f"a score of unknown status {st!r} in the store")
            if st == ScoreStatus.VALID and read_by == "extract":
                b["extracted"] += n
            if st in (ScoreStatus.INVALID, ScoreStatus.TRUNCATED):
                reason = str(why) if why else "unrecorded"
                b["unread_why"][reason] = b["unread_why"].get(reason, 0) + n
        for model, setting, budget in self.conn.execute(
            f"""SELECT u.model, u.setting, MAX(COALESCE(json_extract(r.params, '$.max_tokens'),
                                                       json_extract(r.params, '$.max_completion_tokens')))
                {joined} JOIN requests r ON r.key = u.key WHERE {status} = '{ScoreStatus.TRUNCATED}' {where} GROUP BY 1, 2""",
            args,
        ):
            if model in out and setting in out[model]:
                out[model][setting]["budget"] = None if budget is None else int(budget)
        return out

    def sent_params(self, run: str | None = "latest") -> list[SentRow]:
        """The decoding parameters the stored requests were sent with, one row per (kind, model,
        params): kind `answer` (the units of a run, default the latest; None: every unit), a linked
        call's role (`monitor`, ...), or `scorer` for a call no unit plans (a judge's verdict or an
        extraction, made from stored replies; `system` holds its system prompt so the caller can
        tell which); `params` as sent (a dict) and `calls`, the number of requests."""
        if run == "latest":
            run = self.latest_run()
        where, args = ("WHERE u.run = ?", (run,)) if run is not None else ("", ())
        out: list[SentRow] = []
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

    def facts(self, rates: Mapping[str, float | None] | None = None) -> tuple[dict[str, int | list[str]], dict[str, ModelUsage]]:
        """(counts, usage) of a store in two scans. usage: per model, calls, prompt and completion
        tokens, cost (None when no call was priced) and errors, and the cost live vs batch (see
        `ModelUsage`). A batch reply's live price is its cost over the rate its batch recorded; a
        live reply's batch price is its cost times the rate the model's batches recorded, else
        `rates[model]` (the share of the list price its provider's batches charge; None: unknown)."""
        con = self.conn
        usage: dict[str, ModelUsage] = {}
        ok = err = perm = 0
        split: dict[str, list[float | None]] = {}  # model -> [batch replies' cost as paid, their cost live, the batch rate]
        for model, status, permanent, n, pt, ct, cost, priced, nb, no_call, b_paid, b_live, b_rate in con.execute(
            """SELECT c.model, c.status, c.permanent, COUNT(*), SUM(c.prompt_tokens), SUM(c.completion_tokens), SUM(c.cost),
                      COUNT(c.cost), COUNT(b.key), SUM(CASE WHEN b.key IS NULL AND c.latency_s IS NULL THEN 1 ELSE 0 END),
                      SUM(CASE WHEN b.key IS NOT NULL THEN c.cost END),
                      SUM(CASE WHEN b.rate > 0 THEN c.cost / b.rate WHEN b.key IS NOT NULL THEN c.cost END),
                      MAX(CASE WHEN b.key IS NOT NULL THEN COALESCE(b.rate, 1.0) END)
               FROM calls c LEFT JOIN batch_answers b ON b.key = c.key GROUP BY c.model, c.status, c.permanent"""
        ):
            u = usage.setdefault(
                model,
                {
                    "calls": 0,
                    "prompt_tokens": 0,
                    "completion_tokens": 0,
                    "cost": None,
                    "errors": 0,
                    "batch_calls": 0,
                    "live_calls": 0,
                    "cost_live": None,
                    "cost_batch": None,
                },
            )
            u["calls"] += n
            u["prompt_tokens"] += pt or 0
            u["completion_tokens"] += ct or 0
            if priced:
                u["cost"] = (u["cost"] or 0.0) + cost
            if status == CallStatus.ERROR:
                u["errors"] += n
                err += n
                perm += n if permanent else 0
            else:
                ok += n
                u["batch_calls"] += nb
                u["live_calls"] += n - nb - (no_call or 0)  # a loop's record made no call: neither live nor batch
                acc = split.setdefault(model, [0.0, 0.0, None])
                acc[0] = (acc[0] or 0.0) + (b_paid or 0.0)
                acc[1] = (acc[1] or 0.0) + (b_live or 0.0)
                acc[2] = b_rate if b_rate is not None else acc[2]
        for model, (b_paid, b_live, b_rate) in split.items():
            _both_ways(usage[model], b_paid or 0.0, b_live or 0.0, b_rate if b_rate is not None else (rates or {}).get(model))
        scores = dict(con.execute("SELECT status, COUNT(*) FROM scores GROUP BY status").fetchall())
        samples = (
            [
                r[0]
                for r in con.execute(
                    f"SELECT error FROM calls WHERE status = '{CallStatus.ERROR}' AND error IS NOT NULL GROUP BY error ORDER BY COUNT(*) DESC LIMIT 5"
                )
            ]
            if err
            else []
        )
        counts: dict[str, int | list[str]] = {
            **{f"scores_{s}": int(scores.get(s, 0)) for s in (ScoreStatus.VALID, ScoreStatus.INVALID, ScoreStatus.TRUNCATED, ScoreStatus.UNSCORED)},
            "calls_ok": ok,
            "calls_error": err,
            "calls_error_permanent": perm,
            "error_samples": samples,
        }
        return counts, usage

    def usage(self, rates: Mapping[str, float | None] | None = None) -> dict[str, ModelUsage]:
        """Per model: calls, prompt and completion tokens, cost (None when no call was priced),
        errors, and the cost live vs batch (`facts`)."""
        return self.facts(rates)[1]

    def linked_usage(self, run: str | None = "latest") -> list[dict[str, object]]:
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

    def setting_costs(self, run: str | None = "latest") -> dict[str, dict[str, SettingCost]]:
        """model -> setting -> what the setting's units of a run (default: the latest; None: every
        unit) spent, per unit as the frame counts it: units, items, answer_prompt_tokens,
        answer_completion_tokens, answer_cost (the units' own calls), linked_prompt_tokens,
        linked_completion_tokens, linked_cost, linked_calls (calls made before the answers, e.g. a
        monitor's note), and prompt_tokens, completion_tokens, cost (all of them; cost None when
        no call was priced). Divide by `items` for the cost per item."""
        if run == "latest":
            run = self.latest_run()
        where, args = ("WHERE u.run = ?", (run,)) if run is not None else ("", ())
        out: dict[str, dict[str, SettingCost]] = {}
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
            b["linked_prompt_tokens"], b["linked_completion_tokens"] = pt or 0, ct or 0
            b["linked_cost"], b["linked_calls"] = cost if priced else None, n
        for per_setting in out.values():
            for b in per_setting.values():
                b["prompt_tokens"] = b["answer_prompt_tokens"] + b["linked_prompt_tokens"]
                b["completion_tokens"] = b["answer_completion_tokens"] + b["linked_completion_tokens"]
                costs = [c for c in (b["answer_cost"], b["linked_cost"]) if c is not None]
                b["cost"] = sum(costs) if costs else None
        return out
