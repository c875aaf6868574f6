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


# --- precision: the other wrong letters of the ninth set, each a class ------------------------------

CAUSES = {"A": "Pheochromocytoma", "B": "Age-related sympathetic overactivity", "G": "A medication effect", "J": "Anxiety"}
MARROW = {"A": "Myelodysplastic syndrome", "D": "Primary myelofibrosis", "E": "Leukemoid reaction", "F": "Essential thrombocythemia"}
THERAPY = {"A": "talking to a patient", "B": "cognitive/behavioral interventions", "C": "biomedical/cognitive treatments", "D": "somatic therapies"}
CODES = {"A": "20005", "B": "20055", "C": "20010", "D": "20016"}
TRIALS = {"A": "Randomised controlled trial", "B": "Cohort study", "C": "Case-control study", "D": "None of the above"}

PRECISION_UNREAD = [
    # an option's text joined to another thing names two things
    ("So the most likely explanation is that his anxiety and medication are contributing to this.", "ABCDEFGHIJ", CAUSES, "hedged"),
    ("Hmm, maybe it's age-related sympathetic overactivity. Okay, the most likely explanation is anxiety and medication together.", "ABCDEFGHIJ", CAUSES, None),
    ("The most likely explanation is anxiety, medication and stress.", "ABCDEFGHIJ", CAUSES, None),
    # an option named and then said not to be correct
    ("So, the leukemoid reaction (option E) is tempting. If the LAP is elevated, then E would not be correct.", "ABCDEF", MARROW, "withdrawn"),
    # the options restated inline name none of them
    (
        "The options are A. talking to a patient, B. cognitive/behavioral interventions, C. biomedical/cognitive treatments, D. somatic therapies.",
        "ABCD",
        THERAPY,
        None,
    ),
    # a JSON answer field whose reasoning goes on to claim another option
    (
        '{"choice": "C", "reasoning": "CPT 20010 covers arthrotomy. However, CPT 20005 is actually the correct code for drainage."}',
        "ABCD",
        CODES,
        "contradicts",
    ),
    ('{"choice": "B", "reasoning": "On reflection, option D would be the most appropriate here."}', "ABCD", CODES, "contradicts"),
]

PRECISION_READ = [
    ("The most likely explanation is anxiety; medication plays no part.", "ABCDEFGHIJ", CAUSES, "J"),
    ("The most likely explanation is anxiety, because the episodes follow stress.", "ABCDEFGHIJ", CAUSES, "J"),
    ("So the leukemoid reaction (option E) is the answer, since the LAP is low; other causes would not be correct.", "ABCDEF", MARROW, "E"),
    ("Of the options (A. talking to a patient, B. cognitive/behavioral interventions), the principal tool is A. talking to a patient", "ABCD", THERAPY, "A"),
    ('{"choice": "C", "reasoning": "CPT 20005 is for soft tissue. CPT 20010 is actually the correct code here."}', "ABCD", CODES, "C"),
    ('{"choice": "C", "reasoning": "20010 covers the deep drainage this case needs."}', "ABCD", CODES, "C"),
]


@pytest.mark.parametrize(("reply", "letters", "options", "why"), PRECISION_UNREAD)
def test_a_reply_naming_no_single_option_is_unread(reply, letters, options, why):
    got = read_answer(reply, letters, options)
    assert got.label is None, got.how
    assert why is None or got.unread == why, got.how


@pytest.mark.parametrize(("reply", "letters", "options", "expected"), PRECISION_READ)
def test_the_same_forms_around_one_commitment_leave_it_read(reply, letters, options, expected):
    got = read_answer(reply, letters, options)
    assert got.label == expected, got.how


_WEIGHING = (
    "The patient has a catheter, so the urine may be contaminated.\n\n"
    "Therefore, the correct answer would be F. Getting a clean sample comes before antibiotics, "
    "because cultures guide the choice of drug and the sample must not be contaminated by the catheter.\n\n"
)


