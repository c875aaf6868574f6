"""Answers to rate, read from a wide CSV: one row per question, one column per source (Cancer-Myth
released its CancerCare answers so: `question_id, question, answer, Edited human answer, comments,
Gemini-1.5 Pro, ...`).

Which columns are sources cannot be told from the file (a column may hold an original answer that
was never rated, or comments), so the user names them (`--sources A,B,...`); every other column
but the question and its id is left out, and said so. The rules this module keeps: the question
column and every named source must be a column of the header (else an error naming the file, line 1
and the column, with the columns there are); a row with more or fewer cells than the header, an
empty question or an empty answer of a named source is an error naming the file, its line and
column (a row is never dropped); question ids are unique. Rows are numbered from 1 in file order
(`position`): a survey built from the file numbers its questions so."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..runtime.errors import ConfigError, InputError
from ..runtime.fileio import csv_records, show

QUESTION = "question"
QUESTION_ID = "question_id"


@dataclass(frozen=True)
class WideRow:
    line: int  # the file line the row starts on
    position: int  # 1-based, in file order
    question_id: str  # the id column's value, else q<position>
    question: str
    answers: dict[str, str]  # source -> answer text


@dataclass
class WideAnswers:
    path: Path
    sources: list[str]
    rows: list[WideRow]
    left_out: list[str] = field(default_factory=list)  # columns neither a source, the question nor its id

    def row_of(self, item: str | None) -> WideRow | None:
        """The row of an item: the row whose question id it is, else (a survey's items q1, q2, ...)
        the row at that position."""
        for r in self.rows:
            if r.question_id == item:
                return r
        if item and item[:1] == "q" and item[1:].isdigit() and 1 <= int(item[1:]) <= len(self.rows):
            return self.rows[int(item[1:]) - 1]
        return None


def parse_sources(text: str) -> list[str]:
    """The source columns a user named, comma-separated, in order; a repeated or empty list is an error."""
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names:
        raise ConfigError("--sources", "name the columns that hold answers, comma-separated (e.g. --sources 'GPT-4-Turbo,Edited human answer')")
    dup = sorted({s for s in names if names.count(s) > 1})
    if dup:
        raise ConfigError("--sources", f"named twice: {', '.join(dup)}")
    return names


def read_wide(path: Path | str, sources: list[str], question: str = QUESTION, question_id: str = QUESTION_ID) -> WideAnswers:
    """The answers of a wide CSV, every row checked (see the module)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, None, None, "no such file")
    records = csv_records(path)
    try:
        _, header = next(records)
    except StopIteration:
        raise InputError(path, None, None, f"empty: expected a header with {question} and one column per source") from None
    header = [h.strip() for h in header]
    there = ", ".join(show(h) for h in header)
    for name in [question, *sources]:
        if name not in header:
            what = "the question column" if name == question else "a source named by --sources"
            raise InputError(path, 1, name, f"{what} is not a column of the header (its columns: {there})")
    left_out = [h for h in header if h not in {question, question_id, *sources}]
    rows: list[WideRow] = []
    ids: dict[str, int] = {}
    for line, cells in records:
        if len(cells) != len(header):
            raise InputError(path, line, None, f"{len(cells)} cells, the header has {len(header)}: a ragged row (is a quote unclosed?)")
        row = dict(zip(header, cells))
        if not row[question].strip():
            raise InputError(path, line, question, "empty")
        for s in sources:
            if not row[s].strip():
                raise InputError(path, line, s, f"no answer from {show(s)}: fill it, or leave {show(s)} out of --sources")
        qid = (row.get(question_id) or "").strip() or f"q{len(rows) + 1}"
        if qid in ids:
            raise InputError(path, line, question_id, f"question {show(qid)} again (first on line {ids[qid]})")
        ids[qid] = line
        rows.append(WideRow(line, len(rows) + 1, qid, row[question].strip(), {s: row[s] for s in sources}))
    if not rows:
        raise InputError(path, None, None, "holds no question")
    return WideAnswers(path, list(sources), rows, left_out)
