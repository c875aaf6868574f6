"""The answer reader on the classes the tenth validation set (tests/data/replies/mcq_m.jsonl) left
unread after its first rules, each rule with the neighbours it must read and the near-misses it must
leave unread:

- a label in single quotes of its own ("The correct answer is 'E'.", "is 'D': Aqueduct of Sylvius")
  is a label, as "(E)" is; a quote glued to a word ("don't", "patient's") is not one;
- a line opening "Option B (<text>) suggests ..." or "Option C, <text>, are associated with ..."
  reviews its option: a leaning at most, so an answer the reply states elsewhere stands over it
  (a line holding only the option's text still answers; a claim of the option is read apart);

The replies are written for these tests in the manner of the real ones (the real ones are read in
tests/spine/scoring/test_real_replies.py)."""

from __future__ import annotations

import pytest

from medresilience.scoring.letters import read_answer

EARS = {"A": "Cochlear implantation", "B": "Kidney transplantation", "C": "Respiratory support", "D": "Lower spinal surgery", "E": "Dental treatment"}
BRAIN = {"A": "Tegmentum", "B": "Corpora quadrigemina", "C": "Inferior colliculi", "D": "Aqueduct of Sylvius", "E": "3rd ventricle"}

#: (reply, options, the label a careful reader gives)
QUOTED_OR_REVIEWED_READ = [
    ("The correct answer is 'E'. Diamond-Blackfan anemia is a defect of erythroid progenitors.", EARS, "E"),
    ("The correct answer is ‘E’.", EARS, "E"),
    ("The most likely affected structure in this case is 'D': Aqueduct of Sylvius. Parinaud's syndrome ...", BRAIN, "D"),
    ("So, the correct answer is 'A': 'Cochlear implantation'.", EARS, "A"),
    # the answer first, then a review of the others opening their lines with "Option X (" / "Option X,"
    (
        "The answer is A: 'Cochlear implantation'.\n\nValproate is teratogenic.\n\n"
        "Option C, respiratory support, is needed with heart defects.\nOption D (Lower spinal surgery) treats neural tube defects, which are common.",
        EARS,
        "A",
    ),
    (
        "Valproate can cause hearing loss. So, the correct answer is 'A': 'Cochlear implantation'.\n\n"
        "Option B (Kidney transplantation) suggests a renal malformation, which valproate does not cause.",
        EARS,
        "A",
    ),
    # a line holding only the option's text answers
    ("Option B, Kidney transplantation", EARS, "B"),
]

QUOTED_OR_REVIEWED_UNREAD = [
    # a quote glued to a word is no label
    ("The patient's symptoms don't fit; I can't say.", EARS),
    ("The correct answer is 'E' or 'D'.", EARS),
    ("So the correct answer is 'E'?", EARS),
    # a review line that claims another option is a second answer, not a review
    ("The correct answer is 'A'.\n\nOption B (Kidney transplantation) is the correct answer.", EARS),
]


@pytest.mark.parametrize(("reply", "options", "expected"), QUOTED_OR_REVIEWED_READ)
def test_a_quoted_label_or_an_answer_beside_a_review_of_the_others_is_read(reply, options, expected):
    got = read_answer(reply, "ABCDE", options)
    assert got.label == expected, got.how


@pytest.mark.parametrize(("reply", "options"), QUOTED_OR_REVIEWED_UNREAD)
def test_a_glued_quote_several_quoted_labels_or_a_review_claiming_another_are_unread(reply, options):
    got = read_answer(reply, "ABCDE", options)
    assert got.label is None, got.how
