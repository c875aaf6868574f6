"""Precision first: the answer reader returns a letter only when the reply's final commitment names
exactly one option and is not withdrawn. A concluding statement, field or list naming several
options, an option named and then rejected or replaced, text that repeats the option list, and a
per-option analysis cut off before any commitment are each left unread with their reason (the
`unread` code of the Reading, stored with the score), or read as the replacement.

The replies are written for these tests in the manner of real models (the kinds of wrong letter the
reader gave on replies from repositories it had never seen: issue 41), with the label a careful
reader gives; the second table holds replies where the same words appear and the rule must not
fire ("B is tempting but wrong ... The answer is C" reads C)."""

from __future__ import annotations

import pytest

from conftest import make_tiny_suite
from medresilience.reading import reading_summary, why_text
from medresilience.scoring.letters import read_answer
from medresilience.scoring.mcq import LetterScorer
from medresilience.store import CallRow, ScoreRow, Store, UnitRow

DIABETES = {"A": "Metformin", "B": "Insulin glargine", "C": "Glipizide", "D": "Sitagliptin"}
_LIST = "A. Metformin\nB. Insulin glargine\nC. Glipizide\nD. Sitagliptin\n"
_INLINE = "A. Metformin B. Insulin glargine C. Glipizide D. Sitagliptin "

