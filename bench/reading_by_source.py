"""The answer reader on the real replies of tests/data/replies, by the repository each reply came
from: how far a rule made for some replies holds on replies from repositories it was not made for.

For each repository and split: replies, read right, read wrong (a letter other than a careful
reader's), unread although a careful reader can read it (and its share of the readable ones), and
the reasons the unread replies carry. For each precision rule (RULES: what it is, which
repositories' replies motivated it): the replies whose reading the rule changes, on the
repositories that did not motivate it (the leave-one-repository-out view: a rule must make no
wrong letter where it was not tuned). With --base REV, the same tables for the reader as it is at
git revision REV (checked out into a temporary directory), and a before/after table per repository.

    .venv/bin/python bench/reading_by_source.py                 # Markdown on stdout
    .venv/bin/python bench/reading_by_source.py --base a9cbae2  # also before/after per repository
    .venv/bin/python bench/reading_by_source.py --dump          # readings as JSON (used for --base)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "replies"
SPLITS = (
    "dev",
    "heldout",
    "validation",
    "validation2",
    "validation3",
    "validation4",
    "validation5",
    "validation6",
    "validation7",
    "validation8",
    "validation9",
    "validation10",
    "validation11",
    "validation12",
)
#: the replies of issue 41 that motivated the precision rules came from six repositories the corpus
#: never drew on (not stored here); a rule motivated by a corpus repository names it
ISSUE_41 = "issue 41's six unseen repositories (not in the corpus)"

#: each precision rule: its name, what it does, the repositories whose replies motivated it, and how
#: to switch it off for the ablation: (module, attribute, what replaces it given the original)
_NEVER = re.compile(r"(?!)")
_NO_HIT: Callable = lambda *a, **k: None  # noqa: E731 - a rule that never fires


def _edit(old: re.Pattern[str], fragment: str, new: str) -> re.Pattern[str]:
    """A pattern without one fragment of its source (the rule switched off)."""
    assert fragment in old.pattern, fragment
    return re.compile(old.pattern.replace(fragment, new), old.flags)


def _cues_edit(fragment: str, new: str | None) -> Callable:
    """The reader's cue table with the cues holding `fragment` edited (or never matching: None)."""
    return lambda old: tuple(((_NEVER if new is None else _edit(p, fragment, new)) if fragment in p.pattern else p, tier, bare) for p, tier, bare in old)


