"""The forms the answer reader reads since the sixth validation set's second recall round, each with
the neighbours that must stay unread (or read as the reply's own final stance): a Chinese sentence
claiming one option by its whole text, a reply opening with a label and its own option's text, a
reply cut off inside an option's word, a discussion turn's own stance (and the addressee's answer
read only where the reply agrees with it now), Spanish statements naming an option on the next line.

The replies are written for these tests in the manner of the real ones that prompted each form
(tests/data/replies/mcq_h.jsonl and mcq_i.jsonl: TCMBench, PULSE-EVAL, collab-ai, BiasMedQA, MIR,
FSE); a careful reader's label is given with each."""

from __future__ import annotations

import pytest

from medresilience.scoring.letters import read_answer

PRESCRIPTIONS = {"A": "银翘散", "B": "桑菊饮", "C": "清咽栀豉汤", "D": "普济消毒饮", "E": "银翘散加马勃、玄参"}
EVILS = {"A": "风", "B": "寒", "C": "暑", "D": "燥", "E": "火"}
FORMULAS = {"A": "葛根汤主之", "B": "黄连汤主之", "C": "葛根芩连汤主之", "D": "黄芩汤主之", "E": "白头翁汤主之"}
CONDUCTION = {"A": "心肌收缩无力", "B": "房室传导阻滞", "C": "束支传导有障碍", "D": "心室肌肥大，兴奋过程延长", "E": "房室瓣开放不全"}
MURMUR = {
    "A": "Rheumatic fever",
    "B": "Innocent murmur",
    "C": "Subacute infective endocarditis",
    "D": "Non-bacterial thrombotic endocarditis",
    "E": "Atrial myxoma",
}
CONJUNCTIVITIS = {"A": "Enterovirus 70", "B": "Adenovirus", "C": "Herpesvirus", "D": "Coxsackie A24", "E": "Reovirus"}
DRUGS = {"A": "Metoprolol", "B": "Verapamil", "C": "Nifedipine", "D": "Hydrochlorthiazide", "E": "Spironolactone"}
FH = {
    "1": "El diagnóstico puede realizarse mediante un análisis genético.",
    "2": "En caso de confirmarse la entidad, debemos realizar estudio genético a todos los familiares de primer grado.",
    "3": "Podría beneficiarse de iniciar tratamiento con un fármaco inhibidor de PCSK9.",
    "4": "Es fundamental el control de todos los factores de riesgo cardiovascular.",
}
APS = {
    "1": "Aspirina y heparina de bajo peso molecular a dosis profilácticas.",
    "2": "Vitaminas antioxidantes a dosis altas.",
    "3": "Intentar la gestación mediante diagnóstico genético preimplantacional.",
    "4": "Tratamiento según cribado de preeclampsia con aspirina a dosis bajas.",
}
TEN = "ABCDEFGHIJ"

