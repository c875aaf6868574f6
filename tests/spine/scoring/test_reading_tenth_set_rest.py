"""The answer reader on the classes the tenth validation set (tests/data/replies/mcq_m.jsonl) left
unread after its first rules, each rule with the neighbours it must read and the near-misses it must
leave unread:

- an answer field ("FINAL_ANSWER: ...") answering a yes/no/maybe item in words: "Uncertain" (and the
  few words of `yes_no_words.MAYBE_WORDS`) is maybe; the question's own predicate repeated
  ("Feasible" to "Is ... feasible in ...?") is yes; "No" and the thing the question asks exists ("No
  association" to "is there any association?") is no. Only on options exactly yes/no/maybe, only
  from the field's opening words, never with a contrary word in the field ("not feasible", "uncertain
  but likely yes", "possibly"), never echoing the question's subject, and never on a question that
  denies its own predicate ("Is ... not feasible?");
- a label in single quotes of its own ("The correct answer is 'E'.", "is 'D': Aqueduct of Sylvius")
  is a label, as "(E)" is; a quote glued to a word ("don't", "patient's") is not one;
- a line opening "Option B (<text>) suggests ..." or "Option C, <text>, are associated with ..."
  reviews its option: a leaning at most, so an answer the reply states elsewhere stands over it
  (a line holding only the option's text still answers; a claim of the option is read apart);
- a review of every option by its label keeps its one option also where the reply states that same
  option elsewhere ("... is phytonadione (vitamin K) (Choice D)"; a statement of another option
  still stands over the review), and names several options in one ("Options D and E are incorrect",
  "Option A, C, D, and E are incorrect");
- "..., as indicated by option (C)." names the option as "listed as option C" does (a leaning; "the
  test indicated by option C is not useful" states none); an option named by its text and label and
  then set aside in a plural or with "also" ("Chronic gastritis (B) and tertiary syphilis (C) are
  unlikely causes", "A vegetarian diet (D) is also an unlikely cause") is no leaning towards it;
- a numbered question heading in Japanese or Chinese on a line of its own ("第1の問題:", "第2問：",
  "第3题:") after the reply's answer opens a question the reply invents: its "解答：5" answers that
  question, not the item (a "第1問" inside a sentence opens nothing);
- an option's own text joined at once to another thing by Spanish or Portuguese "o"/"ou"/"y", French
  "ou"/"et" or German "oder"/"und" ("d) Comitantes o incomitantes.") names several, as "and"/"or"
  do; an option's text glued by a hyphen to a word that makes it another thing ("Neurofilament-like
  staining", "Desmin-negative tumour") does not name the option;
- a heading answer field holding a sentence with one option's whole text and no denial
  ("FINAL_ANSWER: Sensitivity ... indicates the probability of a true positive result") names that
  option; a bracketed label inside a sentence followed by its own option's whole text to the
  sentence's end ("... will result in (C) increased renal blood flow, ...") is a leaning towards it
  when it is the only label the reply names and its clause denies nothing.

The replies are written for these tests in the manner of the real ones (the real ones are read in
tests/spine/scoring/test_real_replies.py)."""

from __future__ import annotations

import pytest

from medresilience.scoring.letters import read_answer

YES_NO = {"A": "yes", "B": "no", "C": "maybe"}
FEASIBLE = "Is an advance care planning model feasible in community palliative care?"
EARLY = "Prognosis of well differentiated small hepatocellular carcinoma--is well differentiated hepatocellular carcinoma clinically early cancer?"
ASSOCIATION = "CYP2D6*4 allele and breast cancer risk: is there any association?"
NOT_FEASIBLE = "Is an advance care planning model not feasible in community palliative care?"

