"""How far an LLM judge agrees with human labels: a run's judge verdicts (its store) joined with
human scores of the same answers, for any judge rubric whose verdicts have numeric values.

    from medresilience.scoring.agreement import judge_agreement

    res = judge_agreement("runs/cm", "labels.csv")          # or a review directory / its export
    res.exact.fmt(), res.binary.fmt(), res.cohen_kappa.fmt()
    res.save("runs/cm/judge_agreement.json")

Human labels come from
- a CSV or Parquet file with one row per judged answer: `unit_id` (the run's unit id) or `item_id`
  (then `model`, and where the run has several, `setting`, `condition` or `probe_id` pick the
  unit), and one label column (`label`, `score`, `human`) or several annotator columns (`label_1`,
  `label_2`, ..., `annotator_a`, `rater2`, ...; or name them). A column `annotator` (or `reviewer`,
  `rater`) makes it a long file: one row per annotator and answer. A label is a number on the
  judge's scale or one of the rubric's verdict labels; blank (or NA) is no label;
- the clinician review app: a review directory whose rubric rates model responses (rubric
  `premise-answer` for the presupposition judge's -1/0/1), or its `medres review stats` export
  (ratings.csv / ratings.parquet): rated tasks only, one annotator per reviewer.

Several annotators of one answer are combined as the Cancer-Myth study did (appendix C.1.1): the
mean, rounded to the nearest point of the scale, a half going up (`combine="half_up"`; "half_down"
rounds a half down).

What is reported: n matched, exact agreement on the scale and on the binary view (a verdict
counts as positive when its value is in `positive`, default the top of the scale: "fully
corrects" vs not), each with a Wilson interval; Cohen's kappa (unweighted unless `kappa_weights`)
and Gwet's AC2 with ordinal weights, with bootstrap intervals over answers (stats.agreement); the
confusion matrix (human rows, judge columns); the judge's accuracy per human value; agreement
between annotators when there are several; and what was left out: labels that match no judged
answer, judged answers without a label, and labelled answers whose verdict is unscored (a judge
reply without a verdict) or missing (the answer or judge call failed) — excluded and counted,
never a default value. Every bad label row is an InputError naming the file, the line and the
column; an ambiguous match (one label, several judged answers) names the line and what to add."""

from __future__ import annotations

import csv
import json
import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import stats
from ..errors import ConfigError, InputError
from ..family import StudyReference, study_reference
from ..fileio import atomic_write, iter_parquet_rows, open_parquet

__all__ = [
    "COMBINE",
    "AgreementResult",
    "HumanLabel",
    "JudgedUnit",
    "PairAgreement",
    "StudyReference",
    "combine",
    "judge_agreement",
    "judged_units",
    "pair_agreement",
    "read_labels",
]

RESULT_FILE = "judge_agreement.json"
COMBINE = ("half_up", "half_down")
_MISSING = {"", "na", "n/a", "nan", "none", "null"}
KEY_COLUMNS = ("unit_id", "item_id", "model", "setting", "condition", "probe_id")
SINGLE_LABEL_COLUMNS = ("label", "score", "human", "human_label", "human_score", "value")
ANNOTATOR_COLUMNS = ("annotator", "reviewer", "rater")
_ANNOTATOR_LABEL = re.compile(r"^(label|score|human|annotator|rater|reviewer)[ _\-]?[A-Za-z0-9]+$", re.IGNORECASE)
#: columns of a review export (`medres review stats`: ratings.csv) that identify the judged answer
REVIEW_COLUMNS = ("hidden_unit", "hidden_model", "reviewer", "status")


# --------------------------------------------------------------------------- the study's values


# --------------------------------------------------------------------------- judged answers


@dataclass(frozen=True)
class JudgedUnit:
    """One planned answer of a run with its judge's verdict (`status`: valid, unscored, or
    missing when the answer or the judge call never produced a score)."""

    model: str
    unit_id: str
    item_id: str
    probe_id: str | None
    condition: str
    setting: str
    scorer: str
    status: str
    label: str | None
    value: float | None


def rubric_name(scorer: str) -> str | None:
    """The rubric of a judge scorer name (`judge:<rubric>@<hash>:<judge model>#<config>`)."""
    m = re.match(r"^judge:([^@]+)@", scorer)
    return m.group(1) if m else None


def _rubric_hash(scorer: str) -> str | None:
    m = re.match(r"^judge:[^@]+@([0-9a-f]+):", scorer)
    return m.group(1) if m else None