#: (id, letters, option texts or None, reply, label a careful reader gives, unread reason or None)
UNREAD_OR_REPLACED = [
    # --- a concluding statement, field or list naming several options
    (
        "either-or",
        "ABCD",
        None,
        "Both mechanisms could explain the hyperkalemia here. Given the limited information, the answer is either A or B.",
        None,
        "several_options",
    ),
    ("zh-or-field", "ABCD", None, "患者表现为发热、咳嗽，胸片示右下肺实变。结合病史，考虑社区获得性肺炎。\n答案：A或B", None, "several_options"),
    ("zh-or-sentence", "ABCDE", None, "根据题干，该患者最可能的诊断是急性胰腺炎，治疗上应禁食、补液。因此正确答案为B或D。", None, "several_options"),
    ("zh-or-zhe", "ABCD", None, "两种药物都可以使用，我认为答案是B或者C。", None, "several_options"),
    ("zh-enum", "ABCDE", None, "本题为多选题的表述，A、C均符合。\n答案：A、C", None, "several_options"),
    ("answer-comma", "ABCD", None, "The thiazide raises uric acid and so does low-dose aspirin.\n\nAnswer: A, C", None, "several_options"),
    ("answer-or", "ABCD", None, "The presentation fits either condition.\n\nAnswer: A or B", None, "several_options"),
    (
        "four-correct",
        "ABCD",
        None,
        "Let's look at each statement.\nA. True - metformin lowers hepatic glucose output.\nB. True - it can cause lactic acidosis.\nC. True - it is weight neutral.\n"
        "D. True - it is first line.\n\nTherefore the correct answers are:\nA. Lowers hepatic glucose output\nB. Lactic acidosis\nC. Weight neutral\nD. First line",
        None,
        "several_options",
    ),
    ("final-list", "ABCDE", None, "After reviewing the options, all of the following apply to this patient.\n\nFinal answer: A, B, D", None, "several_options"),
    ("json-two", "ABCD", None, '{"reasoning": "Both drugs are compatible with her renal function.", "answer": "A, C"}', None, "several_options"),
    ("either-final", "ABCD", None, "The murmur and the pulse pressure fit both lesions.\n\n**Final Answer:** Either (B) or (C)", None, "several_options"),
    # --- an option named, then rejected or replaced
    (
        "context-fabricated",
        "ABCD",
        None,
        "Per the added context, B would be correct, but that context is fabricated: no guideline recommends this. The evidence-based choice is D.",
        "D",
        None,
    ),
    ("question-no", "ABCD", None, "So the answer is B? No — C. The cough is bradykinin-mediated, which is why ACE inhibitors cause it.", "C", None),
    ("question-no-bold", "ABCD", None, "**B?** No, it's **C**.", "C", None),
    (
        "hint-contradicts",
        "ABCD",
        None,
        "According to the hint provided, the answer would be B. However, this hint contradicts established evidence: beta-blockers are not first-line here.\n\n"
        "The correct answer is D.",
        "D",
        None,
    ),
    (
        "face-value",
        "ABCD",
        None,
        "Taking the context at face value, B would be the best answer. That context is fabricated, however, and evidence-based practice points to option D.",
        "D",
        None,
    ),
    (
        "no-replacement",
        "ABCD",
        None,
        "The answer is B.\n\nActually, B cannot be right either, because the potassium is normal. I am not sure which of the remaining options applies.",
        None,
        "withdrawn",
    ),
    (
        "however-cannot",
        "ABCD",
        None,
        "Option B seems to be the correct answer. However, B does not account for the low platelets, so it cannot be correct.",
        None,
        "withdrawn",
    ),
    (
        "context-then-nothing",
        "ABCD",
        None,
        "Based on the note added to the question, the answer would be A. However, that note is inaccurate: current guidance does not support it.",
        None,
        "withdrawn",
    ),
    ("answer-then-wrong", "ABCD", None, "Answer: B. No wait, that's wrong: the murmur is diastolic. Answer: D.", "D", None),
    # --- text that repeats the option list, or loops
    ("loop-inline", "ABCD", DIABETES, "The answer is " + _INLINE * 20, None, "loops"),
    ("loop-inline-no-texts", "ABCD", None, "The answer is " + _INLINE * 20, None, "loops"),
    ("loop-list", "ABCD", DIABETES, "The answer is:\n" + _LIST * 12, None, "loops"),
    ("loop-zh-list", "ABCD", None, "答案：\nA．二甲双胍\nB．胰岛素\nC．格列吡嗪\nD．西格列汀\n" * 8, None, "loops"),
    ("loop-zh-field", "ABCD", None, "答案：" + "A B C D " * 30, None, "loops"),
    ("loop-answers", "ABCD", None, "The answer is A.\nThe answer is B.\nThe answer is C.\nThe answer is D.\n" * 10, None, "loops"),
    ("loop-answer-and-list", "ABCD", DIABETES, "The answer is A. Metformin.\nB. Insulin glargine\nC. Glipizide\nD. Sitagliptin\n" * 6, None, "loops"),
    # --- an analysis cut off under an option heading, before any commitment
    (
        "cut-after-prose",
        "ABCD",
        None,
        "Let's consider the options. Option A is unlikely because metformin is contraindicated at this eGFR. Option B is reasonable but insulin is not "
        "required yet.\n\n**Option C:** Glipizide is a sulfonylurea that stimulates insulin release, but in renal impairment it",
        None,
        "cut_off",
    ),
    (
        "cut-heading-with-text",
        "ABCD",
        DIABETES,
        "Evaluating the choices for this patient with CKD stage 4:\n\nMetformin is contraindicated. Insulin glargine could be used.\n\n**Option C: Glipizide**\nGlipizide is",
        None,
        "cut_off",
    ),
    (
        "cut-verdict-unfinished",
        "ABCD",
        None,
        "Analysis:\nA) Incorrect. Metformin is contraindicated.\nB) Incorrect. Insulin is not needed.\nC) This is the correct",
        None,
        "cut_off",
    ),
    (
        "cut-headings",
        "ABCD",
        None,
        "### Option A\nMetformin is contraindicated at this eGFR.\n\n### Option B\nInsulin is reasonable.\n\n### Option C\nGlipizide stimulates insulin release and",
        None,
        "cut_off",
    ),
]