RULES: list[dict] = [
    {
        "rule": "several_options_zh",
        "what": "two labels joined in Chinese ('A或B', 'A、C') name several options",
        "motivated_by": [ISSUE_41],
        "off": [("letters", "_ALTERNATIVE", lambda old: re.compile(old.pattern.replace("|或者?|还是|和|与|及|、", ""), old.flags))],
    },
    {
        "rule": "withdrawn",
        "what": "an option taken back, or stated on a source then rejected, is no commitment (the cues for its replacement stay on)",
        "motivated_by": [ISSUE_41],
        "off": [("withdrawals", "_rejects_option", lambda old: _NO_HIT), ("withdrawals", "_SOURCE_REJECTED", lambda old: _NEVER)],
    },
    {
        "rule": "loops",
        "what": "text repeating a run of labels three times with the same text commits to nothing",
        "motivated_by": [ISSUE_41],
        "off": [("letters", "loop_span", lambda old: _NO_HIT)],
    },
    {
        "rule": "cut_off",
        "what": "a per-option analysis cut off mid-sentence under an option's heading commits to nothing, and a leaning inside it only weighs",
        "motivated_by": [ISSUE_41, "anton-npv/CoTFaithChecker"],
        "off": [("letters", "cut_off_analysis", lambda old: _NO_HIT)],
    },
    {
        "rule": "cut_while_stating",
        "what": "a reply cut off while stating its answer keeps only a final answer",
        "motivated_by": ["anton-npv/CoTFaithChecker"],
        "off": [("letters", "stops_stating_answer", lambda old: lambda *a: False)],
    },
    {
        "rule": "pronoun_i",
        "what": "'I' before a verb ('I would argue') is the pronoun, not option I",
        "motivated_by": ["0n4li/collab-ai"],
        "off": [("letters", "_I_VERBS", lambda old: frozenset())],
    },
    {
        "rule": "addressee",
        "what": "what the addressee holds ('You were previously confident that the correct answer is E', 'you concluded') is not the reply's",
        "motivated_by": ["carlwharris/cog-bias-med-LLMs", "0n4li/collab-ai"],
        "off": [("letters", "_ADDRESSEE", lambda old: _NEVER)],
    },
    {
        "rule": "disagreed_text",
        "what": "an option named by its text as what the reply disagrees with or dismisses is not concluded on",
        "motivated_by": ["0n4li/collab-ai"],
        "off": [
            (mod, "DENIED", lambda old: re.compile(old.pattern.replace(r"\b(?:disagree\w*|dismiss\w*|reject\w*|refut\w*)\b|", ""), old.flags))
            for mod in ("option_texts", "letters")
        ],
    },
    {
        "rule": "called_wrong",
        "what": "an option given and at once called incorrect ('3) <text>. es incorrecta') is withdrawn",
        "motivated_by": ["themrcesi/mir2023"],
        "off": [("withdrawals", "_CALLED_WRONG", lambda old: _NEVER)],
    },
    {
        "rule": "bracket_heading",
        "what": "an answer heading in brackets ('【回答】c', '【答案】B')",
        "motivated_by": ["naoto-iwase/JMLE2026-Bench"],
        "off": [("letters", "_CUES", _cues_edit("】」』\\]", ""))],
    },
    {
        "rule": "answer_keys",
        "what": "a dict or JSON answer key in Spanish, Portuguese, French, Italian, German, Chinese, Japanese or Korean",
        "motivated_by": ["themrcesi/mir2023"],
        "off": [("letters", "_FIELD", lambda old: _edit(old, "|respuesta|resposta|r[ée]ponse|risposta|antwort|答案|回答|正解|정답", ""))],
    },
    {
        "rule": "opcion_numero",
        "what": "'la respuesta correcta es la opción número 2'",
        "motivated_by": ["lorenaaricetagarcia/llm-fse-evaluation"],
        "off": [("letters", "_CUES", _cues_edit("){0,2}[ \\t]*[:：]?[ \\t\\n]*", ")?[ \\t]*[:：]?[ \\t\\n]*"))],
    },
    {
        "rule": "zh_is_option",
        "what": "Chinese '...是E选项', '应该是A选项' (a leaning; not when another option or a denial follows)",
        "motivated_by": ["openmedlab/PULSE-EVAL", "ywjawmw/TCMBench"],
        "off": [("letters", "_CUES", _cues_edit("选项|選項|项|項", None))],
    },
    {
        "rule": "most_accurate",
        "what": "'Option I is the most accurate answer'",
        "motivated_by": ["0n4li/collab-ai"],
        "off": [("letters", "_CLAIM", lambda old: _edit(old, "|accurate|", "|"))],
    },
    {
        "rule": "zh_text_claim",
        "what": "a Chinese sentence claiming one option by its whole text ('最适宜的处方是银翘散', '所以病位在心', '<text>是...最佳方法'; not denied, doubted, joined, restated after its label or after a hypothesis)",
        "motivated_by": ["ywjawmw/TCMBench", "openmedlab/PULSE-EVAL"],
        "off": [("letters", "zh_text_claims", lambda old: lambda *a, **k: [])],
    },
    {
        "rule": "zh_later_best",
        "what": "... or a sentence opened by the text whose later clause calls it the most suitable ('附桂八味丸具有...的功效，最适合治疗此证')",
        "motivated_by": ["ywjawmw/TCMBench"],
        "off": [("zh_claims", "_LATER_BEST", lambda old: _NEVER)],
    },
    {
        "rule": "zh_shared_ending",
        "what": "... which may leave off an ending every option shares ('应选用葛根汤' for '葛根汤主之')",
        "motivated_by": ["ywjawmw/TCMBench"],
        "off": [("zh_claims", "_without_shared_end", lambda old: lambda texts: [])],
    },
    {
        "rule": "opens_labelled",
        "what": "a reply opening with a label and its own option's text ('1.E. Atrial myxoma ...', 'B：房室传导阻滞是...'), no other label opening a line",
        "motivated_by": ["carlwharris/cog-bias-med-LLMs", "openmedlab/PULSE-EVAL"],
        "off": [("letters", "_OPENS_LABELLED", lambda old: _NEVER)],
    },
    {
        "rule": "cut_lost_letters",
        "what": "a reply cut off inside an option's word that the option spells with a few letters lost ('hydrochloroth' for 'Hydrochlorthiazide')",
        "motivated_by": ["carlwharris/cog-bias-med-LLMs"],
        "off": [("option_texts", "_begins_cut", lambda old: lambda t, s: t.startswith(s) and t[len(s) : len(s) + 1].isalnum())],
    },
    {
        "rule": "claim_aside",
        "what": "an option named as one, an aside, then its claim ('Option F, stating that ..., remains the best answer', 'option A (...) is the most compelling answer')",
        "motivated_by": ["0n4li/collab-ai"],
        "off": [("letters", "_CLAIM", lambda old: re.compile(re.sub(r"\(\?\(1\)\(\?P<aside>.*?\)\?\|\)", "", old.pattern, count=1), old.flags))],
    },
    {
        "rule": "claim_better",
        "what": "'Option I being the more favorable choice', 'option J should be regarded as the better representation', 'Option D still remains the best fit'",
        "motivated_by": ["0n4li/collab-ai"],
        "off": [
            (
                "letters",
                "_CLAIM",
                lambda old: _edit(
                    _edit(_edit(old, "|being|should\\s+be\\s+(?:regarded|considered|seen)\\s+as", ""), "|better|", "|"), "|favou?rable|compelling|precise", ""
                ),
            )
        ],
    },
    {
        "rule": "own_stance",
        "what": "'My updated answer, considering ..., is (H)', 'I maintain that option J', 'I stand by option F', 'I would lean towards option (F) because ...'",
        "motivated_by": ["0n4li/collab-ai"],
        "off": [
            ("letters", "_CUES", _cues_edit("|(?:still\\s+)?maintain|(?:still\\s+)?stand\\s+by", "")),
            ("letters", "_CUES", _cues_edit("|,[^,.!?\\n]{1,100},\\s+", "|(?!)")),
            ("letters", "_REASON_WORDS", lambda old: frozenset()),
        ],
    },
    {
        "rule": "strong_case",
        "what": "'a solid case for dissatisfaction (Option A)', 'a compelling case for Option I' (a leaning; not 'no compelling case')",
        "motivated_by": ["0n4li/collab-ai"],
        "off": [("letters", "_CUES", _cues_edit("case\\s+for\\s+", None))],
    },
    {
        "rule": "disputed",
        "what": "a claim after 'I disagree that', 'I doubt', 'not convinced' is not the reply's",
        "motivated_by": ["0n4li/collab-ai"],
        "off": [("letters", "_DISPUTED", lambda old: _NEVER)],
    },
    {
        "rule": "addressee_answer",
        "what": "the addressee's answer ('... with your answer (C)') is the reply's own only where it agrees now ('I agree with your answer (C)')",
        "motivated_by": ["0n4li/collab-ai"],
        "off": [("letters", "_YOURS", lambda old: _NEVER)],
    },
    {
        "rule": "es_statement_line",
        "what": "Spanish 'La afirmación INCORRECTA es:\\n\\n2. <its text>', 'La recomendación más adecuada sería <an option's text>'",
        "motivated_by": ["lorenaaricetagarcia/llm-fse-evaluation", "themrcesi/mir2023"],
        "off": [
            ("letters", "_CUES", _cues_edit("|recomendaci[oó]n|conducta", "")),
            ("letters", "_CUES", _cues_edit("(?:[ \\t]*[:：][ \\t]*\\n\\s*|[ \\t]*[:：]?[ \\t]*)", "[ \\t]*[:：]?[ \\t]*")),
        ],
    },
]


