"""Ratings out and in, one row per rater, unit and dimension (`medres review export` / `medres
review import`), so a study rated in another survey tool is analysed here as one rated in the app.

The layout (CSV, header required, UTF-8): `rater, unit, item, dimension, value`, then any number
of `stratum_KEY` columns (the unit's strata: what the analyses group by, the same on every row of
a unit) and `hidden_KEY` columns (the unit's answer key: the blinded facts the rubric scores its
ratings against, e.g. `hidden_real_position` of the realism check, which question of the pair is
the real one; the export writes them, and an import also takes a `stratum_KEY` column of such a
fact). A rubric whose ratings are picks scored against a hidden fact (`extra["pick"]`) refuses a
file that does not give that fact for every unit. A dimension is one of the rubric's, or `part:N` for paragraph N of a rubric rated by parts
(its labels are flags `part:N:LABEL`); `flag` rows name one flag each, a `comment` row holds
the rater's comment and a `status` row with the value `skipped` marks a skipped task (a rater with
any other row on a unit rated it). The export writes every rating in this layout; an import checks
every row (a bad one is an error naming its line and field) before it writes a new review."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..runtime.errors import ConfigError, InputError
from ..runtime.fileio import csv_records, csv_text, show, text_lines, write_csv
from .answers import WideAnswers, read_wide
from .db import ReviewDB, ReviewError, UnitRow, db_path, valid_name
from .rubrics import PART, Coding, ReviewRubric, get_rubric, part_key

COLUMNS = ("rater", "unit", "item", "dimension", "value")
OWN_CODING = "medres"  # the rubric's own coding, as the app stores and the export writes it
STRATUM = "stratum_"
HIDDEN = "hidden_"
SPECIAL = ("flag", "comment", "status")


def export_ratings(review: Path | str, out: Path | str) -> int:
    """Write every rating of the review at `out` in the exchange layout; the number of rows."""
    with ReviewDB(review) as db:
        rubric, units, ratings = db.rubric, db.units(), db.ratings()
    keys = sorted({k for u in units.values() for k in u.strata})
    facts = [k for k in answer_key(rubric) if any(u.hidden.get(k) is not None for u in units.values())]
    rows: list[list[str]] = []
    for r in ratings:
        if r["status"] is None:
            continue
        u = units[r["unit_id"]]
        tail = ["" if u.strata.get(k) is None else str(u.strata[k]) for k in keys]
        tail += ["" if u.hidden.get(k) is None else str(u.hidden[k]) for k in facts]
        for dim, value in _task_rows(rubric, r):
            rows.append([r["reviewer"], r["unit_id"], u.item_id or "", dim, value, *tail])
    write_csv(Path(out), [[*COLUMNS, *(STRATUM + k for k in keys), *(HIDDEN + k for k in facts)], *rows])
    return len(rows)


def answer_key(rubric: ReviewRubric) -> list[str]:
    """The hidden facts a rubric scores ratings against: its pick's fact and its automatic labels."""
    pick = rubric.extra.get("pick")
    keys = [pick[1]] if pick else []
    return keys + [a.auto_field for a in rubric.auto if a.auto_field not in keys]


def _task_rows(rubric: ReviewRubric, r: dict[str, Any]) -> list[tuple[str, str]]:
    """(dimension, value) of each exchange row of one rater's task."""
    rows: list[tuple[str, str]] = []
    if r["status"] == "skipped":
        rows.append(("status", "skipped"))
    rows += [(d.key, r["values"][d.key]) for d in rubric.dimensions if r["values"].get(d.key) is not None]
    rows += sorted(((k, v) for k, v in r["values"].items() if k.startswith(PART)), key=lambda kv: _part_number(kv[0]) or 0)
    rows += [("flag", f) for f in r["flags"]]
    if r["comment"]:
        rows.append(("comment", r["comment"]))
    return rows


@dataclass
class _Task:
    status: str = "rated"
    values: dict[str, str] | None = None
    flags: list[str] | None = None
    comment: str = ""