def _json_rubrics(value: Any) -> Iterator[dict[str, Any]]:
    """Every rubric-like JSON object among the texts a run recorded (its prompts)."""
    if isinstance(value, dict):
        if "verdicts" in value and "name" in value:
            yield value
        for v in value.values():
            yield from _json_rubrics(v)
    elif isinstance(value, list):
        for v in value:
            yield from _json_rubrics(v)
    elif isinstance(value, str) and value.lstrip().startswith("{") and '"verdicts"' in value:
        try:
            yield from _json_rubrics(json.loads(value))
        except ValueError:
            return


def _rubric_of(config: dict[str, Any], scorer: str) -> Any:
    """The judge rubric the run recorded for a scorer (matched by name and hash), or None."""
    from .judge import Rubric

    name, digest = rubric_name(scorer), _rubric_hash(scorer)
    for data in _json_rubrics(config.get("prompts") or {}):
        try:
            r = Rubric.model_validate(data)
        except ValueError:
            continue
        if r.name == name and r.hash == digest:
            return r
    return None


@dataclass
class RunJudgements:
    run_dir: Path
    run_id: str | None
    config: dict[str, Any]
    units: list[JudgedUnit]
    scorers: list[str]


def judged_units(run_dir: Path | str, judge: str | None = None) -> RunJudgements:
    """The units of a run's latest run that a judge scored (all judges, or those whose scorer name
    is or contains `judge`: a rubric name, a judge model label, the full name)."""
    from ..store import Store

    run_dir = Path(run_dir)
    db = run_dir / "store.sqlite"
    if not db.is_file():
        raise InputError(run_dir, None, None, "not a run directory (store.sqlite missing)")
    with Store(db) as store:
        run = store.latest_run()
        rows = list(store.unit_results(run, judged=True))
        cfg = store.run_config(run) if run else None
    config = cfg.data if cfg is not None else {}
    all_scorers = sorted({r.scoring for r in rows})
    if not all_scorers:
        raise ConfigError("RUN_DIR", f"{run_dir}: no answer of the latest run was scored by an LLM judge")
    scorers = all_scorers
    if judge:
        scorers = [s for s in all_scorers if s == judge] or [s for s in all_scorers if judge in s]
        if not scorers:
            raise ConfigError("--judge", f"no judge of {run_dir} is named '{judge}' (judges: {', '.join(all_scorers)})")
    keep = set(scorers)
    units = []
    for r in rows:
        if r.scoring not in keep:
            continue
        status = r.status if r.call_status == "ok" and r.status in ("valid", "unscored", "invalid") else "missing"
        if status == "valid" and r.value is None:
            status = "unscored"  # a verdict without a value cannot be compared on a numeric scale
        value = None if r.value is None else float(r.value)
        units.append(JudgedUnit(r.model, r.unit_id, r.item_id, r.probe_id, r.condition, r.setting, r.scoring, status, r.label, value))
    return RunJudgements(run_dir, run, config, units, scorers)


# --------------------------------------------------------------------------- human labels


@dataclass
class HumanLabel:
    """One labelled answer: how it names the answer, its annotators' values (None: blank), the
    line (or row) where it is (the first one, for a long file)."""

    line: int | None
    keys: dict[str, str]
    ratings: dict[str, Any] = field(default_factory=dict)  # annotator -> raw cell
    lines: dict[str, int | None] = field(default_factory=dict)  # annotator -> line
    columns: dict[str, str] = field(default_factory=dict)  # annotator -> column


@dataclass
class HumanLabels:
    path: Path
    kind: str  # csv | parquet | review
    labels: list[HumanLabel]
    annotators: list[str]
    columns: list[str]  # the label columns read
    skipped: Counter = field(default_factory=Counter)


def _cell(v: Any) -> str | None:
    """A label cell: blank or an NA word is no label."""
    s = _key_cell(v)
    return None if s is None or s.lower() in _MISSING else s


