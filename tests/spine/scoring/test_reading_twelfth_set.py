"""A sentence opening on a condition names no option as the reply's answer (the twelfth validation
set's one wrong letter, m12-0025: a reply that cannot see the item's image ends on hints, "- If it
looks like a network of tubes with dots (ribosomes) on it, it is the Rough Endoplasmic Reticulum.",
read D, labelled null): unread; "If I had to choose, ...", "If forced to pick, ..." and "Even if ...,"
still commit, and so does a last sentence that states its option without a condition."""

from __future__ import annotations

import pytest

from medresilience.scoring.letters import read_answer

OPTIONS = {"A": "Mitochondria", "B": "Golgi bodies", "C": "Secretory vesicles", "D": "Rough Endoplasmic reticulum"}


@pytest.mark.parametrize(
    "reply",
    [
        "If it looks like a network of tubes with dots on it, it is the Rough Endoplasmic Reticulum.",
        "- If it looks like a stack of pancakes, it is likely the **Golgi bodies**.",
        "**If** it is bubbly, it is the Secretory vesicles.",
        "Unless the image shows cristae, the structure is the Rough Endoplasmic reticulum.",
        "I cannot see the image.\n\n- If it looks like a stack of pancakes, it is the Golgi bodies.\n- If it has dots on it, it is the Rough Endoplasmic reticulum.",
    ],
)
def test_a_last_sentence_opening_on_a_condition_is_no_answer(reply):
    got = read_answer(reply, "ABCD", OPTIONS)
    assert got.label is None and got.unread is not None, got


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("The arrow points at a stack of flattened sacs.\n\nIf I had to choose, the structure is the Golgi bodies.", "B"),
        ("If forced to pick, the answer is Golgi bodies.", "B"),
        ("Even if the image is blurry, the structure is the Golgi bodies.", "B"),
        ("Given the stacked sacs, the marked structure is the Golgi bodies.", "B"),
        ("The arrow points at flattened sacs studded with ribosomes, so the structure is the Rough Endoplasmic reticulum.", "D"),
        ("If it looks like a stack of pancakes, it is the Golgi bodies.\n\nThe answer is D.", "D"),
    ],
)
def test_a_choice_under_if_i_had_to_or_a_plain_last_sentence_still_reads(reply, label):
    assert read_answer(reply, "ABCD", OPTIONS).label == label
