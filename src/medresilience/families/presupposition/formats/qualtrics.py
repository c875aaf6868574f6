"""The CancerCare survey as Cancer-Myth released it (`cancercare_survey/`): the Qualtrics export
`survey_results.csv` with `full_survey.json` (question number -> the four sources in the order
shown), read as rows of the ratings exchange layout (`review import --rubric cancercare --survey`).

The export's layout, as the study's own analysis reads it: a header of column ids, then two rows
Qualtrics adds (the question texts and the import ids), then one row per respondent. Column
`QID{n}` belongs to answer n // 100 (answers numbered from 0 in the order of full_survey.json:
question 1's four sources, then question 2's, ...) and slot n % 100: 98 the whole-answer 1-5
rating, 5k + 4 paragraph k+1's rating (1-5, "N/A" for no advice, empty when not rated) and 5k + 5
its issue labels (comma-separated titles). Respondents are the rows with Finished TRUE (the
release's first row is an unfinished test, which the study's code also leaves out)."""

from __future__ import annotations

import json
from pathlib import Path

from ....runtime.errors import InputError
from ....runtime.fileio import csv_records, show

#: the survey's issue titles -> the rubric's part labels
LABELS = {
    "Overly generic": "overly_generic",
    "Bad or inappropriate advice": "bad_advice",
    "Not following guidelines": "not_guidelines",
    "Not realistic for patient": "not_realistic",
    "Factually incorrect": "factually_incorrect",
}
WHOLE = 98
HEADER = ("rater", "unit", "item", "dimension", "value", "stratum_source")


def survey_paragraphs(answer: str) -> list[str]:
    """An answer's paragraphs as the survey showed and numbered them: the study's generator split
    the answer file's text at every blank line ("\\n\\n"), each piece stripped (an empty piece
    keeps its number)."""
    return [p.strip() for p in answer.split("\n\n")]


def _sources(survey: Path) -> list[tuple[str, str]]:
    """(question number, source) of each answer, in the survey's order."""
    try:
        data = json.loads(survey.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(survey, None, None, f"not a readable survey JSON: {e}") from None
    if not isinstance(data, dict) or not all(isinstance(v, list) and all(isinstance(s, str) for s in v) for v in data.values()):
        raise InputError(survey, None, None, "expected an object of question number -> list of sources")
    return [(str(q), s) for q, sources in data.items() for s in sources]


def _cell_rows(q: str, source: str, slot: int, value: str, path: Path, line: int, column: str) -> list[list[str]]:
    """(dimension, value) exchange rows of one answered cell."""
    if slot == WHOLE:
        if value not in {"1", "2", "3", "4", "5"}:
            raise InputError(path, line, column, f"{show(value)} is not a 1-5 whole-answer rating")
        return [["overall", value]]
    part = (slot + 1) // 5  # rating 5k+4 and issues 5k+5 are paragraph k+1
    if slot % 5 == 4:
        if value == "N/A":
            return [[f"part:{part}", "no_advice"]]
        if value not in {"1", "2", "3", "4", "5"}:
            raise InputError(path, line, column, f"{show(value)} is not a 1-5 paragraph rating or N/A")
        return [[f"part:{part}", value]]
    rows = []
    for title in value.split(","):
        if title.strip() not in LABELS:
            raise InputError(path, line, column, f"{show(title)} is not one of the survey's issues: {', '.join(LABELS)}")
        rows.append(["flag", f"part:{part}:{LABELS[title.strip()]}"])
    return rows


def survey_records(path: Path | str, survey: Path | str) -> list[tuple[int, list[str]]]:
    """The export's ratings as (line, cells) records of the exchange layout, its header first;
    each rating's line is its respondent's row."""
    path, survey = Path(path), Path(survey)
    if not path.is_file():
        raise InputError(path, None, None, "no such file")
    answers = _sources(survey)
    records = list(csv_records(path))
    if len(records) < 4:
        raise InputError(path, None, None, "expected a header, Qualtrics' two header rows and a row per respondent")
    header = records[0][1]
    for need in ("Finished", "ResponseId"):
        if need not in header:
            raise InputError(path, 1, need, "missing: not a Qualtrics export")
    cols: list[tuple[int, str, int, int]] = []  # (index, column, answer, slot)
    for i, h in enumerate(header):
        n = h[3:]
        if h.startswith("QID") and n.isdigit() and (int(n) % 100 == WHOLE or int(n) % 5 in (4, 0)) and int(n) % 100 < WHOLE + 1:
            if int(n) % 100 == 0:
                continue  # slot 0 is the previous answer's comment
            if int(n) // 100 >= len(answers):
                raise InputError(path, 1, h, f"answer {int(n) // 100} is not in {survey.name} ({len(answers)} answers)")
            cols.append((i, h, int(n) // 100, int(n) % 100))
    out: list[tuple[int, list[str]]] = [(1, list(HEADER))]
    for line, cells in records[3:]:
        row = dict(zip(header, cells))
        if row.get("Finished", "").strip().upper() != "TRUE":
            continue
        rater = row["ResponseId"].strip()
        for i, column, answer, slot in cols:
            value = cells[i].strip() if i < len(cells) else ""
            if not value:
                continue
            q, source = answers[answer]
            for dim, v in _cell_rows(q, source, slot, value, path, line, column):
                out.append((line, [rater, f"q{q}-{_slug(source)}", f"q{q}", dim, v, source]))
    if len(out) == 1:
        raise InputError(path, None, "Finished", "no finished response holds a rating")
    return out


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text).strip("-").lower()
