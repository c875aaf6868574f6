"""The answer and verdict readers on real replies (tests/data/replies): replies of 159 models
copied from public evaluation outputs and labelled by hand. A reader may leave a reply it cannot
read unread (counted, shown, never a score), but it must never read a wrong letter or verdict.
The measured shares by style are in RESULTS.md (bench/bench_reading.py prints them)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from conftest import TESTS
from medresilience.scoring.letters import read_answer
from medresilience.scoring.verdicts import read_verdict

DATA = TESTS / "data" / "replies"
MCQ_FILES = sorted(DATA.glob("mcq_*.jsonl"))
JUDGE_FILES = sorted(DATA.glob("judge*.jsonl"))
SPLITS = {"dev", "heldout", "validation", *(f"validation{n}" for n in range(2, 13))}


def _records(*paths: Path) -> list[dict]:
    return [json.loads(line) for p in paths for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_corpus_is_real_sourced_and_well_formed():
    mcq, judge = _records(*MCQ_FILES), _records(*JUDGE_FILES)
    assert len(mcq) >= 400 and len(judge) >= 150
    for r in mcq + judge:
        assert r["split"] in SPLITS and r["licence"] and r["reply"] is not None, r["id"]
        assert r.get("constructed") or (r["source"]["repo"] and r["source"]["path"]), r["id"]
    assert len({r["id"] for r in mcq + judge}) == len(mcq) + len(judge)
    for r in mcq:
        assert r["expected"] is None or r["expected"] in r["letters"], r["id"]
    for r in judge:
        assert r["expected"] is None or r["expected"] in r["labels"], r["id"]
    # few written by hand: the point is replies the project did not write
    assert sum(bool(r.get("constructed")) for r in mcq + judge) <= 0.05 * (len(mcq) + len(judge))
    assert len({r["model"] for r in mcq}) >= 40


def _read_mcq(r: dict) -> str | None:
    return read_answer(r["reply"], r["letters"], r.get("option_texts"), r.get("question")).label


#: the sixth validation set (mcq_h.jsonl and mcq_i.jsonl, split validation6): the replies the reader
#: does not read as labelled, each with its reading (None: unread; none is read as another letter).
#: They are held out of the two corpus-wide tests that follow and each is an expected failure of
#: test_a_held_out_miss_is_read_as_labelled, strict, so a reply the reader comes to read
#: as labelled must leave this list. First measured on the unchanged reader (a9cbae2): mcq_i 94 of 189
#: as labelled, 1 wrong (i-0083: "3) ... es incorrecta" read as 3 on an item that asks which option
#: is a criterion), 94 of 161 readable unread ("【回答】b", Python dicts with a "respuesta" key, "la
#: opción número 1", Chinese "...是E选项", replies naming an option by its text); mcq_h 6 wrong
#: (h-0001, h-0003, h-0036, h-0044, h-0070, h-0140), 19 unread. After the precision rules and the
#: fixes those wrong letters prompted (RESULTS: reading by source): no wrong letter; i-0078, "3)
#: <text>. Es incorrecta" on an item asking for the INCORRECT statement, is now unread, since the same
#: words answer the opposite question in i-0083 and the reader is not given the question. After the
#: recall forms it prompted ("【回答】c", a "respuesta" key, "la opción número 2", "...是E选项"):
#: 55 of 306 readable unread, none wrong. After the forms of the second recall round (Chinese
#: sentences claiming one option by its text, a discussion turn's own stance, a label opening the
#: reply with its own text, Spanish "La afirmación INCORRECTA es:\n\n2. ..."): 14 unread, none wrong.
#: What is left needs the question (i-0044, i-0049, i-0076, i-0078, i-0153: an option called
#: incorrect, or not, on an item asking for the exception: the same words answer the opposite
#: question), or names the option only in other words or in no claim form (i-0073, i-0079, i-0136, i-0144; h-0036,
#: h-0037, h-0038, h-0063 on "12 gene pairs" and "1"), or weighs it without a claim (h-0044 "I lean
#: towards crediting more weight on Option (F)"). Given the item's question (read_answer's
#: `question`), the five that needed it are read (i-0044 "因此D选项是不正确的" and i-0049 on items
#: asking for the wrong option, i-0076 and i-0153 restating the question's negated predicate of one
#: option's text, i-0078 "3) ... Es incorrecta" on an item asking for the INCORRECTA): 9 unread, none wrong
_VALIDATION6_UNREAD = ["h-0036", "h-0037", "h-0038", "h-0044", "h-0063", "i-0073", "i-0079", "i-0136", "i-0144"]
VALIDATION6_MISSES: dict[str, str | None] = dict.fromkeys(_VALIDATION6_UNREAD, None)
#: the wrong letters of the first measurement (the unchanged reader, a9cbae2), kept as the record of
#: it: a reasoning model cut off while weighing options read from a mid-thought leaning (h-0001,
#: h-0003); a discussion turn naming the other model's option by its text to reject it (h-0036,
#: h-0044); "CONCLUSION:\nI would argue that the answer is indeed (H)" read as the pronoun I (h-0070);
#: a reply echoing the prompt's misleading "the correct answer is E: Palsy" read as E (h-0140); "3)
#: <text>. es incorrecta" read as 3 (i-0083)
VALIDATION6_FIRST_WRONG = {"h-0001": "A", "h-0003": "A", "h-0036": "F", "h-0044": "D", "h-0070": "I", "h-0140": "E", "i-0083": "3"}

#: the seventh validation set (mcq_j.jsonl, split validation7): the replies the reader did not read as
#: labelled when first measured (the reader as it was at 9e29750, unchanged), each with its reading
#: (None: unread). Held out of the corpus-wide tests like the sixth set's; each is a strict expected
#: failure of test_a_held_out_miss_is_read_as_labelled, so a fix shows. First measured:
#: 155 of 195 as labelled, 1 wrong (j7-0030: "the answer is **IIIA**" (option B) then "Final Answer:
#: (A)", read as A), 39 of 182 readable unread: medgemma's "</reasoning><prediction>b</prediction>"
#: and chat-template leaks in Swedish (22), a JSON "diagnosis" key (12), an option named by its
#: unlettered text in $\boxed{}$ beside other option texts (2), a second turn concluding "**C.
#: Coagulation disorder type DIC** is the most common complication" with no answer line (j7-0050), a
#: Swedish reply cut by the budget after stating its first action (j7-0134), and six answers to the
#: prompt's worked examples (j7-0162). After the rules they prompted (the last answer tag read, text
#: after a chat-template end token cut off, a JSON "diagnosis" key read where it holds one label, an
#: answer naming one option's text at once followed by another option's label unread, a box holding
#: one option's whole text, Swedish "Alternativ D, ..., är korrekt" and "Svar: B"): 5 unread, none
#: wrong (j7-0030 now unread, as labelled)
_VALIDATION7_UNREAD = ["j7-0050", "j7-0121", "j7-0124", "j7-0134", "j7-0162"]
VALIDATION7_MISSES: dict[str, str | None] = dict.fromkeys(_VALIDATION7_UNREAD, None)
#: the wrong letter of the seventh set's first measurement, kept as the record of it
VALIDATION7_FIRST_WRONG = {"j7-0030": "A"}
#: the eighth validation set (mcq_k.jsonl, split validation8): the replies the reader did not read as
#: labelled when first measured (the reader of main at 6a01e87, unchanged), each with its reading (None:
#: unread). Held out of the corpus-wide tests like the sixth and seventh sets' and each a strict expected
#: failure of test_a_held_out_miss_is_read_as_labelled, so a fix shows. Measured once per
#: batch, each batch committed before any reader ran on it: k8-0001..0240 (data e76cd8a) 235 of 240 as
#: labelled, 4 wrong, 1 of 225 readable unread; k8-0241..0270 (data 78f7d98) 18 of 30, 1 wrong, 11 of 30
#: readable unread. Together 253 of 270, 5 wrong letters (of 258 read), 12 of 255 readable unread
#: The reader with validation7's rules (merged after this set was labelled and kept from its authors)
#: reads every one of the 270 exactly as main did: the same 5 wrong letters and 12 unread
#: After the rules it prompted (RESULTS.md): Portuguese answer sentences read only as claims ("a opção c
#: é a correta", "O item correto é o b", 'a alternativa correta é a "a"'; not "Opção b: ..." heading
#: its analysis, nor "Assim como a alternativa c"), and "Answer Choice: A.": the 11 Portuguese unread
#: and k8-0145 read, k8-0243 read as labelled; an answer given first and contradicted by the
#: reasoning after it ("Your Final Answer: A ... This is the D option.") unread: k8-0182, k8-0183,
#: k8-0204; a reply going round (1,246 characters of itself again) stating A and B unread: k8-0126.
#: None is left: 270 of 270 as labelled
VALIDATION8_MISSES: dict[str, str | None] = {}
#: the wrong letters of the eighth set's first measurement, kept as the record of it
VALIDATION8_FIRST_WRONG = {"k8-0126": "A", "k8-0182": "A", "k8-0183": "B", "k8-0204": "B", "k8-0243": "C"}
#: the ninth validation set (mcq_l.jsonl, split validation9; 347 replies from ten repositories, labelled
#: by hand and committed at 15e7c26 before any reader ran on it, gathered by a helper the reader's
#: author never saw): measured once on the reader with validation8's rules (integration of 704f77c):
#: 279 of 347 as labelled, 45 wrong letters of 302 read (14.9%, 95% CI 11.3-19.4%), 23 of 282
#: readable unread (8.2%, 5.5-11.9%). 39 of the wrong letters are one class: MedMCQA replies with
#: options numbered 1-4 that stop after the first reasoning step ("1. The patient is diabetic ...")
#: read as option 1 (alexelawson/medical-llms-bias); the others: "are A." after a comparison, an
#: opening "A" revised, a leaning in a 10-option trace, a JSON "choice" its reasoning contradicts.
#: Unread: HuatuoGPT-o1 and m1 traces naming one of ten options by its text (13), Chinese and Swahili
#: reasoning from gemma-3-4b (7), two user-suggested answers argued in prose.
#: After the rules it prompted (RESULTS.md; tests/spine/scoring/test_reading_ninth_set.py): a number
#: opening a line is an option's label only before its own option's text (and nothing more but a
#: claim of it), so the 39 first steps "1. The patient ..." are unread or read by their concluding
#: claim (l9-0202 "Hence, pancuronium is the drug of choice"); an option set aside by name ("we can
#: exclude option 1") is taken back; a concluding sentence names an option's text only as a claim
#: (not "Therefore, rifampicin will decrease ...", "may increase", a text denied later, a relative
#: clause, or a last sentence turning against it: "However, the patient is Asian."). The other six
#: wrong letters, each by a rule for its class: an option's text joined to another thing ("his
#: anxiety and medication") names several (l9-0154); "E would not be correct" takes E back (l9-0179);
#: a reasoning reply reopening the question after its answer ("Alternatively, ...") and breaking off
#: inside a sentence is cut off (l9-0168); "The options are A. <text>, B. <text>" restates the
#: options (l9-0084); a JSON answer field whose reasoning claims another option last contradicts
#: itself (l9-0327); a review of the options cut off in its first analysis titled by the option's
#: text commits to nothing (l9-0148). No wrong letter is left. Read since (recall): a trace's
#: concluding phrases ("Okay, putting it all together, ...", "After considering all these factors,
#: ..."), a later concluding sentence naming nothing affirming the one before, an article the reply
#: adds to an option's text, an action option named by what it is done with ("carboprost
#: tromethamine" for "Administer carboprost tromethamine"): l9-0151, 0152, 0162, 0163, 0165, 0167,
#: 0175; Swahili "Jibu ni (B)" (l9-0111, 0113, 0136, 0140, 0144, 0147); an option referred to ("look
#: at each answer choice:", "this answer choice (D) does not ...") or a step's heading ("5. Choose the
#: best answer:") stating no answer (l9-0048, 0068, 0150); "(Answer option 2)" (l9-0297). Left unread
#: (7 of 282 readable, 2.5%): options paraphrased rather than named ("the fever is the key reason",
#: "the medial malleolus is the most vulnerable spot", "replacing the catheter seems like a solid
#: plan", "a calm and open discussion with the referring doctor", "3 g fosfomycin"): l9-0158, 0159,
#: 0160, 0171, 0172, 0177, 0185
VALIDATION9_MISSES: dict[str, str | None] = {
    "l9-0158": None,
    "l9-0159": None,
    "l9-0160": None,
    "l9-0171": None,
    "l9-0172": None,
    "l9-0177": None,
    "l9-0185": None,
}
#: the wrong letters of the ninth set's first measurement (45), kept as the record of it
VALIDATION9_FIRST_WRONG = {
    **{rid: "1" for rid in (f"l9-{n:04d}" for n in range(183, 223)) if rid != "l9-0216"},
    **{"l9-0084": "A", "l9-0148": "A", "l9-0154": "J", "l9-0168": "F", "l9-0179": "E", "l9-0327": "C"},
}
#: the tenth validation set (mcq_m.jsonl, split validation10; 305 replies from nine repositories,
#: labelled by hand and committed at 943e934 and 1575d7e before any reader ran on it, gathered by
#: helpers the reader's author never saw): measured once on the reader with validation9's rules
#: (integration, 2026-11-29): 241 of 305 as labelled, 3 wrong letters of 207 read (1.4%, 95% CI
#: 0.5-4.2%), 61 of 268 readable unread (22.8%, 18.1-28.1%). Wrong: a GPT-4 or ChatGPT explanation
#: that sets aside every option in parentheses and names its answer "(option B)" / "(choice D)" in
#: a sentence, read as the first option mentioned (m10-0130, 0152, 0170). Unread: a "FINAL_ANSWER:"
#: field holding an option's text or a yes/no/uncertain answer (33, tallshadow), conclusions naming
#: their option in parentheses with the others set aside (22, roysoumya and hailey0huong), a letter
#: with a brace "d}" (3), "The answer to the question above is Option A." (m10-0009). Read since:
#: a heading answer field holding one option's whole text, its label, or "Yes"/"No" opening it (22,
#: tallshadow); a review of every option by its label keeping one and setting the others aside
#: (m10-0130, 0143, 0145, 0148, 0149, 0152, 0161, 0170, 0200); "d} <D's text>" (m10-0230,
#: 0235, 0240); "The answer to the question above is Option A." (m10-0009). No wrong letter is
#: left. Left unread (29 of 268 readable, 10.8%): heading fields in other words ("Uncertain",
#: "Feasible", "No association", a sentence: 10, tallshadow); reviews keeping two options or
#: naming the answer only in a sentence with "but"/"if"/"may", or by text alone (roysoumya,
#: hailey0huong); "解答：1,2" beside its own answer (m10-0061). Read since (reader3; RESULTS.md;
#: tests/spine/scoring/test_reading_tenth_set_rest.py): a label in single quotes ("The correct
#: answer is 'E'.", "is 'D': Aqueduct of Sylvius") with "Option B (<text>) suggests ..." lines
#: reviewing, not choosing (m10-0133, 0137, 0140, 0146, 0153, 0154, 0155); a heading field on a
#: yes/no/maybe item in its few words ("Uncertain" maybe; "Feasible" repeating the question's
#: predicate yes; "No association" to "is there any association?" no: m10-0243, 0253, 0254, 0261,
#: 0267, 0270, 0274, 0279); a review keeping the option the reply states, naming several options in
#: one ("Options D and E are incorrect": m10-0121, 0134); "as indicated by option (C)" (m10-0186);
#: others set aside in a plural ("(B) and ... (C) are unlikely causes": m10-0119); a Japanese
#: numbered question heading the reply invents ("第1の問題:": m10-0061); a field sentence holding one
#: option's whole text (m10-0276); "(C) <C's whole text>" the only label named (m10-0191). Left
#: unread (7 of 268 readable, 2.6%): options named by their text in a sentence that the reader does
#: not take as a claim (m10-0162, 0165, 0174: "would be to administer a continuous infusion of
#: norepinephrine"; m10-0168 quoting option A's words), a review keeping four options with the
#: answer only in a closing sentence by text (m10-0124), and two hedged sentences answering a
#: yes/no item in their own words, whose labels are arguable (m10-0242 "generally considered to be
#: positive", m10-0252 "Comorbidity often leads to poorer outcomes")
VALIDATION10_MISSES: dict[str, str | None] = {
    "m10-0124": None,
    "m10-0162": None,
    "m10-0165": None,
    "m10-0168": None,
    "m10-0174": None,
    "m10-0242": None,
    "m10-0252": None,
}
#: the wrong letters of the tenth set's first measurement (3), kept as the record of it
VALIDATION10_FIRST_WRONG = {"m10-0130": "A", "m10-0152": "A", "m10-0170": "E"}
#: the eleventh validation set (mcq_n.jsonl, split validation11; 300 replies from ten repositories,
#: labelled by hand and committed (49443e1 .. a2abc13) before any reader ran on it, gathered by
#: helpers the reader's authors never saw): measured once, on main's reader (b817a3a) and again on
#: the reader with the sixth session's rules (merge 40a7205), both giving 298 of 300 as labelled:
#: 1 wrong letter of 296 read (0.3%, 95% CI 0.06-1.9%; m11-0172, a MedGemma reply "D) <the start
#: of option C's text, cut off>" read D) and 1 of 296 readable unread (0.3%, 0.06-1.9%). Read
#: since: a label line whose text is another option's text cut inside a word contradicts itself
#: (m11-0172 unread). Left unread: m11-0214, an analysis committing to E in its first paragraph and
#: cut off mid-sentence while setting the others aside (its label is arguable)
VALIDATION11_MISSES: dict[str, str | None] = {"m11-0214": None}
#: the wrong letter of the eleventh set's first measurement, kept as the record of it
VALIDATION11_FIRST_WRONG = {"m11-0172": "D"}
#: the twelfth validation set (mcq_o.jsonl, split validation12; 74 replies from two repositories,
#: labelled by hand and committed (daff07e) before any reader ran on it, by a helper who neither
#: ran nor read the reader): measured once on main's reader (d4c71b8): 63 of 74 as labelled, 1 wrong
#: letter of 55 read (1.8%, 95% CI 0.3-9.6%), 10 of 64 readable unread (15.6%, 8.7-26.4%). Wrong:
#: m12-0025, a ministral-3 reply that cannot see the item's image and gives a conditional hint for
#: each option ("If it looks like a network of tubes with dots (ribosomes) on it, it is the Rough
#: Endoplasmic Reticulum."), read D, labelled null. Unread although readable: five debate turns of
#: a model council answering in JSON with an "updated_selected_option" field (m12-0043, 0044, 0045,
#: 0062, 0063); two replies cut off (at about 1,000 characters) while reviewing the other options
#: after stating their answer first, read as ambiguous (m12-0009 "**B: Ketotifen eye drops**" then
#: "- **Erythromycin ointment"; m12-0021 naming "Aldolase B" by text, then "A: Fructokinase
#: deficiency" and "C" set aside); three PubMedQA replies answering in prose with no options offered
#: ("**Yes, comorbidity ... appears to be associated ...**", "**No, the radiographic transition zone
#: ... does not reliably correlate ...**", and m12-0036 "is technically feasible in a porcine
#: model", whose label yes is arguable: m12-0033, 0036, 0037)
VALIDATION12_MISSES: dict[str, str | None] = {
    "m12-0009": None,
    "m12-0021": None,
    "m12-0033": None,
    "m12-0036": None,
    "m12-0037": None,
    "m12-0043": None,
    "m12-0044": None,
    "m12-0045": None,
    "m12-0062": None,
    "m12-0063": None,
}
#: Read since: a last sentence that opens on a condition is no answer (m12-0025 unread, as
#: labelled; tests/spine/scoring/test_reading_twelfth_set.py)
#: the wrong letter of the twelfth set's first measurement, kept as the record of it
VALIDATION12_FIRST_WRONG = {"m12-0025": "D"}
HELD_OUT_MISSES = {
    **VALIDATION6_MISSES,
    **VALIDATION7_MISSES,
    **VALIDATION8_MISSES,
    **VALIDATION9_MISSES,
    **VALIDATION10_MISSES,
    **VALIDATION11_MISSES,
    **VALIDATION12_MISSES,
}


@pytest.mark.parametrize("path", MCQ_FILES, ids=lambda p: p.stem)
def test_no_real_reply_is_read_as_a_wrong_letter(path):
    wrong = [
        f"{r['id']}: read {got!r}, a careful reader reads {r['expected']!r} ({r['why'][:120]})"
        for r in _records(path)
        if r["id"] not in HELD_OUT_MISSES and (got := _read_mcq(r)) is not None and got != r["expected"]
    ]
    assert not wrong, "\n".join(wrong)


def test_real_replies_a_careful_reader_can_read_are_read():
    readable = [r for r in _records(*MCQ_FILES) if r["expected"] is not None and r["id"] not in HELD_OUT_MISSES]
    unread = [r for r in readable if _read_mcq(r) is None]
    by_style = Counter(s for r in unread for s in (r["style"] if isinstance(r["style"], list) else r["style"].split(",")))
    # what is left is mostly an option paraphrased rather than named, which -O extract= reads
    # (3.2% of the readable replies after the second validation set; 4.0% before it on the first 893;
    # 3.0% of 1,231 readable with the third; 2.2% of 1,245 with the fifth, 1.0% after its rules)
    assert len(unread) <= 0.01 * len(readable), f"{len(unread)} of {len(readable)} unread; by style {dict(by_style)}: " + ", ".join(r["id"] for r in unread)


#: replies of the third validation set that the reader read wrong (or left unread) when first
#: measured, each kept as the real record it is: a conclusion naming several options ("the
#: immediate next steps are E ... followed by B", "the most likely additional clinical findings
#: would be:\n- (A) ...\n- (B) ...", "the correct answer is:\nA: ...\nAnd\nJ: ...") is no single
#: answer, and an option whose text opens with "Right" ("(I) Right ventricular hypertrophy ...")
#: is not a line marked right
FIRST_MEASURED_MISSES = {"e-0054": None, "e-0085": None, "e-0124": None, "e-0023": "J"}


@pytest.mark.parametrize("rid", sorted(FIRST_MEASURED_MISSES))
def test_the_third_validation_sets_misreads_are_read_as_a_careful_reader_reads_them(rid):
    r = next(r for r in _records(DATA / "mcq_e.jsonl") if r["id"] == rid)
    assert r["expected"] == FIRST_MEASURED_MISSES[rid]
    got = read_answer(r["reply"], r["letters"], r.get("option_texts"), r.get("question"))
    assert got.label == r["expected"], got.how


def test_no_real_judge_reply_is_read_as_a_wrong_verdict_and_few_are_unread():
    rows = _records(*JUDGE_FILES)
    got = {r["id"]: read_verdict(r["reply"], r["labels"], answer=r.get("answer_under_review")) for r in rows}
    wrong = [
        f"{r['id']}: read {got[r['id']].label!r} ({got[r['id']].how}), expected {r['expected']!r}"
        for r in rows
        if got[r["id"]].label is not None and got[r["id"]].label != r["expected"]
    ]
    assert not wrong, "\n".join(wrong)
    unread = [r["id"] for r in rows if r["expected"] is not None and got[r["id"]].label is None]
    assert len(unread) <= 0.01 * sum(r["expected"] is not None for r in rows), unread
    # every label read says how, every unread one why
    assert all(g.how for g in got.values())


def test_an_off_scale_judge_score_is_unscored_never_rounded():
    # the fourth validation set's MT-Bench judges give "Rating: [[8.5]]" / "[[9.5]]" on the 1-10
    # integer scale seven times: no label of the rubric, so no verdict (8 or 9 would be invented)
    rows = [r for r in _records(DATA / "judge.jsonl") if "off_scale" in r["style"]]
    assert len(rows) >= 7 and all(r["expected"] is None for r in rows)
    for r in rows:
        got = read_verdict(r["reply"], r["labels"], answer=r.get("answer_under_review"))
        assert got.label is None and "is not a label" in got.how, (r["id"], got.how)


#: fourth-validation-set judge replies whose own text holds other labels or scores: the answer's
#: ratings ("a rating of 8.8", "self-rating of 4/5", "5, 1 and 3"), per-criterion verdicts
#: ("((B>A))" beside a final "[[B>>A]]"), a verdict-like list in the judge's own code
#: ("[[topRight, handleIn, handleOut]]", "[[0]*(n+1) ...") and the same score twice ("9 out of 10")
OTHER_LABELS_IN_THE_JUDGES_TEXT = ["j-0216", "j-0219", "j-0220", "j-0221", "j-0241", "j-0270", "j-0272", "j-0287", "j-0292", "j-0293"]


@pytest.mark.parametrize("rid", OTHER_LABELS_IN_THE_JUDGES_TEXT)
def test_other_labels_in_a_real_judges_text_leave_its_final_verdict_read(rid):
    r = next(r for r in _records(DATA / "judge.jsonl") if r["id"] == rid)
    got = read_verdict(r["reply"], r["labels"], answer=r.get("answer_under_review"))
    assert r["expected"] is not None and got.label == r["expected"], got.how


@pytest.mark.parametrize(
    "name, split",
    [
        # validation4: Japanese JSON replies, Chinese exam labels and MIRAGE JSON replies; first
        # measured 119 of 120 as labelled, 0 wrong, 1 unread (f-0002)
        ("mcq_f.jsonl", "validation4"),
        # validation5: Llama-2-70B chain of thought that goes on to write questions of its own,
        # gpt-4o naming Swedish options by their text alone, Nova 2 Lite on KorMedMCQA; first
        # measured 118 of 120 as labelled, 1 wrong (g-0009), 1 unread (g-0083)
        ("mcq_g.jsonl", "validation5"),
    ],
)
def test_a_validation_set_is_real_varied_and_read_without_a_wrong_letter(name, split):
    rows = _records(DATA / name)
    assert len(rows) >= 120 and {r["split"] for r in rows} == {split}
    by_repo = Counter(r["source"]["repo"] for r in rows)
    assert len(by_repo) >= 3 and max(by_repo.values()) <= 40
    used_before = {r["source"]["repo"] for p in MCQ_FILES if p.name != name for r in _records(p) if r.get("source")}
    assert not used_before & set(by_repo)
    assert not [r["id"] for r in rows if (got := _read_mcq(r)) is not None and got != r["expected"]]
    assert not [r["id"] for r in rows if r["expected"] is not None and _read_mcq(r) is None]


def test_a_numbered_answer_list_giving_this_items_option_is_a_second_answer():
    # g-0009, Llama-2-70B: "... is (A) Left ventricular ejection fraction of 41%.\n\nPlease select the
    # correct answer for each question.\n\n1. (A) Eplerenone ...\n6. (D) Abnormal left ventricular
    # relaxation": read as A before; two answers for this item, no revision
    r = next(r for r in _records(DATA / "mcq_g.jsonl") if r["id"] == "g-0009")
    got = read_answer(r["reply"], r["letters"], r.get("option_texts"), r.get("question"))
    assert (got.label, r["expected"]) == (None, None), got.how
    options = {"A": "Eplerenone", "B": "Spironolactone", "C": "Furosemide", "D": "Amiloride"}
    assert read_answer("Answers:\n1. (C) Perform gonioscopy\n2. (B) Spironolactone", "ABCD", options).label == "B"
    # a numbered restatement of the options is no answer; the answer after it is read
    listed = "The options are:\n1. (A) Eplerenone\n2. (B) Spironolactone\n3. (C) Furosemide\n4. (D) Amiloride\nAnswer: C"
    assert read_answer(listed, "ABCD", options).label == "C"


def test_the_cases_own_findings_are_not_several_answers():
    # g-0083, Nova 2 Lite: "### ANSWER\nA\n\n**Reasoning:** ... These findings are classic for **liver
    # cirrhosis** (option A), ..." was left unread: "findings are" read as naming several answers
    _assert_read_as_labelled("g-0083", "A")
    assert read_answer("Answer: B. Her symptoms are typical of (B).", "ABCD").label == "B"
    assert read_answer("The most likely findings are (A) and (C).", "ABCD").label is None


def test_a_json_answer_value_that_is_itself_quoted_is_read():
    # f-0002: a model asked for {"answer": "a", ...} wrote {"answer": "\"a\"", ...}
    _assert_read_as_labelled("f-0002", "A")
    assert read_answer('{"answer_letter": "\\"C\\""}', "ABCD").label == "C"
    assert read_answer('{"answer": "\\"\\""}', "ABCD").label is None


#: replies that name an option by its whole text where the dataset's own text lost letters
#: ("Live bihs + Still bih", "aicles ... dru")
NEAR_COPIES = {"d-0109": "C", "d-0112": "C", "d-0125": "A"}


@pytest.mark.parametrize("rid", sorted(NEAR_COPIES))
def test_an_answer_naming_an_options_text_that_lost_letters_is_read_as_that_option(rid):
    _assert_read_as_labelled(rid, NEAR_COPIES[rid])


def _assert_read_as_labelled(rid: str, label: str) -> None:
    """Reply `rid` of the answer files is labelled `label` and read as it."""
    r = next(r for r in _records(*MCQ_FILES) if r["id"] == rid)
    got = read_answer(r["reply"], r["letters"], r.get("option_texts"), r.get("question"))
    assert (got.label, r["expected"]) == (label, label), got.how


def test_lost_letters_never_turn_one_word_into_another_nor_pick_between_two_options():
    options = {"A": "Increased cardiac output", "B": "Beta agonist therapy", "C": "Lateral epicondylitis", "D": "Gifts"}
    assert read_answer("Answer: Increaed cardiac outpt", "ABCD", options).label is None  # the reply lost letters, not the option
    for denied in ("Decreased cardiac output", "Beta antagonist therapy", "Not increased cardiac output"):
        assert read_answer(f"Answer: {denied}", "ABCD", options).label is None, denied
    lost = {"A": "Research papers and other aicles proving efficacy of the dru", "B": "Advertisements", "C": "Free samples", "D": "Gifts"}
    assert read_answer("Answer: Research papers and other articles proving efficacy of the drug", "ABCD", lost).label == "A"
    two = {"A": "Live bihs + Still bih", "B": "Live bihs + Still bihs", "C": "Total bihs", "D": "Abortions"}
    assert read_answer("Answer: Live births + Still births", "ABCD", two).label is None


def test_an_options_text_inside_a_longer_latin_word_is_not_that_option():
    # read as C before: the text was matched anywhere in the phrase, as Korean and Chinese
    # particles glue to it; a Latin letter glued to it makes another word
    options = {"A": "Tendon transfer", "B": "Gout", "C": "Lateral epicondylitis", "D": "Osteoarthritis"}
    assert read_answer("Answer: Bilateral epicondylitis", "ABCD", options).label is None
    assert read_answer("Answer: lateral epicondylitis, because of the pain", "ABCD", options).label == "C"
    assert read_answer("정답은 '피부간경유쓸개관배액술'입니다", "ABCD", {"A": "피부간경유쓸개관배액술", "B": "수술", "C": "관찰", "D": "약물"}).label == "A"
    # the same in a Korean sentence endorsing an option by its text
    assert read_answer("이 환자는 bilateral epicondylitis가 의심됩니다.", "ABCD", options).label is None
    assert read_answer("이 환자는 lateral epicondylitis가 의심됩니다.", "ABCD", options).label == "C"


def test_an_answer_field_chaining_labels_into_an_order_is_no_single_option():
    # gpt-4-32k in Teddy-XiongGZ/MIRAGE (prediction/medmcqa/cot/OpenAI/gpt-4-32k/dev_04f192d7-...json),
    # found by reading all 30,071 MIRAGE replies and comparing with their answer_choice field:
    # the only field the reader read against it, as B
    reply = (
        '{"step_by_step_thinking": "The auditory pathway starts at the cochlear nucleus (B) after the sound has been '
        "transduced into neural signals by the cochlea. From the cochlear nucleus, the signals are sent to the superior "
        "olivary complex (not listed here), then to the inferior colliculus (A). From the inferior colliculus, the signals "
        "are sent to the medial geniculate body (D) in the thalamus. Finally, the signals are sent to the auditory cortex "
        '(C) where they are processed as sound.", "answer_choice": "B>A>D>C"}'
    )
    assert read_answer(reply, "ABCD").label is None
    assert read_answer('{"answer_choice": "2 -> 4 -> 1 -> 3"}', "1234").label is None
    assert read_answer('{"answer_choice": "<B>"}', "ABCD").label == "B"
    assert read_answer('{"answer_choice": "C"}', "ABCD").label == "C"


def test_an_answer_field_listing_labels_with_spaces_names_several_options():
    # Preferred-MedLLM-Qwen-72B on 119F67 ("2つ選べ") in docto-rin/IgakuQA119
    # (answers/demo/119F_pfn-medllm-qwen-72b.json), found by reading all 788 of its and
    # Qwen2.5-72B's replies against their answer field: "a e" was read as A
    reply = '{"answer": "a e", "confidence": 0.79432826, "explanation": "意識は清明であり、血中梅毒トレポネーマ抗体〈tpha〉と非トレポネーマ脂質抗体〈rpr〉はいずれも陽性である。"}'
    assert read_answer(reply, "ABCDE").label is None
    assert read_answer('{"answer": "A C D"}', "ABCDE").label is None
    assert read_answer('{"answer": "e 確信度(0~1): 0.95"}', "ABCDE").label == "E"
    assert read_answer('{"answer": "C 1"}', "ABCDE").label == "C"  # "1" is no label of this item


def test_an_option_named_then_conceded_in_the_same_sentence_is_no_leaning():
    # Qwen2.5-72B's explanation on 119B32 in docto-rin/IgakuQA119 (answers/demo/119B_qwen2_5-72b.json,
    # answer field "b"), read alone as A: it concludes on b's text ("まず行うべきは輸液の減量です"), then
    # sets a aside ("酸素投与（a）も選択肢にはなりますが、...必要性は低いです": a is also an option, but ...)
    options = {"A": "酸素投与", "B": "輸液の減量", "C": "緊急血液透析", "D": "薬物による抗癌治療", "E": "下大静脈フィルター留置術"}
    reply = (
        "患者は食欲不振、下腿の浮腫の増悪、喀痰の増加などの症状を呈しています。これらの症状は、輸液過剰による心不全を示唆します。"
        "そのため、まず行うべきは輸液の減量です。酸素投与（a）も選択肢にはなりますが、現在のspo2が96%であり、酸素投与の必要性は低いです。"
        "他の選択肢（c, d, e）は、現在の症状や患者の療養環境を考慮すると、緊急の介入としては適切ではありません。"
    )
    assert read_answer(reply, "ABCDE", options).label in (None, "B")
    assert read_answer("輸液の減量（b）が最も適切です。", "ABCDE", options).label == "B"
    assert read_answer("Reducing fluids (B) is unlikely to help here; oxygen is needed.", "ABCDE", {"A": "Oxygen", "B": "Reducing fluids"}).label != "B"


def test_one_line_walking_through_each_option_is_no_answer_first():
    # gpt-4-32k's reasoning in Teddy-XiongGZ/MIRAGE (prediction/medmcqa/cot/OpenAI/gpt-4-32k/dev_179b5138-...json,
    # answer_choice "C"), read alone as A, the label opening the reply: found by reading the reasoning of
    # 7,147 MIRAGE replies alone against their answer field (31 of 58 differences were this form)
    walk = (
        "A. PCR is a technique that amplifies DNA, not RNA. B. Sanger's technique is a method of DNA sequencing. "
        "D. Western blot is a method used to detect specific protein molecules from among a mixture of proteins. "
        "C. Next generation sequencing can be used to sequence DNA as well as RNA, so it is based on both DNA and RNA."
    )
    assert read_answer(walk, "ABCD").label is None
    assert read_answer("B. Metformin. It lowers hepatic glucose output.", "ABCD").label == "B"


def test_an_option_set_aside_after_an_apposition_and_a_signed_number_after_a_are_no_answers():
    # gpt-4-32k's reasoning in Teddy-XiongGZ/MIRAGE, read alone against its answer field: "Therefore, option D,
    # which states all of the above, is also incorrect." (field A) and "Therefore, a +1 station implies ..."
    # (field B) were read as D and A
    assert read_answer("... which are options B and C. Therefore, option D, which states all of the above, is also incorrect.", "ABCD").label is None
    assert read_answer("... (option C). Therefore, option D (all of the above) is also not correct.", "ABCD").label is None
    assert (
        read_answer(
            "distal to the ischial spines is +1 to +5 station. Therefore, a +1 station implies that the fetal head is 1 cm below the ischial spine.", "ABCD"
        ).label
        is None
    )
    assert read_answer("Therefore, option D is correct.", "ABCD").label == "D"


def test_the_fifth_validation_set_of_judge_replies_is_real_varied_and_read_as_labelled():
    # validation5 (judge_v5.jsonl): Auto-J critiques and critique comparisons, Japanese grades,
    # WildBench JSON scores, AlpacaEval rankings and HealthBench criteria_met grades; first
    # measured 119 of 133 as labelled, 0 wrong, 14 unread (every ranking with one model first)
    rows = _records(DATA / "judge_v5.jsonl")
    assert len(rows) >= 100 and {r["split"] for r in rows} == {"validation5"} and all(r["id"].startswith("v5-") for r in rows)
    by_repo = Counter(r["source"]["repo"] for r in rows)
    assert len(by_repo) >= 5 and max(by_repo.values()) <= 30
    assert not {r["source"]["repo"] for r in _records(DATA / "judge.jsonl") if r.get("source")} & set(by_repo)
    assert not any(r.get("constructed") for r in rows)
    got = {r["id"]: read_verdict(r["reply"], r["labels"], answer=r.get("answer_under_review")) for r in rows}
    assert not [i for i, r in zip(got, rows, strict=True) if got[i].label != r["expected"]]


def test_a_json_ranking_is_read_as_the_one_candidate_ranked_first_and_a_tie_as_none():
    # AlpacaEval's chain-of-thought annotator (tatsu-lab/alpaca_eval, alpaca_eval_cot_gpt4_turbo_fn)
    # ranks the outputs 'm' and 'M': {"concise_explanation": ..., "ordered_models": [{"model": "M",
    # "rank": 1}, {"model": "m", "rank": 2}]}. All 14 with one model ranked first were unread
    # ("no 'verdict'"); the labels differ only by case, so once read, 'M' was read as 'm'
    rows = [r for r in _records(DATA / "judge_v5.jsonl") if "ranking" in r["style"]]
    assert {r["expected"] for r in rows} == {"m", "M", None}
    for r in rows:
        got = read_verdict(r["reply"], r["labels"], answer=r.get("answer_under_review"))
        assert got.label == r["expected"], (r["id"], got.how)
        if r["expected"] is None:
            assert "tie" in got.how, got.how


#: replies left unread before the fifth round of rules, each now read as its label by a general
#: rule (RESULTS.md): a dataset's typo in the option ("Reverse c shoulder replacement",
#: "mucogingigival", "3 lPV ... I measles"); boxed intermediate numbers naming no option; an answer
#: the reply sets aside as not among the options; "if only one answer is required, the best choice
#: would be:"; a line ending in a colon, then a last line with a label and its own text; a label
#: with its own whole text opening a line or glued after a sentence; options or a run of answers
#: the reply goes on to write for other questions; a reply cut off inside an option's text; an
#: option's text with an added article before its label; Korean verb endings and "관련이 깊다";
#: an opening number giving the option's place on a lettered item
READ_BY_THE_FIFTH_ROUND = {
    "d-0111": "C",
    "d-0113": "A",
    "d-0126": "B",
    "a-0310": "C",
    "d-0161": "C",
    "e-0131": "B",
    "e-0008": "J",
    "b-0044": "D",
    "b-0050": "D",
    "c-0217": "A",
    "a-0070": "C",
    "a-0176": "C",
    "e-0047": "D",
    "c-0109": "3",
    "c-0114": "2",
    "b-0292": "C",
}


@pytest.mark.parametrize("rid", sorted(READ_BY_THE_FIFTH_ROUND))
def test_replies_the_fifth_round_of_rules_reads_are_read_as_labelled(rid):
    _assert_read_as_labelled(rid, READ_BY_THE_FIFTH_ROUND[rid])


def test_a_datasets_typos_never_turn_a_number_or_a_capital_letter_into_another_option():
    doses = {"A": "100 mg of aspirin daily", "B": "325 mg of aspirin daily", "C": "No aspirin", "D": "Clopidogrel alone"}
    assert read_answer("Answer: 10 mg of aspirin daily", "ABCD", doses).label is None
    hepatitis = {"A": "Hepatitis B virus infection", "B": "Alcohol use", "C": "Aflatoxin exposure", "D": "Obesity"}
    assert read_answer("Answer: Hepatitis virus infection", "ABCD", hepatitis).label is None
    assert read_answer("Answer: Increaed cardiac outpt", "ABCD", {"A": "Increased cardiac output", "B": "Bradycardia"}).label is None
    assert read_answer("Answer: Type 1 diabetes mellitus", "ABCD", {"A": "Type I diabetes mellitus", "B": "Type II diabetes mellitus"}).label == "A"


def test_boxed_numbers_are_computed_values_only_where_they_name_no_known_option():
    options = {"A": "0.58", "B": "0.79", "C": "0.32", "D": "0.86"}
    # a boxed number that is an option's value is still a statement (here against the answer after it)
    assert read_answer("So the value is \\boxed{0.79}. So the answer is (C).", "ABCD", options).label is None
    # without the option texts a boxed number may be an option's value: the reply stays unread
    assert read_answer("Answer: B. Recomputing, \\boxed{0.58}", "ABCD").label is None
    assert (
        read_answer("Frequencies \\boxed{0.58} and \\boxed{0.79}. So the answer is (C).", "ABCD", {"A": "x y", "B": "y z", "C": "z w", "D": "w x"}).label == "C"
    )


def test_answers_set_aside_or_given_under_a_condition_on_the_answer_stay_apart():
    assert read_answer("Answer: C. The correct answer is (A).", "ABCD").label is None
    assert read_answer("If the patient were pregnant, the best choice would be B.", "ABCD").label is None
    assert read_answer("If only one answer is allowed, the best choice would be B.", "ABCD").label == "B"


def test_a_label_with_its_own_text_is_an_answer_only_when_it_is_the_only_one_so_given():
    options = {"A": "Ethanol", "B": "Naltrexone", "C": "Naloxone", "D": "Fomepizole"}
    assert read_answer("Options:\na: Ethanol\nb: Naltrexone", "ABCD", options).label is None
    assert read_answer("Consider:\na: Ethanol because of its availability", "ABCD", options).label is None
    assert read_answer("He needs an antidote.c: naloxone", "ABCD", options).label == "C"


def test_the_replies_own_questions_and_answer_runs_are_not_this_items_answers():
    options = {"A": "Asymmetric focal cortical atrophy", "B": "Midbrain atrophy", "C": "Frontal atrophy", "D": "Enlarged ventricles"}
    restated = "Answer: C\n\nThe options were:\nA. Asymmetric focal cortical atrophy\nB. Midbrain atrophy\nC. Frontal atrophy"
    assert read_answer(restated, "ABCD", options).label == "C"
    assert read_answer("The answer is (C).\nThe answer is (C).\nThe answer is (C).", "ABCD").label == "C"
    assert read_answer("Answer: B\n\nThe answer is (C).\nThe answer is (G).\nThe answer is (F).", "ABCDEFG").label == "B"


def test_a_cut_off_option_text_is_read_only_when_one_option_begins_with_it_and_nothing_follows():
    options = {"A": "Social stressors", "B": "Posterior urethral valves", "C": "Posterior urethral stricture", "D": "Constipation"}
    assert read_answer("the most likely predisposing factor is posterior ureth", "ABCD", options).label is None
    one = {"A": "Social stressors", "B": "Posterior urethral valves", "C": "Urethral stricture", "D": "Constipation"}
    assert read_answer("the most likely predisposing factor is posterior ureth", "ABCD", one).label == "B"
    assert read_answer("the most likely predisposing factor is posterior ureth.", "ABCD", one).label is None


def test_korean_endings_and_denials_are_read_as_they_are_meant():
    options = {"1": "혈압을 측정한다", "2": "수액을 투여한다", "3": "안정을 취하게 한다"}
    assert read_answer("수액을 투여하는 것이 도움이 될 수 있습니다.", "123", options).label == "2"
    assert read_answer("수액을 투여하는 것은 도움이 될 가능성이 낮습니다.", "123", options).label is None


def test_an_opening_number_gives_an_options_place_only_outside_a_numbered_list():
    options = {"A": "Breast cancer", "B": "Prostate cancer", "C": "Cervical cancer", "D": "Liver cancer"}
    assert read_answer("3. Cervical cancer is the most common cancer in these women.", "ABCD", options).label == "C"
    listed = "1. Breast cancer is common worldwide.\n2. Prostate cancer affects men.\n3. Cervical cancer is the most common here."
    assert read_answer(listed, "ABCD", options).label is None
    assert read_answer("3. Cervical cancer is not the most common here.", "ABCD", options).label is None


def test_the_last_option_of_an_inline_option_list_is_no_answer():
    # gpt-4o few-shot on MMLU in xk-huang/medagents-benchmark (output/mmlu/gpt-4o-mmlu-test_hard-few_shot.json,
    # commit 56ca11eb): read as A before the label-with-its-own-text rule, then left ambiguous by it
    # ("(D) increase in respiratory rate." ends the echoed list), found by comparing the readers on
    # 25,486 unlabelled MedAgentsBench replies
    options = {
        "A": "constriction of the laryngeal entrance.",
        "B": "upward movement of the epiglottis.",
        "C": "downward movement of the larynx.",
        "D": "increase in respiratory rate.",
    }
    reply = (
        "Options:\n(A) constriction of the laryngeal entrance. (B) upward movement of the epiglottis. (C) downward movement of "
        "the larynx. (D) increase in respiratory rate.\n\nAnswer: constriction of the laryngeal entrance."
    )
    assert read_answer(reply, "ABCD", options).label == "A"


@pytest.mark.parametrize(
    "name, prefix, described",
    [
        # R1-Distill-Llama-8B under sycophancy, urgency and leaked-answer hints, two models arguing over
        # MMLU-Pro health and biology answers, DeepSeek-R1 and OLMo-2 on gender-swapped DiagnosisArena
        # cases, gemma-3-4b deferring to a wrong suggestion, five models under BiasMedQA's misleading
        # sentences; first measured 135 of 160 as labelled, 6 wrong, 19 unread of 141 readable
        ("mcq_h.jsonl", "h-", "replies-a"),
        # Chinese medical models on MedQA-Mainland and TCM items, ChatGPT on the Spanish MIR 2023 (prose
        # and Python dicts), Ollama models on Spanish FSE items, twelve models on the 120th Japanese exam;
        # first measured 94 of 189 as labelled, 1 wrong, 94 unread of 161 readable
        ("mcq_i.jsonl", "i-", "replies-b"),
    ],
)
def test_the_sixth_validation_set_is_real_varied_and_misread_only_where_listed(name, prefix, described):
    rows = _records(DATA / name)
    assert len(rows) >= 150 and {r["split"] for r in rows} == {"validation6"} and all(r["id"].startswith(prefix) for r in rows)
    by_repo = Counter(r["source"]["repo"] for r in rows)
    assert len(by_repo) >= 5 and max(by_repo.values()) <= 40
    used_before = {r["source"]["repo"] for p in MCQ_FILES if p.name not in ("mcq_h.jsonl", "mcq_i.jsonl") for r in _records(p) if r.get("source")}
    assert not used_before & set(by_repo)
    assert not any(r.get("constructed") for r in rows)
    misses = {r["id"]: got for r in rows if (got := _read_mcq(r)) != r["expected"]}
    assert misses == {rid: got for rid, got in VALIDATION6_MISSES.items() if rid.startswith(prefix)}


@pytest.mark.parametrize("rid", sorted(VALIDATION6_FIRST_WRONG))
def test_a_first_measured_wrong_letter_of_the_sixth_set_is_now_read_as_labelled_or_unread(rid):
    r = next(r for r in _records(DATA / "mcq_h.jsonl", DATA / "mcq_i.jsonl") if r["id"] == rid)
    got = read_answer(r["reply"], r["letters"], r.get("option_texts"), r.get("question"))
    assert got.label in (None, r["expected"]) and got.label != VALIDATION6_FIRST_WRONG[rid], got.how


def test_the_seventh_validation_set_is_real_varied_and_misread_only_where_listed():
    # gemma-3 and medgemma under budget forcing (two turns, some revising), gemma-3-270m looping,
    # medgemma-1.5 naming unlettered image classes by text, qwen3:8b on perturbed items, medgemma in
    # Swedish with XML tags and chat-template leaks, DeepSeek-R1 and Llama-3.3 on MMLU-Pro health,
    # gpt-4.1-mini and gpt-5-nano JSON; labelled by hand before any reader ran on it
    rows = _records(DATA / "mcq_j.jsonl")
    assert len(rows) >= 150 and {r["split"] for r in rows} == {"validation7"} and all(r["id"].startswith("j7-") for r in rows)
    by_repo = Counter(r["source"]["repo"] for r in rows)
    assert len(by_repo) >= 6 and max(by_repo.values()) <= 0.45 * len(rows)
    used_before = {r["source"]["repo"] for p in MCQ_FILES if p.name != "mcq_j.jsonl" for r in _records(p) if r.get("source")}
    assert not used_before & set(by_repo)
    assert not any(r.get("constructed") for r in rows)
    misses = {r["id"]: got for r in rows if (got := _read_mcq(r)) != r["expected"]}
    assert misses == VALIDATION7_MISSES


@pytest.mark.parametrize("rid", sorted(VALIDATION7_FIRST_WRONG))
def test_a_first_measured_wrong_letter_of_the_seventh_set_is_now_read_as_labelled_or_unread(rid):
    r = next(r for r in _records(DATA / "mcq_j.jsonl") if r["id"] == rid)
    got = read_answer(r["reply"], r["letters"], r.get("option_texts"), r.get("question"))
    assert got.label in (None, r["expected"]) and got.label != VALIDATION7_FIRST_WRONG[rid], got.how


def test_the_eighth_validation_set_is_real_varied_and_misread_only_where_listed():
    # 270 replies from nine repositories, at most 40 from one, sampled at random (seeded) and labelled
    # by hand before any reader ran on them
    rows = _records(DATA / "mcq_k.jsonl")
    assert len(rows) >= 200 and {r["split"] for r in rows} == {"validation8"} and all(r["id"].startswith("k8-") for r in rows)
    by_repo = Counter(r["source"]["repo"] for r in rows)
    assert len(by_repo) >= 8 and max(by_repo.values()) <= 40
    used_before = {r["source"]["repo"] for p in MCQ_FILES if p.name != "mcq_k.jsonl" for r in _records(p) if r.get("source")}
    assert not used_before & set(by_repo)
    assert not any(r.get("constructed") for r in rows)
    assert all(r["source"]["commit"] and r["licence"] and r["model"] for r in rows)
    misses = {r["id"]: got for r in rows if (got := _read_mcq(r)) != r["expected"]}
    assert misses == VALIDATION8_MISSES


@pytest.mark.parametrize("rid", sorted(VALIDATION8_FIRST_WRONG))
def test_a_first_measured_wrong_letter_of_the_eighth_set_is_now_read_as_labelled_or_unread(rid):
    r = next(r for r in _records(DATA / "mcq_k.jsonl") if r["id"] == rid)
    got = read_answer(r["reply"], r["letters"], r.get("option_texts"), r.get("question"))
    assert got.label in (None, r["expected"]) and got.label != VALIDATION8_FIRST_WRONG[rid], got.how


def test_the_ninth_validation_set_is_real_varied_and_misread_only_where_listed():
    # 347 replies from ten repositories, at most 40 from one, sampled at random (seeded) and labelled
    # by hand before any reader ran on them
    rows = _records(DATA / "mcq_l.jsonl")
    assert len(rows) >= 300 and {r["split"] for r in rows} == {"validation9"} and all(r["id"].startswith("l9-") for r in rows)
    by_repo = Counter(r["source"]["repo"] for r in rows)
    assert len(by_repo) >= 10 and max(by_repo.values()) <= 40
    used_before = {r["source"]["repo"] for p in MCQ_FILES if p.name != "mcq_l.jsonl" for r in _records(p) if r.get("source")}
    assert not used_before & set(by_repo)
    assert not any(r.get("constructed") for r in rows)
    misses = {r["id"]: got for r in rows if (got := _read_mcq(r)) != r["expected"]}
    assert misses == VALIDATION9_MISSES


def test_the_tenth_validation_set_is_real_varied_and_misread_only_where_listed():
    # 305 replies from nine repositories, at most 40 from one, sampled at random (seeded) and
    # labelled by hand before any reader ran on them
    rows = _records(DATA / "mcq_m.jsonl")
    assert len(rows) >= 300 and {r["split"] for r in rows} == {"validation10"} and all(r["id"].startswith("m10-") for r in rows)
    by_repo = Counter(r["source"]["repo"] for r in rows)
    assert len(by_repo) >= 9 and max(by_repo.values()) <= 40
    used_before = {r["source"]["repo"] for p in MCQ_FILES if p.name != "mcq_m.jsonl" for r in _records(p) if r.get("source")}
    assert not used_before & set(by_repo)
    assert not any(r.get("constructed") for r in rows)
    misses = {r["id"]: got for r in rows if (got := _read_mcq(r)) != r["expected"]}
    assert misses == VALIDATION10_MISSES


def test_the_eleventh_validation_set_is_real_varied_and_misread_only_where_listed():
    # 300 replies from ten repositories, at most 40 from one, sampled at random (seeded) and
    # labelled by hand before any reader ran on them
    rows = _records(DATA / "mcq_n.jsonl")
    assert len(rows) >= 300 and {r["split"] for r in rows} == {"validation11"} and all(r["id"].startswith("m11-") for r in rows)
    by_repo = Counter(r["source"]["repo"] for r in rows)
    assert len(by_repo) >= 10 and max(by_repo.values()) <= 40
    used_before = {r["source"]["repo"] for p in MCQ_FILES if p.name != "mcq_n.jsonl" for r in _records(p) if r.get("source")}
    assert not used_before & set(by_repo)
    assert not any(r.get("constructed") for r in rows)
    misses = {r["id"]: got for r in rows if (got := _read_mcq(r)) != r["expected"]}
    assert misses == VALIDATION11_MISSES


def test_the_twelfth_validation_set_is_real_varied_and_misread_only_where_listed():
    # 74 replies from two repositories, at most 40 from one, sampled at random (seeded) and
    # labelled by hand before any reader ran on them (fewer than the 150 asked for: the search
    # found no more repositories with usable replies)
    rows = _records(DATA / "mcq_o.jsonl")
    assert len(rows) >= 74 and {r["split"] for r in rows} == {"validation12"} and all(r["id"].startswith("m12-") for r in rows)
    by_repo = Counter(r["source"]["repo"] for r in rows)
    assert len(by_repo) >= 2 and max(by_repo.values()) <= 40
    used_before = {r["source"]["repo"] for p in MCQ_FILES if p.name != "mcq_o.jsonl" for r in _records(p) if r.get("source")}
    assert not used_before & set(by_repo)
    assert not any(r.get("constructed") for r in rows)
    misses = {r["id"]: got for r in rows if (got := _read_mcq(r)) != r["expected"]}
    assert misses == VALIDATION12_MISSES


@pytest.mark.parametrize("rid", sorted(VALIDATION11_FIRST_WRONG))
def test_a_first_measured_wrong_letter_of_the_eleventh_set_is_now_read_as_labelled_or_unread(rid):
    r = next(r for r in _records(DATA / "mcq_n.jsonl") if r["id"] == rid)
    got = read_answer(r["reply"], r["letters"], r.get("option_texts"), r.get("question"))
    assert got.label in (None, r["expected"]) and got.label != VALIDATION11_FIRST_WRONG[rid], got.how


@pytest.mark.parametrize("rid", sorted(VALIDATION12_FIRST_WRONG))
def test_a_first_measured_wrong_letter_of_the_twelfth_set_is_now_read_as_labelled_or_unread(rid):
    r = next(r for r in _records(DATA / "mcq_o.jsonl") if r["id"] == rid)
    got = read_answer(r["reply"], r["letters"], r.get("option_texts"), r.get("question"))
    assert got.label in (None, r["expected"]) and got.label != VALIDATION12_FIRST_WRONG[rid], got.how


@pytest.mark.parametrize("rid", sorted(VALIDATION9_FIRST_WRONG))
def test_a_first_measured_wrong_letter_of_the_ninth_set_is_now_read_as_labelled_or_unread(rid):
    r = next(r for r in _records(DATA / "mcq_l.jsonl") if r["id"] == rid)
    got = read_answer(r["reply"], r["letters"], r.get("option_texts"), r.get("question"))
    assert got.label in (None, r["expected"]) and got.label != VALIDATION9_FIRST_WRONG[rid], got.how


@pytest.mark.parametrize("rid", sorted(VALIDATION10_FIRST_WRONG))
def test_a_first_measured_wrong_letter_of_the_tenth_set_is_now_read_as_labelled_or_unread(rid):
    r = next(r for r in _records(DATA / "mcq_m.jsonl") if r["id"] == rid)
    got = read_answer(r["reply"], r["letters"], r.get("option_texts"), r.get("question"))
    assert got.label in (None, r["expected"]) and got.label != VALIDATION10_FIRST_WRONG[rid], got.how


#: each held-out set's files and the replies it misreads (validation6 to 12 above)
HELD_OUT_SETS = {
    "validation6": ((DATA / "mcq_h.jsonl", DATA / "mcq_i.jsonl"), VALIDATION6_MISSES),
    "validation7": ((DATA / "mcq_j.jsonl",), VALIDATION7_MISSES),
    "validation8": ((DATA / "mcq_k.jsonl",), VALIDATION8_MISSES),
    "validation9": ((DATA / "mcq_l.jsonl",), VALIDATION9_MISSES),
    "validation10": ((DATA / "mcq_m.jsonl",), VALIDATION10_MISSES),
    "validation11": ((DATA / "mcq_n.jsonl",), VALIDATION11_MISSES),
    "validation12": ((DATA / "mcq_o.jsonl",), VALIDATION12_MISSES),
}


@pytest.mark.parametrize(
    ("files", "rid"),
    [
        pytest.param(files, rid, id=f"{split}-{rid}", marks=pytest.mark.xfail(strict=True, reason=f"read {got!r} (None: unread)"))
        for split, (files, misses) in HELD_OUT_SETS.items()
        for rid, got in misses.items()
    ],
)
def test_a_held_out_miss_is_read_as_labelled(files, rid):
    r = next(r for r in _records(*files) if r["id"] == rid)
    got = read_answer(r["reply"], r["letters"], r.get("option_texts"), r.get("question"))
    assert got.label == r["expected"], f"{rid}: read {got.label!r} ({got.how}); labelled {r['expected']!r}: {r['why']}"