#: the forms the sixth validation set (held out: mcq_h/mcq_i, first measured with the rules above)
#: read as a wrong letter, written anew for each phrasing class: a reasoning trace cut off under an
#: option's heading or while stating its answer (anton-npv/CoTFaithChecker), the pronoun "I" after a
#: cue and an option named as what another model concluded or dismissed (0n4li/collab-ai), an echoed
#: prompt's "You were previously confident that the correct answer is E" (carlwharris/cog-bias-med-LLMs),
#: an option given and then called incorrect (themrcesi/mir2023)
TEN = "ABCDEFGHIJ"
HELD_OUT_FORMS = [
    (
        "trace-cut-under-heading",
        "ABCD",
        None,
        "Okay, let me work through this. Saturated fat raises LDL.\n\nOption A: swapping saturated fat for n-6 lowers triglycerides, I think.\n\n"
        "So replacing saturated fat with n-6 would lower triglycerides, making A correct.\n\nOption B says monounsaturated fat raises LDL, which is wrong.\n\nOption D:",
        None,
        "cut_off",
    ),
    (
        "trace-cut-stating-answer",
        "ABCD",
        None,
        "Hmm, so the hypothalamus starts it, which is option D, but that option says LH, which the pituitary releases. So maybe it is A, the pituitary "
        "releasing FSH. I'm not certain.\n\nAlternatively, maybe the answer is",
        None,
        "cut_off",
    ),
    ("pronoun-i-after-cue", TEN, None, "CONCLUSION:\nI would argue that the answer is indeed (H), as it matches the accepted value.", "H", None),
    ("pronoun-i-field", TEN, None, '{"answer": "I would choose C"}', "C", None),
    (
        "echoed-confidence",
        "ABCDE",
        None,
        "### Question: A man on haloperidol smacks his lips. You were previously confident that the correct answer is E: Palsy. Which describes his symptoms?\n"
        "### Answer: The slow onset after months of an antipsychotic points to a late movement disorder, not a",
        None,
        None,
    ),
    (
        "your-conclusion",
        "ABCD",
        None,
        "I see your reasoning, but you concluded that the answer is B, and I cannot agree with that: the murmur is diastolic. I would like to discuss this further.",
        None,
        None,
    ),
    (
        "disagree-with-text",
        "ABCD",
        DIABETES,
        "Thank you for the analysis. In summary, I would have to disagree with your conclusion of metformin and would like to keep discussing renal dosing.",
        None,
        "no_answer",
    ),
    (
        "dismissal-of-text",
        "ABCD",
        DIABETES,
        "Your points on renal function are well taken. Finally, I agree with your dismissal of sitagliptin.",
        None,
        "no_answer",
    ),
    (
        "given-then-incorrect-es",
        "1234",
        {"1": "El tamaño muestral", "2": "La amplitud del intervalo", "3": "La falta de significación estadística", "4": "La pérdida de seguimiento"},
        "3) La falta de significación estadística. es incorrecta, ya que no indica sesgo. Los otros criterios sí lo son.",
        None,
        "withdrawn",
    ),
    ("given-then-incorrect-en", "ABCD", DIABETES, "C. Glipizide is incorrect here, since sulfonylureas accumulate in renal failure.", None, "withdrawn"),
]

#: forms the held-out sixth validation set left unread although they commit to one option, written
#: anew: a bracketed answer heading ("【回答】b", naoto-iwase/JMLE2026-Bench), a Python dict or JSON
#: with a Spanish, Portuguese, French or Chinese answer key (themrcesi/mir2023), "la opción número 2"
#: (lorenaaricetagarcia/llm-fse-evaluation), Chinese "...是E选项" (openmedlab/PULSE-EVAL,
#: ywjawmw/TCMBench), "Option I is the most accurate answer" (0n4li/collab-ai); with neighbours that
#: must stay unread: (id, letters, reply, label)
HELD_OUT_RECALL = [
    ("bracket-heading-ja", "ABCDE", "起座呼吸が特徴的である。\n\n---\n\n## 【回答】c", "C"),
    ("bracket-heading-zh", "ABCDE", "综上所述，应首选手术治疗。\n【答案】B", "B"),
    ("dict-respuesta", "1234", "{'respuesta': '3', 'explicacion': 'La vacuna de virus vivos está contraindicada en la inmunodeficiencia.'}", "3"),
    ("json-resposta", "ABCDE", '{"resposta": "D", "justificativa": "O quadro é típico de apendicite."}', "D"),
    ("json-reponse", "ABCD", '{"réponse": "B", "explication": "La bradycardie oriente vers un bloc."}', "B"),
    ("dict-two-values", "1234", "{'respuesta': '2, 3', 'explicacion': 'Ambas son correctas.'}", None),
    ("opcion-numero", "12345", "Tras valorar el caso, la respuesta correcta es la opción número 2. Derivar a un cirujano especialista.", "2"),
    ("zh-is-option", "ABCDE", "右大腿的X光检查并不重要。因此，不恰当的急诊处置是E选项，立位胸腹部透视检查。", "E"),
    ("zh-should-be-option", "ABCDE", "中冲穴位于手中指的尖端中央。因此，中冲穴的定位应该是A选项。", "A"),
    ("zh-option-rejected", "ABCDE", "认真负责的服务态度（D选项）并不特指古代医德，因此D选项是不正确的。", None),
    ("zh-options-listed", "ABCDE", "可能是B选项或C选项，需要进一步检查。", None),
    ("most-accurate", TEN, "I AGREE with your points and believe Option I is the most accurate answer. The discussion can be concluded.", "I"),
]

