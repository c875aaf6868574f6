"""What an audit finds: the run's reading of each sampled unit against a second reading, per model,
setting and condition, and the list of units where they differ.

For each second reader (the reader model, people), on the sampled units it read (a decided
reading: an option, or no option; an `unscored` reading is counted apart with its reason):

- `agreement`: the share whose second reading is the run's (the same option, or both no option),
  with Cohen's kappa of the two readings (categories: the labels and `none`);
- `wrong_letter`: of the units the run read as an option, the share the second reader reads as
  another option or as no option (a silent error: it enters every rate as an answer);
- `unread`: of the units the second reader reads as an option, the share the run left unread
  (a visible error: counted apart, and wrong by the study's rule).

A cell of judged units (the run's reading a judge's verdict; `reading: "verdict"`) has
`wrong_verdict` instead of the last two: of the units the run's judge gave a verdict, the share the
second judge gives another. Every cell also has `unscored`: of the sampled units the second reader
was asked about, the share it gave no reading (its reasons are tallied per reader).

Each is a weighted share (estimates.weighted_share: each unit stands for N_h / n_h units of its
stratum) with its 95% interval and the unweighted k and n. A disagreement lists the unit with
both readings, the key, and its address in the evidence viewer."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from .. import stats
from .estimates import weighted_share
from .reader import NO_OPTION, SecondReading
from .sample import AuditUnit


def unit_path(unit_id: str, run_index: int = 0) -> str:
    """The evidence viewer's page of a unit (`medres view RUN`: the run is 0)."""
    return f"/unit/{run_index}/{quote(unit_id, safe='')}"


def _shares(asked: Sequence[tuple[AuditUnit, SecondReading]]) -> dict[str, object]:
    """A cell's shares over its sampled units that the second reader was asked about (`asked`:
    decided and unscored readings)."""
    pairs = [(u, s) for u, s in asked if s.decided]
    weights = [u.N_h / u.n_h for u, _ in pairs]
    agree = [u.rule_label == s.label for u, s in pairs]
    read = [(u, s, w) for (u, s), w in zip(pairs, weights) if u.rule_label is not None]
    a = [u.rule_label or NO_OPTION for u, _ in pairs]
    b = [s.label or NO_OPTION for _, s in pairs]
    kappa = stats.cohen_kappa(a, b) if pairs else None
    wrong = weighted_share([s.label != u.rule_label for u, s, _ in read], [w for *_, w in read])
    out: dict[str, object] = {"audited": len(pairs), "agreement": weighted_share(agree, weights), "kappa": kappa}
    if asked and all(u.judged for u, _ in asked):
        out.update(reading="verdict", wrong_verdict=wrong)
    else:
        readable = [(u, s, w) for (u, s), w in zip(pairs, weights) if s.label is not None]
        out.update(reading="letter", wrong_letter=wrong, unread=weighted_share([u.rule_label is None for u, _, _ in readable], [w for *_, w in readable]))
    out["unscored"] = weighted_share([not s.decided for _, s in asked], [u.N_h / u.n_h for u, _ in asked])
    return out


def disagreement(u: AuditUnit, s: SecondReading, viewer: str | None) -> dict[str, object]:
    path = unit_path(u.unit_id)
    return {
        "model": u.model,
        "setting": u.setting,
        "condition": u.condition,
        "unit_id": u.unit_id,
        "item_id": u.item_id,
        "tier": u.tier,
        "run_reading": u.rule_label or NO_OPTION,
        "run_status": u.rule_status,
        "second_reading": s.label or NO_OPTION,
        "key": u.gold,
        "kind": "wrong_verdict" if u.judged else "unread" if u.rule_label is None else "wrong_letter",
        "viewer_path": path,
        "viewer_url": None if viewer is None else viewer.rstrip("/") + path,
    }


def summarise_reader(units: Sequence[AuditUnit], readings: dict[str, SecondReading], viewer: str | None) -> dict[str, Any]:
    """One second reader's findings on the sampled units: per (model, setting, condition) and
    overall, the unscored readings by reason, and the disagreements."""
    asked = [(u, readings[u.key]) for u in units if u.key in readings]
    pairs = [(u, s) for u, s in asked if s.decided]
    unscored = Counter(s.reason or "(no reason recorded)" for _, s in asked if not s.decided)
    not_read = sum(1 for u in units if u.key not in readings)
    cells: dict[tuple[str, str, str], list[tuple[AuditUnit, SecondReading]]] = defaultdict(list)
    for u, s in asked:
        cells[u.cell].append((u, s))
    rows = [{"model": m, "setting": st, "condition": c, **_shares(p)} for (m, st, c), p in sorted(cells.items())]
    overall = _shares(asked)  # every cell pooled, each unit still standing for N_h / n_h units
    return {
        "sampled": len(units),
        "read": len(pairs),
        "unscored": sum(unscored.values()),
        "unscored_reasons": dict(unscored.most_common()),
        "not_read": not_read,
        "cells": rows,
        "overall": overall,
        "disagreements": [disagreement(u, s, viewer) for u, s in pairs if u.rule_label != s.label],
    }