#: (id, letters, option texts, reply, the label a careful reader gives)
CASES = [
    # --- Chinese: a sentence claiming one option by its whole text
    ("zh-most-suitable", "ABCDE", PRESCRIPTIONS, "根据症状判断为风温证。因此，最适宜的处方是银翘散。", "A"),
    ("zh-located", "ABCDE", EVILS, "寒邪最易在冬季侵袭人体。因此，最具有季节性的邪气应该是暑。", "C"),
    ("zh-text-first-best", "ABCDE", PRESCRIPTIONS, "因此，桑菊饮是治疗本证的最佳方剂。", "B"),
    ("zh-shared-ending", "ABCDE", FORMULAS, "热利下重者当清热止利。因此，应选用葛根汤。", "A"),
    # ... must stay unread: denied, doubted, joined, restated after its label, under a hypothesis,
    # two options claimed alike; and an option merely discussed does not outweigh the one concluded on
    ("zh-denied", "ABCDE", PRESCRIPTIONS, "本证最适宜的处方不是银翘散。", None),
    ("zh-doubted", "ABCDE", PRESCRIPTIONS, "本证的处方可能是银翘散。", None),
    ("zh-joined", "ABCDE", EVILS, "具有明显季节性的邪气应该是寒和暑。", None),
    ("zh-restated", "ABCDE", PRESCRIPTIONS, "A选项是银翘散。B选项是桑菊饮。C选项是清咽栀豉汤。", None),
    ("zh-differential", "ABCDE", {"A": "急性支气管炎", "B": "支气管扩张", "C": "胸膜炎", "D": "肺炎", "E": "肺癌"}, "本病需要鉴别的是肺癌。", None),
    ("zh-excluded", "ABCDE", {"A": "急性支气管炎", "B": "支气管扩张", "C": "胸膜炎", "D": "肺炎", "E": "肺癌"}, "首先应排除的是肺癌。", None),
    ("zh-hypothesis", "ABCDE", PRESCRIPTIONS, "如果患者以咳嗽为主，应首选桑菊饮。", None),
    ("zh-two-claims", "ABCDE", PRESCRIPTIONS, "最适宜的处方是银翘散。最适宜的处方是桑菊饮。", None),
    ("zh-several-in-sentence", "ABCDE", PRESCRIPTIONS, "常用的方剂是银翘散，桑菊饮。", None),
    ("zh-discussed-then-concluded", "ABCDE", PRESCRIPTIONS, "银翘散是治疗风温的经典方剂。但本证以咳嗽为主，最适宜的处方是桑菊饮。", "B"),
    ("zh-later-clause-best", "ABCDE", PRESCRIPTIONS, "桑菊饮具有疏风清热的功效，最适合治疗此证。", "B"),
    ("zh-later-clause-denied", "ABCDE", PRESCRIPTIONS, "桑菊饮具有疏风清热的功效，但不是最适合治疗此证的方剂。", None),
    ("zh-shared-ending-herb", "ABCDE", FORMULAS, "葛根汤的主要成分是葛根。", None),
    # --- a reply opening with a label and its own option's text
    ("opens-numbered", "ABCDE", MURMUR, "1.E. Atrial myxoma The patient's history of atrial arrhythmia and loss of conscious", "E"),
    ("opens-zh-glued", "ABCDE", CONDUCTION, "B：房室传导阻滞是P-R间期延长的常见原因之一。", "B"),
    ("opens-two", "ABCDE", CONJUNCTIVITIS, "A. Enterovirus 70 and D. Coxsackie A24\n\nBoth cause the epidemic form.", None),
    ("opens-echoed-list", "ABCDE", CONJUNCTIVITIS, "A. Enterovirus 70\nB. Adenovirus\nC. Herpesvirus\nD. Coxsackie A24\nE. Reovirus", None),
    # --- cut off inside an option's word
    ("cut-lost-letter", "ABCDE", DRUGS, "Given the new ankle swelling, the most likely medication that was prescribed to the patient is hydrochloroth", "D"),
    ("cut-too-short", "ABCDE", DRUGS, "Given the new ankle swelling, the most likely medication that was prescribed to the patient is hyd", None),
    ("cut-two-begin", "ABCDE", {**DRUGS, "E": "Hydrochlorothiazide"}, "The most likely medication that was prescribed to the patient is hydrochloroth", None),
    # --- a discussion turn's own stance
    ("aside-quoted", TEN, None, 'I still believe that Option F, stating that "the root value is C5, C6," remains the best answer.', "F"),
    ("aside-paren", TEN, None, "Option A (dissatisfaction with the outcome) is the most compelling answer here.", "A"),
    ("aside-dash", TEN, None, 'I agree that option (F) – "1" – is the better and more precise answer choice.', "F"),
    ("being-favorable", TEN, None, "I AGREE with your perspective on Option I being the more favorable choice.", "I"),
    ("regarded-better", TEN, None, "I agree that option J should be regarded as the better representation.", "J"),
    ("best-fit", TEN, None, "Considering all these factors, Option D still remains the best fit.", "D"),
    ("updated-answer", TEN, None, "My updated answer, considering the nuances you raised, is (H).", "H"),
    ("maintain", TEN, None, "I maintain that option J, although less direct, is superior.", "J"),
    ("stand-by", TEN, None, "I stand by option F for when the first mammals appeared.", "F"),
    ("lean-because", TEN, None, "I would lean towards option (F) because it is simpler.", "F"),
    ("agree-your-answer", TEN, None, "I AGREE with your answer (C) and the discussion can be concluded.", "C"),
    ("strong-case", TEN, None, "In sum, you build a solid case for dissatisfaction (Option A) being the main factor. I AGREE with your assessment.", "A"),
    ("strong-case-then-other", TEN, None, "You make a compelling case for Option I, but I still think B is correct.", None),
    ("no-strong-case", TEN, None, "There is no compelling case for option I here.", None),
    # ... not where the reply disputes it, or where the option is the addressee's and the reply
    # does not agree with it now
    ("disagree-that", TEN, None, "I disagree that option H is the best answer.", None),
    ("disagree-being", TEN, None, "I disagree with option I being the more favorable choice.", None),
    ("disagree-conclusion", TEN, None, "Therefore, I disagree with the conclusion that Option H should be considered the best answer.", None),
    ("doubt-better", TEN, None, "I doubt that option B is the better choice.", None),
    ("disagree-your-answer", TEN, None, "I disagree with your answer (C).", None),
    ("previously-agreed", TEN, None, "I previously agreed with your answer (C), but now I think B is correct.", "B"),
    ("yours-not-agreed", TEN, None, "I see the logic in your view on Option I being the more favorable choice, but I think C.", "C"),
    ("aside-unnamed", TEN, None, "Vitamin B, which is water soluble, remains the best choice.", None),
    ("lean-but", TEN, None, "I would lean towards option (F) but it is not clear to me.", None),
    # --- Spanish: the statement named on the next line, the recommendation by its text
    (
        "es-next-line",
        "1234",
        FH,
        "La afirmación INCORRECTA es:\n\n2. En caso de confirmarse la entidad, debemos realizar estudio genético a todos los familiares de primer grado.",
        "2",
    ),
    (
        "es-next-line-other-text",
        "1234",
        FH,
        "La afirmación INCORRECTA es:\n\n2. Podría beneficiarse de iniciar tratamiento con un fármaco inhibidor de PCSK9.",
        None,
    ),
    (
        "es-recommendation",
        "1234",
        APS,
        "La recomendación más adecuada sería el tratamiento con aspirina y heparina de bajo peso molecular a dosis profilácticas.",
        "1",
    ),
    (
        "es-recommendation-denied",
        "1234",
        APS,
        "La recomendación más adecuada no sería el tratamiento con aspirina y heparina de bajo peso molecular a dosis profilácticas.",
        None,
    ),
]


