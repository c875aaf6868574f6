"""Diagnosis cases from MCQ items: which questions qualify (the pattern table), what a case keeps
(vignette without its question sentence, reference = the gold option's text, options for MCQ
mode) and the open form of the question for free-text mode."""

from __future__ import annotations

import pytest

from conftest import shared_data
from medresilience.families.noise.construct.cases import (
    ASK_PATTERNS,
    CaseSkip,
    diagnosis_cases,
    full_question,
    load_items_file,
    match_ask,
    open_question,
    to_case,
)
from medresilience.records import Item
from medresilience.runtime.fileio import write_jsonl


def mcq(q: str, i: int = 0) -> Item:
    return Item(id=f"x{i}", source="handmade", question=q, options={"A": "Gout", "B": "Septic arthritis", "C": "Pseudogout"}, answer="B")


@pytest.mark.parametrize(
    "ask, kind",
    [
        ("Which of the following is the most likely diagnosis?", "diagnosis"),
        ("What is the patient’s most likely diagnosis?", "diagnosis"),
        ("Which of the following diagnoses is most likely in this patient?", "diagnosis"),
        ("According to these results, what is the most likely diagnosis?", "diagnosis"),
        ("This patient's presentation can best be explained by which of the following diagnoses?", "diagnosis"),
        ("Which of the following is the diagnosis?", "diagnosis"),
        ("Which of the following is the most likely cause of this patient's symptoms?\"", "cause"),
        ("Which of the following drugs is the most likely cause of these findings?", "cause"),
        ("What is the most likely underlying cause of his condition?", "cause"),
        ("Which of the following is the most likely etiologic agent?", "cause"),
        ("The most likely diagnosis is:", "diagnosis"),  # completion stems, as MedMCQA writes them
        ("Most probable diagnosis in this child is –", "diagnosis"),
        ("What's the diagnosis?", "diagnosis"),
        ("The most likely cause is:", "cause"),
    ],
)
def test_questions_that_ask_for_a_diagnosis_or_cause(ask, kind):
    hit = match_ask(ask)
    assert hit is not None and hit[1] == kind
    assert match_ask(ask, kinds=[k for k in ("diagnosis", "cause") if k != kind]) is None


@pytest.mark.parametrize(
    "ask",
    [
        "Which of the following is the best next step in management?",
        "Which of the following is the best treatment for this patient’s most likely diagnosis?",
        "Which of the following is most likely to confirm the diagnosis?",
        "The most likely cause of this patient's disorder has which of the following characteristics?",
        "A defect in which of the following is the most likely underlying cause of this patient's condition?",
        "Which of the following is the most likely underlying mechanism of this patient’s chest pain?",
        "Which of the following characteristics is true of the most likely cause of this patient's symptoms?",
        "The most likely diagnosis is gout.",
    ],
)
def test_questions_that_do_not(ask):
    assert match_ask(ask) is None


def test_the_patterns_are_data():
    assert all(set(p) == {"name", "kind", "regex"} for p in ASK_PATTERNS)
    assert {p["kind"] for p in ASK_PATTERNS} == {"diagnosis", "cause"}


def test_a_case_keeps_the_vignette_the_reference_and_the_options():
    it = mcq("A 70-year-old man has a hot swollen knee. Aspiration shows gram-positive cocci.\nWhich of the following is the most likely diagnosis?")
    case = to_case(it)
    assert isinstance(case, Item)
    assert case.question == "A 70-year-old man has a hot swollen knee. Aspiration shows gram-positive cocci."
    assert case.reference == "Septic arthritis" and case.options == it.options and case.answer == "B"
    assert case.meta["ask"] == "Which of the following is the most likely diagnosis?" and case.meta["ask_sep"] == "\n"
    assert case.meta["ask_kind"] == "diagnosis" and case.meta["open_ask"] == "What is the most likely diagnosis?"
    assert full_question(case) == it.question  # the MCQ shows exactly the original question
    assert to_case(case) is case  # already a case


def test_items_that_are_not_cases_say_why():
    out = list(
        diagnosis_cases(
            [
                mcq("A man has knee pain. Which of the following is the best next step in management?", 1),
                mcq("Which of the following is the most likely diagnosis?", 2),
                Item(id="free", source="handmade", question="What is it?", reference="Gout"),
                Item(id="bare", source="handmade", question="A man has knee pain. What is the most likely diagnosis?"),
            ]
        )
    )
    assert [(s.item_id, s.reason) for s in out if isinstance(s, CaseSkip)] == [
        ("x1", "not_a_diagnosis_question"),
        ("x2", "empty_vignette"),
        ("free", "not_a_diagnosis_question"),
        ("bare", "no_reference"),
    ]
    with pytest.raises(ValueError):
        list(diagnosis_cases([], kinds=["prognosis"]))


def test_open_forms():
    assert (
        open_question("Which of the following is the most likely cause of this patient's symptoms?\"", "cause")
        == "What is the most likely cause of this patient's symptoms?"
    )
    assert open_question("Which of the following diagnoses is the most likely?", "diagnosis") == "What diagnosis is most likely?"
    assert (
        open_question("If she also has a rash, which of the following is the most likely cause?", "cause")
        == "If she also has a rash, what is the most likely cause?"
    )
    assert (
        open_question("A defect in which of the following is the most likely cause?", "cause") == "What is the most likely cause of this patient's condition?"
    )
    assert open_question("The most likely diagnosis is:", "diagnosis") == "What is the most likely diagnosis?"


def test_items_files_and_sources_both_load(tmp_path):
    write_jsonl(tmp_path / "items.jsonl", [mcq("A man limps. Which of the following is the most likely diagnosis?")])
    assert [i.id for i in load_items_file(tmp_path / "items.jsonl")] == ["x0"]


def test_medqa_diagnosis_cases():
    items = load_items_file(shared_data("medqa", "us_4options_test_even.jsonl"))
    out = list(diagnosis_cases(items))
    cases = [c for c in out if isinstance(c, Item)]
    assert len(out) == len(items) and 100 <= len(cases) <= 200  # 139 of the 637 rows ask for a diagnosis or a cause
    for it, c in zip(items, out):
        if isinstance(c, CaseSkip):
            continue
        assert c.reference == it.options[it.answer] and c.options == it.options
        assert it.question.startswith(c.question) and not c.question.endswith((" ", "\n"))
        assert full_question(c).rstrip('"') == it.question.rstrip('"')
        assert "of the following" not in c.meta["open_ask"].lower()
    kinds = {c.meta["ask_kind"] for c in cases}
    assert kinds == {"diagnosis", "cause"}


def test_any_mcq_source_medmcqa():
    items = load_items_file(shared_data("medmcqa", "dev.json"))
    cases = [c for c in diagnosis_cases(items) if isinstance(c, Item)]
    assert len(cases) > 50
    assert {c.meta["ask_pattern"] for c in cases} >= {"diagnosis is (stem)", "most likely diagnosis", "most likely cause"}
    assert all(c.reference == c.options[c.answer] and c.question.strip() for c in cases)