RULES += [
    {
        "rule": "turn_end",
        "what": "text after a chat-template token ending the turn or opening a new one (<|im_end|>, <|eot_id|>, <end_of_turn>, <|im_start|>, </s>) is cut before reading",
        "motivated_by": ["axelsparr/swedish-medical-benchmark"],
        "off": [("letters", "own_turn", lambda old: lambda text: text)],
    },
    {
        "rule": "answer_tag",
        "what": "the last XML-like answer tag (<answer>, <prediction>, <final>, <choice>, <svar> ...) holding one label or one option's whole text is a final answer; several or none, no option",
        "motivated_by": ["axelsparr/swedish-medical-benchmark"],
        "off": [("letters", "last_answer_tag", lambda old: lambda text: None)],
    },
    {
        "rule": "content_keys",
        "what": "a JSON or dict key naming what the answer is about ('diagnosis', 'best_answer', 'decision') is read only where its value is one label or one option's whole text",
        "motivated_by": ["anazz-dev/medical-llm-metacognition-benchmark"],
        "off": [("letters", "_CONTENT_FIELD", lambda old: _NEVER)],
    },
    {
        "rule": "fields_disagree",
        "what": "two answer fields naming different options are ambiguous whatever lies between them (no revision or conclusion word settles them)",
        "motivated_by": ["anazz-dev/medical-llm-metacognition-benchmark"],
        "off": [("letters", "_fields_disagree", lambda old: lambda *a: False)],
    },
    {
        "rule": "text_then_label",
        "what": "an answer naming one option's whole text ('the answer is **IIIA**') followed at once by another option's label ('Final Answer: (A)') contradicts itself",
        "motivated_by": ["MiningMyBusiness/accuracy-econ-medical-llms"],
        "off": [("letters", "_same_closing", lambda old: lambda *a: False)],
    },
    {
        "rule": "boxed_text",
        "what": "a box holding one option's whole text ('\\boxed{basal cell carcinoma}') names that option",
        "motivated_by": ["jmatos10/medgemma-eval"],
        "off": [("letters", "_boxed_text", lambda old: lambda *a: None)],
    },
    {
        "rule": "nordic",
        "what": "Swedish, Norwegian, Danish 'Svar: B', 'Svaret är C' (an answer) and 'Alternativ D, ..., är korrekt' (a leaning)",
        "motivated_by": ["axelsparr/swedish-medical-benchmark"],
        "off": [("letters", "_CUES", _cues_edit("svar(?:et)?", None)), ("letters", "_NORDIC_RIGHT", lambda old: _NEVER)],
    },
    {
        "rule": "wrong_asked",
        "what": "given the item's question: on an item asking for the wrong option (EXCEPT, NOT, INCORRECTA, 错误, 不属于), an option called wrong by its label ('因此D选项是不正确的') is a leaning",
        "motivated_by": ["ywjawmw/TCMBench", "themrcesi/mir2023"],
        "off": [("negative_items", "_by_label", lambda old: lambda *a: [])],
    },
    {
        "rule": "wrong_asked_echo",
        "what": "... and a sentence denying the question's own negated predicate of one option's text ('La vacuna antigripal no debe administrarse ...' for '¿Cuál ... NO debe administrarse ...?')",
        "motivated_by": ["themrcesi/mir2023", "lorenaaricetagarcia/llm-fse-evaluation"],
        "off": [("negative_items", "_by_echo", lambda old: lambda *a: [])],
    },
    {
        "rule": "question",
        "what": "the item's question at all (every question-aware rule above off, and '3) <text>. Es incorrecta' taken back again: read_answer as without a question)",
        "motivated_by": ["ywjawmw/TCMBench", "themrcesi/mir2023", "lorenaaricetagarcia/llm-fse-evaluation"],
        "off": [("letters", "asks_for_wrong", lambda old: lambda q: False)],
    },
]