#: (reply, question, the label a careful reader gives)
WORDS_READ = [
    ("FINAL_ANSWER: Uncertain\nRATIONALE: the studies disagree.\nUNCERTAINTY: high", None, "C"),
    ("FINAL_ANSWER: uncertain RATIONALE: mixed results. UNCERTAINTY: medium", FEASIBLE, "C"),
    ("FINAL ANSWER: Inconclusive.\nRATIONALE: ...", None, "C"),
    ("FINAL_ANSWER: Feasible\nRATIONALE: Advance care planning is a core component of palliative care.", FEASIBLE, "A"),
    ("FINAL_ANSWER: Feasible.", FEASIBLE, "A"),
    ("FINAL_ANSWER:  Clinically early cancer\nRATIONALE: it is often considered clinically early cancer.", EARLY, "A"),
    ("FINAL_ANSWER: No association\nRATIONALE: there is no established link.", ASSOCIATION, "B"),
]

#: (reply, options, question): a field in words a careful reader cannot take as yes, no or maybe
WORDS_UNREAD = [
    # a contrary word in the field
    ("FINAL_ANSWER: Not feasible\nRATIONALE: ...", YES_NO, FEASIBLE),
    ("FINAL_ANSWER: Possibly feasible\nRATIONALE: ...", YES_NO, FEASIBLE),
    ("FINAL_ANSWER: Feasible, but not in rural areas\nRATIONALE: ...", YES_NO, FEASIBLE),
    ("FINAL_ANSWER: Uncertain, but likely yes\nRATIONALE: ...", YES_NO, None),
    ("FINAL_ANSWER: Possibly\nRATIONALE: ...", YES_NO, FEASIBLE),
    # a question whose yes means the opposite: the reply's word is not what it asks
    ("FINAL_ANSWER: Feasible\nRATIONALE: ...", YES_NO, NOT_FEASIBLE),
    ("FINAL_ANSWER: Feasible\nRATIONALE: ...", YES_NO, "Is an advance care planning model infeasible in community palliative care?"),
    ("FINAL_ANSWER: No association", YES_NO, "Is the CYP2D6*4 allele associated with a lower breast cancer risk?"),
    # the question's subject or its place repeated, not its predicate
    ("FINAL_ANSWER: Advance care planning model\nRATIONALE: ...", YES_NO, FEASIBLE),
    ("FINAL_ANSWER: Community palliative care\nRATIONALE: ...", YES_NO, FEASIBLE),
    # a sentence, not the opening words
    ("FINAL_ANSWER: Comorbidity often leads to poorer outcomes of depression.", YES_NO, "Does comorbidity lead to poorer outcomes of depression?"),
    # options that are not yes/no/maybe
    ("FINAL_ANSWER: Uncertain\nRATIONALE: ...", {"A": "Desmin", "B": "Actin", "C": "Neurofilament", "D": "Uncertain origin"}, None),
    ("FINAL_ANSWER: Feasible\nRATIONALE: ...", {"A": "yes", "B": "no"}, FEASIBLE),
]


@pytest.mark.parametrize(("reply", "question", "expected"), WORDS_READ)
def test_a_heading_field_answering_a_yes_no_maybe_item_in_its_few_words_is_read(reply, question, expected):
    got = read_answer(reply, "ABC", YES_NO, question)
    assert got.label == expected, got.how


@pytest.mark.parametrize(("reply", "options", "question"), WORDS_UNREAD)
def test_a_heading_field_in_words_with_a_contrary_word_another_polarity_or_other_options_is_unread(reply, options, question):
    got = read_answer(reply, "".join(options), options, question)
    assert got.label is None, got.how


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


BLEED = {"A": "Desmopressin", "B": "Factor VIII concentrate", "C": "Fresh frozen plasma", "D": "Phytonadione", "E": "Platelet transfusion"}
_OTHERS_ASIDE = (
    "Desmopressin (Choice A) could potentially help with hemostasis. However, it would not be the treatment of choice.\n"
    "Factor VIII concentrate (Choice B) is used in hemophilia A, but this patient lacks several factors.\n"
    "Fresh frozen plasma (Choice C) could be used in an emergency. However, the cause should be addressed.\n"
    "Platelet transfusion (Choice E) would be appropriate if his thrombocytopenia were the cause."
)
_CT = "As this patient smokes, the next best step is to perform a chest CT to evaluate for a lung tumor (Choice A).\n\n"