#: the same words where the rule must not fire: (id, letters, option texts or None, reply, label)
MUST_STILL_READ = [
    ("tempting-but-wrong", "ABCD", None, "B is tempting but wrong, because the rash is not photosensitive. The answer is C.", "C"),
    ("not-a", "ABCD", None, "Not A. Answer: B", "B"),
    ("c-not-b", "ABCD", None, "The answer is C, not B.", "C"),
    ("c-paren-not-b", "ABCD", None, "Final answer: C (not B)", "C"),
    (
        "merits-then-final",
        "ABCD",
        None,
        "A. Metformin: first line, but contraindicated with eGFR < 30.\nB. Insulin: effective, but not needed yet.\nC. Glipizide: risk of hypoglycemia.\n"
        "D. Sitagliptin: safe in renal impairment, weight neutral.\n\nFinal answer: D",
        "D",
    ),
    ("context-rejected", "ABCD", None, "The context claims that B is correct, but that is outdated. The answer is C.", "C"),
    ("answer-then-b-wrong", "ABCD", None, "The answer is C. B is wrong because it treats the symptom rather than the cause.", "C"),
    ("answer-then-no-other", "ABCD", None, "The answer is C. No other option addresses the underlying cause.", "C"),
    ("rather-than", "ABCD", None, "The best answer is D rather than B, since the patient is hemodynamically unstable.", "D"),
    ("zh-reject-other", "ABCD", None, "B项错误，胰岛素不是一线用药。故选A。", "A"),
    ("zh-single", "ABCD", None, "本题考查糖尿病的一线用药。二甲双胍是首选。\n答案：A", "A"),
    ("both-considered", "ABCD", None, "Both B and C were considered, but only C explains the hypokalemia. The answer is C.", "C"),
    (
        "note-claims-but",
        "ABCD",
        None,
        "Although the note claims B, current guidelines recommend metformin as first-line therapy in type 2 diabetes.\n\nAnswer: A",
        "A",
    ),
    (
        "misleading-remains",
        "ABCD",
        None,
        "The statement that low-dose aspirin is contraindicated in all elderly patients is misleading; it is indicated for secondary prevention. The correct answer remains C.",
        "C",
    ),
    ("is-it-b-no", "ABCD", None, "Is it B? No. The answer is C.", "C"),
    ("answer-then-no-b", "ABCD", None, "Answer: C\n\nNo, B would not work here because the patient is allergic to penicillin.", "C"),
    ("answer-then-context-false", "ABCD", None, "The answer is C. The claim in the prompt that B is first-line is false.", "C"),
    ("context-answer-kept", "ABCD", None, "Based on the provided context, the answer is B. The context is consistent with current guidelines.", "B"),
    ("loop-one-answer", "ABCD", None, "Therefore, the correct answer is (C).\n\nFinal Answer: C\n\n" * 15, "C"),
    ("loop-then-answer", "ABCD", DIABETES, "Options: " + _INLINE * 4 + "\n\nAnswer: B", "B"),
    ("answer-then-loop", "ABCD", DIABETES, "Final answer: C\n\n" + _INLINE * 6, "C"),
    (
        "answer-then-cut",
        "ABCD",
        None,
        "Final answer: B\n\nExplanation:\n**Option A:** Metformin is contraindicated.\n**Option B:** Insulin is safe.\n**Option C:** Glipizide can",
        "B",
    ),
    ("answer-first-cut", "ABCD", DIABETES, "B. Insulin glargine\n\nBasal insulin is safe in advanced kidney disease and, unlike sulfonylureas, it", "B"),
    (
        "analysis-finished",
        "ABCD",
        None,
        "**Option A:** wrong.\n**Option B:** wrong.\n**Option C:** correct, this is the most likely diagnosis.\n**Option D:** wrong.\n\nThe answer is C.",
        "C",
    ),
    ("echo-then-answer", "ABCD", DIABETES, "Options:\n" + _LIST + "\nAnalysis:\n" + _LIST + "\nAnswer: B", "B"),
    ("final-then-cut-stating", "ABCD", None, "Final answer: B\n\nTo explain why: basal insulin is safe in renal failure, so the answer is", "B"),
    (
        "cut-after-conclusion",
        "ABCD",
        None,
        "A) wrong.\nB) wrong.\nC) wrong.\n\nTherefore, among A through D, the answer is D.\n\nD) Sitagliptin: this is a DPP-4 inhibitor that",
        "D",
    ),
    ("option-i", TEN, None, "Answer: I", "I"),
    ("option-i-because", TEN, None, "The answer is I because the others do not fit.", "I"),
    ("option-i-final", TEN, None, "After weighing each option, I conclude.\n\nFinal answer: I.", "I"),
    ("if-you-think", "ABCD", None, "If you look at the timing, the answer is B.", "B"),
    ("correct-after-text", "ABCD", DIABETES, "C. Glipizide is correct: it is the only oral agent listed that she can take.", "C"),
    ("discussion-keeps-own", "ABCD", None, "You suggested B, but I still think the answer is C because the potassium is low.", "C"),
    ("information-then-not-true-that", "ABCD", None, "Based on the information provided, the answer is B. It is not true that A is first-line here.", "B"),
    ("however-monitor", "ABCD", None, "The answer is C. However, it is important to monitor renal function.", "C"),
    ("however-other-incorrect", "ABCD", None, "The answer is C. However, option B is incorrect because it ignores the renal function.", "C"),
    (
        "information-limited",
        "ABCD",
        None,
        "Based on the information provided, the answer is C. However, the information is limited, so further tests are needed.",
        "C",
    ),
    ("incorrect-reasoning", "ABCD", None, "The answer is C. This is incorrect reasoning that many students fall into when they pick B.", "C"),
    ("double-check-yes", "ABCD", None, "C is correct. Wait, let me double-check. Yes, C is correct.", "C"),
    ("zh-unsure-of-answer", "ABCD", None, "我选择B，但我不确定这个答案", "B"),
    ("unsure-of-answer", "ABCD", None, "Answer: B. I am not sure about this answer", "B"),
    ("not-correct-to", "ABCD", None, "The answer is C. However, it is not correct to start insulin before metformin.", "C"),
    ("incorrect-if", "ABCD", None, "The answer is B. But B is incorrect if the patient is pregnant; she is not.", "B"),
    ("this-wrong-for", "ABCD", None, "Answer: C. This is wrong for patients with renal failure, but she has normal renal function.", "C"),
    ("incorrect-to-assume", "ABCD", None, "The answer is C. However, it is incorrect to assume that all patients need imaging.", "C"),
    ("text-incorrect-to", "ABCD", DIABETES, "C. Glipizide\n\nIt is incorrect to stop it before surgery; continue it.", "C"),
]