def _key_cell(v: Any) -> str | None:
    """A cell naming the answer (unit, item, model, setting, ...): only a blank cell is missing, so
    a value such as the setting `none` (no mitigation) is a name like any other."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    s = str(v).strip()
    return s or None


def _rows_of(path: Path) -> tuple[str, list[str], Iterator[tuple[int | None, dict[str, Any]]]]:
    """(kind, header, (line, row) ...) of a CSV, TSV or Parquet file."""
    if path.suffix.lower() == ".parquet":
        pf = open_parquet(path)
        return "parquet", list(pf.schema_arrow.names), iter_parquet_rows(path, file=pf)
    try:
        fh = path.open(encoding="utf-8-sig", newline="")
    except OSError as e:
        raise InputError(path, None, None, f"cannot read ({e.strerror or e})") from None
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    try:
        reader = csv.reader(fh, delimiter=delimiter)
        header = next(reader, None)
    except (UnicodeDecodeError, csv.Error) as e:
        fh.close()
        raise InputError(path, 1, None, f"not a readable CSV file ({e})") from None
    if header is None:
        fh.close()
        raise InputError(path, None, None, "is empty (expected a header line and one row per labelled answer)")
    header = [h.strip() for h in header]

    def crows() -> Iterator[tuple[int | None, dict[str, Any]]]:
        with fh:
            start = reader.line_num + 1
            try:
                for rec in reader:
                    if not any(c.strip() for c in rec):
                        start = reader.line_num + 1
                        continue
                    if len(rec) != len(header):
                        raise InputError(path, start, None, f"has {len(rec)} cells, the header has {len(header)}")
                    yield start, dict(zip(header, rec))
                    start = reader.line_num + 1
            except UnicodeDecodeError as e:
                raise InputError(path, start, None, f"not UTF-8 text ({e.reason})") from None
            except csv.Error as e:
                raise InputError(path, start, None, f"not valid CSV ({e})") from None

    return "csv", header, crows()


def _review_dimension(header: Sequence[str], label_columns: Sequence[str] | None, path: Path) -> list[str]:
    if label_columns:
        return list(label_columns)
    from ..review.rubrics import rubrics

    numeric = [d.key for r in rubrics().values() if r.needs_run for d in r.dimensions if d.numeric() and d.key in header]
    numeric = list(dict.fromkeys(numeric))
    if len(numeric) != 1:
        found = ", ".join(numeric) or "none"
        raise InputError(
            path, 1, "label", f"cannot tell which rated dimension holds the label (numeric dimensions found: {found}); name it with --label-column"
        )
    return numeric


def _label_columns(header: Sequence[str], label_columns: Sequence[str] | None, long: str | None, path: Path) -> list[str]:
    if label_columns:
        missing = [c for c in label_columns if c not in header]
        if missing:
            raise InputError(path, 1, missing[0], f"no such column (columns: {', '.join(header)})")
        return list(label_columns)
    single = [c for c in header if c.lower() in SINGLE_LABEL_COLUMNS]
    if single:
        return single[:1]
    multi = [c for c in header if _ANNOTATOR_LABEL.match(c) and c != long and c.lower() not in ANNOTATOR_COLUMNS]
    if multi:
        return multi
    raise InputError(
        path, 1, "label", f"no label column: expected label (or score), or one column per annotator such as label_1, label_2 (columns: {', '.join(header)})"
    )


def read_labels(path: Path | str, *, label_columns: Sequence[str] | None = None) -> HumanLabels:
    """Human labels from a CSV/TSV/Parquet file, a review export (ratings.csv/.parquet) or a
    review directory (see the module's docstring)."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, None, None, "labels file not found")
    if path.is_dir() or path.suffix == ".sqlite":
        return _review_labels(path, label_columns)
    kind, header, rows = _rows_of(path)
    if set(REVIEW_COLUMNS) <= set(header):
        return _labels_from_rows(path, "review", header, rows, _review_dimension(header, label_columns, path), review=True)
    return _labels_from_rows(path, kind, header, rows, None, label_columns=label_columns)


def _review_labels(path: Path, label_columns: Sequence[str] | None) -> HumanLabels:
    from ..review.db import ReviewDB
    from ..review.stats import ratings_frame

    with ReviewDB(path) as db:
        rubric = db.rubric
        frame = ratings_frame(db)
        db_path = db.path
    if not rubric.needs_run:
        raise InputError(
            db_path,
            None,
            "rubric",
            f"review rubric {rubric.key} rates items, not model answers: judge agreement needs a rubric that rates responses (e.g. premise-answer)",
        )
    header = list(frame.columns)
    if label_columns:
        columns = list(label_columns)
    else:
        columns = [d.key for d in rubric.dimensions if d.numeric()]
        if len(columns) != 1:
            raise ConfigError(
                "--label-column", f"review rubric {rubric.key} has {len(columns)} numeric dimensions ({', '.join(columns) or 'none'}); name the one to compare"
            )
    rows = ((None, row) for row in frame.astype(object).where(frame.notna(), None).to_dict("records"))
    return _labels_from_rows(db_path, "review", header, rows, columns, review=True)


def _labels_from_rows(
    path: Path,
    kind: str,
    header: Sequence[str],
    rows: Iterator[tuple[int | None, dict[str, Any]]],
    columns: list[str] | None,
    *,
    review: bool = False,
    label_columns: Sequence[str] | None = None,
) -> HumanLabels:
    skipped: Counter = Counter()
    if review:
        key_map = {"unit_id": "hidden_unit", "model": "hidden_model", "scorer": "hidden_scoring"}
        long = "reviewer"
        for c in columns or ():
            if c not in header:
                raise InputError(path, 1, c, f"no such column (columns: {', '.join(header)})")
    else:
        if "unit_id" not in header and "item_id" not in header:
            raise InputError(path, 1, "item_id", f"no column names the answer: expected unit_id, or item_id with model (columns: {', '.join(header)})")
        key_map = {k: k for k in KEY_COLUMNS if k in header}
        long = next((c for c in header if c.lower() in ANNOTATOR_COLUMNS), None)
        columns = _label_columns(header, label_columns, long, path)
    labels: dict[tuple, HumanLabel] = {}
    annotators: list[str] = []
    index = 0
    for line, row in rows:
        index += 1
        where = line if line is not None else index
        if review and str(row.get("status")) != "rated":
            skipped["review_not_rated"] += 1
            continue
        keys = {}
        for k, col in key_map.items():
            v = _key_cell(row.get(col))
            if v is not None:
                keys[k] = v
        if "unit_id" not in keys and "item_id" not in keys:
            field_name = key_map["unit_id"] if review else ("unit_id" if "unit_id" in header else "item_id")
            raise InputError(path, where, field_name, "is blank: every label needs the answer it rates")
        ident = tuple(sorted(keys.items()))
        if long is not None:
            who = _cell(row.get(long))
            if who is None:
                raise InputError(path, where, long, "is blank")
            pairs = [(who if len(columns) == 1 else f"{who}/{c}", c) for c in columns]
        else:
            pairs = [(c, c) for c in columns]
        lab = labels.get(ident)
        if lab is None:
            lab = labels[ident] = HumanLabel(where, keys)
        elif long is None:
            raise InputError(
                path,
                where,
                key_map.get("unit_id", "item_id"),
                f"labels the same answer as line {lab.line} (several annotators: one column each, or an annotator column)",
            )
        for name, col in pairs:
            if name in lab.ratings:
                raise InputError(path, where, long or col, f"annotator {name!r} labels this answer twice (first on line {lab.lines[name]})")
            lab.ratings[name] = row.get(col)
            lab.lines[name] = where
            lab.columns[name] = col
            if name not in annotators:
                annotators.append(name)
    return HumanLabels(path, kind, list(labels.values()), annotators, list(columns or ()), skipped)


# --------------------------------------------------------------------------- combining


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


def _value(raw: Any, labels: dict[str, float], scale: Sequence[float] | None, path: Path, line: int | None, column: str) -> float | None:
    cell = _cell(raw)
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


def _rate(r: stats.Rate) -> dict[str, Any]:
    return {"p": r.p, "lo": r.lo, "hi": r.hi, "n": r.n, "k": r.k}


def _coef(a: stats.Agreement | None) -> dict[str, Any]:
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


def _match(lab: HumanLabel, index: dict[str, dict[Any, list[JudgedUnit]]]) -> list[JudgedUnit]:
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
    kw = {"categories": scale, "confidence": confidence, "n_resamples": n_resamples, "seed": seed}
    kappa = stats.agreement(table, "cohen_kappa", weights=kappa_weights, **kw) if pairs else None
    ac2 = stats.agreement(table, "gwet_ac2", weights="ordinal", **kw) if pairs else None
    pos_of = {v: i for i, v in enumerate(scale)}
    confusion = [[0] * len(scale) for _ in scale]
    for h, j in pairs:
        confusion[pos_of[h]][pos_of[j]] += 1
    by_value = {_show(v): stats.wilson(confusion[i][i], sum(confusion[i]), confidence) for i, v in enumerate(scale)}
    return PairAgreement(exact, binary, kappa, ac2, confusion, by_value)


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
    path = human.path
    index: dict[str, dict[Any, list[JudgedUnit]]] = {"unit": {}, "item": {}}
    for u in run.units:
        index["unit"].setdefault(u.unit_id, []).append(u)
        index["item"].setdefault(u.item_id, []).append(u)

    # which judged answer each label rates
    matched: list[tuple[HumanLabel, JudgedUnit]] = []
    unmatched_labels: list[HumanLabel] = []
    for lab in human.labels:
        found = _match(lab, index)
        if not found:
            unmatched_labels.append(lab)
        elif len(found) > 1:
            raise _ambiguity(lab, found, path)
        else:
            matched.append((lab, found[0]))
    used = sorted({u.scorer for _, u in matched}) or run.scorers
    if len(used) > 1:
        raise ConfigError("--judge", f"the labels match answers scored by {len(used)} judges ({', '.join(used)}): pick one with --judge NAME")
    units = [u for u in run.units if u.scorer in used]

    # the scale: the verdicts of the rubric the run recorded, else every value seen
    rubrics = [_rubric_of(run.config, s) for s in used]
    names = sorted({rubric_name(s) or s for s in used})
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
            v = _value(raw, label_values, sorted(scale_set) if known_scale else None, path, lab.lines.get(who), lab.columns.get(who, who))
            if v is not None:
                vals[who] = v
        values[id(lab)] = vals
        if not known_scale:
            scale_set.update(vals.values())
    scale = sorted(scale_set)
    if not scale:
        raise InputError(path, None, None, "no label and no judge verdict has a value: nothing to compare")
    pos = sorted(float(p) for p in positive) if positive else [scale[-1]]
    for p in pos:
        if not any(math.isclose(p, s) for s in scale):
            raise ConfigError("--positive", f"{_show(p)} is not on the judge's scale ({', '.join(_show(s) for s in scale)})")

    # the pairs (human, judge); what is left out is counted
    pairs: list[tuple[float, float]] = []
    excluded: Counter = Counter()
    rated: list[dict[str, float]] = []
    for lab, u in matched:
        vals = values[id(lab)]
        if not vals:
            excluded["labels_blank"] += 1
            continue
        rated.append(vals)
        if u.status in ("unscored", "invalid"):
            excluded["judge_unscored"] += 1
        elif u.status != "valid" or u.value is None:
            excluded["judge_missing"] += 1
        else:
            pairs.append((combine(list(vals.values()), scale, combine_rule), u.value))
    seen = {(u.model, u.unit_id) for _, u in matched}
    unlabelled = [u for u in units if (u.model, u.unit_id) not in seen]
    # an answer still without a verdict (its call or its judge call failed or has not run) is not a judged one
    unjudged = sum(1 for u in unlabelled if u.status == "missing")

    agree = pair_agreement(pairs, scale, pos, kappa_weights=kappa_weights, confidence=confidence, n_resamples=n_resamples, seed=seed)

    kw = {"categories": scale, "confidence": confidence, "n_resamples": n_resamples, "seed": seed}

    inter = None
    if len(human.annotators) >= 2:
        grid = [[vals.get(a) for a in human.annotators] for vals in rated]
        multi = [row for row in grid if sum(v is not None for v in row) >= 2]
        if multi:
            pa = stats.agreement(multi, "percent_agreement", **kw)
            bin_grid = [[None if v is None else int(_is_positive(v, pos)) for v in row] for row in multi]
            pb = stats.agreement(bin_grid, "percent_agreement", categories=[0, 1], confidence=confidence, n_resamples=n_resamples, seed=seed)
            inter = {"annotators": list(human.annotators), "n": len(multi), "exact": _coef(pa), "binary": _coef(pb)}
        else:
            inter = {"annotators": list(human.annotators), "n": 0, "exact": _coef(None), "binary": _coef(None)}

    study = study_reference(names[0]) if len(names) == 1 else None
    return AgreementResult(
        run=Path(run_dir),
        judges=used,
        rubric=names[0] if len(names) == 1 else None,
        scale=scale,
        positive=pos,
        pairs=pairs,
        exact=agree.exact,
        binary=agree.binary,
        cohen_kappa=agree.cohen_kappa,
        gwet_ac2=agree.gwet_ac2,
        confusion=agree.confusion,
        by_human_value=agree.by_human_value,
        inter_annotator=inter,
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
        study=study,
        combine=combine_rule,
        kappa_weights=kappa_weights,
    )
