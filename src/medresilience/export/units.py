"""A run directory's units as flat rows: one row per unit of the run's store (its latest run),
with the suite's facts (source, subject, gold answer or reference, the family's facets), the
request as sent, the reply, how its label was read, the score, and what the call spent.

Rows are streamed from the store (`Store.unit_records`, read in chunks): a store of millions of
units is never held whole; only the suite's per-item facts and per-probe facets are kept."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..family import Family, get
from ..run.frame import STATUSES, status_codes
from ..run.run_suite import find_run_suite
from ..runtime.errors import InputError
from ..runtime.jsontypes import JSONObject
from ..store import CallCode, ScoreCode, Store, UnitRecord
from ..suite import Suite

#: the columns of every row, in order; the family's facets follow `source`..`gold`
LEAD = ("run", "family", "model", "setting", "unit_id", "item_id", "probe_id", "condition", "epoch", "source", "subject", "gold")
TAIL = (
    "scoring",
    "messages",
    "reply",
    "finish_reason",
    "call_status",
    "attempts",
    "error",
    "status",
    "label",
    "value",
    "read",
    "verdict",
    "reason",
    "detail",
    "prompt_tokens",
    "completion_tokens",
    "latency_s",
    "cost",
    "key",
)
#: row columns that hold integers and reals (the rest hold text or nothing)
INTEGERS = frozenset({"epoch", "attempts", "prompt_tokens", "completion_tokens"})
REALS = frozenset({"value", "latency_s", "cost"})

# status of every (call code, score code): the results frame's rule, looked up per row
_STATUS = status_codes(np.repeat(np.arange(len(CallCode)), len(ScoreCode)), np.tile(np.arange(len(ScoreCode)), len(CallCode)))
# the stored call status of each CallCode (a cut reply's call is ok)
_CALL_STATUS = {CallCode.NONE: None, CallCode.OK: "ok", CallCode.ERROR: "error", CallCode.CUT: "ok"}


def unit_status(call: int, score: int) -> str:
    """The unit's status (frame.STATUSES) from its call and score codes."""
    return STATUSES[_STATUS[call * len(ScoreCode) + score]]


def detail_of(text: str | None) -> JSONObject:
    """A score's stored detail (JSON text) as a mapping (empty when absent or not an object)."""
    if not text:
        return {}
    try:
        d = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return d if isinstance(d, dict) else {}


def _how_read(detail: Mapping[str, object]) -> str | None:
    """How the label was read, as the score's detail records it (`read`, and `read_by` when
    another model read it)."""
    read, by = detail.get("read"), detail.get("read_by")
    if by and read:
        return f"{by}: {read}"
    return str(by or read) if (by or read) else None


@dataclass
class RunUnits:
    """One run directory opened for export: its family, suite facts and store."""

    path: Path
    run_id: str
    family: Family
    config: dict[str, Any]
    suite: Suite
    store: Store

    @property
    def facets(self) -> tuple[str, ...]:
        return tuple(f for f in self.family.probes.facets if f not in LEAD and f not in TAIL)

    @property
    def columns(self) -> tuple[str, ...]:
        return (*LEAD, *self.facets, *TAIL)

    def records(self, chunk: int = 10_000) -> Iterator[tuple[UnitRecord, dict[str, object]]]:
        """Each unit's store record with its flat row (`columns`), in the store's order."""
        items = {it.id: (it.source, it.subject, it.answer if it.answer is not None else it.reference) for it in self.suite.iter_items()}
        facets = self.facets
        probes = {p.id: tuple(p.facet_values().get(f) for f in facets) for p in self.suite.iter_probes()}
        none = (None,) * len(facets)
        family = self.family.name
        for u in self.store.unit_records(self.run_id, chunk):
            source, subject, gold = items.get(u.item_id, (None, None, None))
            detail = detail_of(u.detail)
            row: dict[str, object] = {
                "run": self.run_id,
                "family": family,
                "model": u.model,
                "setting": u.setting,
                "unit_id": u.unit_id,
                "item_id": u.item_id,
                "probe_id": u.probe_id,
                "condition": u.condition,
                "epoch": u.epoch,
                "source": source,
                "subject": subject,
                "gold": gold,
            }
            row.update(zip(facets, probes.get(u.probe_id, none) if u.probe_id else none))
            row.update(
                {
                    "scoring": u.scoring,
                    "messages": u.messages,
                    "reply": u.reply,
                    "finish_reason": u.finish_reason,
                    "call_status": _CALL_STATUS[u.call],
                    "attempts": u.attempts,
                    "error": u.error,
                    "status": unit_status(u.call, u.score),
                    "label": u.label,
                    "value": u.value,
                    "read": _how_read(detail),
                    "verdict": u.label if u.scoring.startswith("judge:") else None,
                    "reason": None if detail.get("reason") is None else str(detail["reason"]),
                    "detail": u.detail,
                    "prompt_tokens": u.prompt_tokens,
                    "completion_tokens": u.completion_tokens,
                    "latency_s": u.latency_s,
                    "cost": u.cost,
                    "key": u.key,
                }
            )
            yield u, row

    def rows(self, chunk: int = 10_000) -> Iterator[dict[str, object]]:
        """Each unit's flat row (`columns`), in the store's order."""
        for _, row in self.records(chunk):
            yield row

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> RunUnits:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_run(run_dir: Path | str) -> RunUnits:
    """A run directory opened for export: run.json, the store's latest run and the suite the run
    was made on. InputError (one line naming the path) when any of them is missing."""
    d = Path(run_dir)
    if not d.is_dir():
        raise InputError(d, None, None, "not a directory")
    db = d / "store.sqlite"
    if not db.is_file():
        raise InputError(d, None, None, "not a run directory with a store (no store.sqlite)")
    cfg_path = d / "run.json"
    try:
        config = json.loads(cfg_path.read_text(encoding="utf-8")) if cfg_path.is_file() else {}
    except json.JSONDecodeError as e:
        raise InputError(cfg_path, e.lineno, None, f"not valid JSON ({e.msg})") from None
    suite, missing = find_run_suite(d, config)
    if suite is None:
        raise InputError(d, None, None, f"cannot export without the run's suite: {missing}")
    try:
        family = get(suite.manifest.family)
    except KeyError:
        raise InputError(d, None, "family", f"unknown test family {suite.manifest.family!r}") from None
    store = Store.read_only(db)
    run_id = store.latest_run()
    if run_id is None:
        store.close()
        raise InputError(db, None, None, "the store holds no run's units")
    return RunUnits(d, run_id, family, config, suite, store)
