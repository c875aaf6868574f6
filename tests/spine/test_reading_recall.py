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
