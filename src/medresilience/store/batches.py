"""The record of a run's provider batches: each batch is written here (its keys, provider, model,
the hash and path of its local request file) BEFORE it is sent, then gets the provider's id once
known, and is closed once its results are stored (or it ended without them). A batch still open
holds its keys: they are not sent again while it is open, so nothing is paid twice."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .codes import CallStatus
from .rows import CallRow, ScoreRow
from .writer import Writer

#: a batch recorded, not yet known to be with the provider (a crash may have come between send and record)
RECORDED = "recorded"
#: the provider holds it (its id is stored)
SUBMITTED = "submitted"
#: its results were stored (or it ended without them: the keys left are sent again)
CLOSED = "closed"


@dataclass(frozen=True)
class BatchRecord:
    """One recorded batch: its local id, provider, model label, request file (hash, path), the
    provider's id (None until known), status and the keys it holds."""

    batch_id: str
    provider: str
    model: str
    file_hash: str
    path: str
    remote_id: str | None
    status: str
    keys: frozenset[str]
    created: float


class BatchRecords(Writer):
    """The batches table's writes and reads (mixed into `Store`)."""

    def record_batch(self, batch_id: str, provider: str, model: str, keys: Iterable[str], file_hash: str, path: str) -> None:
        """Record a batch before it is sent (one transaction: the batch and its keys)."""
        now = time.time()
        self._tx(
            [
                ("INSERT INTO batches VALUES (?, ?, ?, ?, ?, NULL, ?, NULL, ?, ?)", [(batch_id, provider, model, file_hash, path, RECORDED, now, now)]),
                ("INSERT OR IGNORE INTO batch_keys VALUES (?, ?)", [(batch_id, k) for k in keys]),
            ]
        )

    def batch_sent(self, batch_id: str, remote_id: str) -> None:
        """The provider's id of a recorded batch (it is with the provider now)."""
        self._tx([("UPDATE batches SET remote_id = ?, status = ?, updated = ? WHERE batch_id = ?", [(remote_id, SUBMITTED, time.time(), batch_id)])])

    def write_batch_results(self, calls: Sequence[CallRow], scores: Sequence[ScoreRow], batch_id: str, rate: float | None) -> None:
        """Store a batch's outcomes as live calls' rows and, in the same transaction, which replies
        it answered and at what share of the list price (`rate`; None: the spec's prices as they
        are, your own engine), so a run's cost can be told live vs batch. An ok call is final: it
        is recorded once, by the batch that answered it."""
        answered = [(c.key, batch_id, rate) for c in calls if c.status == CallStatus.OK]
        self._tx([*self._result_statements(calls, scores), ("INSERT OR IGNORE INTO batch_answers VALUES (?, ?, ?)", answered)])

    def batch_closed(self, batch_id: str, detail: str) -> None:
        """A batch whose results are stored (or that ended without them): its keys are free again."""
        self._tx([("UPDATE batches SET status = ?, detail = ?, updated = ? WHERE batch_id = ?", [(CLOSED, detail, time.time(), batch_id)])])

    def open_batches(self, model: str | None = None) -> list[BatchRecord]:
        """The batches not closed (of one model label, or of all), oldest first, with their keys."""
        where, args = ("AND model = ?", (model,)) if model is not None else ("", ())
        rows = self.conn.execute(
            f"SELECT batch_id, provider, model, file_hash, path, remote_id, status, created FROM batches WHERE status != ? {where} ORDER BY created, batch_id",
            (CLOSED, *args),
        ).fetchall()
        out = []
        for bid, provider, label, fhash, path, remote, status, created in rows:
            keys = frozenset(r[0] for r in self.conn.execute("SELECT key FROM batch_keys WHERE batch_id = ?", (bid,)))
            out.append(BatchRecord(bid, provider, label, fhash, path, remote, status, keys, created))
        return out

    def batch_sends(self, keys: Iterable[str]) -> dict[str, int]:
        """key -> how many recorded batches held it (of the given keys that any batch held)."""
        return dict(self.by_keys("SELECT key, COUNT(*) FROM batch_keys WHERE key IN ({keys}) GROUP BY key", keys))

    def batch_remote_ids(self) -> set[str]:
        """The provider ids every recorded batch has (a found batch is adopted by one record only)."""
        return {r[0] for r in self.conn.execute("SELECT remote_id FROM batches WHERE remote_id IS NOT NULL")}

    def batch_totals(self) -> tuple[int, int]:
        """(batches recorded, the requests they held): a request sent again counts in each batch it was in."""
        batches = self.conn.execute("SELECT COUNT(*) FROM batches").fetchone()[0]
        requests = self.conn.execute("SELECT COUNT(*) FROM batch_keys").fetchone()[0]
        return int(batches), int(requests)

    def batch_counts(self) -> dict[str, int]:
        """status -> how many batches the store has recorded with it."""
        return dict(self.conn.execute("SELECT status, COUNT(*) FROM batches GROUP BY status").fetchall())