@dataclass
class ImportResult:
    path: Path
    rubric: str
    units: int
    raters: int
    ratings: int
    skipped: int
    rows: int = 0  # the file's rows read (its header not counted)
    lines: int = 0  # the file's lines (a quoted field may span several)
    answers: int = 0  # units shown with their answer from --answers
    answers_unrated: int = 0  # answers of the file (question x named source) no rating is about
    left_out: tuple[str, ...] = ()  # columns of the answers file that are neither a source nor the question


def _part_number(text: str) -> int | None:
    """N of `part:N` (and of `part:N:LABEL`), else None."""
    head = text[len(PART) :].split(":", 1)[0] if text.startswith(PART) else ""
    return int(head) if head.isdigit() and int(head) > 0 else None


def _check_value(rubric: ReviewRubric, path: Path, line: int, dim: str, value: str) -> None:
    if rubric.per_part is not None and _part_number(dim) is not None and dim == part_key(_part_number(dim) or 0):
        if value not in rubric.per_part.values:
            raise InputError(path, line, "value", f"{show(value)} is not on the paragraph scale ({', '.join(rubric.per_part.values)})")
        return
    if dim == "flag" and rubric.per_part is not None and _part_number(value) is not None:
        if value.split(":", 2)[-1] not in {f.key for f in rubric.part_labels} or value.count(":") != 2:
            raise InputError(path, line, "value", f"{show(value)} is not part:N:LABEL with a label of rubric {rubric.key}")
        return
    if dim == "flag":
        if value not in {f.key for f in rubric.flags}:
            raise InputError(path, line, "value", f"flag {show(value)} is not one of rubric {rubric.key}'s: {', '.join(f.key for f in rubric.flags) or 'none'}")
        return
    if dim == "status":
        if value != "skipped":
            raise InputError(path, line, "value", f"a status row says skipped, not {show(value)}")
        return
    if dim == "comment":
        return
    try:
        d = rubric.dimension(dim)
    except KeyError:
        known = ", ".join([*(d.key for d in rubric.dimensions), *SPECIAL])
        raise InputError(path, line, "dimension", f"{show(dim)} is not a dimension of rubric {rubric.key} (one of: {known})") from None
    if value not in d.values:
        raise InputError(path, line, "value", f"{show(value)} is not on the {dim} scale ({', '.join(d.values)})")


def _fact_columns(rubric: ReviewRubric, path: Path, header: list[str]) -> dict[str, str]:
    """Hidden fact -> the column that gives it: `hidden_KEY`, else `stratum_KEY` for a fact of the
    rubric's answer key. A rubric of picks needs its pick's fact (else the picks would be scored
    against nothing)."""
    cols = {h[len(HIDDEN) :]: h for h in header if h.startswith(HIDDEN)}
    for k in answer_key(rubric):
        if k not in cols and STRATUM + k in header:
            cols[k] = STRATUM + k
    pick = rubric.extra.get("pick")
    if pick and pick[1] not in cols:
        raise InputError(
            path,
            1,
            HIDDEN + pick[1],
            f"rubric {rubric.key} scores each {pick[0]} pick against the unit's {pick[1]}, which this file does not give: "
            f"add a {HIDDEN}{pick[1]} (or {STRATUM}{pick[1]}) column, the value of {pick[0]} that is the true one",
        )
    return cols


def _facts(rubric: ReviewRubric, path: Path, line: int, row: dict[str, str], cols: dict[str, str]) -> dict[str, str]:
    """A row's hidden facts (empty cells left out); the pick's fact must be a value of its dimension."""
    out = {k: row[c].strip() for k, c in cols.items() if row[c].strip()}
    pick = rubric.extra.get("pick")
    if pick:
        allowed = rubric.dimension(pick[0]).values
        if out.get(pick[1]) not in allowed:
            got = "empty" if pick[1] not in out else f"{show(out[pick[1]])} is not one of {', '.join(allowed)}"
            raise InputError(path, line, cols[pick[1]], f"{got}: every unit must say which {pick[0]} value is the true one ({', '.join(allowed)})")
    return out


def _coding(rubric: ReviewRubric, name: str | None) -> Coding | None:
    """The named coding of the rubric (None: its own); an unknown name is an error."""
    if name is None or name == OWN_CODING:
        return None
    for c in rubric.codings:
        if c.name == name:
            return c
    known = ", ".join([OWN_CODING, *(c.name for c in rubric.codings)])
    raise ConfigError("--coding", f"rubric {rubric.key} knows no coding {show(name)} (one of: {known})")