#: the Portuguese cue before the claim rule: any "opção/alternativa/resposta/conduta" then a label
_PT_ANY = re.compile(
    r"\b(?:a\s+)?(?:resposta|alternativa|op[cç][aã]o|conduta)(?:\s+(?:correta|certa|oficial|adequada|final|mais\s+\w+))?(?:\s+[ée])?(?:\s+(?:a|o))?(?:\s+letra)?[ \t]*[:：]?\s*",
    re.I,
)


def _romance_off(old: tuple) -> tuple:
    """The cue table with the Romance-language claim cues off and the bare Portuguese cue back."""
    from medresilience.scoring import romance

    ours = (romance.NOUN_FIRST, romance.NOUN_COLON, romance.ANSWER_COLON, romance.NOUN_FIRST_LEANING)
    return tuple(c for c in old if c[0] not in ours) + ((_PT_ANY, 2, False),)


RULES += [
    {
        "rule": "romance_claims",
        "what": "Portuguese, Spanish, French, Italian answer sentences read only as claims: a noun for an option with a claim word ('a alternativa correta é a \"a\"', 'O item correto é o b', 'l'option correcte est C') or a label named as an option and claimed ('a opção c é a correta', 'la opción B es la correcta'); 'Opção b:' heading its analysis and 'Assim como a alternativa c' state nothing",
        "motivated_by": ["adonias-caetano/LLMs-revalida-medicina"],
        "off": [
            ("letters", "_CUES", _romance_off),
            ("letters", "_ROMANCE_CLAIMS", lambda old: ()),
            ("letters", "LABEL_FIRST", lambda old: _NEVER),
            ("letters", "LABEL_FIRST_LEANING", lambda old: _NEVER),
        ],
    },
    {
        "rule": "answer_choice",
        "what": "'Answer Choice: A.', 'Answer option: D' (the answer's noun and the option's, one thing)",
        "motivated_by": ["JuneHou/MAS_Medical_RAG"],
        "off": [("letters", "_CUES", _cues_edit("(?:\\s+(?:choice|option|letter|selection)\\b)?", ""))],
    },
    {
        "rule": "opening_contradicted",
        "what": "an answer opening the reply that the reasoning after it contradicts ('This is the D option', '... the power of the study is 1%' for A's text, 'align with Vitamin B1 deficiency'), never naming the opening option again, is unread (contradicts)",
        "motivated_by": ["genglongling/CS224V-MACI-for-Research-Agent"],
        "off": [("letters", "_opening_contradicted", lambda old: lambda *a: None)],
    },
    {
        "rule": "goes_round",
        "what": "a reply repeating 600 characters or more of itself word for word and stating two options anywhere in it is unread (loops), whatever its revisions",
        "motivated_by": ["JuneHou/MAS_Medical_RAG"],
        "off": [("letters", "_goes_round", lambda old: lambda *a: None)],
    },
]


RULES += [
    {
        "rule": "numbered_step",
        "what": "a number opening a line is an option's label only where its own option's text follows ('2. Atropine', the text cut off, a stem's own completion); '1. The patient weighs 60 kg. ...' opens a step of reasoning and commits to nothing",
        "motivated_by": ["alexelawson/medical-llms-bias"],
        "off": [("letters", "_numbered_step", lambda old: lambda *a: False)],
    },
    {
        "rule": "set_aside",
        "what": "an option set aside by name ('So, we can exclude option 1', 'eliminate (B)', 'rule out choice C') is taken back",
        "motivated_by": ["alexelawson/medical-llms-bias"],
        "off": [("withdrawals", "_set_aside", lambda old: lambda label: _NEVER)],
    },
    {
        "rule": "text_conclusion_claims",
        "what": "a concluding sentence names an option by its text only as a claim: not the subject of another verb ('Therefore, rifampicin will decrease ...'), not under a doubt ('may'), not denied in a later sentence, not in a relative clause ('a gas that is less soluble than nitrogen'), not followed by a last sentence turning against it ('However, the patient is Asian.')",
        "motivated_by": ["alexelawson/medical-llms-bias"],
        "off": [
            ("option_texts", "_as_subject_unclaimed", lambda old: lambda *a: False),
            ("option_texts", "_denied_later", lambda old: lambda *a: False),
            ("option_texts", "_CONCLUSION_DOUBT", lambda old: _NEVER),
            ("option_texts", "_describes", lambda old: lambda *a: False),
            ("option_texts", "_OBJECTION_LAST", lambda old: _NEVER),
        ],
    },
]