@pytest.mark.parametrize("rid, letters, options, reply, expected", CASES, ids=[c[0] for c in CASES])
def test_a_recall_form_is_read_and_its_neighbours_stay_unread(rid, letters, options, reply, expected):
    got = read_answer(reply, letters, options)
    assert got.label == expected, f"{rid}: read {got.label!r} ({got.how})"
    # an unread reply says why
    assert got.label is not None or got.unread


# --- the seventh validation set's forms (mcq_j.jsonl: medgemma in Swedish behind XML tags and
# chat-template leaks, gpt JSON with a "diagnosis" key, budget-forced turns, boxed option texts) and
# the question-aware reading of the sixth set's except-items (TCMBench, MIR, FSE), each with the
# neighbours that must stay unread. The question is the item's (read_answer's `question`).
ABCD = "ABCD"
PUBMED_SV = {"A": "ja", "B": "nej", "C": "kanske"}
STAGES = {"A": "IIB.", "B": "IIIA.", "C": "IIIB.", "D": "IIIC."}
LESIONS = {"A": "actinic keratoses", "B": "basal cell carcinoma", "C": "dermatofibroma", "D": "melanoma"}
DEMENTIA = {"A": "Probable Alzheimer-type neurocognitive disorder", "B": "Depression-related cognitive impairment"}
TLS = {"1": "Hipercalcemia.", "2": "Hiperuricemia.", "3": "Hiperfosfatemia.", "4": "Uremia."}
TLS_Q = "El síndrome de lisis tumoral se caracteriza por las siguientes complicaciones, EXCEPTO:"
TLS_Q_POSITIVE = "El síndrome de lisis tumoral se caracteriza por una de las siguientes complicaciones:"
ETHICS = {"A": "救死扶伤", "B": "仁爱救人", "C": "清廉正直", "D": "认真负责", "E": "不畏权贵"}
ETHICS_Q = "下列各项，不属中国古代医德思想内容的是（  ）。"
ETHICS_Q_POSITIVE = "下列各项，属于中国古代医德思想内容的是（  ）。"
EN_EXCEPT_Q = "All of the following are features of tumour lysis syndrome EXCEPT:"
EN_POSITIVE_Q = "Which of the following is a feature of tumour lysis syndrome?"
LEAK = "\n<|im_end|>\n<|im_start|>system\nDu är en utmärkt läkare.<|im_end|>\n<|im_start|>user\nFråga: ...\nSvar: D\n"

