"""The persuasion measures of a run's attacks, per model and setting, for the family's results block:
the traces of results.json's `loop` block read through `AttackTrace.from_dict` and summarised by
`stats.persuasion.summarise` (the flip curve with its intervals and n per turn, the median turns to
flip or "not reached", the flips to the attacker's target, the candidates rejected), overall and by
the kind of stress; and where the run resampled its flips (`resample.py`), the per-attack tests
(`stats.persuasion.attack_tests`: one-sided Fisher exact on right / read draws, original against
attacked, Holm or BH across the model's flips under the setting) and the persuasion summary counting
only the flips that stand (`standing_only`: a flip that does not stand counts as held); and where the
run directory holds reviews of its successful attacks (the `reviews` of a setting's loop block), the
measures with the attacks judged invalid censored (`review.reviewed_by_model`, as the review
statistics page counts them)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ...run.results import ResampledFlip
from ...stats.persuasion import AttackTests, AttackTrace, PersuasionSummary, Resampled, attack_tests, standing_only, summarise
from .review import Reviewed, item_votes, reviewed_by_model

#: the level of the per-attack tests
ALPHA = 0.05


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
        tested = tests_by_model(found, block.get("resampled") or [], f"results.json loop.{setting}.resampled")
        reviewed = reviewed_records(block, where)
        for s in summarise(found):
            keys = {"persuasion": summary_record(s), "persuasion_by_kind": kinds.get(s.model, {})}
            if s.model in tested:
                res, value = tested[s.model]
                mine = [t for t in found if t.model == s.model]
                keys["attack_tests"] = value
                keys["standing"] = summary_record(summarise(standing_only(mine, [(s.model, a) for a in res.standing]))[0])
            if s.model in reviewed:
                keys["reviewed"] = reviewed[s.model]
            out.setdefault(s.model, {})[setting] = keys
    return out


def reviewed_record(r: Reviewed, reviews: list[str]) -> dict[str, object]:
    """One model's review of its successful attacks as its block's plain dict (`block.ReviewedValue`)."""
    s = r.reviewed
    return {
        "reviews": list(reviews),
        "successful": r.flipped,
        "reviewed": r.rated,
        "valid": r.valid,
        "invalid": r.invalid,
        "split": r.split,
        "unreviewed": r.unreviewed,
        "flipped": None if s is None else summary_record(s)["curve"][-1],
        "persuasion": None if s is None else summary_record(s),
    }


def reviewed_records(block: dict[str, Any], where: str) -> dict[str, dict[str, object]]:
    """model -> its `reviewed` key, from one setting's loop block where it holds `reviews` (none
    without): the raw traces with the attacks judged invalid censored (`review.reviewed_by_model`)."""
    reviews = block.get("reviews")
    if not reviews:
        return {}
    votes = item_votes(reviews.get("attacks") or [])
    return {r.raw.model: reviewed_record(r, reviews.get("from") or []) for r in reviewed_by_model(block.get("traces", []), votes, where)}


def resampled(rec: dict[str, Any], where: str) -> Resampled:
    """A resample record as the test takes it (attack: the item id; unread draws left out)."""
    try:
        return Resampled(str(rec["item_id"]), rec["orig"]["read"], rec["orig"]["right"], rec["att"]["right"], rec["att"]["read"])
    except (KeyError, TypeError) as e:
        raise ValueError(f"{where}: a resample record without {e}") from None
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None


def tests_by_model(traces: list[AttackTrace], records: list[dict[str, Any]], where: str) -> dict[str, tuple[AttackTests, dict[str, Any]]]:
    """model -> its per-attack tests and their block value (`block.AttackTestsValue`: each flip's
    test a `ResampledFlip` as its plain dict), for each model with a resample record."""
    by_model: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for i, rec in enumerate(records):
        by_model.setdefault(str(rec.get("model")), []).append((i, rec))
    out = {}
    for model, recs in by_model.items():
        res = attack_tests([resampled(rec, f"{where}[{i}]") for i, rec in recs], ALPHA, recs[0][1].get("correction", "holm"))
        flips = sum(1 for t in traces if t.model == model and t.flipped)
        rows = [
            asdict(
                ResampledFlip(
                    item_id=t.attack,
                    flipped_at=rec["flipped_at"],
                    asked=rec["r"],
                    orig_right=t.a_orig,
                    orig_read=t.r,
                    att_right=t.a_att,
                    att_read=rec["att"]["read"],
                    p=t.p,
                    p_adjusted=t.p_adjusted,
                    stands=t.stands,
                )
            )
            for (_, rec), t in zip(recs, res.tests)
        ]
        value = {
            "r": max(rec["r"] for _, rec in recs),
            "correction": res.correction,
            "alpha": res.alpha,
            "min_p": res.min_p,
            "temperature": recs[0][1].get("temperature"),
            "flipped": flips,
            "tested": len(recs),
            "standing": len(res.standing),
            "tests": rows,
        }
        out[model] = (res, value)
    return out
