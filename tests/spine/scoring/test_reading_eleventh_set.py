"""A label line whose text is another option's text cut inside a word contradicts itself (the
eleventh validation set's one wrong letter: "D) Hyperpermeability of superficial dermal microvas",
the start of C's text, read D): unread, like a label with another option's whole text; the label's
own text cut short, or a phrase too short to be any option's, still reads the label."""

from __future__ import annotations

import pytest

from medresilience.scoring.letters import read_answer

OPTIONS = {
    "A": "Direct tissue damage by irradiated antibiotic agent",
    "B": "Cytotoxic T-cell destruction of antigen-tagged cells",
    "C": "Hyperpermeability of superficial dermal microvasculature",
    "D": "Mast cell activation in subcutaneous tissues",
}


@pytest.mark.parametrize(
    "reply",
    [
        "D) Hyperpermeability of superficial dermal microvas",
        "The answer is:\n\nD) Hyperpermeability of superficial dermal microvas",
        "D) Hyperpermeability of superficial dermal microvas\n\nExplanation: the wheal forms because mast cells degranulate.",
        "A. Cytotoxic T-cell destruction of antigen-tagg",
    ],
)
def test_a_label_with_another_options_text_cut_inside_a_word_is_unread(reply):
    got = read_answer(reply, "ABCD", OPTIONS)
    assert got.label is None and got.unread is not None, got


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("C) Hyperpermeability of superficial dermal microvas", "C"),  # its own text cut short
        ("D) Mast cell activation in subcutan", "D"),
        ("D) Hyperper", "D"),  # too short a phrase to be any option's text
        ("D) Mast cell activation in subcutaneous tissues", "D"),
    ],
)
def test_a_label_with_its_own_text_or_too_short_a_phrase_is_read(reply, label):
    assert read_answer(reply, "ABCD", OPTIONS).label == label


def test_without_option_texts_a_label_line_reads_its_label():
    assert read_answer("D) Hyperpermeability of superficial dermal microvas", "ABCD").label == "D"
