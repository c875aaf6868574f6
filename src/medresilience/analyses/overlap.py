"""Cross-model overlap of a run (Cancer-Myth's analyses beside its tables): on the units every
model of the run has a score for, per condition and setting, the units no model gets right, the
units every model gets right, and the units only one model gets right (per model).

Right: a valid score of at least 1 (an MCQ answer scored correct, a judge's "fully corrects");
an invalid or truncated reply is not right (the study's rule); a unit some model has no score for
(never called, failed, unscored) is left out, and counted. Shares carry an interval clustered by
item (several probes of one item are not independent)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import stats
from ..runtime.errors import InputError


@dataclass
class Overlap:
    models: list[str]
    rows: list[dict[str, Any]] = field(default_factory=list)  # one per (condition, setting)


def _right(status: str | None, value: float | None) -> bool | None:
    if status == "valid":
        return value is not None and float(value) >= 1.0
    if status in ("invalid", "truncated"):
        return False
    return None


def _share(flags: list[bool], items: list[str], seed: int) -> dict[str, float | int | None]:
    r = stats.clustered_rate(flags, items, seed=seed)
    return {"k": r.k, "n": r.n, "p": r.p, "lo": r.lo, "hi": r.hi}


def overlap(run_dir: Path | str, *, seed: int = 0) -> Overlap:
    from ..store import Store

    db = Path(run_dir) / "store.sqlite"
    if not db.is_file():
        raise InputError(run_dir, None, None, "not a run directory (store.sqlite missing)")
    with Store.read_only(db) as store:
        run = store.latest_run()
        results = list(store.unit_results(run))
    models = sorted({r.model for r in results})
    by_unit: dict[tuple[str, str, str], dict[str, Any]] = defaultdict(lambda: {"right": {}})
    for r in results:
        u = by_unit[(r.condition, r.setting, r.unit_id)]
        u["item"] = r.item_id
        u["right"][r.model] = _right(r.status, r.value)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for (condition, setting, _), u in by_unit.items():
        groups[(condition, setting)].append(u)
    out = Overlap(models)
    for (condition, setting), units in sorted(groups.items()):
        full = [u for u in units if all(u["right"].get(m) is not None for m in models)]
        items = [str(u["item"]) for u in full]
        hits = [sum(u["right"][m] for m in models) for u in full]
        row: dict[str, object] = {
            "condition": condition,
            "setting": setting,
            "units": len(units),
            "compared": len(full),
            "left_out": len(units) - len(full),
            "none_right": _share([h == 0 for h in hits], items, seed),
            "all_right": _share([h == len(models) for h in hits], items, seed),
            "only_one_right": _share([h == 1 for h in hits], items, seed),
            "only_this_model": {m: sum(1 for u, h in zip(full, hits) if h == 1 and u["right"][m]) for m in models},
        }
        out.rows.append(row)
    return out