def _coding_hint(rubric: ReviewRubric) -> str:
    own = ", ".join(f"{d.key} {'/'.join(d.values)}" for d in rubric.dimensions if any(c.mapping(d.key) for c in rubric.codings))
    others = "; ".join(f"--coding {c.name} ({c.description})" for c in rubric.codings)
    return f"--coding {OWN_CODING} (this rubric's: {own}) or {others}"


def _settle_coding(path: Path, rubric: ReviewRubric, rows: list[tuple[int, str, str]]) -> None:
    """Refuse a file whose coding is not proven when the rubric knows another coding: a value only
    the rubric's own scale has, on a dimension whose scales share values, proves its own; a value
    only another coding has is an error naming that coding; a file proving neither must say."""
    first: tuple[int, str] | None = None
    for line, dim, value in rows:
        for c in rubric.codings:
            there = c.mapping(dim)
            if there is None:
                continue
            here = rubric.dimension(dim).values
            if value in there and value not in here:
                raise InputError(
                    path, line, "value", f"{show(value)} is not on the {dim} scale ({', '.join(here)}) but is on {c.name}'s: import with --coding {c.name}"
                )
            if set(there) & set(here):
                if value in here and value not in there:
                    return
                first = first or (line, dim)
    if first is not None:
        raise InputError(
            path,
            first[0],
            "value",
            f"{first[1]} is coded the other way in another study (its values here would read inverted) and nothing in the file shows which coding it follows: say it with {_coding_hint(rubric)}",
        )


def _recode(path: Path, line: int, coding: Coding, rubric: ReviewRubric, dim: str, value: str) -> str:
    """`value` of `dim` in `coding` as this rubric's value (a value on this rubric's scale of a
    dimension whose scales share none passes as is)."""
    there = coding.mapping(dim)
    if there is None:
        return value
    if value in there:
        return there[value]
    here = rubric.dimension(dim).values
    if value in here and not set(there) & set(here):
        return value
    raise InputError(path, line, "value", f"{show(value)} is not on {coding.name}'s {dim} scale ({', '.join(there)})")