RULES += [
    {
        "rule": "joined_text",
        "what": "an option's text joined to another thing ('his anxiety and medication are contributing', 'anxiety, medication and stress') names several things, not that option",
        "motivated_by": ["andrewtran1991/Faithfulness-Medical-LLM"],
        "off": [("option_texts", "_joined", lambda old: lambda *a: False)],
    },
    {
        "rule": "would_not_be_correct",
        "what": "'E would not be correct' takes back option E (as 'E is not correct' does)",
        "motivated_by": ["andrewtran1991/Faithfulness-Medical-LLM"],
        "off": [
            ("withdrawals", "_NOT_RIGHT", lambda old: old.replace("|(?:would|will|should|could)\\s+not\\s+be", "|(?!)(?:would|will|should|could)\\s+not\\s+be"))
        ],
    },
    {
        "rule": "reopened_then_cut",
        "what": "a reasoning reply that opens the question again after its answer ('Alternatively, if the patient is very sick, ...') and breaks off inside a sentence is unread (cut_off); an answer opening the reply or a final answer stands",
        "motivated_by": ["andrewtran1991/Faithfulness-Medical-LLM"],
        "off": [("letters", "_reopened_then_cut", lambda old: lambda *a: None)],
    },
    {
        "rule": "inline_option_list",
        "what": "'The options are A. <its text>, B. <its text>, ...' restates the options and names none",
        "motivated_by": ["Joe-Occhipinti/unfaithfulness_steering"],
        "off": [("letters", "_lists_on", lambda old: lambda *a: False)],
    },
    {
        "rule": "field_then_claimed",
        "what": "a JSON answer field whose reasoning goes on to claim another option last ('CPT 20005 is actually the correct code') is unread (contradicts)",
        "motivated_by": ["xerk-dot/medical-coding-ai"],
        "off": [("letters", "last_claimed", lambda old: lambda *a: None)],
    },
    {
        "rule": "titled_review_cut",
        "what": "a review of the options opened by a line ending in a colon, cut off in its first analysis titled by the option's own text ('A. <its text>: Chaguo hili ni sahihi. ... kuwa'), commits to nothing",
        "motivated_by": ["yarrap/multi_lingual_cot_faithfulness"],
        "off": [("unfinished", "_titled", lambda old: lambda *a: False)],
    },
]

RULES += [
    {
        "rule": "concluding_phrases",
        "what": "a trace's concluding phrases ('Okay, putting it all together, ...', 'After considering all these factors, ...', 'all things considered') open a concluding sentence; a later concluding sentence naming no option and denying or doubting nothing affirms the one before",
        "motivated_by": ["andrewtran1991/Faithfulness-Medical-LLM"],
        "off": [
            (
                "option_texts",
                "_CONCLUDING",
                lambda old: re.compile(
                    old.pattern.replace("|(?:putting|taking|piecing)", "|(?!)(?:putting|taking|piecing)").replace(
                        "(?:(?:okay|ok|alright|well|yeah|so)[ \\t]*,?[ \\t]+)?", ""
                    ),
                    old.flags,
                ),
            ),
            ("option_texts", "_mentions_none", lambda old: lambda *a: False),
        ],
    },
    {
        "rule": "text_with_article",
        "what": "an option's whole text in a concluding sentence with an article the reply adds ('reducing the polyethylene insert thickness') or, for an action option, by what it is done with ('carboprost tromethamine' for 'Administer carboprost tromethamine', two words or more, no other option's the same)",
        "motivated_by": ["andrewtran1991/Faithfulness-Medical-LLM"],
        "off": [("option_texts", "_holds_bare", lambda old: lambda *a: False), ("option_texts", "_ACTION", lambda old: _NEVER)],
    },
]

RULES += [
    {
        "rule": "swahili",
        "what": "Swahili 'Jibu ni (B)', 'Jibu: C', 'chaguo sahihi ni D' (the answer, the right choice); '(B) au (C)' names two",
        "motivated_by": ["yarrap/multi_lingual_cot_faithfulness"],
        "off": [("letters", "_CUES", _cues_edit("jibu", None))],
    },
    {
        "rule": "referred_or_heading",
        "what": "an option referred to ('look at each answer choice:', 'this answer choice (D) does not ...') or a step's heading ('5. Choose the best answer:') states no answer",
        "motivated_by": ["yarrap/multi_lingual_cot_faithfulness", "alisheryeginbay/cot-unfaithfulness"],
        "off": [("letters", "_DISOWNED", lambda old: re.compile(old.pattern.split("|\\b(?:each|every")[0], old.flags))],
    },
    {
        "rule": "bracketed_answer",
        "what": "a bracketed note giving the answer: '... with E. faecalis (Answer option 2).', '(correct answer: B)'",
        "motivated_by": ["FloMys/multimedqa_eval"],
        "off": [("letters", "_CUES", _cues_edit("\\((?:correct", None))],
    },
]

