"""Judge-vs-human agreement measured: several annotators combined into one value, the (human,
judge) pairs, exact and binary agreement, Cohen's kappa and Gwet's AC2, the confusion matrix and
what was left out (`judge_agreement`, saved as judge_agreement.json)."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import stats
from ...family import StudyReference, study_reference
from ...runtime.errors import ConfigError, InputError
from ...runtime.fileio import atomic_write
from .judged import JudgedUnit, RunJudgements, judged_units, recorded_rubric, rubric_name
from .labels import HumanLabel, HumanLabels, label_cell, read_labels

RESULT_FILE = "judge_agreement.json"
COMBINE = ("half_up", "half_down")


def combine(values: Sequence[float], scale: Sequence[float], how: str = "half_up") -> float:
    """Several annotators' values as one point of the scale: their mean, rounded to the nearest
    point, a tie going to the higher point (`half_up`, the study's rule: -1 and 0 -> ... 0.5 -> 1)
    or the lower (`half_down`)."""
    if how not in COMBINE:
        raise ConfigError("--combine", f"must be one of {', '.join(COMBINE)}, not {how!r}")
    if not values:
        raise ValueError("no values to combine")
    mean = sum(values) / len(values)
    pts = sorted(set(scale))
    best = min(pts, key=lambda p: (round(abs(p - mean), 9), -p if how == "half_up" else p))
    return best


def _value(raw: object, labels: dict[str, float], scale: Sequence[float] | None, path: Path, line: int | None, column: str) -> float | None:
    cell = label_cell(raw)
    if cell is None:
        return None
    if cell in labels:
        v = labels[cell]
    else:
        try:
            v = float(cell)
        except ValueError:
            known = f" or one of the verdict labels {', '.join(labels)}" if labels else ""
            raise InputError(path, line, column, f"{cell!r} is not a number{known}") from None
        if not math.isfinite(v):
            raise InputError(path, line, column, f"{cell!r} is not a finite number")
    if scale is not None and not any(math.isclose(v, p) for p in scale):
        raise InputError(path, line, column, f"{cell!r} is not on the judge's scale ({', '.join(_show(p) for p in scale)})")
    return next((p for p in (scale or ()) if math.isclose(v, p)), v)


def _nums(values: Sequence[float]) -> list[int | float]:
    """Scale points as written: whole numbers as ints (-1, 0, 1), others as floats."""
    return [int(v) if float(v).is_integer() else float(v) for v in values]


def _show(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


# --------------------------------------------------------------------------- the result


def _rate(r: stats.Rate) -> dict[str, float | int | None]:
    return {"p": r.p, "lo": r.lo, "hi": r.hi, "n": r.n, "k": r.k}


def _coef(a: stats.Agreement | None) -> dict[str, object]:
    if a is None:
        return {"value": None, "lo": None, "hi": None, "n": 0}
    return {
        "value": a.value,
        "lo": a.lo,
        "hi": a.hi,
        "n": a.units,
        "weights": a.weights,
        "pa": a.pa,
        "pe": a.pe,
        "confidence": a.confidence,
        "resamples": a.resamples,
    }


@dataclass
class AgreementResult:
    run: Path
    judges: list[str]
    rubric: str | None
    scale: list[float]
    positive: list[float]
    pairs: list[tuple[float, float]]  # (human, judge)
    exact: stats.Rate
    binary: stats.Rate
    cohen_kappa: stats.Agreement | None
    gwet_ac2: stats.Agreement | None
    confusion: list[list[int]]
    by_human_value: dict[str, stats.Rate]
    inter_annotator: dict[str, Any] | None
    unmatched: dict[str, Any]
    excluded: dict[str, int]
    labels: dict[str, Any]
    study: StudyReference | None
    combine: str
    kappa_weights: str

    @property
    def n(self) -> int:
        return len(self.pairs)

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "exact": _rate(self.exact),
            "binary": _rate(self.binary),
            "cohen_kappa": _coef(self.cohen_kappa),
            "gwet_ac2": _coef(self.gwet_ac2),
            "confusion": {"values": _nums(self.scale), "rows": "human", "columns": "judge", "counts": self.confusion},
            "by_human_value": {k: _rate(v) for k, v in self.by_human_value.items()},
            "study": self.study.as_dict() if self.study else None,
            "run": str(self.run),
            "judges": self.judges,
            "rubric": self.rubric,
            "scale": _nums(self.scale),
            "positive": _nums(self.positive),
            "combine": self.combine,
            "kappa_weights": self.kappa_weights,
            "inter_annotator": self.inter_annotator,
            "unmatched": self.unmatched,
            "excluded": self.excluded,
            "labels": self.labels,
        }

    def save(self, path: Path | str) -> Path:
        path = Path(path)
        with atomic_write(path) as fh:
            json.dump(self.as_dict(), fh, indent=2, ensure_ascii=False)
            fh.write("\n")
        return path


def _match(lab: HumanLabel, index: dict[str, dict[str, list[JudgedUnit]]]) -> list[JudgedUnit]:
    k = lab.keys
    if "unit_id" in k:
        found = index["unit"].get(k["unit_id"], [])
    else:
        found = index["item"].get(k["item_id"], [])
    for name, attr in (
        ("model", "model"),
        ("setting", "setting"),
        ("condition", "condition"),
        ("probe_id", "probe_id"),
        ("item_id", "item_id"),
        ("scorer", "scorer"),
    ):
        if name in k:
            found = [u for u in found if getattr(u, attr) == k[name]]
    return found


def _ambiguity(lab: HumanLabel, found: list[JudgedUnit], path: Path) -> InputError:
    what = []
    for attr, col in (("model", "model"), ("setting", "setting"), ("condition", "condition"), ("scorer", "--judge")):
        vals = sorted({getattr(u, attr) for u in found})
        if len(vals) > 1:
            what.append(f"{col} ({', '.join(vals)})")
    hint = "; tell them apart with " + " and ".join(what) if what else "; add a unit_id column"
    field_name = "unit_id" if "unit_id" in lab.keys else "item_id"
    return InputError(path, lab.line, field_name, f"matches {len(found)} judged answers{hint}")


def _is_positive(v: float, positive: Sequence[float]) -> bool:
    """Whether a value counts as positive in the binary view (PCR's: a 1)."""
    return any(math.isclose(v, p) for p in positive)


@dataclass
class PairAgreement:
    """Agreement of (human, judge) value pairs on one ordered scale."""

    exact: stats.Rate
    binary: stats.Rate  # agreement on `positive` vs the rest (PCR's view)
    cohen_kappa: stats.Agreement | None
    gwet_ac2: stats.Agreement | None  # ordinal weights
    confusion: list[list[int]]  # rows: human value, columns: judge value, in scale order
    by_human_value: dict[str, stats.Rate]  # the judge's accuracy on each human value


def pair_agreement(
    pairs: Sequence[tuple[float, float]],
    scale: Sequence[float],
    positive: Sequence[float],
    *,
    kappa_weights: str = "identity",
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> PairAgreement:
    """Exact and binary agreement (Wilson), Cohen's kappa and Gwet's AC2 (ordinal; bootstrap), the
    confusion matrix and the judge's accuracy per human value, of (human, judge) pairs whose values
    are on `scale`."""
    n = len(pairs)
    exact = stats.wilson(sum(1 for h, j in pairs if math.isclose(h, j)), n, confidence)
    binary = stats.wilson(sum(1 for h, j in pairs if _is_positive(h, positive) == _is_positive(j, positive)), n, confidence)
    table = [[h, j] for h, j in pairs]
    kappa = (
        stats.agreement(table, "cohen_kappa", weights=kappa_weights, categories=scale, confidence=confidence, n_resamples=n_resamples, seed=seed)
        if pairs
        else None
    )
    ac2 = stats.agreement(table, "gwet_ac2", weights="ordinal", categories=scale, confidence=confidence, n_resamples=n_resamples, seed=seed) if pairs else None
    pos_of = {v: i for i, v in enumerate(scale)}
    confusion = [[0] * len(scale) for _ in scale]
    for h, j in pairs:
        confusion[pos_of[h]][pos_of[j]] += 1
    by_value = {_show(v): stats.wilson(confusion[i][i], sum(confusion[i]), confidence) for i, v in enumerate(scale)}
    return PairAgreement(exact, binary, kappa, ac2, confusion, by_value)


def _matched(human: HumanLabels, run: RunJudgements) -> tuple[list[tuple[HumanLabel, JudgedUnit]], list[HumanLabel]]:
    """Which judged answer each label rates: (label, answer) pairs and the labels that match none;
    a label that matches several is an InputError naming its line."""
    index: dict[str, dict[str, list[JudgedUnit]]] = {"unit": {}, "item": {}}
    for u in run.units:
        index["unit"].setdefault(u.unit_id, []).append(u)
        index["item"].setdefault(u.item_id, []).append(u)
    matched: list[tuple[HumanLabel, JudgedUnit]] = []
    unmatched: list[HumanLabel] = []
    for lab in human.labels:
        found = _match(lab, index)
        if not found:
            unmatched.append(lab)
        elif len(found) > 1:
            raise _ambiguity(lab, found, human.path)
        else:
            matched.append((lab, found[0]))
    return matched, unmatched


def _one_judge(matched: list[tuple[HumanLabel, JudgedUnit]], run: RunJudgements) -> list[str]:
    """The judge the labels rate (the run's judges when no label matched); ConfigError when the
    labels match answers of several."""
    used = sorted({u.scorer for _, u in matched}) or run.scorers
    if len(used) > 1:
        raise ConfigError("--judge", f"the labels match answers scored by {len(used)} judges ({', '.join(used)}): pick one with --judge NAME")
    return used


@dataclass
class _Scale:
    points: list[float]
    values: dict[int, dict[str, float]]  # id(label) -> annotator -> value on the scale


def _scale(run: RunJudgements, used: list[str], units: list[JudgedUnit], human: HumanLabels) -> _Scale:
    """The scale: the verdicts of the rubric the run recorded, else every value seen (the judge's
    and the labels'); each label's annotators' values read on it (InputError naming the cell)."""
    rubrics = [recorded_rubric(run.config, s) for s in used]
    label_values: dict[str, float] = {}
    scale_set: set[float] = set()
    for r in rubrics:
        if r is not None:
            for name, verdict in r.verdicts.items():
                label_values.setdefault(name, float(verdict.value))
                scale_set.add(float(verdict.value))
    known_scale = bool(scale_set) and all(r is not None for r in rubrics)
    for u in units:
        if u.status == "valid" and u.value is not None:
            scale_set.add(u.value)
            if u.label is not None:
                label_values.setdefault(u.label, u.value)
    values: dict[int, dict[str, float]] = {}
    for lab in human.labels:
        vals = {}
        for who, raw in lab.ratings.items():
            v = _value(raw, label_values, sorted(scale_set) if known_scale else None, human.path, lab.lines.get(who), lab.columns.get(who, who))
            if v is not None:
                vals[who] = v
        values[id(lab)] = vals
        if not known_scale:
            scale_set.update(vals.values())
    if not scale_set:
        raise InputError(human.path, None, None, "no label and no judge verdict has a value: nothing to compare")
    return _Scale(sorted(scale_set), values)


def _positive_values(positive: Sequence[float] | None, scale: list[float]) -> list[float]:
    """The values counted as positive in the binary view (default: the top of the scale)."""
    pos = sorted(float(p) for p in positive) if positive else [scale[-1]]
    for p in pos:
        if not any(math.isclose(p, s) for s in scale):
            raise ConfigError("--positive", f"{_show(p)} is not on the judge's scale ({', '.join(_show(s) for s in scale)})")
    return pos


def _pairs(matched: list[tuple[HumanLabel, JudgedUnit]], scale: _Scale, combine_rule: str) -> tuple[list[tuple[float, float]], Counter, list[dict[str, float]]]:
    """The (human, judge) pairs, what is left out (counted: blank labels, unscored or missing
    verdicts) and the annotators' values of every rated answer."""
    pairs: list[tuple[float, float]] = []
    excluded: Counter = Counter()
    rated: list[dict[str, float]] = []
    for lab, u in matched:
        vals = scale.values[id(lab)]
        if not vals:
            excluded["labels_blank"] += 1
            continue
        rated.append(vals)
        if u.status in ("unscored", "invalid"):
            excluded["judge_unscored"] += 1
        elif u.status != "valid" or u.value is None:
            excluded["judge_missing"] += 1
        else:
            pairs.append((combine(list(vals.values()), scale.points, combine_rule), u.value))
    return pairs, excluded, rated


def _inter_annotator(
    human: HumanLabels, rated: list[dict[str, float]], scale: list[float], pos: list[float], confidence: float, n_resamples: int, seed: int
) -> dict[str, Any] | None:
    """Agreement between the annotators (exact and binary), when there are several."""
    if len(human.annotators) < 2:
        return None
    grid = [[vals.get(a) for a in human.annotators] for vals in rated]
    multi = [row for row in grid if sum(v is not None for v in row) >= 2]
    if not multi:
        return {"annotators": list(human.annotators), "n": 0, "exact": _coef(None), "binary": _coef(None)}
    pa = stats.agreement(multi, "percent_agreement", categories=scale, confidence=confidence, n_resamples=n_resamples, seed=seed)
    bin_grid = [[None if v is None else int(_is_positive(v, pos)) for v in row] for row in multi]
    pb = stats.agreement(bin_grid, "percent_agreement", categories=[0, 1], confidence=confidence, n_resamples=n_resamples, seed=seed)
    return {"annotators": list(human.annotators), "n": len(multi), "exact": _coef(pa), "binary": _coef(pb)}


def judge_agreement(
    run_dir: Path | str,
    labels: Path | str | HumanLabels,
    *,
    judge: str | None = None,
    label_columns: Sequence[str] | None = None,
    combine_rule: str = "half_up",
    positive: Sequence[float] | None = None,
    kappa_weights: str = "identity",
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> AgreementResult:
    """Join a run's judge verdicts with human labels and measure their agreement."""
    if combine_rule not in COMBINE:
        raise ConfigError("--combine", f"must be one of {', '.join(COMBINE)}, not {combine_rule!r}")
    human = labels if isinstance(labels, HumanLabels) else read_labels(labels, label_columns=label_columns)
    run = judged_units(run_dir, judge)
    matched, unmatched_labels = _matched(human, run)
    used = _one_judge(matched, run)
    units = [u for u in run.units if u.scorer in used]
    names = sorted({rubric_name(s) or s for s in used})
    scale = _scale(run, used, units, human)
    pos = _positive_values(positive, scale.points)
    pairs, excluded, rated = _pairs(matched, scale, combine_rule)
    seen = {(u.model, u.unit_id) for _, u in matched}
    unlabelled = [u for u in units if (u.model, u.unit_id) not in seen]
    # an answer still without a verdict (its call or its judge call failed or has not run) is not a judged one
    unjudged = sum(1 for u in unlabelled if u.status == "missing")
    agree = pair_agreement(pairs, scale.points, pos, kappa_weights=kappa_weights, confidence=confidence, n_resamples=n_resamples, seed=seed)
    return AgreementResult(
        run=Path(run_dir),
        judges=used,
        rubric=names[0] if len(names) == 1 else None,
        scale=scale.points,
        positive=pos,
        pairs=pairs,
        exact=agree.exact,
        binary=agree.binary,
        cohen_kappa=agree.cohen_kappa,
        gwet_ac2=agree.gwet_ac2,
        confusion=agree.confusion,
        by_human_value=agree.by_human_value,
        inter_annotator=_inter_annotator(human, rated, scale.points, pos, confidence, n_resamples, seed),
        unmatched={
            "labels": len(unmatched_labels),
            "judged_unlabelled": len(unlabelled) - unjudged,
            "unjudged_unlabelled": unjudged,
            "label_examples": [f"line {lab.line}: " + ", ".join(f"{k}={v}" for k, v in lab.keys.items()) for lab in unmatched_labels[:5]],
        },
        excluded={
            "judge_unscored": excluded["judge_unscored"],
            "judge_missing": excluded["judge_missing"],
            "labels_blank": excluded["labels_blank"],
            **{k: v for k, v in human.skipped.items()},
        },
        labels={"path": str(human.path), "kind": human.kind, "rows": len(human.labels), "annotators": list(human.annotators), "columns": human.columns},
        study=study_reference(names[0]) if len(names) == 1 else None,
        combine=combine_rule,
        kappa_weights=kappa_weights,
    )