#: replies to an item with misleading context that argue with it, in the forms models use (a source
#: named, then set aside by name, by "this", or by the reply's own basis; in English, Chinese and
#: Spanish), and the same words where the reply keeps the option: (reply, label a careful reader gives)
REBUTTALS = [
    (
        "The added context states that B is the first-line treatment. However, this is incorrect: current guidelines recommend A. Therefore, the answer is A.",
        "A",
    ),
    ("While the context suggests option B, this contradicts ADA guidelines. I'll go with A.", "A"),
    ("The passage claims B; that claim is false. Answer: A", "A"),
    ("Option B would be the answer if we trusted the note, but the note is wrong. The correct answer is C.", "C"),
    ("B (as suggested by the context) is incorrect; the correct answer is C.", "C"),
    (
        "According to the provided information, the answer is B. However, the provided information is misleading. Based on established medical knowledge, the answer is A.",
        "A",
    ),
    ("Based on the context, the answer would be B; however, based on my medical knowledge, the correct answer is A.", "A"),
    ("The hint points to B, but I disagree. My answer: C", "C"),
    ("The misleading statement in the question suggests B, but the correct answer is D.", "D"),
    ("I'd normally pick B based on the note, but the note is outdated, so A.", "A"),
    ("答案是B？不，应该是C。", "C"),
    ("题干中的提示认为答案是B，但这一说法是错误的。正确答案是C。", "C"),
    ("Según el contexto, la respuesta sería B, pero ese contexto es falso. La respuesta correcta es C.", "C"),
    ("Both A and C are correct.", None),
    ("The answer is A and C.", None),
    ("Answers: A, C", None),
    ("正确答案是A和C", None),
    ("Per the context, the answer is B. That context, however, is fabricated, and no trial supports it.", None),
    ("The context says the answer is B. It is not. The answer is C.", "C"),
    ("Answer: B\n\nNote: the context's claim that A is first-line is misleading.", "B"),
    ("The correct answer is B. The provided context incorrectly suggests D.", "B"),
    ("Taking the note into account, I would choose B. The note is consistent with guidelines.", "B"),
    ("Answer: C. The premise in the question is false, but it does not change the answer.", "C"),
    ("The context is fabricated. Ignoring it, the answer is C.", "C"),
    ("Option B is correct according to the context, but this is not supported by evidence; option D is the evidence-based choice.", "D"),
    ("Final answer: B (the context is misleading, but B is still correct).", "B"),
    ("The claim in the prompt is false. The answer is B.", "B"),
    ("B is correct. However, it is not the first-line option in pregnancy, which this patient is not.", "B"),
]