#: (id, letters, option texts, question, reply, the label a careful reader gives)
CASES_7 = [
    # --- the last answer tag holding one label or one option's whole text
    ("tag-prediction", ABCD, None, None, "Resonemang ...\n</reasoning>\n<prediction>b</prediction>", "B"),
    ("tag-answer-upper", ABCD, None, None, "Reasoning.\n<ANSWER> C </ANSWER>", "C"),
    ("tag-option-text", "ABC", PUBMED_SV, None, "Det är troligt.\n</reasoning>\n<prediction>ja</prediction>", "A"),
    ("tag-final-open", ABCD, None, None, "Reasoning ...\n<final>D", "D"),
    ("tag-last-wins", ABCD, None, None, "<answer>A</answer> was my first thought; on reflection <answer>C</answer>", "C"),
    ("tag-sentence", ABCD, None, None, "<answer>The answer is B</answer>", "B"),
    ("tag-own-lines", ABCD, None, None, "Reasoning.\n<answer>\nD\n</answer>", "D"),
    # ... not: two labels, a hedge, no option, a tag that is no answer tag, the prompt's format quoted
    # with a placeholder, an earlier answer the last tag hedges
    ("tag-two", ABCD, None, None, "<answer>B or C</answer>", None),
    ("tag-two-listed", ABCD, None, None, "<answer>A, C</answer>", None),
    ("tag-none", ABCD, None, None, "<answer>none of them</answer>", None),
    ("tag-unknown-word", "ABC", PUBMED_SV, None, "<prediction>vet ej</prediction>", None),
    ("tag-not-answer", ABCD, None, None, "<reasoning>B</reasoning>", None),
    ("tag-placeholder", ABCD, None, None, "I will reply as <answer>X</answer>.", None),
    ("tag-hedges-earlier", ABCD, None, None, "Answer: B\n<answer>B or C</answer>", None),
    # --- text after a chat-template end token is not the reply's own
    ("leak-cut", ABCD, None, None, "Reasoning.\n<prediction>C</prediction>" + LEAK, "C"),
    ("leak-only-after", ABCD, None, None, "Resonemang utan svar." + LEAK, None),
    ("leak-new-turn", ABCD, None, None, "The answer is B.<|eot_id|><|start_header_id|>user<|end_header_id|>\nNext question. The answer is C.", "B"),
    ("leak-gemma", ABCD, None, None, "Final answer: A<end_of_turn>\n<start_of_turn>user\nAnd this one? Final answer: D", "A"),
    ("leak-deepseek", ABCD, None, None, "The answer is B.<｜end▁of▁sentence｜>\nThe answer is C.", "B"),
    ("leak-inst", ABCD, None, None, "The answer is B. [INST] Next question ... [/INST] The answer is C.", "B"),
    (
        "harmony-final",
        ABCD,
        None,
        None,
        "<|channel|>analysis<|message|>Maybe B. Answer: B<|end|><|start|>assistant<|channel|>final<|message|>The answer is C.<|return|>",
        "C",
    ),
    ("harmony-analysis-only", ABCD, None, None, "<|channel|>analysis<|message|>Likely B. Answer: B<|end|>", None),
    ("leak-opening-token", ABCD, None, None, "<|im_start|>assistant\nThe answer is B.<|im_end|>", "B"),
    ("struck-not-end", ABCD, None, None, "I first thought <s>B</s>; the answer is C.", "C"),
    # --- a JSON key naming what the answer is about, read only for one label or one option's text
    ("json-diagnosis", "AB", DEMENTIA, None, '{"diagnosis":"A","confidence":85,"more_information_needed":false}', "A"),
    ("json-diagnosis-text", "AB", DEMENTIA, None, '{"diagnosis": "Depression-related cognitive impairment", "confidence": 60}', "B"),
    ("json-diagnosis-free-text", "AB", DEMENTIA, None, '{"diagnosis": "Pseudodementia of depression", "answer": "B"}', "B"),
    # ... not: two fields naming different options, a diagnosis naming no option alone, a
    # differential listing two
    ("json-disagree", "AB", DEMENTIA, None, '{"diagnosis": "A", "reasoning": "Wait, actually, on reflection ...", "answer": "B"}', None),
    ("json-disagree-text", "AB", DEMENTIA, None, '{"diagnosis": "Probable Alzheimer-type neurocognitive disorder", "answer": "B"}', None),
    ("json-diagnosis-other", "AB", DEMENTIA, None, '{"diagnosis": "Vascular dementia", "confidence": 40}', None),
    ("json-diagnosis-two", "AB", DEMENTIA, None, '{"diagnosis": "A or B", "confidence": 50}', None),
    ("json-differential", "AB", DEMENTIA, None, '{"differential_diagnosis": "A", "confidence": 50}', None),
    ("json-set-aside", "AB", DEMENTIA, None, '{"incorrect_option": "A", "excluded": "A", "distractor": "A"}', None),
    ("json-spanish-key", "AB", DEMENTIA, None, "{'respuesta_correcta': 'B', 'explicacion': '...'}", "B"),
    # --- an answer naming one option's text, at once followed by another option's label
    ("text-then-label", ABCD, STAGES, None, "Therefore, the answer is **IIIA**.\nFinal Answer: (A)", None),
    ("text-then-same-label", ABCD, STAGES, None, "Therefore, the answer is **IIIA**.\nFinal Answer: (B)", "B"),
    ("label-then-label", ABCD, STAGES, None, "The answer is (B).\n\nFinal Answer: The answer is (A).", "A"),
    ("text-then-reasoned-label", ABCD, STAGES, None, "At first the answer is IIIA. Wait, parametrial spread is stage IIB.\nFinal Answer: (A)", "A"),
    # --- a box holding one option's whole text
    ("boxed-text", ABCD, LESIONS, None, "The best description is basal cell carcinoma.\n\nFinal Answer: $\\boxed{basal cell carcinoma}$", "B"),
    ("boxed-other-text", ABCD, LESIONS, None, "Final Answer: $\\boxed{seborrhoeic keratosis}$", None),
    ("boxed-two-texts", ABCD, LESIONS, None, "Final Answer: $\\boxed{melanoma or basal cell carcinoma}$", None),
    # --- Swedish, Norwegian, Danish
    ("sv-svar", ABCD, None, None, "Alternativ C är felaktigt.\n\nSvar: B", "B"),
    ("sv-alternativ-korrekt", ABCD, None, None, "Alternativ D, alla ovanstående, är korrekt eftersom alla symtom kan förekomma.", "D"),
    ("no-alternativ-riktig", ABCD, None, None, "Alternativ B er riktig.", "B"),
    ("sv-alternativ-inte", ABCD, None, None, "Alternativ D är inte korrekt.", None),
    ("sv-alternativ-two", ABCD, None, None, "Alternativ B är korrekt. Alternativ C är korrekt.", None),
    # --- the item's question: an option called wrong answers an item asking for the wrong one
    ("zh-wrong-asked", "ABCDE", ETHICS, ETHICS_Q, "A、B、C、E都是古代医德思想。因此D选项是不正确的。", "D"),
    ("en-wrong-asked", ABCD, None, EN_EXCEPT_Q, "Options A, B and D are typical features. Option C is incorrect, as it is not a feature.", "C"),
    ("es-echo", "1234", TLS, TLS_Q, "El síndrome de lisis tumoral no se caracteriza por la hiperfosfatemia, aunque puede verse en otras situaciones.", "3"),
    # ... not: the same words on an item asking for the right one, or without the question; an
    # option called not wrong; two called wrong; a turn between; an echo of two options' texts
    ("zh-wrong-not-asked", "ABCDE", ETHICS, ETHICS_Q_POSITIVE, "因此D选项是不正确的。", None),
    ("zh-wrong-no-question", "ABCDE", ETHICS, None, "因此D选项是不正确的。", None),
    ("en-not-incorrect", ABCD, None, EN_EXCEPT_Q, "Option C is not incorrect.", None),
    ("en-two-called-wrong", ABCD, None, EN_EXCEPT_Q, "Option A is incorrect. Option C is incorrect.", None),
    ("en-wrong-then-answer", ABCD, None, EN_EXCEPT_Q, "Option A is incorrect as a choice, since it is a feature. The answer is C.", "C"),
    ("en-wrong-not-asked", ABCD, None, EN_POSITIVE_Q, "Option C is incorrect, as it is not a feature.", None),
    ("en-wrong-least-likely", ABCD, None, "Which of the following is LEAST likely to cause hyperkalaemia?", "Option C is incorrect here.", None),
    ("en-wrong-in-vignette", ABCD, None, "He could NOT walk. Which of the following is the most likely diagnosis?", "Option C is incorrect.", None),
    ("en-lowercase-not", ABCD, None, EN_POSITIVE_Q.replace("is a", "is not a"), "Option C is false: it is not a feature.", "C"),
    ("es-echo-not-asked", "1234", TLS, TLS_Q_POSITIVE, "El síndrome de lisis tumoral no se caracteriza por la hiperfosfatemia.", None),
    ("es-echo-two", "1234", TLS, TLS_Q, "El síndrome no se caracteriza por la hiperfosfatemia ni por la uremia.", None),
    ("es-echo-other-predicate", "1234", TLS, TLS_Q, "La hiperfosfatemia no es frecuente.", None),
]


@pytest.mark.parametrize("rid, letters, options, question, reply, expected", CASES_7, ids=[c[0] for c in CASES_7])
def test_a_seventh_round_form_is_read_and_its_neighbours_stay_unread(rid, letters, options, question, reply, expected):
    got = read_answer(reply, letters, options, question)
    assert got.label == expected, f"{rid}: read {got.label!r} ({got.how})"
    assert got.label is not None or got.unread


def test_a_caller_without_the_question_reads_as_before():
    # the question is optional: without it, an option called wrong on an except-item stays unread
    assert read_answer("因此D选项是不正确的。", "ABCDE", ETHICS).label is None
    assert read_answer("因此D选项是不正确的。", "ABCDE", ETHICS, ETHICS_Q).label == "D"