REVIEW_READ = [
    (
        "Vitamin K deficiency explains the bleeding. Therefore, the most appropriate treatment is phytonadione (vitamin K) (Choice D).\n\n" + _OTHERS_ASIDE,
        BLEED,
        "D",
    ),
    (
        _CT
        + "Option B is incorrect. An adrenal tumor is not suspected.\n\nOption C is incorrect.\n\nOptions D and E are incorrect. Dexamethasone is diagnostic.",
        EARS,
        "A",
    ),
    (_CT + "Option B is incorrect.\n\nOption C, D, and E are incorrect. They treat other causes.", EARS, "A"),
]

REVIEW_UNREAD = [
    # the conclusion states D, but the review keeps A as well
    (
        "Therefore, the most appropriate treatment is phytonadione (vitamin K) (Choice D).\n\n"
        + _OTHERS_ASIDE.replace("could potentially help with hemostasis. However, it would not be the treatment of choice", "is the treatment of choice"),
        BLEED,
    ),
    # two options not set aside
    (_CT + "Option B is incorrect.\n\nOption C is incorrect.\n\nOptions D and E are also reasonable here.", EARS),
]


@pytest.mark.parametrize(("reply", "options", "expected"), REVIEW_READ)
def test_a_review_keeping_the_option_the_reply_states_or_naming_several_in_one_is_read(reply, options, expected):
    got = read_answer(reply, "ABCDE", options)
    assert got.label == expected, got.how


@pytest.mark.parametrize(("reply", "options"), REVIEW_UNREAD)
def test_a_review_keeping_another_option_than_the_conclusion_or_keeping_two_is_unread(reply, options):
    got = read_answer(reply, "ABCDE", options)
    assert got.label is None, got.how


EDEMA = {
    "A": "Echocardiography",
    "B": "HIV antibody study",
    "C": "Serum B-type natriuretic peptide concentration",
    "D": "Toxicology screening",
    "E": "Urine protein",
}
ANEMIA = {"A": "Chronic alcoholism", "B": "Chronic gastritis", "C": "Tertiary syphilis", "D": "Vegetarian diet"}

INDICATED_OR_SET_ASIDE_READ = [
    ("The most likely abnormal result would be a high BNP concentration, as indicated by option (C). Other tests may also be ordered.", EDEMA, "C"),
    (
        "The most likely cause of the patient's symptoms is chronic alcoholism (A). Chronic gastritis (B) and tertiary syphilis (C) are unlikely causes, "
        "as there is no evidence of them. A vegetarian diet (D) is also an unlikely cause of the patient's symptoms, as",
        ANEMIA,
        "A",
    ),
]

INDICATED_OR_SET_ASIDE_UNREAD = [
    ("The test indicated by option C is not useful here.", EDEMA),
    ("The BNP, as indicated by option (C) or (E), is high.", EDEMA),
    # two options kept alike
    ("The most likely cause is chronic alcoholism (A). Chronic gastritis (B) is also a likely cause.", ANEMIA),
]


@pytest.mark.parametrize(("reply", "options", "expected"), INDICATED_OR_SET_ASIDE_READ)
def test_an_option_as_indicated_or_the_others_set_aside_in_a_plural_is_read(reply, options, expected):
    got = read_answer(reply, "".join(options), options)
    assert got.label == expected, got.how


@pytest.mark.parametrize(("reply", "options"), INDICATED_OR_SET_ASIDE_UNREAD)
def test_an_option_indicated_and_denied_or_two_kept_are_unread(reply, options):
    got = read_answer(reply, "".join(options), options)
    assert got.label is None, got.how


ANTIHISTAMINES = {"1": "クロルフェニラミン", "2": "プロメタジン", "3": "クロモグリク酸", "4": "ジフェンヒドラミン", "5": "ケトチフェン"}
_INVENTED = "\n\n**第1の問題:**\n\nオレキシン受容体を阻害する不眠症治療薬はどれか。\n\n解答：5\n\n**第2の問題:**\n\n作用機序はどれか。\n\n解答：1,2\n"