RULES += [
    {
        "rule": "heading_field",
        "what": "an answer field written as a heading in capitals ('FINAL_ANSWER: Neurofilament', 'FINAL ANSWER: B', 'ANSWER: Yes, ...') holding one option's whole text, its label, or Yes/No opening it on yes/no/maybe options, up to a question the reply invents after it; 'final_answer: A muscle ...' names no label",
        "motivated_by": ["tallshadow/decision-grade-med-llm-ranking"],
        "off": [
            ("letters", "_heading_fields", lambda old: lambda *a: []),
            ("letters", "_FIELD", lambda old: _edit(old, "(?![ \\t]+(?-i:[a-z]))", "")),
        ],
    },
    {
        "rule": "option_review",
        "what": "a reply reviewing every option by its label ('Option A, <text>, may ...', '(choice D)') keeps the one option a sentence claims with no word setting it aside when every other is set aside, else names none; a review setting aside each of three or more options it names names none",
        "motivated_by": ["roysoumya/usmle-gpt4-error-taxonomy", "hailey0huong/reliable-health-llms"],
        "off": [("letters", "reviewed_choice", lambda old: lambda *a: None)],
    },
    {
        "rule": "braced_label",
        "what": "a label with a brace for its bracket opening the reply with its own option's text ('d} Comitantes')",
        "motivated_by": ["dsrestrepo/MIT_LLMs_Language_bias"],
        "off": [("letters", "_OPENS_LABELLED", lambda old: _edit(old, "[.:)\\]}]", "[.:)\\]]"))],
    },
    {
        "rule": "question_above",
        "what": "'The answer to the question above is Option A.'",
        "motivated_by": ["shravani-01/clinical-llm-eval"],
        "off": [("letters", "_CUES", _cues_edit("question(?:\\s+above)?", "question"))],
    },
    {
        "rule": "yes_no_words",
        "what": "a heading answer field on a yes/no/maybe item answering in its few words: 'Uncertain' (maybe), the question's own predicate repeated ('Feasible' to 'Is ... feasible in ...?': yes), 'No association' to 'is there any association?' (no); never with a contrary word in the field",
        "motivated_by": ["tallshadow/decision-grade-med-llm-ranking"],
        "off": [("letters", "worded_answer", lambda old: lambda *a: None)],
    },
    {
        "rule": "review_agrees",
        "what": "a review of every option keeping one stands where the reply's other statements state that same option ('... is phytonadione (vitamin K) (Choice D)'), and names several options in one ('Options D and E are incorrect')",
        "motivated_by": ["roysoumya/usmle-gpt4-error-taxonomy"],
        "off": [
            ("option_review", "_SEVERAL_NAMED", lambda old: _NEVER),
            ("letters", "_review_stands", lambda old: lambda kept, stated: not stated),
        ],
    },
    {
        "rule": "as_indicated",
        "what": "'..., as indicated by option (C).' names the option as 'listed as option C' does",
        "motivated_by": ["hailey0huong/reliable-health-llms"],
        "off": [("letters", "_CUES", _cues_edit("|(?<=\\bas\\s)indicated", ""))],
    },
    {
        "rule": "plural_set_aside",
        "what": "an option named by its text and label, then set aside in a plural or with 'also' ('Chronic gastritis (B) and tertiary syphilis (C) are unlikely causes', '... (D) is also an unlikely cause'), is no leaning towards it",
        "motivated_by": ["prabhjotschugh/narrativeshield-sdoh-medqa"],
        "off": [
            (
                "letters",
                "_CONCEDED",
                lambda old: _edit(
                    old,
                    "(?:(?:and|or|,)\\s+[^.!?\\n()]{1,60}?\\([A-Za-z0-9]\\)\\s*)?(?:is|are|was|were|seems|seem|appears|appear)\\s+(?:also\\s+)?(?:an?\\s+)?",
                    "(?:is|was|seems|appears)\\s+",
                ),
            )
        ],
    },
    {
        "rule": "numbered_question_heading",
        "what": "a numbered question heading in Japanese or Chinese on a line of its own ('第1の問題:', '第2問：', '第3题:') after the reply's answer opens a question the reply invents",
        "motivated_by": ["EQUES-Inc/pharma-LLM-eval"],
        "off": [
            (
                "other_items",
                "_NEW_QUESTION",
                lambda old: _edit(old, "|第[ \\t]*[0-9一二三四五六七八九十]{1,3}[ \\t]*の?(?:問題|問|题|題)[ \\t]*[:：]?[ \\t]*\\n", ""),
            )
        ],
    },
    {
        "rule": "joined_other_languages",
        "what": "an option's own text joined at once to another thing by 'o'/'ou'/'y'/'et'/'oder'/'und' ('d) Comitantes o incomitantes.') names several, as 'and'/'or' do",
        "motivated_by": ["dsrestrepo/MIT_LLMs_Language_bias"],
        "off": [
            ("option_texts", "_JOINS", lambda old: frozenset(["and", "or", "plus", "&", "nor"])),
            ("letters", "_joins_own", lambda old: lambda *a: False),
        ],
    },
    {
        "rule": "hyphen_compound",
        "what": "an option's text glued by a hyphen to a word that makes it another thing ('Neurofilament-like staining', 'Desmin-negative') does not name the option",
        "motivated_by": ["tallshadow/decision-grade-med-llm-ranking"],
        "off": [("option_texts", "_compounded", lambda old: lambda *a: False)],
    },
    {
        "rule": "field_sentence",
        "what": "a heading answer field holding a sentence with one option's whole text, denying nothing and giving no example ('FINAL_ANSWER: Sensitivity ... indicates the probability of a true positive result')",
        "motivated_by": ["tallshadow/decision-grade-med-llm-ranking"],
        "off": [("letters", "_EXAMPLE", lambda old: re.compile(r"(?s).", old.flags))],
    },
    {
        "rule": "inline_label_text",
        "what": "a bracketed label inside a sentence followed by its own option's whole text to the sentence's end, the only label the reply names ('... will result in (C) increased renal blood flow, ...')",
        "motivated_by": ["hailey0huong/reliable-health-llms"],
        "off": [("letters", "_inline_label_text", lambda old: lambda *a: [])],
    },
    {
        "rule": "quoted_label",
        "what": "a label in single quotes of its own ('The correct answer is \\'E\\'.', 'is \\'D\\': Aqueduct of Sylvius'); \\'E\\' or \\'D\\' names two",
        "motivated_by": ["roysoumya/usmle-gpt4-error-taxonomy"],
        "off": [
            ("letters", "_QUOTED_LABEL", lambda old: _NEVER),
            ("letters", "_IS_LABEL_TEXT", lambda old: _edit(old, "(?:[(\\[]|(?<=\\s)['‘](?=\\w['’]))?([A-Za-z0-9])['’]?", "[(\\[]?([A-Za-z0-9])")),
        ],
    },
    {
        "rule": "review_opener",
        "what": "a line opening 'Option B (<text>) suggests ...' or 'Option C, <text>, are ...' reviews its option: a leaning at most, under an answer stated elsewhere",
        "motivated_by": ["roysoumya/usmle-gpt4-error-taxonomy"],
        "off": [("letters", "_reviewed_option", lambda old: lambda *a: False)],
    },
    {
        "rule": "conditional_hint",
        "what": "a last sentence naming an option that opens on a condition ('- If it looks like a network of tubes with dots on it, it is the Rough Endoplasmic Reticulum.') is a hint, no answer; 'If I had to choose' and 'If forced to pick' still commit",
        "motivated_by": ["antoniopuertas/no-harm-local"],
        "off": [("option_texts", "_CONDITIONAL", lambda old: _NEVER)],
    },
]


