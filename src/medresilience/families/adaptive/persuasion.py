"""The persuasion measures of a run's attacks, per model and setting, for the family's results block:
the traces of results.json's `loop` block read through `AttackTrace.from_dict` and summarised by
`stats.persuasion.summarise` (the flip curve with its intervals and n per turn, the median turns to
flip or "not reached", the flips to the attacker's target, the candidates rejected), overall and by
the kind of stress."""

from __future__ import annotations

from typing import Any

from ...stats.persuasion import AttackTrace, PersuasionSummary, summarise


def summary_record(s: PersuasionSummary) -> dict[str, Any]:
    """One summary as its block's plain dict (`block.PersuasionValue`)."""
    m = s.median
    return {
        "attacked": s.attacked,
        "method": s.curve.method,
        "budgets": list(s.curve.budgets),
        "curve": [{"turn": p.turn, "k": p.k, "n": p.n, "at_risk": p.at_risk, "p": p.p, "lo": p.lo, "hi": p.hi, "n_eff": p.n_eff} for p in s.curve.points],
        "median_turns": {"turns": m.turns, "lo": m.lo, "hi": m.hi, "n": m.n, "reached": m.reached},
        "to_target": s.to_target.as_dict(),
        "rejected": s.rejected,
        "turns_used": s.turns_used,
    }


def loop_measures(loop: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """model -> setting -> the block's persuasion keys, from results.json's `loop` block (setting ->
    {traces, counts}); a model with no attacked item under a setting gets none."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for setting, block in loop.items():
        where = f"results.json loop.{setting}.traces"
        found = [AttackTrace.from_dict(d, where=f"{where}[{i}]") for i, d in enumerate(block.get("traces", []))]
        kinds: dict[str, dict[str, Any]] = {}
        for s in summarise(found, by_kind=True):
            kinds.setdefault(s.model, {})[str(s.kind)] = summary_record(s)
        for s in summarise(found):
            out.setdefault(s.model, {})[setting] = {"persuasion": summary_record(s), "persuasion_by_kind": kinds.get(s.model, {})}
    return out
