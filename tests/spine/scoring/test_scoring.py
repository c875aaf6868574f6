"""Answer extraction: the usual answer shapes are read; ambiguous or empty replies are invalid."""

from __future__ import annotations

import math

import pytest

from medresilience.scoring import choice_from_logprobs, extract_letter


@pytest.mark.parametrize(
    "text,expected",
    [
        ("B", "B"),
        ("(B)", "B"),
        ("B.", "B"),
        ("B)", "B"),
        ("Answer: B", "B"),
        ("answer: B", "B"),
        ("**B.**", "B"),
        ("**Answer: C**", "C"),
        ("The answer is D.", "D"),
        ("The correct answer is (C) because the vignette...", "C"),
        ("Final answer: A", "A"),
        ('{"answer": "C"}', "C"),
        ('```json\n{"answer": "(D)"}\n```', "D"),
        ("B. Vitamin C deficiency", "B"),
        ("Let me think.\n\nC", "C"),
        ("Answer: C\n\nExplanation: option A would be wrong here.", "C"),
        ("The patient likely needs option B.", "B"),
        ("answer: b", "B"),  # a lowercase label after a cue is as clear as a lone "b"
    ],
)
def test_accepted_shapes(text, expected):
    assert extract_letter(text, "ABCD") == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        None,
        "A patient with this presentation needs urgent care.",  # article, not a letter
        "Answer: A or B",
        "A or B",
        "Answer: B\nAnswer: C",
        "I am not sure.",
        "Answer: E",  # not an option of a 4-option item
        '{"answer": "maybe"}',
    ],
)
def test_invalid_shapes(text):
    assert extract_letter(text, "ABCD") is None


def test_logprob_choice_normalises_over_letters():
    tops = [{"C": -0.5, " B": -1.5, "A": -2.0, "Answer": -0.1, "D": -3.0}]
    label, dist = choice_from_logprobs(tops, "ABCD")
    assert label == "C"
    assert set(dist) == {"A", "B", "C", "D"}
    assert math.isclose(sum(dist.values()), 1.0)
    assert dist["C"] > dist["B"] > dist["A"] > dist["D"]
    assert math.isclose(dist["C"] / dist["B"], math.e)


def test_logprob_without_letters_is_invalid():
    assert choice_from_logprobs([{"The": -0.1, "I": -2.0}], "ABCD") == (None, {})
    assert choice_from_logprobs(None, "ABCD") == (None, {})