def records() -> list[dict]:
    return [json.loads(x) for p in sorted(DATA.glob("mcq_*.jsonl")) for x in p.read_text(encoding="utf-8").splitlines() if x.strip()]


def repo_of(r: dict) -> str:
    src = r.get("source") or {}
    return src.get("repo") or src.get("repository") or "(constructed)"


def readings() -> dict[str, dict]:
    """Every reply's reading by the reader importable here: label and unread reason."""
    import inspect

    from medresilience.scoring.letters import read_answer

    # the reader of an older revision (--base) may not take the item's question
    asks = "question" in inspect.signature(read_answer).parameters
    out = {}
    for r in records():
        got = (
            read_answer(r["reply"], r["letters"], r.get("option_texts"), r.get("question"))
            if asks
            else read_answer(r["reply"], r["letters"], r.get("option_texts"))
        )
        out[r["id"]] = {"label": got.label, "unread": getattr(got, "unread", None), "how": got.how}
    return out


def outcome(got: str | None, expected: str | None) -> str:
    if got is None:
        return "unread" if expected is not None else "right_none"
    return "right" if got == expected else "wrong"


def _counts(rows: list[dict], read: dict[str, dict]) -> Counter:
    c: Counter = Counter()
    for r in rows:
        c[outcome(read[r["id"]]["label"], r["expected"])] += 1
        c["readable"] += r["expected"] is not None
        if read[r["id"]]["label"] is None and r["expected"] is not None:
            c["why:" + str(read[r["id"]]["unread"] or "?")] += 1
    return c


def _row(key: str, c: Counter) -> str:
    n = c["right"] + c["wrong"] + c["unread"] + c["right_none"]
    # readable: the replies a careful reader reads as a label (a wrong letter on a null-labelled reply is not one)
    readable = c["readable"]
    share = f"{100 * c['unread'] / readable:.1f}%" if readable else "-"
    whys = ", ".join(f"{k[4:]} {v}" for k, v in sorted(c.items()) if k.startswith("why:"))
    return f"| {key} | {n} | {c['right'] + c['right_none']} | {c['wrong']} | {c['unread']} | {share} | {whys} |"


_HEAD = "| | n | read right | read wrong | unread (readable) | unread share of readable | unread because |\n| --- | ---: | ---: | ---: | ---: | ---: | --- |"


def by_repository(rows: list[dict], read: dict[str, dict], title: str) -> str:
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        groups[f"{repo_of(r)} ({r['split']})"].append(r)
    out = [f"### {title}: by repository and split", "", _HEAD]
    out += [_row(k, _counts(v, read)) for k, v in sorted(groups.items(), key=lambda kv: (kv[0].rsplit("(", 1)[1], kv[0]))]
    by_split: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_split[r["split"]].append(r)
    out += ["", f"### {title}: by split", "", _HEAD]
    out += [_row(s, _counts(by_split[s], read)) for s in SPLITS if s in by_split]
    out.append(_row("all", _counts(rows, read)))
    return "\n".join(out)


def by_style(rows: list[dict], read: dict[str, dict], title: str) -> str:
    """The same counts per style tag (a reply counts under each of its tags)."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        for tag in r["style"] if isinstance(r["style"], list) else r["style"].split(","):
            groups[tag].append(r)
    out = [f"### {title}: by style tag", "", _HEAD]
    out += [_row(k, _counts(v, read)) for k, v in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))]
    return "\n".join(out)


def wrong_letters(rows: list[dict], read: dict[str, dict]) -> str:
    """Each reply read as a letter other than its label: what was read, how, and the label's why."""
    out = [
        f"- {r['id']} ({repo_of(r)}): read {read[r['id']]['label']!r} ({read[r['id']]['how'][:100]}); labelled {r['expected']!r}: {r['why']}"
        for r in rows
        if outcome(read[r["id"]]["label"], r["expected"]) == "wrong"
    ]
    return "\n".join(["### Wrong letters", ""] + (out or ["(none)"]))


