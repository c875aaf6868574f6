"""The answer reader on the classes the ninth validation set (tests/data/replies/mcq_l.jsonl) showed
it misreading, each rule with the neighbours it must read and the near-misses it must leave unread:

- a number opening a line is an option's label only where the option's own text follows it ("2.
  Atropine", the text cut off, or the completion a stem's options do not share) and nothing more
  but a claim of it; a number opening a step of reasoning ("1. The patient weighs 60 kg. ...") or
  reviewing its option ("1. Alcohol is a CNS depressant, ...") commits to nothing;
- an option set aside by name ("So, we can exclude option 1") is taken back;
- a concluding sentence names an option by its text only as a claim: not as the subject of another
  verb ("Therefore, rifampicin will decrease ..."), not under a doubt ("may"), not when a later
  sentence denies that text, not in a relative clause ("a gas that is less soluble than nitrogen"),
  and not when the reply's last sentence turns against it ("However, the patient is Asian.");

The replies are written for these tests in the manner of the real ones (the real ones are read in
tests/spine/scoring/test_real_replies.py)."""

from __future__ import annotations

import pytest

from medresilience.scoring.letters import read_answer

DRUGS = {"1": "Vigabatrin", "2": "Tiagabine", "3": "Lamotrigine", "4": "Levetiracetam"}
DOSES = {"1": "6 g single dose", "2": "6 mg/kg single dose", "3": "3 g single dose", "4": "3 mg/kg single dose"}
STEM = "При осмотре полости носа гибким назофарингоскопом не представляется возможным оценить"
STATEMENTS = {
    "1": f"{STEM} средний носовой ход",
    "2": f"{STEM} носовую перегородку",
    "3": f"{STEM} верхний носовой ход",
    "4": f"{STEM} нижнюю носовую раковину",
}

#: (reply, options, the label a careful reader gives)
NUMBER_READ = [
    ("2. Tiagabine", DRUGS, "2"),
    ("1. Vigabatrin is the drug of choice in tuberous sclerosis.", DRUGS, "1"),
    ("3: 3 g single dose", DOSES, "3"),
    ("1. Vigabatrin.", DRUGS, "1"),
    ("2. Tiagabine (a GABA reuptake inhibitor)", DRUGS, "2"),
    ("3. Lamotrigine is the correct answer here.", DRUGS, "3"),
    ("Answer:\n3. Lamotrigine", DRUGS, "3"),
    # the option's text cut off by the budget, a few of its letters lost
    ("4. При осмотре полости носа гибким назофарингоском не предст", STATEMENTS, "4"),
    # the completion of a stem every option shares
    ('2. "Носовую перегородку".', STATEMENTS, "2"),
    # the step's number aside, the reply claims an option
    ("1. The patient has tuberous sclerosis. Therefore, the first line of treatment is vigabatrin.", DRUGS, "1"),
    ("1. The drug is cheap and safe.\n\nAnswer: 2", DRUGS, "2"),
    # no option texts: a number before a short phrase
    ("3. Lamotrigine", None, "3"),
]

NUMBER_UNREAD = [
    ("1. The patient weighs 60 kg. The recommended dose is weight based.", DOSES),
    ("1. Alcohol is a CNS depressant, so withdrawal symptoms are likely.", DRUGS),
    ("1. Black patients have a higher risk of thromboembolism than White patients.", DRUGS),
    ("1. The patient has CML and T315i mutation. Therefore, the patient is resistant to imatinib and nilotinib.", DRUGS),
    # a number reviewing its own option, claiming nothing of it
    ("1. Vigabatrin acts on GABA transaminase, so it raises GABA levels.", DRUGS),
    ("2. Tiagabine is a GABA reuptake inhibitor.", DRUGS),
    # a number before another option's text names two options
    ("1. Tiagabine", DRUGS),
    # without option texts a sentence after the number is a step
    ("1. The patient complains of muscle weakness. This is suggestive of myasthenia gravis.", None),
    # a step that sets its own option aside
    ("1. Vigabatrin is contraindicated here. So, we can exclude option 1.", DRUGS),
    # a number before another option's statement
    (f"1. {STEM} носовую перегородку", STATEMENTS),
]


@pytest.mark.parametrize(("reply", "options", "expected"), NUMBER_READ)
def test_a_number_opening_its_own_options_text_is_read(reply, options, expected):
    got = read_answer(reply, "1234", options)
    assert got.label == expected, got.how


