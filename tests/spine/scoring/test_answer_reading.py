"""Answer reading against a table of realistic replies (tests/data/answer_reading.jsonl): each row
is a reply, the option labels it was asked with and the label a careful reader assigns (null when
the reply is ambiguous or has no answer). Every row must read as expected.

Precision first: the answer reader returns a letter only when the reply's final commitment names
exactly one option and is not withdrawn. A concluding statement, field or list naming several
options, an option named and then rejected or replaced, text that repeats the option list, and a
per-option analysis cut off before any commitment are each left unread with their reason (the
`unread` code of the Reading, stored with the score), or read as the replacement. Those replies are
written in the manner of real models (the kinds of wrong letter the reader gave on replies from
repositories it had never seen: issue 41), with the label a careful reader gives; a second table
holds replies where the same words appear and the rule must not fire ("B is tempting but wrong ...
The answer is C" reads C).

Recall: the forms the answer reader reads since the sixth validation set's second recall round,
each with the neighbours that must stay unread (or read as the reply's own final stance): a Chinese
sentence claiming one option by its whole text, a reply opening with a label and its own option's
text, a reply cut off inside an option's word, a discussion turn's own stance (and the addressee's
answer read only where the reply agrees with it now), Spanish statements naming an option on the
next line; written in the manner of the real ones that prompted each form
(tests/data/replies/mcq_h.jsonl and mcq_i.jsonl: TCMBench, PULSE-EVAL, collab-ai, BiasMedQA, MIR,
FSE), a careful reader's label with each."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest

from conftest import TESTS, make_tiny_suite
from medresilience.run.reading import reading_summary, why_text
from medresilience.scoring import choice_from_logprobs, extract_letter
from medresilience.scoring.letters import read_answer
from medresilience.scoring.mcq import LetterScorer
from medresilience.store import CallRow, ScoreRow, Store, UnitRow

TABLE = TESTS / "data" / "answer_reading.jsonl"


def _rows() -> list[dict]:
    return [json.loads(line) for line in TABLE.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_table_is_well_formed():
    rows = _rows()
    assert len(rows) >= 80
    assert len({r["id"] for r in rows}) == len(rows), "ids must be unique"
    for r in rows:
        assert set(r) == {"id", "letters", "reply", "expected", "why"}, r["id"]
        assert r["expected"] is None or r["expected"] in r["letters"], r["id"]
    # every category is covered, with valid and invalid rows among them
    categories = Counter(r["id"].split("-")[0] for r in rows)
    assert {"terse", "ans", "json", "md", "tex", "rsn", "rev", "hdg", "ref", "txt", "low", "ten", "num", "ctx", "art"} <= set(categories)
    assert any(r["expected"] is None for r in rows) and any(r["expected"] for r in rows)


def test_every_reply_reads_as_a_careful_reader_reads_it():
    failures = []
    for r in _rows():
        got = extract_letter(r["reply"], r["letters"])
        if got != r["expected"]:
            failures.append(f"{r['id']}: expected {r['expected']!r}, got {got!r} ({r['why']})\n    reply: {r['reply']!r}")
    if failures:
        print("\n".join(failures))
    assert not failures, f"{len(failures)} misread replies:\n" + "\n".join(failures)


def test_logprob_reads_numbered_labels():
    tops = [{"3": -0.2, " 1": -1.2, "(2": -2.5, "Answer": -0.1, "10": -0.3, "6": -0.05}]
    label, dist = choice_from_logprobs(tops, "12345")
    assert label == "3"
    assert set(dist) == {"1", "2", "3"}
    assert math.isclose(sum(dist.values()), 1.0)
    for digit in "123456789":
        assert choice_from_logprobs([{digit: -0.5, "The": -0.1}], "123456789")[0] == digit
    assert choice_from_logprobs([{"A": -0.1}], "12345") == (None, {})


def test_the_letter_scorer_reads_with_its_items_question():
    # the runner's scorer passes the item's question to the reader: an option called wrong answers
    # an item asking for the wrong option, and only such an item
    from medresilience.records import Item
    from medresilience.scoring.mcq import LetterScorer

    options = {"A": "救死扶伤", "B": "仁爱救人", "C": "清廉正直", "D": "认真负责", "E": "不畏权贵"}
    reply = "A、B、C、E都是古代医德思想。因此D选项是不正确的。"
    wrong = Item(id="q1", source="test", question="下列各项，不属中国古代医德思想内容的是（  ）。", options=options, answer="D")
    right = Item(id="q2", source="test", question="下列各项，属于中国古代医德思想内容的是（  ）。", options=options, answer="A")
    got = LetterScorer(wrong).read(reply, "stop")
    assert (got.label, got.status, got.value) == ("D", "valid", 1.0)
    got = LetterScorer(right).read(reply, "stop")
    assert (got.label, got.status) == (None, "invalid") and got.detail["unread"] == "no_answer"


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


@pytest.mark.parametrize("rid, letters, options, reply, expected", CASES, ids=[c[0] for c in CASES])
def test_a_recall_form_is_read_and_its_neighbours_stay_unread(rid, letters, options, reply, expected):
    got = read_answer(reply, letters, options)
    assert got.label == expected, f"{rid}: read {got.label!r} ({got.how})"
    # an unread reply says why
    assert got.label is not None or got.unread


@pytest.mark.parametrize("rid, letters, options, question, reply, expected", CASES_7, ids=[c[0] for c in CASES_7])
def test_a_seventh_round_form_is_read_and_its_neighbours_stay_unread(rid, letters, options, question, reply, expected):
    got = read_answer(reply, letters, options, question)
    assert got.label == expected, f"{rid}: read {got.label!r} ({got.how})"
    assert got.label is not None or got.unread


def test_a_caller_without_the_question_reads_as_before():
    # the question is optional: without it, an option called wrong on an except-item stays unread
    assert read_answer("因此D选项是不正确的。", "ABCDE", ETHICS).label is None
    assert read_answer("因此D选项是不正确的。", "ABCDE", ETHICS, ETHICS_Q).label == "D"