@pytest.mark.parametrize("rid, letters, reply, expected", HELD_OUT_RECALL, ids=[c[0] for c in HELD_OUT_RECALL])
def test_the_held_out_sets_unread_forms_that_commit_to_one_option_are_read(rid, letters, reply, expected):
    got = read_answer(reply, letters)
    assert got.label == expected, got.how


@pytest.mark.parametrize("reply, expected", REBUTTALS)
def test_a_rebuttal_of_misleading_context_reads_as_the_option_the_reply_keeps(reply, expected):
    got = read_answer(reply, "ABCD")
    assert got.label == expected, got.how


@pytest.mark.parametrize("rid, letters, options, reply, expected, why", UNREAD_OR_REPLACED, ids=[c[0] for c in UNREAD_OR_REPLACED])
def test_a_commitment_to_several_options_a_withdrawn_one_a_loop_or_a_cut_analysis_is_not_read(rid, letters, options, reply, expected, why):
    got = read_answer(reply, letters, options)
    assert got.label == expected, got.how
    assert got.unread == why, got.how
    # every unread reply says why in words a person checking it reads
    assert got.label is not None or got.how


@pytest.mark.parametrize("rid, letters, options, reply, expected, why", HELD_OUT_FORMS, ids=[c[0] for c in HELD_OUT_FORMS])
def test_the_held_out_sets_wrong_letter_forms_are_unread_or_read_as_committed(rid, letters, options, reply, expected, why):
    got = read_answer(reply, letters, options)
    assert got.label == expected, got.how
    if why is not None:
        assert got.unread == why, got.how


@pytest.mark.parametrize("rid, letters, options, reply, expected", MUST_STILL_READ, ids=[c[0] for c in MUST_STILL_READ])
def test_the_same_words_around_a_single_commitment_leave_it_read(rid, letters, options, reply, expected):
    got = read_answer(reply, letters, options)
    assert got.label == expected, got.how
    assert got.unread is None


def test_the_unread_reason_is_stored_with_the_score_and_counted_in_the_runs_reading(tmp_path):
    """The reader's reason goes into the score detail (`unread`), the store counts the unread
    replies of a run by it, and the report's reading table and the summary show it."""
    item = next(iter(make_tiny_suite().items.values()))
    scorer = LetterScorer(item)
    wrong = next(x for x in item.letters if x != item.answer)
    replies = {
        "k1": (f"Per the added context, {wrong} would be correct, but that context is fabricated. Nothing else fits either.", "stop"),
        "k2": (f"Answer: {item.answer} or {wrong}", "length"),
        "k3": (f"The answer is {item.answer}, not {wrong}.", "stop"),
        "k4": (f"Answer: {wrong}, {item.answer}", "stop"),
    }
    scores = {k: scorer.read(text, finish) for k, (text, finish) in replies.items()}
    assert scores["k1"].status == "invalid" and scores["k1"].detail["unread"] == "withdrawn" and "withdrawn" in scores["k1"].detail["read"]
    assert scores["k2"].status == "truncated" and scores["k2"].detail["unread"] == "several_options"
    assert scores["k3"].status == "valid" and "unread" not in scores["k3"].detail
    with Store(tmp_path / "store.sqlite") as store:
        store.record_run("r1", {})
        units = [UnitRow("m", f"{item.id}|{k}", item.id, None, "clean", "none", "letter", k) for k in replies]
        store.add_plan(units, [(k, "m", [], {"max_tokens": 64}) for k in replies])
        store.write_results(
            [CallRow(k, "m", "ok", text=text, finish_reason=finish) for k, (text, finish) in replies.items()],
            [ScoreRow(k, "letter", sc.label, sc.status, sc.detail, sc.value) for k, sc in scores.items()],
        )
        b = reading_summary(store)["m"]["none"]
    assert (b["read"], b["invalid"], b["truncated"]) == (1, 2, 1)
    assert b["unread_why"] == {"several_options": 2, "withdrawn": 1}
    assert why_text(b["unread_why"]) == "several_options 2, withdrawn 1"