def test_a_reasoning_reply_cut_off_while_weighing_again_after_its_answer_is_unread():
    cut = _WEIGHING + "Alternatively, if the patient is very sick, you might start antibiotics. But the question is about the most appropriate next"
    got = read_answer(cut, "ABCDEFGHIJ")
    assert got.label is None and got.unread == "cut_off", got.how


def test_an_answer_whose_reply_ends_its_sentence_or_does_not_reopen_stands():
    # the same turn, the reply ending its sentence: the weighing was finished
    assert read_answer(_WEIGHING + "Alternatively, one might start antibiotics first. Still, F is the answer.", "ABCDEFGHIJ").label == "F"
    # cut off without reopening: an explanation cut short
    assert read_answer(_WEIGHING + "Once the culture comes back, the antibiotics are adjusted to the", "ABCDEFGHIJ").label == "F"
    # an answer opening the reply, its explanation cut off while weighing: the answer was given first
    assert read_answer("Answer: F\nA clean sample is needed. Alternatively, one might start antibiotics when the", "ABCDEFGHIJ").label == "F"
    # a final answer stands
    assert read_answer(_WEIGHING + "Final answer: F\n\nAlternatively, if the patient is very sick, you might", "ABCDEFGHIJ").label == "F"


def test_a_review_of_the_options_cut_off_in_its_first_titled_analysis_is_unread():
    review = "3. Look at the options:\n* A. Randomised controlled trial: This option is right. The study assigns people at random so the"
    got = read_answer(review, "ABCD", TRIALS)
    assert got.label is None and got.unread == "cut_off", got.how
    # an answer line after a colon, then the option's text alone, concludes
    assert read_answer("The design that fits best is:\nA. Randomised controlled trial", "ABCD", TRIALS).label == "A"
    # the titled analysis finished: a sentence ended
    assert read_answer("3. Look at the options:\n* A. Randomised controlled trial: This option is right.", "ABCD", TRIALS).label == "A"


# --- recall: a reasoning trace concluding on one option by its text ---------------------------------

PPH = {
    "A": "Administer carboprost tromethamine",
    "B": "Perform uterine artery embolization",
    "C": "Administer tranexamic acid",
    "D": "Begin methylergonovine administration",
    "E": "Perform uterine tamponade",
}
LIPIDS = {"A": "Prader-Willi syndrome", "B": "Gaucher disease", "C": "Lipoprotein lipase deficiency", "D": "Familial hypercholesterolemia"}
KNEE = {"A": "Resurfacing more of the distal femur", "B": "Reducing polyethylene insert thickness", "C": "Releasing the posterior capsule"}
LUPUS = {"A": "Excess type I interferon", "B": "Ineffective clearance of cellular debris", "C": "Complement overactivation"}

TRACE_READ = [
    # a concluding phrase after an interjection ("Okay, putting it all together, ...")
    (
        "Gaucher disease stores glucocerebroside, not fat.\n\nOkay, putting it all together, the milky layer strongly points towards lipoprotein lipase deficiency. So, yeah, that seems to be the most likely explanation.",
        LIPIDS,
        "C",
    ),
    ("After considering all these factors, I'm leaning towards a diagnosis of lipoprotein lipase deficiency. Yeah, that feels like the best fit.", LIPIDS, "C"),
    # an article the reply adds to the option's text
    ("So, after thinking through all these options, reducing the polyethylene insert thickness seems like the best bet. Yeah, that's the one.", KNEE, "B"),
    # a later concluding sentence that names nothing affirms the one before
    ("In conclusion, the problem in lupus seems to be ineffective clearance of cellular debris. So, yeah, that's probably the key mechanism here.", LUPUS, "B"),
    # an action option named by what it is done with
    ("Oxytocin has failed. Therefore, carboprost tromethamine represents the most appropriate next step.", PPH, "A"),
    ("So, considering all of this, I think the best next step is to go with carboprost tromethamine. Yeah, that makes sense.", PPH, "A"),
]