@pytest.mark.parametrize(("reply", "options"), NUMBER_UNREAD)
def test_a_number_opening_a_step_of_reasoning_is_no_answer(reply, options):
    got = read_answer(reply, "1234", options)
    assert got.label is None, got.how


def test_a_numbered_list_of_steps_ending_in_an_answer_reads_the_answer():
    reply = "1. The patient has tuberous sclerosis.\n2. Infantile spasms respond to GABA transaminase inhibition.\n3. So the answer is option 1."
    assert read_answer(reply, "1234", DRUGS).label == "1"


SET_ASIDE_UNREAD = [
    "The answer is B. On reflection, we can exclude option B because the patient is pregnant.",
    "B seems right. However, we can eliminate (B) since it is contraindicated.",
    "Option C is the answer. Then again, we should rule out choice C given the allergy.",
]

SET_ASIDE_READ = [
    ("We can exclude option A. The answer is B.", "B"),
    ("The answer is B, so we can exclude option A.", "B"),
    ("The answer is B. We can eliminate option C because of the allergy.", "B"),
]


@pytest.mark.parametrize("reply", SET_ASIDE_UNREAD)
def test_an_option_set_aside_by_name_is_taken_back(reply):
    got = read_answer(reply, "ABCD")
    assert got.label is None and got.unread == "withdrawn", got.how


@pytest.mark.parametrize(("reply", "expected"), SET_ASIDE_READ)
def test_setting_another_option_aside_leaves_the_answer(reply, expected):
    assert read_answer(reply, "ABCD").label == expected


BLOCKERS = {"1": "Vecuronium", "2": "Atracurium", "3": "Pancuronium", "4": "Mivacurium"}
ANTIBIOTICS = {"1": "Gentamicin", "2": "Ciplatin", "3": "Rifampicin", "4": "Vancomycin"}
ANTIDOTES = {"1": "Protamine", "2": "Flumazenil", "3": "Coumarin", "4": "Midazolam"}
DIABETES = {"1": "Glipizide", "2": "Insulin", "3": "Tolbutamide", "4": "Metformin"}
NITROUS = {
    "1": "Depresses an already compromised myocardium",
    "2": "Permits the use of limited FIO2 only",
    "3": "Is less soluble than nitrogen",
    "4": "Causes the expansion of air filled body cavities",
}

TEXT_CONCLUSION_READ = [
    ("The cost of pancuronium is lowest. Hence, pancuronium is the drug of choice.", BLOCKERS, "3"),
    ("The patient has tuberous sclerosis. Therefore, the first line of treatment is vigabatrin.", DRUGS, "1"),
    ("Tacrolimus is a substrate of CYP3A4. Thus, the answer here is rifampicin.", ANTIBIOTICS, "3"),
    ("So pancuronium would be the best choice. However, renal failure makes this an interesting case, but pancuronium remains the choice.", BLOCKERS, "3"),
]

TEXT_CONCLUSION_UNREAD = [
    # the subject of another verb says what the option does
    ("Tacrolimus is a substrate of CYP3A4. Therefore, rifampicin will decrease the levels of tacrolimus.", ANTIBIOTICS),
    # a doubt
    ("CYP3A4 is inhibited by coumarin. Therefore, coumarin anticoagulants may increase the plasma concentration of benzodiazepines.", ANTIDOTES),
    # the text denied in a later sentence
    ("Therefore, they need a higher dose of insulin. However, insulin is not the drug of choice in obese patients.", DIABETES),
    # the reply's last sentence turns against its conclusion and it stops
    ("The patient has tuberous sclerosis. Therefore, the first line drug of choice is vigabatrin. However, the patient is Asian.", DRUGS),
    ("Hence, the drug of choice is pancuronium. But renal failure changes the picture.", BLOCKERS),
    # a relative clause describes
    ("1. Nitrous oxide is a gas that is less soluble than nitrogen.", NITROUS),
]


@pytest.mark.parametrize(("reply", "options", "expected"), TEXT_CONCLUSION_READ)
def test_a_concluding_claim_of_one_options_text_is_read(reply, options, expected):
    got = read_answer(reply, "1234", options)
    assert got.label == expected, got.how


@pytest.mark.parametrize(("reply", "options"), TEXT_CONCLUSION_UNREAD)
def test_a_concluding_sentence_that_claims_no_option_is_no_answer(reply, options):
    got = read_answer(reply, "1234", options)
    assert got.label is None, got.how
