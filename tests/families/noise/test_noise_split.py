"""The clinical-noise splitter: exact reconstruction, sentence ends that are not ends (abbreviations,
decimals, lab lists), lab tables kept whole, and where a sentence may be inserted. Handwritten
texts pin each rule; every MedQA vignette in ../shared/data checks the invariants (skipped when
the data is absent)."""

from __future__ import annotations

import pytest

from conftest import shared_data
from medresilience.families.noise.construct.cases import load_items_file
from medresilience.families.noise.construct.split import insert, insertion_points, is_abbreviation, sentences, split


def contents(text: str) -> list[str]:
    return [p.content for p in split(text)]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "One sentence.",
        "  Leading spaces. And trailing ones.   ",
        "Line one.\nLine two.\n\n\nAfter blank lines.\n",
        "Crlf line.\r\nNext line.\r\n",
        "No final punctuation here",
        "Tabs\tinside. Then more.\t\n",
    ],
)
def test_pieces_rebuild_the_text_exactly(text):
    pieces = split(text)
    assert "".join(p.text for p in pieces) == text
    pos = 0
    for p in pieces:
        assert p.start == pos
        pos = p.end


def test_abbreviations_and_decimals_do_not_end_sentences():
    text = (
        "Dr. Smith saw the patient vs. a colleague, e.g. Dr. Jones. She takes metformin 1.5 mg b.i.d. and "
        "lisinopril at 8 a.m. daily. Her temperature is 38.5°C (101.3°F). Pulse is 93/min."
    )
    assert contents(text) == [
        "Dr. Smith saw the patient vs. a colleague, e.g. Dr. Jones.",
        "She takes metformin 1.5 mg b.i.d. and lisinopril at 8 a.m. daily.",
        "Her temperature is 38.5°C (101.3°F).",
        "Pulse is 93/min.",
    ]
    assert is_abbreviation("b.i.d") and is_abbreviation("Dr") and is_abbreviation("(e.g") and not is_abbreviation("mg")


def test_a_dotted_abbreviation_before_a_capital_is_not_a_break():
    # "b.i.d. He" is ambiguous: the splitter keeps it whole rather than risk a wrong cut
    assert len(split("She takes it b.i.d. He agrees.")) == 1


def test_lower_case_after_a_period_and_question_marks_in_quotes():
    assert len(split("The pain is approx. normal today.")) == 1
    assert contents('He asks "why?" and waits. "Is it bad?" she asks. Yes.') == ['He asks "why?" and waits.', '"Is it bad?" she asks.', "Yes."]


def test_an_inline_lab_list_stays_whole():
    text = "Serum studies show Na+ 140 mEq/L, K+ 4.1 mEq/L, Cl- 100 mEq/L, and glucose 1.5 g/L. He is admitted."
    assert contents(text) == ["Serum studies show Na+ 140 mEq/L, K+ 4.1 mEq/L, Cl- 100 mEq/L, and glucose 1.5 g/L.", "He is admitted."]


def test_a_lab_list_of_sentences_takes_no_insertion_inside():
    text = "Labs follow. Na+ 140 mEq/L. K+ 4.1 mEq/L. Cl- 100 mEq/L. He is admitted."
    pieces = split(text)
    assert [p.content for p in pieces][1:4] == ["Na+ 140 mEq/L.", "K+ 4.1 mEq/L.", "Cl- 100 mEq/L."]
    assert [p.insert_after for p in pieces] == [True, False, False, True, True]


LAB = (
    "A 40-year-old man has fatigue. Laboratory studies show:\n"
    "Hemoglobin 11.2 g/dL\nLeukocyte count 16,400/mm3\nSerum\nNa+: 139 mEq/L\nGlucose: 90 mg/dL.\n\n"
    "Urine\nProtein negative\nRenal biopsy shows spindle-shaped vacuoles. He is thirsty.\n"
    "Results are shown below.\n\nSerum:\nK+: 6.3 mEq/L\n\nHe is treated."
)


def test_lab_tables_are_one_piece_each_and_never_take_an_insertion():
    pieces = split(LAB)
    assert "".join(p.text for p in pieces) == LAB
    tables = [p for p in pieces if p.kind == "table"]
    assert [t.content for t in tables] == [
        "Hemoglobin 11.2 g/dL\nLeukocyte count 16,400/mm3\nSerum\nNa+: 139 mEq/L\nGlucose: 90 mg/dL.\n\nUrine\nProtein negative",
        "Serum:\nK+: 6.3 mEq/L",
    ]
    assert not any(t.insert_after for t in tables)
    points = insertion_points(LAB)
    ends = ["fatigue.", "vacuoles.", "thirsty.", "treated."]
    assert len(points) == len(ends) and all(LAB[:at].endswith(e) for at, e in zip(points, ends))
    # never inside a table, never after the colon that opens one, never between "shown below." and its table
    for t in tables:
        assert not any(t.start <= at <= t.start + len(t.content) for at in points)
    assert all(LAB[at - 1] in ".!?\"')" for at in points)


def test_insert_puts_text_after_the_punctuation_and_keeps_the_whitespace():
    text = "First.\nSecond. Third"
    points = insertion_points(text)
    assert points == [6, 14]
    assert insert(text, [(6, " A."), (14, " B."), (6, " C.")]) == "First. A. C.\nSecond. B. Third"
    with pytest.raises(ValueError):
        insert(text, [(99, "x")])


def test_every_medqa_vignette_splits_and_rebuilds():
    items = load_items_file(shared_data("medqa", "us_4options_test_even.jsonl"))
    n_points = 0
    for it in items:
        pieces = split(it.question)
        assert "".join(p.text for p in pieces) == it.question, it.id
        assert sentences(it.question) == [p.text for p in pieces]
        points = insertion_points(it.question)
        n_points += len(points)
        for at in points:
            before = it.question[:at].rstrip("\"'”’)]")
            assert before[-1] in ".!?", (it.id, it.question[max(0, at - 30) : at])
            line_start = it.question.rfind("\n", 0, at) + 1
            line = it.question[line_start : it.question.find("\n", at) if "\n" in it.question[at:] else len(it.question)]
            assert not any(p.kind == "table" and p.start <= at < p.end for p in pieces), (it.id, line)
    assert n_points > 5 * len(items)  # about 8 boundaries per vignette