TRACE_UNREAD = [
    # two options' texts in the concluding sentence
    ("Putting it all together, lipoprotein lipase deficiency and Gaucher disease both remain possible.", LIPIDS),
    # a later concluding sentence that doubts
    ("In conclusion, the problem seems to be ineffective clearance of cellular debris. So, maybe it is something else entirely.", LUPUS),
    # a later concluding sentence naming a word of another option
    ("In conclusion, the problem seems to be ineffective clearance of cellular debris. So, complement matters most here.", LUPUS),
    # two actions share what they are done with: neither is named by it
    ("Therefore, uterine tamponade is the best next step.", {**PPH, "F": "Begin uterine tamponade"}),
    # the thing an action is done with, as the subject of another verb
    ("Therefore, carboprost tromethamine will contract the uterus.", PPH),
]


@pytest.mark.parametrize(("reply", "options", "expected"), TRACE_READ)
def test_a_trace_concluding_on_one_options_text_is_read(reply, options, expected):
    got = read_answer(reply, "ABCDEFGHIJ"[: len(options)], options)
    assert got.label == expected, got.how


@pytest.mark.parametrize(("reply", "options"), TRACE_UNREAD)
def test_a_trace_concluding_on_no_single_option_is_unread(reply, options):
    got = read_answer(reply, "ABCDEFGHIJ"[: len(options)], options)
    assert got.label is None, got.how


# --- recall: answer forms the ninth set showed ------------------------------------------------------

GREEN_TEA = {"A": "healthier lifestyles", "B": "a positive outlook", "C": "causation not shown", "D": "drink tea daily"}

FORMS_READ = [
    # Swahili: "the answer is (B)", "the right choice is D"
    ("**Hatua 4: Hitimisho**\n\nUchambuzi sahihi ni jaribio-t.\n\n**Jibu ni (B)**", "ABCD", None, "B"),
    ("Kulingana na uelewa wetu wa swali, chaguo sahihi ni D. Kuweka kizuizi ni muhimu.", "ABCD", None, "D"),
    ("Jibu: C", "ABCD", None, "C"),
    # an option referred to ("each answer choice:", "this answer choice (D) does not ...") is no answer
    (
        "Now let's look at each answer choice:\n\n A. It is possible that tea drinkers live healthier lives.\n B. It is possible that they are happier.\n\nThe best answer is C, because it identifies the limitation.",
        "ABCD",
        GREEN_TEA,
        "C",
    ),
    ("However, this answer choice (D) does not directly support this.\n\nThe best answer is: (A)", "ABCD", None, "A"),
    # a step's heading ("5. Choose the best answer:") states nothing
    ("5. Choose the best answer:\n- (A) Dopamine is involved in reward.\n- (D) Serotonin is the correct choice.\n\nThe best answer is: (D)", "ABCD", None, "D"),
    # a bracketed note giving the answer
    ("It is most commonly associated with E. faecalis (Answer option 2).", "1234", None, "2"),
    ("The cause is a lack of vitamin B12 (correct answer: C).", "ABCD", None, "C"),
]

FORMS_UNREAD = [
    ("Jibu ni (B) au (C).", "ABCD"),
    ("Swali: Jibu ni nini?", "ABCD"),
    ("Now let's look at each answer choice: A, B, C and D.", "ABCD"),
    ("5. Choose the best answer:\n- (A) Dopamine\n- (D) Serotonin", "ABCD"),
    ("E. faecalis (answer option 2 is wrong) is a common finding.", "1234"),
    ("Both fit: (answer option 2) and (answer option 3).", "1234"),
]


@pytest.mark.parametrize(("reply", "letters", "options", "expected"), FORMS_READ)
def test_an_answer_form_of_the_ninth_set_is_read(reply, letters, options, expected):
    got = read_answer(reply, letters, options)
    assert got.label == expected, got.how


@pytest.mark.parametrize(("reply", "letters"), FORMS_UNREAD)
def test_its_neighbours_naming_no_single_answer_stay_unread(reply, letters):
    got = read_answer(reply, letters)
    assert got.label is None, got.how
