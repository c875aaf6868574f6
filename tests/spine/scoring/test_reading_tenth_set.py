"""The answer reader on the classes the tenth validation set (tests/data/replies/mcq_m.jsonl) showed
it misreading, each rule with the neighbours it must read and the near-misses it must leave unread:

- an answer field written as a heading in capitals ("FINAL_ANSWER: Neurofilament", "FINAL ANSWER:
  B", "ANSWER: Yes, ...") names an option when its value is one label, one option's whole text, or,
  on options yes/no/maybe, opens with the word "Yes" or "No"; a value in other words ("Uncertain",
  "Feasible", "No association", a sentence) names none, and a field answering a question the reply
  goes on to invent ("Question: ..." after its first answer) answers that question, not the item;

The replies are written for these tests in the manner of the real ones (the real ones are read in
tests/spine/scoring/test_real_replies.py)."""

from __future__ import annotations

import pytest

from medresilience.scoring.letters import read_answer

MARKERS = {"A": "Desmin", "B": "Actin", "C": "Neurofilament", "D": "Intermediate filament"}
YES_NO = {"A": "yes", "B": "no", "C": "maybe"}
CYSTS = {"A": "OKC", "B": "Glandular odontogenic cyst.", "C": "Gingival cyst of infants", "D": "All of the above."}

#: (reply, options, the label a careful reader gives)
HEADING_FIELD_READ = [
    ("FINAL_ANSWER: Neurofilament\nRATIONALE: Neurofilament marks neural tumours.\nUNCERTAINTY: low", MARKERS, "C"),
    ("FINAL ANSWER: Intermediate filament\nRATIONALE: ...", MARKERS, "D"),
    ("final_answer: Desmin\nrationale: desmin marks muscle.", MARKERS, "A"),
    ("ANSWER: Actin", MARKERS, "B"),
    ("FINAL_ANSWER: **Neurofilament**", MARKERS, "C"),
    ("FINAL_ANSWER: B\nRATIONALE: actin is in every muscle cell.", MARKERS, "B"),
    ("final_answer: B Actin", MARKERS, "B"),
    ("FINAL_ANSWER: (C)", MARKERS, "C"),
    ("FINAL_ANSWER: All of the above.\nRATIONALE: all three arise from rests of Serres.", CYSTS, "D"),
    ("FINAL_ANSWER: Yes\nRATIONALE: older patients do worse.", YES_NO, "A"),
    ("FINAL_ANSWER: Yes, fast foods can be a risk factor for asthma.\nRATIONALE: ...", YES_NO, "A"),
    ("FINAL_ANSWER: No, they do not need fewer calories. RATIONALE: ... UNCERTAINTY: low", YES_NO, "B"),
    ("FINAL_ANSWER: Maybe RATIONALE: the evidence is mixed.", YES_NO, "C"),
    # the first answer, then a question the reply invents and answers itself
    ("Question:\nIs it?\n\nFINAL_ANSWER: Yes, it is.\nRATIONALE: ...\n\nQuestion:\nIs it not?\n\nFINAL_ANSWER: No", YES_NO, "A"),
    ("FINAL_ANSWER: Desmin\nRATIONALE: ...\n\nQuestion:\nWhich marks neural tumours?\n\nFINAL_ANSWER: Neurofilament", MARKERS, "A"),
]

HEADING_FIELD_UNREAD = [
    ("FINAL_ANSWER: Uncertain\nRATIONALE: the studies disagree.", YES_NO),
    ("FINAL_ANSWER: Feasible\nRATIONALE: ...", YES_NO),
    ("FINAL_ANSWER: No association\nRATIONALE: ...", YES_NO),
    ("FINAL_ANSWER: Nothing suggests it.\nRATIONALE: ...", YES_NO),
    ("FINAL_ANSWER: Yesterday's data are unclear.", YES_NO),
    ("FINAL_ANSWER: It can be a cause\nRATIONALE: ...", YES_NO),
    ("FINAL_ANSWER: Sensitivity of a screening test indicates the probability of a true positive", MARKERS),
    ("FINAL_ANSWER: Desmin or actin\nRATIONALE: ...", MARKERS),
    # a value opening with a word that is a label ("A muscle ...") names no label
    ("FINAL_ANSWER: A muscle marker such as desmin", MARKERS),
    ("final_answer: A muscle marker such as desmin", MARKERS),
    # the field's name in running text, not a heading
    ("The ANSWER: depends on the stain.", MARKERS),
]


@pytest.mark.parametrize(("reply", "options", "expected"), HEADING_FIELD_READ)
def test_a_heading_answer_field_naming_one_option_is_read(reply, options, expected):
    got = read_answer(reply, "".join(options), options)
    assert got.label == expected, got.how


@pytest.mark.parametrize(("reply", "options"), HEADING_FIELD_UNREAD)
def test_a_heading_answer_field_in_other_words_names_no_option(reply, options):
    got = read_answer(reply, "".join(options), options)
    assert got.label is None, got.how
