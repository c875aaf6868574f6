"""The answer reader on the classes the tenth validation set (tests/data/replies/mcq_m.jsonl) showed
it misreading, each rule with the neighbours it must read and the near-misses it must leave unread:

- an answer field written as a heading in capitals ("FINAL_ANSWER: Neurofilament", "FINAL ANSWER:
  B", "ANSWER: Yes, ...") names an option when its value is one label, one option's whole text, or,
  on options yes/no/maybe, opens with the word "Yes" or "No"; a value in other words ("Feasible", "No
  association" without the item's question, a sentence) names none, and a field answering a question the reply
  goes on to invent ("Question: ..." after its first answer) answers that question, not the item;
- a reply reviewing every option by its label ("Option A, <text>, may ...", "Neostigmine (option C)
  is ...", "(choice D)") keeps the one option a sentence claims (is, would be, should be) with no
  word setting it aside, when every other option's sentences set it aside ("not", "less", "if",
  "but", "may", "reserved", "drastic"); with two kept, or one not set aside, it names none (never the
  first option it mentions); a statement of an answer stands over the review;
- a label with a brace for its bracket opening the reply ("d} <D's text>") reads as "d) " does,
  only with its own option's text after it; "The answer to the question above is Option A." reads as
  "The answer to the question is ..." does;

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
    # without the item's question, an answer in its words affirms or denies nothing that can be told
    # (with it, test_reading_tenth_set_rest.py; "Uncertain" is maybe on yes/no/maybe items, read there)
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


STROKE = {"A": "Arteriovenous malformations", "B": "Carotid artery atherosclerosis", "C": "Charcot-Bouchard aneurysm", "D": "Hyaline arteriosclerosis"}
KEEP_B = "The most common cause of ischemic stroke is thromboembolism due to carotid artery atherosclerosis (choice B)."
ASIDE_A = "Option A (Arteriovenous malformations) typically present with hemorrhage, not focal deficits."
ASIDE_C = "Option C, Charcot-Bouchard aneurysm, is associated with hemorrhagic stroke rather than ischemic stroke."
ASIDE_D = "Hyaline arteriosclerosis (option D) is seen in diabetes, but it more commonly causes lacunar strokes."

REVIEW_READ = [
    (f"{KEEP_B}\n\n{ASIDE_A} {ASIDE_C} {ASIDE_D}", "B"),
    (f"{ASIDE_A}\n{ASIDE_C}\n{ASIDE_D}\n{KEEP_B}", "B"),
    # "not only ... but also" sets nothing aside; "to rule out" is a purpose
    (
        f"The first step is usually imaging for atherosclerosis (option B), not only to confirm it but also to rule out a bleed. {ASIDE_A} {ASIDE_C} {ASIDE_D}",
        "B",
    ),
    (f"Treatment should be directed at the carotid plaque (Option B). {ASIDE_A} {ASIDE_C} {ASIDE_D}", "B"),
]

REVIEW_UNREAD = [
    # D is neither kept nor set aside
    f"{KEEP_B} {ASIDE_A} {ASIDE_C} Option D, hyaline arteriosclerosis, is a small vessel disease.",
    # two kept
    f"{KEEP_B} {ASIDE_A} {ASIDE_C} Option D, hyaline arteriosclerosis, is the most common cause of lacunes.",
    # the kept one doubted
    f"The cause may be carotid artery atherosclerosis (choice B). {ASIDE_A} {ASIDE_C} {ASIDE_D}",
    # the kept one set aside after all
    f"{KEEP_B} However, option B is ruled out by the normal carotid Doppler. {ASIDE_A} {ASIDE_C} {ASIDE_D}",
    # every option set aside
    f"Carotid artery atherosclerosis (choice B) is not likely here. {ASIDE_A} {ASIDE_C} {ASIDE_D}",
    # the first option reviewed is not the answer (the reply the reader misread)
    f"{ASIDE_A} {ASIDE_C} {ASIDE_D}",
]


@pytest.mark.parametrize(("reply", "expected"), REVIEW_READ)
def test_a_review_keeping_one_option_and_setting_the_others_aside_reads_it(reply, expected):
    got = read_answer(reply, "ABCD", STROKE)
    assert got.label == expected, got.how


@pytest.mark.parametrize("reply", REVIEW_UNREAD)
def test_a_review_keeping_no_single_option_names_none(reply):
    got = read_answer(reply, "ABCD", STROKE)
    assert got.label is None, got.how


def test_a_statement_of_an_answer_stands_over_a_review():
    reply = f"{KEEP_B} {ASIDE_A} {ASIDE_C} {ASIDE_D}\n\nFinal answer: D"
    assert read_answer(reply, "ABCD", STROKE).label == "D"


LENSES = {
    "A": "Change in the base curve of one of the lenses.",
    "B": "Change in frame format.",
    "C": "Disappearance of the central suppression scotoma.",
    "D": "Loss of cerebral compensation capacity for the difference in aniseikonia.",
}
SQUINTS = {"A": "Parcialmente acomodativos.", "B": "Incomitantes.", "C": "Exotropia intermitente.", "D": "Comitantes."}

BRACE_AND_ABOVE_READ = [
    ("d} Loss of cerebral compensation capacity for the difference in aniseikonia.", LENSES, "D"),
    ("d}Comitantes", SQUINTS, "D"),
    ("B} Incomitantes.\nLos estrabismos paralíticos son incomitantes.", SQUINTS, "B"),
    ("The answer to the question above is Option A.", LENSES, "A"),
    ("The answer to the question above is C.", SQUINTS, "C"),
]

BRACE_AND_ABOVE_UNREAD = [
    # the label with another option's text, or with text of no option
    ("d} Incomitantes.", SQUINTS),
    ("d} the patient needs new glasses", LENSES),
    ("{d} {b}", SQUINTS),
    ("The answer to the question above is not clear.", LENSES),
    ("The answer to the question above is not Option A.", LENSES),
]


@pytest.mark.parametrize(("reply", "options", "expected"), BRACE_AND_ABOVE_READ)
def test_a_braced_label_with_its_text_or_the_answer_to_the_question_above_is_read(reply, options, expected):
    got = read_answer(reply, "ABCD", options)
    assert got.label == expected, got.how


@pytest.mark.parametrize(("reply", "options"), BRACE_AND_ABOVE_UNREAD)
def test_a_braced_label_without_its_text_or_a_denied_answer_is_unread(reply, options):
    got = read_answer(reply, "ABCD", options)
    assert got.label is None, got.how


def test_a_conclusion_after_a_review_stands_over_it():
    reply = (
        "- Option A (Arteriovenous malformations): not ischemic.\n- Option B (Carotid artery atherosclerosis): embolic source.\n"
        "- Option C (Charcot-Bouchard aneurysm): hemorrhagic, not ischemic.\n- Option D (Hyaline arteriosclerosis): lacunes, not this.\n\n"
        "Conclusion: the most likely cause is B. Carotid artery atherosclerosis."
    )
    assert read_answer(reply, "ABCD", STROKE).label == "B"
