"""Readers of a run as a whole: its recorded configuration, whether it is settled, how many calls
it stands on, and where its units stand (statuses, unscored reasons); what resuming, rerunning and
a run's summary ask of the store."""

from __future__ import annotations

import json

from .base import Connected
from .codes import ANSWERED_SQL, CallStatus, ScoreStatus
from .rows import RunConfig

# a unit's status as `unit_statuses` counts it: its score's status when scored, else the call's
_UNIT_STATUS = f"COALESCE(s.status, CASE c.status WHEN '{CallStatus.ERROR}' THEN 'error' WHEN '{CallStatus.OK}' THEN 'not_scored' ELSE 'missing' END)"


class RunReads(Connected):
    """The readers of runs (mixed into `Store`)."""

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
            f"WHERE u.run = ? AND (c.status IS NOT '{CallStatus.OK}' OR s.status IS NULL OR s.status NOT IN {ANSWERED_SQL}) LIMIT 1",
            (run_id,),
        ).fetchone()
        return row is None

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

    def unit_statuses(self, run: str | None = "latest") -> dict[str, int]:
        """How many units of a run (default: the latest) stand at each status: their score's status
        (valid, invalid, unscored, ...) when scored, else `not_scored` (answered, its deferred score
        not made: a judge call not sent), `error` (the call failed) or `missing` (not called)."""
        if run == "latest":
            run = self.latest_run()
        rows = self.conn.execute(
            f"SELECT {_UNIT_STATUS}, COUNT(*) FROM units u "
            "LEFT JOIN calls c ON c.key = u.key LEFT JOIN scores s ON s.key = u.key AND s.scorer = u.scoring WHERE u.run IS ? GROUP BY 1",
            (run,),
        )
        return {status: int(n) for status, n in rows}

    def score_reasons(self, status: str = ScoreStatus.UNSCORED, run: str | None = "latest") -> list[tuple[str, str, str, str, int]]:
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