def read_ratings(
    path: Path | str, rubric: ReviewRubric, coding: str | None = None, survey: Path | str | None = None
) -> tuple[dict[str, UnitRow], dict[tuple[str, str], _Task], int]:
    """The units and (unit, rater) tasks of a ratings file, every row checked, and the number of
    rows read (the header not counted). `coding` names the coding of its values (None: the
    rubric's own, which the file must prove when the rubric knows another: `_settle_coding`).
    With `survey`, the file is a survey tool's export the rubric reads with that survey's
    definition (`extra["survey_records"]`: CancerCare's Qualtrics export), turned into the rows
    of this layout, each naming the export's line."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, None, None, "no such file")
    other = _coding(rubric, coding)
    if survey is not None:
        reader = rubric.extra.get("survey_records")
        if reader is None:
            raise ConfigError("--survey", f"rubric {rubric.key} reads no survey export: import its ratings in the exchange layout")
        records = reader(path, Path(survey))
    else:
        records = [(line, [csv_text(c) for c in cells]) for line, cells in csv_records(path, shaped=True)]
    if coding is None and rubric.codings and records:
        col = {h.strip(): i for i, h in enumerate(records[0][1])}
        if "dimension" in col and "value" in col:
            rows = [(ln, c[col["dimension"]].strip(), c[col["value"]].strip()) for ln, c in records[1:] if len(c) == len(records[0][1])]
            _settle_coding(path, rubric, rows)
    return _read_rows(path, rubric, other, iter(records))


def _header(path: Path, records: Any) -> list[str]:
    """The ratings file's header (its first record), checked: every column of `COLUMNS`, then only
    stratum_KEY and hidden_KEY columns."""
    try:
        _, header = next(records)
    except StopIteration:
        raise InputError(path, None, None, f"empty: expected a header {', '.join(COLUMNS)}") from None
    header = [h.strip() for h in header]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise InputError(path, 1, missing[0], f"the header lacks {', '.join(missing)} (expected {', '.join(COLUMNS)}, then stratum_KEY columns)")
    extra = [h for h in header if h not in COLUMNS and not h.startswith((STRATUM, HIDDEN))]
    if extra:
        raise InputError(path, 1, extra[0], f"unknown column (expected {', '.join(COLUMNS)}, then stratum_KEY and hidden_KEY columns)")
    return header


def _record(t: _Task, dim: str, value: str) -> None:
    """One rating row into its reviewer's task: a skip, a flag, the comment, or a dimension's value."""
    if dim == "status":
        t.status = "skipped"
    elif dim == "flag":
        t.flags.append(value)  # type: ignore[union-attr]
    elif dim == "comment":
        t.comment = value
    else:
        t.values[dim] = value  # type: ignore[index]


def _read_rows(path: Path, rubric: ReviewRubric, other: Coding | None, records: Any) -> tuple[dict[str, UnitRow], dict[tuple[str, str], _Task], int]:
    header = _header(path, records)
    facts = _fact_columns(rubric, path, header)
    units: dict[str, UnitRow] = {}
    tasks: dict[tuple[str, str], _Task] = {}
    seen: set[tuple[str, str, str, str]] = set()
    n_rows = 0
    for line, cells in records:
        n_rows += 1
        if len(cells) != len(header):
            raise InputError(path, line, None, f"{len(cells)} cells, the header has {len(header)}")
        row = dict(zip(header, cells))
        for c in ("rater", "unit", "dimension"):
            if not row[c].strip():
                raise InputError(path, line, c, "empty")
        try:
            rater = valid_name(row["rater"])
        except ReviewError as e:
            raise InputError(path, line, "rater", str(e)) from None
        unit, dim, value = row["unit"].strip(), row["dimension"].strip(), row["value"] if row["dimension"].strip() == "comment" else row["value"].strip()
        if other is not None:
            value = _recode(path, line, other, rubric, dim, value)
        _check_value(rubric, path, line, dim, value)
        key = (rater, unit, dim, value if dim == "flag" else "")
        if key in seen:
            raise InputError(path, line, "dimension", f"{rater} rated {dim}{' ' + value if dim == 'flag' else ''} of unit {show(unit)} twice")
        seen.add(key)
        strata = {h[len(STRATUM) :]: (row[h] or None) for h in header if h.startswith(STRATUM)}
        hidden = _facts(rubric, path, line, row, facts)
        item = row["item"].strip() or None
        if unit not in units:
            units[unit] = UnitRow(unit, item, strata, [], hidden)
        elif units[unit].item_id != item or units[unit].strata != strata or units[unit].hidden != hidden:
            field = "item" if units[unit].item_id != item else "stratum" if units[unit].strata != strata else "hidden"
            raise InputError(path, line, field, f"unit {show(unit)} differs from its first row")
        _record(tasks.setdefault((unit, rater), _Task(values={}, flags=[])), dim, value)
    if not tasks:
        raise InputError(path, None, None, "holds no rating")
    for (unit, rater), t in tasks.items():
        if t.status == "skipped" and (t.values or t.flags):
            raise InputError(path, None, "status", f"{rater} both skipped and rated unit {show(unit)}")
    return units, tasks, n_rows


def with_answers(
    rubric: ReviewRubric, units: dict[str, UnitRow], tasks: dict[tuple[str, str], _Task], answers: WideAnswers, survey: bool
) -> tuple[dict[str, UnitRow], int]:
    """Each unit shown with its answer from a wide answers file (review.answers): the row of its
    item (`WideAnswers.row_of`), the column of its `source` stratum, shown as the rubric shows an
    answer (`extra["answer_display"]`; a survey's units split as the survey numbered their
    paragraphs). A unit whose source is not a named column or whose item has no row is an error,
    as is a rating of a paragraph the answer does not have (the answers and the ratings disagree).
    Returns the units and how many answers of the file no rating is about."""
    show_answer = rubric.extra.get("answer_display")
    if show_answer is None:
        raise ConfigError("--answers", f"rubric {rubric.key} shows no answers from a file: drop --answers")
    top: dict[str, tuple[int, str]] = {}  # unit -> the highest paragraph rated, by whom
    for (unit, rater), t in tasks.items():
        for n in (_part_number(k) for k in [*(t.values or {}), *(t.flags or [])]):
            if n is not None and n > top.get(unit, (0, ""))[0]:
                top[unit] = (n, rater)
    out: dict[str, UnitRow] = {}
    used: set[tuple[int, str]] = set()
    for uid, u in units.items():
        source = u.strata.get("source")
        if source not in answers.sources:
            raise ConfigError(
                "--sources",
                f"unit {show(uid)} rates an answer from {show(source or '(no source)')}, which --sources does not name (named: {', '.join(answers.sources)})",
            )
        row = answers.row_of(u.item_id)
        if row is None:
            raise InputError(answers.path, None, None, f"no question {show(u.item_id or '')} (unit {show(uid)}): by id or, for q<N>, the N-th question")
        display = show_answer(row.question, row.answers[source], survey)
        parts = next((len(b["parts"]) for b in display if b.get("kind") == "parts"), None)
        over, rater = top.get(uid, (0, ""))
        if parts is not None and over > parts:
            raise InputError(
                answers.path,
                row.line,
                source,
                f"{rater} rated paragraph {over} of unit {show(uid)}, but this answer has {parts} paragraphs: the ratings are not of this file's answers",
            )
        used.add((row.position, source))
        out[uid] = replace(u, display=display)
    return out, len(answers.rows) * len(answers.sources) - len(used)


def import_ratings(
    path: Path | str,
    rubric_key: str,
    out: Path | str,
    coding: str | None = None,
    survey: Path | str | None = None,
    answers: Path | str | None = None,
    sources: list[str] | None = None,
) -> ImportResult:
    """A new review at `out` holding the ratings of `path` (checked in full first), its values in
    `coding` (`read_ratings`) stored in the rubric's own; with `answers` (a wide CSV, one column per
    source, `sources` naming them: review.answers), each unit shown with its answer (`with_answers`)."""
    rubric = get_rubric(rubric_key)
    if db_path(out).exists():
        raise ReviewError(f"{db_path(out)} already exists: choose another --out (a review is never overwritten)")
    if (answers is None) != (sources is None):
        raise ConfigError(
            "--sources" if answers is not None else "--answers", "--answers FILE and --sources A,B,... go together: the file's source columns are named"
        )
    wide = read_wide(answers, sources or []) if answers is not None else None
    units, tasks, n_rows = read_ratings(path, rubric, coding, survey)
    unrated = 0
    if wide is not None:
        units, unrated = with_answers(rubric, units, tasks, wide, survey is not None)
    raters = sorted({r for _, r in tasks})
    slots: dict[str, int] = {}
    loads: dict[str, int] = {}
    assignments: list[tuple[str, str, int, int]] = []
    for unit, rater in tasks:
        assignments.append((unit, rater, slots.get(unit, 0), loads.get(rater, 0)))
        slots[unit] = slots.get(unit, 0) + 1
        loads[rater] = loads.get(rater, 0) + 1
    meta: dict[str, object] = {
        "rubric": rubric.key,
        "rubric_def": rubric.as_dict(),
        "imported_from": str(Path(path).resolve()),
        "coding": coding or OWN_CODING,
        **({"survey": str(Path(survey).resolve())} if survey is not None else {}),
        **({"answers": str(wide.path.resolve()), "answer_sources": wide.sources} if wide is not None else {}),
        "imported": time.time(),
        "n_sampled": len(units),
        "population": len(units),
        "strata": sorted({k for u in units.values() for k in u.strata}),
        "reviewers": raters,
    }
    with ReviewDB.create(out, meta, list(units.values()), assignments, raters) as db:
        ids = {(t.unit_id, t.reviewer): t.task_id for r in raters for t in db.tasks_for(r)}
        for key, t in tasks.items():
            db.submit(ids[key], key[1], t.status, t.values or {}, t.flags or [], t.comment)
        db.audit("cli", "import", f"{len(tasks)} ratings from {Path(path).name}")
    skipped = sum(1 for t in tasks.values() if t.status == "skipped")
    lines = sum(1 for _ in text_lines(path))
    shown = len(units) if wide is not None else 0
    left_out = tuple(wide.left_out) if wide is not None else ()
    return ImportResult(Path(out), rubric.key, len(units), len(raters), len(tasks) - skipped, skipped, n_rows, lines, shown, unrated, left_out)