INVENTED_QUESTION = [
    ("2\n\n**解説:**\n\nこの問題では、それぞれ問題のテーマと解答と解説を個別に記載します。" + _INVENTED, "2"),
    ("解答：2" + _INVENTED.replace("第1の問題", "第1問").replace("第2の問題", "第2問"), "2"),
    ("答案：2" + _INVENTED.replace("第1の問題", "第1题").replace("第2の問題", "第2题"), "2"),
    # a question mentioned inside a sentence opens nothing: two answers stated alike
    ("解答：2\n\nこれは第1問と同じ考え方です。\n\n解答：4", None),
]


@pytest.mark.parametrize(("reply", "expected"), INVENTED_QUESTION)
def test_an_answer_before_a_numbered_question_heading_the_reply_invents_is_read(reply, expected):
    got = read_answer(reply, "12345", ANTIHISTAMINES)
    assert got.label == expected, got.how


SQUINTS = {"A": "Parcialmente acomodativos.", "B": "Incomitantes.", "C": "Exotropia intermitente.", "D": "Comitantes."}
MARKERS = {"A": "Desmin", "B": "Actin", "C": "Neurofilament", "D": "Intermediate filament"}

JOINED_OR_COMPOUND = [
    ("d) Comitantes.", SQUINTS, "D"),
    ("d) Comitantes, porque no varían con la mirada.", SQUINTS, "D"),
    ("Final answer: Neurofilament", MARKERS, "C"),
    ("Final answer: Neurofilament staining", MARKERS, "C"),
    ("d) Comitantes o incomitantes.", SQUINTS, None),
    ("d) Comitantes ou incomitantes.", SQUINTS, None),
    ("D) Comitantes oder Incomitantes.", SQUINTS, None),
    ("d) Comitantes y incomitantes.", SQUINTS, None),
    ("Final answer in words: Neurofilament-like staining", MARKERS, None),
    ("Final answer: Desmin-negative tumour", MARKERS, None),
    ("The answer is a desmin-negative tumour.", MARKERS, None),
]


@pytest.mark.parametrize(("reply", "options", "expected"), JOINED_OR_COMPOUND)
def test_an_option_text_joined_in_another_language_or_glued_into_a_compound_names_no_option(reply, options, expected):
    got = read_answer(reply, "ABCD", options)
    assert got.label == expected, got.how


SCREENING = {"A": "False positive", "B": "False negative", "C": "True negative", "D": "True positive"}
RENAL = {
    "A": "increased renal blood flow, increased ultrafiltration pressure, decreased glomerular filtration rate",
    "B": "increased renal blood flow, decreased ultrafiltration pressure, increased glomerular filtration rate",
    "C": "increased renal blood flow, decreased ultrafiltration pressure, decreased glomerular filtration rate",
    "D": "decreased renal blood flow, increased ultrafiltration pressure, decreased glomerular filtration rate",
}
_RENAL_C = "increased renal blood flow, decreased ultrafiltration pressure, decreased glomerular filtration rate"

SENTENCE_OR_INLINE = [
    ("FINAL_ANSWER: Sensitivity of a screening test indicates the probability of a true positive result.\nRATIONALE: ...", SCREENING, "D"),
    (f"It is likely that starting daily lisinopril therapy will result in (C) {_RENAL_C}. Lisinopril is an ACE inhibitor.", RENAL, "C"),
    # a denial, or two options' texts
    ("FINAL_ANSWER: Sensitivity is not the probability of a true positive result.", SCREENING, None),
    ("FINAL_ANSWER: A true positive, unlike a false positive, ...", SCREENING, None),
    (f"Lisinopril will not result in (C) {_RENAL_C}.", RENAL, None),
    # another label named: an option list, not an answer
    (f"The options are (A) and (C) {_RENAL_C}.", RENAL, None),
    # the text goes on past the option's
    (f"It will result in (C) {_RENAL_C} in most patients.", RENAL, None),
]


@pytest.mark.parametrize(("reply", "options", "expected"), SENTENCE_OR_INLINE)
def test_a_field_sentence_or_an_inline_label_with_one_options_whole_text_is_read_unless_denied_or_listed(reply, options, expected):
    got = read_answer(reply, "ABCD", options)
    assert got.label == expected, got.how