@contextmanager
def _rule_off(rule: dict):
    """The reader with one rule switched off (for the ablation only)."""
    import importlib

    saved = []
    for mod_name, attr, off in rule["off"]:
        mod = importlib.import_module(f"medresilience.scoring.{mod_name}")
        saved.append((mod, attr, getattr(mod, attr)))
        setattr(mod, attr, off(getattr(mod, attr)))
    # an item's OptionTexts are made once and cached: made again under the rule switched off, and after
    from medresilience.scoring import option_texts

    option_texts._option_texts.cache_clear()
    try:
        yield
    finally:
        for mod, attr, old in reversed(saved):
            setattr(mod, attr, old)
        option_texts._option_texts.cache_clear()


def ablation(rows: list[dict], read: dict[str, dict], only: list[str] | None = None) -> str:
    """Per rule (or only the rules named): the replies whose reading it changes, on the repositories
    that did not motivate it."""
    out = [
        "### Leave-one-repository-out: what each rule changes where it was not made",
        "",
        "| rule | motivated by | held-out repositories | held-out replies | readings changed | now right | now wrong | now unread (readable) | now unread (rightly) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for rule in RULES:
        if only and rule["rule"] not in only:
            continue
        held = [r for r in rows if repo_of(r) not in rule["motivated_by"]]
        with _rule_off(rule):
            off = readings()
        changed = [r for r in held if off[r["id"]]["label"] != read[r["id"]]["label"]]
        c = Counter(outcome(read[r["id"]]["label"], r["expected"]) for r in changed)
        out.append(
            f"| {rule['rule']} ({rule['what']}) | {', '.join(rule['motivated_by'])} | {len({repo_of(r) for r in held})} | {len(held)} | {len(changed)} "
            f"| {c['right']} | {c['wrong']} | {c['unread']} | {c['right_none']} |"
        )
        for r in changed:
            out.append(f"|  | {r['id']} ({repo_of(r)}) |  |  | {off[r['id']]['label']!r} -> {read[r['id']]['label']!r} | expected {r['expected']!r} |  |  |  |")
    return "\n".join(out)


def base_readings(rev: str) -> dict[str, dict]:
    """The readings of the reader at git revision `rev`, read by this script in a subprocess with
    that revision's sources first on the path (the corpus is this checkout's)."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        env = {**os.environ, "PYTHONPATH": str(Path(tmp) / "src")}
        got = subprocess.run([sys.executable, __file__, "--dump"], env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(got)


def before_after(rows: list[dict], before: dict[str, dict], after: dict[str, dict], rev: str) -> str:
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        groups[f"{repo_of(r)} ({r['split']})"].append(r)
    out = [
        f"### Before ({rev}) and after, by repository",
        "",
        "| repository (split) | n | wrong before | wrong after | unread before | unread after | readings changed |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    total = Counter()
    for key, rs in sorted(groups.items(), key=lambda kv: (kv[0].rsplit("(", 1)[1], kv[0])):
        b, a = _counts(rs, before), _counts(rs, after)
        ch = sum(before[r["id"]]["label"] != after[r["id"]]["label"] for r in rs)
        total.update({"n": len(rs), "wb": b["wrong"], "wa": a["wrong"], "ub": b["unread"], "ua": a["unread"], "ch": ch})
        out.append(f"| {key} | {len(rs)} | {b['wrong']} | {a['wrong']} | {b['unread']} | {a['unread']} | {ch} |")
    out.append(f"| all | {total['n']} | {total['wb']} | {total['wa']} | {total['ub']} | {total['ua']} | {total['ch']} |")
    changed = [r for r in rows if before[r["id"]]["label"] != after[r["id"]]["label"]]
    if changed:
        out += ["", "Readings that changed:", ""]
        out += [
            f"- {r['id']} ({repo_of(r)}): {before[r['id']]['label']!r} -> {after[r['id']]['label']!r} ({after[r['id']]['unread'] or after[r['id']]['how'][:80]}); expected {r['expected']!r}"
            for r in changed
        ]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", metavar="REV", help="also read with the reader at this git revision and show before/after")
    ap.add_argument("--split", action="append", help="only these splits (repeatable)")
    ap.add_argument("--no-ablation", action="store_true", help="skip the per-rule leave-one-repository-out table")
    ap.add_argument("--dump", action="store_true", help="print every reading as JSON and stop")
    ap.add_argument("--rule", action="append", help="ablate only these rules (repeatable; default: every rule)")
    ap.add_argument("--by-style", action="store_true", help="also the counts per style tag and the list of wrong letters")
    args = ap.parse_args()
    if args.dump:
        print(json.dumps(readings()))
        return
    rows = [r for r in records() if not args.split or r["split"] in args.split]
    read = readings()
    print(by_repository(rows, read, "answers (this checkout)"), end="\n\n")
    if args.by_style:
        print(by_style(rows, read, "answers (this checkout)"), end="\n\n")
        print(wrong_letters(rows, read), end="\n\n")
    if not args.no_ablation:
        print(ablation(rows, read, args.rule), end="\n\n")
    if args.base:
        before = base_readings(args.base)
        print(by_repository(rows, before, f"answers (at {args.base})"), end="\n\n")
        print(before_after(rows, before, read, args.base))


if __name__ == "__main__":
    main()
