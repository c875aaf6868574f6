"""Reading the chosen option from a free-text MCQ reply, the way a careful reader does.

Every place the reply states an answer is collected as a statement with a strength: the study's
JSON answer field ({"answer_letter": "C"}), a final answer ("Final answer: C", \\boxed{C}), an
explicit answer ("Answer: C", "the correct option is C)", "C is the answer", "I'd go with C", a
label alone on a line or opening one) or a leaning ("I think C", "the most likely diagnosis is C").
Statements the reply does not make its own are dropped: those it attributes to others ("the
context claims the answer is B"), asks about ("the answer is B?") or puts under a condition ("if
the answer is B, ..."). The statements are then read in order, as a conclusion is: a later one
replaces an earlier one when it is stronger or when the reply revises itself ("Wait, ... Final
answer: C"); two different options stated with the same strength and no revision, or in one
breath ("B or C"), leave the reply ambiguous: None. So does a reply that states nothing.

Labels are the item's option labels, "A".."J" or "1".."9"; anything not in `letters` is not an
answer, and a label is only read where it stands alone (not "A 45-year-old", "I think", "B12",
"2 mg", "type 2", "1.5", "C. difficile")."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from .answer_tags import last_answer_tag, own_turn
from .contradicted import THE_OPTION, last_claimed, names_option, sentence_names, table_span, text_claims
from .negative_items import asks_for_wrong, called_wrong
from .option_review import names_in_review, reviewed_choice
from .option_texts import DENIED, LABEL_LINE, PAREN_LABEL, OptionTexts, concluded_by_text, norm_text, option_texts
from .other_items import answer_run, new_question, other_options, without_echo
from .romance import ANSWER_COLON, LABEL_FIRST, LABEL_FIRST_LEANING, NOUN_COLON, NOUN_FIRST, NOUN_FIRST_LEANING
from .unfinished import cut_off_analysis, in_option_sections, loop_span, repeated_passage, stops_stating_answer
from .withdrawals import withdrawal
from .yes_no_words import worded_answer
from .zh_claims import zh_text_claims

_I = re.IGNORECASE

# statement strengths, weakest first
LEANING, ANSWER, FINAL, FIELD = 1, 2, 3, 4


class _Said(NamedTuple):
    """One place a reply states an answer: its span, its strength and its label (None: a hedge)."""

    start: int
    end: int
    tier: int
    label: str | None
    #: the statement contradicts itself (a label with another option's text): no later answer
    #: settles it as one settles a hedge
    contra: bool = False
    #: why a statement without a label names no option (an UNREAD reason): "several_options",
    #: "no_option" ("none of the above", a field naming none), "contradicts", "withdrawn", else
    #: "hedged" (several, or one it names to deny it)
    why: str = "hedged"


# --- labels -------------------------------------------------------------------------------

#: a character that continues a Latin word or a number (CJK text around a label does not: "选C项", "是C。")
_WORD = r"[0-9A-Za-z_\u00C0-\u024F]"
_GLUED = re.compile(rf"{_WORD}|[.,]\d|[-‐/]{_WORD}|['’]{_WORD}|%|\.[A-Za-z]")
#: a capital, a period and a species name abbreviate a genus ("E. coli", "C. difficile", "S. aureus")
_GENUS = re.compile(r"\.[ \t]+([a-z]{3,})\b")
_SPECIES_END = re.compile(r"(?:i|ae|us|is|um|a|es|e|ens|ans|ax|ii|ia|ica)$")
_NOT_SPECIES = frozenset(
    [
        "the",
        "these",
        "those",
        "there",
        "three",
        "time",
        "more",
        "some",
        "case",
        "none",
        "have",
        "were",
        "make",
        "take",
        "same",
        "here",
        "give",
        "true",
        "false",
        "also",
        "data",
        "area",
        "idea",
        "type",
        "site",
        "rate",
        "dose",
        "care",
        "made",
        "like",
        "because",
        "are",
        "one",
        "use",
        "sure",
        "due",
        "once",
        "nine",
        "five",
        "while",
        "where",
        "whose",
        "since",
        "rare",
        "acute",
        "chronic",
        "severe",
        "mild",
        "moderate",
        "single",
        "simple",
        "multiple",
        "male",
        "female",
        "positive",
        "negative",
        "normal",
        "more",
        "else",
        "before",
        "above",
    ]
) | {"yes", "no", "maybe"}
#: the word after a label; a sign before a number is part of it ("a +1 station", "a -2 shift")
_NEXT_WORD = re.compile(r"[ \t]+[+\-−±~≈]?(\w+)")
_LINKS = frozenset(
    [
        "because",
        "since",
        "as",
        "given",
        "due",
        "for",
        "which",
        "is",
        "was",
        "would",
        "seems",
        "appears",
        "being",
        "here",
        "in",
        "on",
        "and",
        "or",
        "nor",
        "vs",
        "versus",
    ]
)
#: words after "I" that make it the pronoun ("I would argue that the answer is H"), not option I
_I_VERBS = frozenset([
    "would", "was", "am", "will", "shall", "can", "could", "should", "must", "have", "had", "do", "did", "think",
    "believe", "agree", "disagree", "choose", "chose", "select", "pick", "prefer", "feel", "guess", "suspect", "need",
    "want", "see", "argue", "conclude", "lean", "go", "say", "recommend", "cannot", "also", "still", "really",
])  # fmt: skip
_LABEL = re.compile(r"[(\[{<]?[ \t]*([A-Za-z0-9])")


def _stands_alone(text: str, end: int, in_value: bool = False) -> bool:
    """The label ending at `end` is a token of its own, not part of a word, number or name
    (`in_value`: it opens an answer field's value, where "B. no" is the option, not a genus)."""
    c, rest = text[end - 1], text[end : end + 40]
    # glued to a word, number, hyphen or apostrophe: "B12", "1.5", "B-cell", "I'd", "e.g."
    if _GLUED.match(rest):
        return False
    # a capital, a period and a lowercase word abbreviate a genus: "C. difficile", "E. coli"
    genus = _GENUS.match(rest)
    if c.isupper() and genus and not in_value and _SPECIES_END.search(genus.group(1)) and genus.group(1) not in _NOT_SPECIES:
        return False
    # "A", "I", a lowercase letter or a digit before a word is an article, a pronoun or a quantity
    # ("A 45-year-old", "I think", "a beta-blocker", "2 mg"), unless the word links ("A because")
    m = _NEXT_WORD.match(rest)
    # "I would argue", "I think C": the pronoun, wherever it stands
    if c == "I" and m and m.group(1).lower() in _I_VERBS:
        return False
    return in_value or not (m and (c in "AI" or c.islower() or c.isdigit()) and m.group(1).lower() not in _LINKS)


#: a label in single quotes of its own, the opening quote after no word: "The correct answer is 'E'.",
#: "is 'D': Aqueduct of Sylvius" (not "don't", "patient's")
_QUOTED_LABEL = re.compile(r"(?<![\w'’])(['‘’])[A-Za-z0-9]['’](?!\w)")


def _label_at(text: str, i: int, letters: str, in_value: bool = False) -> tuple[str, int] | None:
    """The option label that starts at i ("C", "(c)", "[3]") and the index after it, or None."""
    m = _LABEL.match(text, i)
    if not m:
        return None
    label, s = m.group(1).upper(), m.start(1)
    # only the item's own labels are answers: "E" is no answer to a four-option item
    if label not in letters:
        return None
    # not the tail of a word or a number: "vitamin", "12", "don't" (a label in quotes is one: "is 'E'.")
    if s > 0 and re.match(_WORD + "|['’]", text[s - 1]) and not _QUOTED_LABEL.match(text, s - 1):
        return None
    return (label, m.end(1)) if _stands_alone(text, m.end(1), in_value) else None


#: ... in Chinese and Swahili too: "A或B", "B或者C", "A和B", "A、C", "(B) au (C)"; quoted: "'E' or 'D'"
_ALTERNATIVE = re.compile(
    r"[ \t]*[)\]'’]?[ \t]*\(?[ \t]*(?:(,)|/|&|\bor\b|\band\b|\bnor\b|\bvs\.?|\bversus\b|\bau\b|或者?|还是|和|与|及|、)[ \t]*(?:(?:or|possibly|perhaps|maybe|even|also|option|choice)\b[ \t]*)*['‘]?",
    _I,
)


def _hedged(text: str, end: int, label: str, letters: str) -> bool:
    """A second option named right after the first ("B or C", "B/C", "B and C", "A, B") is a hedge."""
    m = _ALTERNATIVE.match(text, end)
    other = _label_at(text, m.end(), letters) if m else None
    if m is None or other is None or other[0] == label:
        return False
    # after a comma only a bare label counts ("A, B"), not a new clause ("C, B is wrong")
    return not m.group(1) or not _NEXT_WORD.match(text, other[1])


_VALUE_LEAD = re.compile(r"[ \t\"'(\[]*(?:(?:option|choice|letter|answer)\s*:?\s*)?", _I)


#: a value of labels only, chained into an order ("B>A>D>C", "2-4-1-3", "A → C → B") or listed
#: with spaces ("a e", "A C D"): a sequence or several options, not one
_LABEL_CHAIN = re.compile(r"\W*[A-Za-z0-9](?:\s*(?:>|<|->|=>|→|-|–)\s*[A-Za-z0-9]){2,}\W*|\W*[A-Za-z0-9](?:\s+[A-Za-z0-9])+\W*")


def _label_in_value(value: str, letters: str) -> str | None:
    """A field or box names an option when it opens with a lone label: "C", "(c)", "C) Metformin"."""
    if _LABEL_CHAIN.fullmatch(value) and len(named := {c.upper() for c in re.findall(r"[A-Za-z0-9]", value)}) > 1 and named <= set(letters.upper()):
        return None
    lead = _VALUE_LEAD.match(value)
    got = _label_at(value, lead.end() if lead else 0, letters, in_value=True)
    if got is not None and not re.match(r"[ \t]*(?:$|[).:\],;\]>'\"\\]|\s)", value[got[1] :]):
        return None
    return None if got is None or _hedged(value, got[1], got[0], letters) else got[0]


# --- the reply's text -----------------------------------------------------------------------

_TEX_WRAP = re.compile(r"\\(?:text|textbf|mathrm|mathbf|mbox)\s*\{([^{}]*)\}")
_MARKUP = re.compile(r"\*+|`+|__+|\$+|\\[()\[\]]")
_THINK_END = re.compile(r"</think(?:ing)?>", _I)
_THINK_OPEN = re.compile(r"<think(?:ing)?>", _I)


_SPECIAL_TOKEN = re.compile(r"<\|[^|<>\n]{1,40}\|>|</?s>|<(?:eos|end_of_turn|start_of_turn|eot_id)>", _I)


def _plain(text: str) -> str:
    """Markdown emphasis, code ticks, TeX wrappers and leaked special tokens say nothing about the
    answer: drop them. Full-width forms read as ASCII ("Ｅ", "＜B＞"); a reply whose line breaks
    arrived escaped ("\\n\\nAnswer: 2") gets them back."""
    text = unicodedata.normalize("NFKC", text)
    if "\\n" in text:
        # an escaped line break ("\\n\\nAnswer: 2", JSON text), not TeX ("\\nu", "\\neq")
        text = _ESCAPED_BREAK.sub("\n", text.replace("\\r\\n", "\\n"))
    text = _SPECIAL_TOKEN.sub(" ", text)
    return _MARKUP.sub("", _TEX_WRAP.sub(r"\1", _TEX_WRAP.sub(r"\1", text)))


_ESCAPED_BREAK = re.compile(r"\\n(?=\\n|[^a-z]|$)")


def _own_item(text: str, letters: str, options: OptionTexts) -> str:
    """The reply up to a question it goes on to write itself ("... The answer is (C).\n\nQuestion:
    Which of ..."), to options of its own, or to a run of answers to other questions: what follows
    answers another item; without a copy of the option list."""
    text = without_echo(text, options)
    for cut in (new_question(text), other_options(text, options), answer_run(text)):
        if cut is not None and _statements(text[:cut], letters, options):
            return text[:cut]
    return text


def _after_thinking(text: str) -> str | None:
    """The text after a closed <think> block: the scratch work is not the answer."""
    parts = _THINK_END.split(text)
    return parts[-1] if len(parts) > 1 else None


# --- statements -------------------------------------------------------------------------------

_FIELD_KEYS = r"answer_letter|final_answer|answer_choice|answer_option|answer_label|correct_answer|correct_option|selected_answer|selected_option|chosen_answer|chosen_option|final_choice"
#: a quote may be escaped any number of times (JSON stored inside JSON: '{\\\\\\"answer_choice\\\\\\": \\"B\\\\\\"}'),
#: and a string value may itself be quoted ('{"answer": "\\"a\\""}': the label inside the quotes)
_FIELD = re.compile(
    rf"""(?:\\*["'](?:{_FIELD_KEYS}|answer|choice|option|letter|prediction|predicted|predicted_answer|predicted_option|pred|selected|selection|output|result|response|final|correct|label|respuesta|resposta|r[ée]ponse|risposta|antwort|答案|回答|正解|정답)\\*["']|(?:(?<=\\n)|\b)(?:{_FIELD_KEYS})\b\\*["']?)"""
    r"""\s*:\s*(?:\\*"\\+"([^"\n\\]+)\\+"\\*"|\\*"([^"\n]*?)\\*"|'([^'\n]*)'|(\d+)\b|(\(?[A-Za-z]\)?)(?!\w)(?![ \t]+(?-i:[a-z]))|(?:null|none|false)\b)""",
    _I,
)
#: keys that name what the answer is about rather than the answer ("diagnosis"), or an answer in
#: words the answer keys above do not hold: read only where the value is one label or one option's
#: whole text (a free-text diagnosis beside an answer field is the reply's reasoning, not a second
#: answer); never a key for what the reply sets aside ("incorrect_option", "distractor", "excluded")
_CONTENT_KEYS = (
    r"diagnosis|final_diagnosis|most_likely_diagnosis|likely_diagnosis|best_answer|best_option|best_choice|chosen|decision|correct_choice|final_option"
    r"|answer_index|answer_id|most_likely_answer|most_likely_option|recommended_option|recommendation|next_step|respuesta_correcta|resposta_correta"
    r"|opci[oó]n|op[çc][aã]o|alternativa|svar|正确答案|选项|選択肢"
)
_CONTENT_FIELD = re.compile(rf"""\\*["'](?:{_CONTENT_KEYS})\\*["']""" + _FIELD.pattern[_FIELD.pattern.index(r"\s*:\s*(?:") :], _I)
_BOXED = re.compile(r"\\boxed\s*\{([^{}]*)\}")


def _field_value(value: str, letters: str, options: OptionTexts) -> str | None:
    """A field's value: a label ("C", "C) Metformin"), an option's text ("no") or a sentence that
    states one ("The answer is C")."""
    label = _label_in_value(value, letters)
    if label is None and options:
        label = options.named(value)
    return label if label is not None or len(value.split()) < 3 else read_answer(value, letters, options.texts_raw).label


def _fields(text: str, letters: str, options: OptionTexts) -> list[_Said]:
    """The study's JSON answer field is the strongest statement; an unreadable value is no answer."""
    said = []
    for m in _FIELD.finditer(text):
        value = next((g for g in m.groups() if g), "")
        said.append(_Said(m.start(), m.end(), FIELD, _field_value(value, letters, options), why=_why_no_label(value, letters)))
    for m in _CONTENT_FIELD.finditer(text):
        value = next((g for g in m.groups() if g), "").strip()
        label = _label_in_value(value, letters) or (options.named(value, exact_only=True) if options else None)
        why = _why_no_label(value, letters)
        if label is not None or why == "several_options":
            said.append(_Said(m.start(), m.end(), FIELD, label, why=why))
    return said


#: a prompt's answer field written as a heading in capitals ("FINAL_ANSWER: Neurofilament", "FINAL
#: ANSWER: B", "ANSWER: Yes, ...", or "final_answer: ..."): its value runs to the line's end or to the
#: next such field ("FINAL_ANSWER: Uncertain RATIONALE: ...")
_HEADING_FIELD = re.compile(r"(?:^|(?<=\s))(?:FINAL[_ ]ANSWER|final_answer|ANSWER)[ \t]*:[ \t]*([^\n]+?)[ \t]*(?=[ \t][A-Z][A-Z_]{3,}[ \t]*:|\n|\Z)", re.M)
#: a question the reply goes on to invent and answer itself, after its own answer
_NEXT_QUESTION = re.compile(r"\n[ \t]*Question[ \t]*:", _I)
_HEADING_LABEL = re.compile(r"[(\[]?[A-Za-z0-9](?:[).:\]]|\Z)")
_YES_NO_OPENING = re.compile(r"(yes|no)(?=[ \t]*(?:[,.;:!]|$))", _I)


def _heading_field_value(value: str, letters: str, options: OptionTexts, question: str | None = None) -> str | None:
    """A heading field's value names an option when it is one label, one option's whole text, or
    (options exactly yes/no/maybe) opens with the word "Yes" or "No" ("Yes, fast foods can be
    ..."), or answers in the few words `worded_answer` reads ("Uncertain"; "Feasible" to "Is ...
    feasible ...?"); on other options, is a sentence holding one option's whole text and denying nothing."""
    value = _MARKUP.sub("", value).strip()
    # a label alone or marked as one ("B", "(B)", "B) Actin"); "A muscle marker" opens with a word
    label = _label_in_value(value, letters) if _HEADING_LABEL.match(value) else None
    if label is not None or not options:
        return label
    if (label := options.named(value.rstrip(". "), exact_only=True) or options.named(value, exact_only=True)) is not None:
        return label
    if (m := _YES_NO_OPENING.match(value)) is not None:
        return options.named(m.group(1), exact_only=True)
    if sorted(options.texts.values()) == ["maybe", "no", "yes"]:
        return options.named(word, exact_only=True) if (word := worded_answer(value, question)) is not None else None
    # a sentence holding one option's whole text and denying nothing ("Sensitivity ... indicates
    # the probability of a true positive result ..." for "True positive")
    words = value.split()
    if len(words) >= 3 and words[0].strip("().:").upper() not in letters and not _NEGATION_WORD.search(value) and not _EXAMPLE.search(value):
        return options.named_in(value)
    return None


#: an option's text given as an example, not as the answer: "a muscle marker such as desmin"
_EXAMPLE = re.compile(r"\b(?:such\s+as|e\.g\.|for\s+example|for\s+instance|including|like)\b", _I)


_NEGATION_WORD = re.compile(r"\b(?:not|no|never|neither|nor|none|unlike|except|rather\s+than|instead\s+of)\b|n['’]t\b", _I)


def _heading_fields(text: str, letters: str, options: OptionTexts, question: str | None = None) -> list[_Said]:
    """The heading answer fields that name an option, up to a question the reply invents after its
    first one (whose answer answers that question, not the item's)."""
    if "ANSWER" not in text and "final_answer" not in text:
        return []
    found = list(_HEADING_FIELD.finditer(text))
    if not found:
        return []
    nxt = _NEXT_QUESTION.search(text, found[0].end())
    stop = nxt.start() if nxt is not None else len(text)
    return [
        _Said(m.start(), m.end(), FIELD, label)
        for m in found
        if m.start() < stop and (label := _heading_field_value(m.group(1), letters, options, question)) is not None
    ]


def _tagged(text: str, letters: str, options: OptionTexts) -> list[_Said]:
    """The last answer tag ("<prediction>b</prediction>", "<answer>C</answer>") is a final answer:
    its value read as a field's is (one label, one option's text, or a sentence stating one); a
    value naming several options or none is a statement of none."""
    got = last_answer_tag(text)
    if got is None or not got[2]:
        return []
    start, end, value = got
    return [_Said(start, end, FINAL, _field_value(value, letters, options), why=_why_no_label(value, letters))]


def _why_no_label(value: str, letters: str) -> str:
    """Why a field or box that names no single option names none: several labels, or none."""
    return "several_options" if len(set(_LONE_LETTER.findall(value.upper())) & set(letters)) > 1 else "no_option"


_LONE_LETTER = re.compile(r"(?<![A-Z0-9])([A-Z0-9])(?![A-Z0-9])")


def _boxed(text: str, letters: str, options: OptionTexts) -> list[_Said]:
    """\\boxed{C} marks a final answer; a boxed number that is no label and names none of the
    item's options ("\\boxed{0.58}" for a recombination frequency) is a computed value."""
    said = []
    for m in _BOXED.finditer(text):
        value = m.group(1).strip()
        # a box holds a label, or one option's whole text ("\\boxed{basal cell carcinoma}")
        label = _label_in_value(value, letters) or _boxed_text(value, options)
        if value and not (label is None and options and _NUMBER.fullmatch(value) and options.named(value) is None):
            said.append(_Said(m.start(), m.end(), FINAL, label, why=_why_no_label(value, letters)))
    return said


_NUMBER = re.compile(r"[-+]?(?:\d+(?:[.,]\d+)?|[.,]\d+)\s*%?")


def _boxed_text(value: str, options: OptionTexts) -> str | None:
    """The option whose whole text a box holds ("\\boxed{basal cell carcinoma}"); a number is a value."""
    return options.named(value, exact_only=True) if options and not _NUMBER.fullmatch(value) else None


_FILL = (
    r"""(?:[\s:：=>#,"'“”‘’(\[\-–—→]|\bno\.|\b(?:option|choice|letter|number|answer|that|it['’]?s|it\s+is|i\s+think|i\s+believe|i['’]d\s+say|i\s+would\s+say"""
    r"""|one|probably|likely|most\s+likely|clearly|definitely|certainly|indeed|actually|therefore|thus|then|still|either|both|between|simply|just)\b)*"""
)
_NOUN = r"(?:option|choice|selection|response|pick)"
_QUAL = r"(?:correct|right|best|updated|revised|amended|evidence[- ]based|guideline[- ](?:based|concordant)|medically\s+(?:correct|accurate|sound)|single\s+best|most\s+(?:likely|appropriate|accurate)|my|our|final|true|real|actual|selected|chosen|predicted)"
_SURE = r"(?:is|would\s+be|will\s+be|should\s+be|must\s+be|has\s+to\s+be|remains)\b"
_UNSURE = r"(?:might\s+be|could\s+be|may\s+be|seems\s+to\s+be|appears\s+to\s+be)\b"
_ABOUT = r"(?:\s+(?:to\s+(?:this|the)\s+question(?:\s+above)?|here|for\s+this\s+(?:patient|question|case|item)))?"
_SEP = r"[ \t]*(?:[:：=→]|->|[-–—](?=\s)|,\s*which\s+is\b|\n)"
#: ... "Answer Choice: A.", "Answer option: D" (the answer's noun and the option's, one thing)
_ANSWER_NOUN = (
    rf"\b(?:(?:{_QUAL}\s+)*(?:answer(?:\s+(?:choice|option|letter|selection)\b)?|ans\b\.?(?=\s*[:：=]))|(?:{_QUAL}\s+)+(?:answer\s+)?{_NOUN})\b{_ABOUT}"
)
_CONTENT = (
    r"(?:next\s+(?:best\s+)?step(?:\s+in\s+management)?|diagnosis|treatment|management|intervention|explanation|drug|medication|test|cause|mechanism"
    r"|pathophysiology|pathogen|organism|agent|etiology|aetiology|finding|approach|option|choice|statement|lesion|condition|step|therapy|investigation|complication|association|match|factor)"
)

#: "The correct answers are A, F and I", "the correct statements are:\n- (A) ...\n- (D) ...", "the
#: remaining options are (D), (F) and (G)", "the most likely additional clinical findings would be:",
#: "the true statements regarding naloxone are A and J": a plural names several answers to a
#: one-answer item, a hedge however many labels follow
_SEVERAL = re.compile(
    rf"\b(?:{_QUAL}\s+)*(?:\w+\s+){{0,3}}(?:answers|options|choices|causes|diagnoses|treatments|explanations|factors|mechanisms|statements|steps|findings|features|vaccines|medications|interventions)"
    r"(?:\s+(?:regarding|about|of|for|in|during)(?:\s+[\w-]+){1,4}?)?\s+(?:are|would\s+be)\b" + _FILL,
    _I,
)

#: ... but not the case's own: "These findings are classic for ...", "Her symptoms are ..."
_CASE_PLURAL = re.compile(
    r"\b(?:these|those|such|her|his|their|its|the\s+patient['’]s)\s+(?:\w+\s+){0,2}?(?:causes|findings|features|factors|mechanisms|steps|medications|interventions|vaccines|treatments|explanations)\b",
    _I,
)

#: "the best possible answer from the given options is:\n\n(A) Optic disk", "The most probable
#: diagnosis, considering the findings, is:\n(A) ...", "the best course of action is:\n\n(C) ...": a
#: phrase about the answer (or a superlative subject) that ends in "is:",
#: the label opening the next line (a phrase that denies or excepts is none; a second label line
#: after it makes a list, a hedge)
_IS_COLON_TAIL = r"(?:(?!\b(?:not|incorrect|wrong|false|except|least|if)\b)[^.!?\n:]){0,80}?\s(?:is|would\s+be)[ \t]*:[ \t]*\n\s*"
#: ... an answer when the phrase is about the answer, option, choice or statement; a leaning when it
#: is about a diagnosis, a drug, a course of action (a later "the best choice is: D" outweighs it)
_IS_COLON_ANSWER = re.compile(r"\b(?:answer|option|choice|statement)\b" + _IS_COLON_TAIL, _I)
_IS_COLON = re.compile(rf"(?:\b{_CONTENT}\b|\bthe\s+(?:most\s+\w+|best|correct|right)\b)" + _IS_COLON_TAIL, _I)

# (cue, strength, whether the label must end its phrase); the label follows the cue
_CUES: tuple[tuple[re.Pattern[str], int, bool], ...] = (
    # "Final answer: C", "my final answer is (C)"
    (
        re.compile(
            rf"\b(?:final|ultimate)\s+(?:answer|choice|selection|response)\b{_ABOUT}(?:\s+(?:is|would\s+be|will\s+be)\b)?{_FILL}(?:the\s+(?:correct\s+|best\s+)?answer\s+is\b{_FILL})?",
            _I,
        ),
        FINAL,
        False,
    ),
    # "The answer is closest to (A)" (a computed value between the options)
    (re.compile(rf"{_ANSWER_NOUN}\s+(?:is|would\s+be)\s+(?:closest|nearest)\s+to{_FILL}", _I), LEANING, False),
    # "Answer: C", "The correct answer is C", "The correct option is C) Metformin", "**Answer**\nC"
    (re.compile(rf"{_ANSWER_NOUN}(?:\s+{_SURE}|{_SEP}|[ \t]+(?=[(\[])|,[^,.!?\n]{{1,100}},\s+{_SURE}){_FILL}", _I), ANSWER, False),
    # "I'd go with C", "I choose B", "Going with D"
    (
        re.compile(
            rf"(?:\b(?:i|we)(?:['’]d|['’]ll|['’]m\s+going\s+to|\s+(?:would|will|shall|must|have\s+to|had\s+to|am\s+going\s+to))?\s+(?:go\s+with|went\s+with|choose|chose|pick|picked|select|selected|opt\s+for|say|answer|mark|settle\s+on|(?:still\s+)?maintain|(?:still\s+)?stand\s+by)|\b(?:i['’]m\s+|i\s+am\s+)?going\s+with|\blet['’]s\s+go\s+with)\b{_FILL}",
            _I,
        ),
        ANSWER,
        False,
    ),
    # "answer D." without a colon (the label ends the phrase: "the answer A patient ..." is no answer)
    (re.compile(rf"\b(?:{_QUAL}\s+)*answer[ \t]+", _I), ANSWER, True),
    # "A reasonable choice would be C"
    (re.compile(rf"\b(?:reasonable|appropriate|preferred|safest|better|good|sensible)\s+(?:answer|option|choice)\s+{_SURE}{_FILL}", _I), LEANING, False),
    # "Option: C" opening a line
    (re.compile(rf"^[ \t]*(?:option|choice|letter)[ \t]*:{_FILL}", _I | re.M), ANSWER, False),
    # "The answer might be B"
    (re.compile(rf"{_ANSWER_NOUN}\s+{_UNSURE}{_FILL}", _I), LEANING, False),
    # "The most likely diagnosis is C) Sarcoidosis"
    (
        re.compile(
            rf"\b(?:{_QUAL}\s+)+(?:(?:initial|first|next|definitive|underlying|immediate|predisposing|contributing|risk)\s+)?{_CONTENT}(?:[ \t]+[^.!?\n:]{{0,80}}?)?(?:\s+(?:is|would\s+be)\b|[ \t]*:){_FILL}",
            _I,
        ),
        LEANING,
        False,
    ),
    # Spanish: "El diagnóstico más probable es ...", "La afirmación incorrecta es la número 2", "La
    # afirmación INCORRECTA es:\n\n2. <its text>", "La recomendación más adecuada sería el tratamiento con <text>"
    (
        re.compile(
            r"\b(?:el|la)\s+(?:principal\s+|mejor\s+)?(?:diagn[oó]stico|tratamiento|opci[oó]n|causa|afirmaci[oó]n|enunciado|sospecha(?:\s+diagn[oó]stica)?|respuesta|prueba|actitud|recomendaci[oó]n|conducta)(?:\s+(?:(?!\bno\b)[^.!?\n:]){0,60}?)?\s+(?:es|ser[ií]a)\b(?:\s+(?:la|el))?(?:\s+(?:n[uú]mero|opci[oó]n))?(?:[ \t]*[:：][ \t]*\n\s*|[ \t]*[:：]?[ \t]*)",
            _I,
        ),
        LEANING,
        False,
    ),
    # "the best possible answer from the given options is:\n\n(A) Optic disk"
    (_IS_COLON_ANSWER, ANSWER, False),
    (_IS_COLON, LEANING, False),
    # "The correct answers are A, F and I": several answers to a one-answer item
    (_SEVERAL, ANSWER, False),
    # "The patient needs option B"
    (re.compile(r"\b(?:needs?|requires?|recommend|favou?r|prefer)\s+(?:option|choice)\s+", _I), LEANING, False),
    # "you make a compelling case for Option I", "a solid case for dissatisfaction (Option A)": the
    # reply judges the case for the option strong (not "no compelling case for")
    (
        re.compile(
            r"(?<!\bno\s)(?<!\bnot\s)\b(?:a|your|the)\s+(?:very\s+)?(?:solid|strong|compelling|convincing|persuasive)\s+case\s+for\s+(?:(?:[\w'’-]+\s+){0,6}?\((?=option\s+[A-Za-z0-9]\))|)option\s+",
            _I,
        ),
        LEANING,
        False,
    ),
    # "By elimination, D", "which leaves C"
    (re.compile(rf"\b(?:by\s+(?:(?:the\s+)?process\s+of\s+)?elimination|(?:that|which|this)\s+leaves(?:\s+(?:us\s+with|only))?){_FILL}", _I), ANSWER, False),
    # "Eliminating A, B and D leaves C." (the label ends the phrase: "leaves A as ..." is no answer)
    (re.compile(r"\bleaves?(?:\s+(?:us\s+with|only|just))?(?:\s+(?:option|choice))?[ \t]+", _I), ANSWER, True),
    # "..., which is option B.", "that is choice C"
    (re.compile(r"\b(?:which|that|this)\s+is\s+(?:option|choice|answer)\s+", _I), LEANING, False),
    # "Conclusion: C", "Correct: D", "Prediction: A" opening a line
    (
        re.compile(
            rf"^[ \t>#•-]*(?:conclusion|result|prediction|output|selection|pick|correct|correct\s+(?:option|choice|response)|response){_SEP}{_FILL}", _I | re.M
        ),
        ANSWER,
        False,
    ),
    # other languages: "答案：C", "最终答案：C", "故选C", "答え: c", "正解は b", "Respuesta correcta: 4",
    # "La respuesta correcta es la 3", "la bonne réponse est B", "Die richtige Antwort ist C", "A resposta correta é D"
    (re.compile(r"(?:最终|最終|最后)(?:的)?(?:答案|答え|选择|選択)(?:是|为|は|应为)?[\s:：=]*", _I), FINAL, False),
    (
        re.compile(
            r"(?:(?:正确|正確|最佳|标准|參考|参考)(?:的)?)?答案(?:应该?|应当|應)?(?:是|为|為|选|選)?[\s:：=】」』\]]*|(?<![回解])答[:：][\s]*|(?:答え|正解|解答)(?:は)?[\s:：=]*",
            _I,
        ),
        ANSWER,
        False,
    ),
    (
        re.compile(
            r"(?:正确|正確|最佳|最(?:符合|合适|合理|恰当|可能)(?:题意)?)(?:的)?(?:选项|選項|答案)(?:是|为|為|应为)?[\s:：=]*|(?:故|所以|因此|因而|应|应该|答案|我)选(?:择)?[\s:：=]*",
            _I,
        ),
        ANSWER,
        False,
    ),
    (re.compile(r"最も[^。\n]{0,20}?(?:もの|の|選択肢)は[\s、､,]*", _I), ANSWER, False),
    (re.compile(r"回答[\s:：=】」』\]]*", _I), ANSWER, False),
    # "因此，不恰当的急诊处置是E选项", "定位应该是A选项": an option named as what the subject is
    (re.compile(r"(?:应该?是|应为|就是|即为|是|为|选择)\s*(?=[A-Za-z]\s*(?:选项|選項|项|項)(?![^。\n]{0,6}?(?:或|和|、|不)))", _I), LEANING, False),
    # Korean: "정답: D", "따라서 정답은 C입니다", "가장 적절한 치료법은 ...입니다"
    (re.compile(r"(?:최종\s*)?정답(?:은|는)?[\s:：=]*", _I), ANSWER, False),
    (re.compile(r"가장\s*(?:적절한|적합한|옳은|알맞은|가능성이\s*높은|유력한)\s*[^\s.。]{0,12}(?:은|는)\s*", _I), LEANING, False),
    # Portuguese, Spanish, French, Italian: "Resposta: B", "A alternativa correta é a \"a\"", "O item
    # correto é o b", "la opción más adecuada es la B", "l'option correcte est B" (a noun for an
    # option names it as the answer only with a claim word: "Opção b: ..." heads its analysis)
    (NOUN_FIRST, ANSWER, False),
    (NOUN_COLON, ANSWER, False),
    (ANSWER_COLON, ANSWER, False),
    (NOUN_FIRST_LEANING, LEANING, False),
    # Swedish, Norwegian, Danish: "Svar: B", "Svaret är C", "Det rätta svaret er D"
    (
        re.compile(
            r"\b(?:(?:det[ \t]+)?(?:rätta|korrekta|riktige|rigtige|korrekte|rätt|korrekt)[ \t]+)?svar(?:et)?(?:[ \t]*[:：]|[ \t]+(?:är|er)\b)[ \t]*", _I
        ),
        ANSWER,
        False,
    ),
    # a bracketed note giving the answer: "... with E. faecalis (Answer option 2).", "(correct answer: B)"
    (re.compile(r"\((?:correct\s+)?answer(?:\s+(?:choice|option))?[ \t]*[:：]?[ \t]*(?=[(\[]?[A-Za-z0-9][)\]]?[ \t]*\))", _I), ANSWER, False),
    # Swahili: "Jibu ni (B)", "Jibu: C", "Jibu sahihi ni D", "chaguo sahihi ni D" (the answer, the right choice)
    (re.compile(r"\b(?:jibu(?:[ \t]+(?:sahihi|bora|la[ \t]+mwisho))?|chaguo[ \t]+(?:sahihi|bora))(?:[ \t]*[:：]|[ \t]+ni\b)[ \t]*", _I), ANSWER, False),
    # "Recommendation: Option B", "Decision: Trial A" opening a line
    (
        re.compile(
            rf"^[ \t>#•-]*(?:recommendation|recommended\s+(?:option|choice)|decision|verdict|choice|selection){_SEP}[ \t]*(?:(?:option|choice|trial|arm)[ \t]+)?",
            _I | re.M,
        ),
        ANSWER,
        False,
    ),
    # "which is covered in option (E)", "listed as option C", "..., as indicated by option (C)."
    (re.compile(r"\b(?:covered|included|listed|given|described|(?<=\bas\s)indicated)\s+(?:in|by|as|under)\s+(?:option|choice)\s+", _I), LEANING, False),
    (
        re.compile(
            r"\b(?:la\s+)?respuesta(?:\s+(?:correcta|final|incorrecta|m[aá]s\s+\w+))?(?:\s+es)?(?:\s+la)?(?:\s+(?:opci[oó]n|n[uú]mero)){0,2}[ \t]*[:：]?[ \t\n]*",
            _I,
        ),
        ANSWER,
        False,
    ),
    (
        re.compile(r"\b(?:la\s+)?(?:opci[oó]n|alternativa)\s+(?:correcta|m[aá]s\s+\w+)\s+es(?:\s+la)?(?:\s+(?:opci[oó]n|n[uú]mero))?[ \t]*[:：]?[ \t]*", _I),
        ANSWER,
        False,
    ),
    (
        re.compile(
            r"\b(?:la\s+(?:bonne\s+)?r[ée]ponse(?:\s+(?:correcte|finale))?\s+est|(?:die\s+)?(?:richtige\s+|korrekte\s+)?antwort(?:\s+(?:ist|lautet))?|a\s+resposta(?:\s+correta)?\s+[ée]|la\s+risposta(?:\s+(?:corretta|giusta))?\s+[èe])[ \t]*[:：]?[ \t]*",
            _I,
        ),
        ANSWER,
        False,
    ),
    # "Probably B, but I'm not certain" opening a line
    (re.compile(r"^[ \t]*(?:probably|most\s+likely|likely|maybe|perhaps)[ \t,:]+", _I | re.M), LEANING, False),
    # "... but it's A." (the label ends the phrase: "it's a good question" is no answer)
    (re.compile(r"\bit(?:['’]s|\s+is)\s+(?:(?:definitely|clearly|probably|likely|most\s+likely|option|choice)\s+)*", _I), LEANING, True),
    # "Therefore, C." (the label ends the phrase: "So B is wrong" is no answer)
    (
        re.compile(
            r"\b(?:so|therefore|thus|hence|in\s+conclusion|ultimately|overall|on\s+reflection|on\s+second\s+thought)[ \t]*[,:]?[ \t]+(?:(?:option|choice)[ \t]+)?",
            _I,
        ),
        ANSWER,
        True,
    ),
    # "which corresponds to option C", "this matches option B"
    (re.compile(r"\b(?:corresponds?\s+to|matches|fits)\s+(?:option|choice|answer)\s+", _I), LEANING, False),
    # "... evidence-based practice points to option D", "the evidence supports option C"
    (re.compile(r"\b(?:points?|pointing)\s+(?:to|towards?)\s+(?:option|choice|answer)\s+|\bsupports?\s+(?:option|choice)\s+", _I), ANSWER, False),
    # "B? No — C.", "So the answer is B? No, it's C." (the question is not the reply's answer; the
    # label ends the phrase)
    (
        re.compile(
            r"\?[ \t]*(?:(?:no|nope)\b|不是|不对|不)[ \t]*[,.;:!—–\-、]*[ \t]*(?:(?:it['’]s|it\s+is|(?:the\s+)?answer\s+is|rather|actually|instead|应该是|应是|而是|是)[ \t,:]*)*",
            _I,
        ),
        ANSWER,
        True,
    ),
    # "I think C.", "leaning towards C" (the label ends the phrase: "I think B is wrong" is no answer)
    (
        re.compile(
            r"\b(?:i\s+(?:think|believe|guess|suspect|feel)|i['’]m\s+leaning|leaning|i(?:['’]d|\s+would)?\s+lean)\s+(?:towards?\s+|to\s+)?(?:(?:it['’]s|it\s+is|that|option|choice)\s+)*",
            _I,
        ),
        LEANING,
        True,
    ),
)

_REASON_WORDS = frozenset(["because", "since", "given"])
_NAMED_TEXT = re.compile(r"([\w ,'’/-]{1,60}?)\s*\((?:option|choice)?\s*([A-Za-z0-9])\)", _I)
_NOT_OPTION_TEXT = re.compile(
    r"\b(?:not|because|since|as|which|that|when|while|where|if|context|claims?|eliminat\w*|exclud\w*|rule\s+out|incorrect|wrong)\b|n['’]t\b", _I
)
_DISOWNED = re.compile(
    r"\b(?:wrong|incorrect|tempting|obvious|trap|misleading|suggested|proposed|claimed|expected|other|alternative|naive|initial|original|previous|intuitive|their|its|another)\s+$"
    # "look at each answer choice:", "this answer choice (D) does not ...": an option referred to
    r"|\b(?:each|every|this|that|these|those)\s+(?=$)"
    # a step's heading: "5. Choose the best answer:", "Select the correct option"
    r"|(?:^|\n)[ \t>#*•-]*(?:(?:step\s+)?\d{1,2}[.):]\s*)?(?:choose|select|pick|identify|determine)\s+(?:the\s+)?$",
    _I,
)
_SENTENCE_END = re.compile(r"[.!?\n]")


def _named_by_text(text: str, i: int, letters: str, options: OptionTexts) -> tuple[str | None, int] | None:
    """'The answer is Metformin (C)': the option's text, then its label in parentheses."""
    m = _NAMED_TEXT.match(text, i)
    if not m or len(m.group(1).split()) > 6 or _NOT_OPTION_TEXT.search(m.group(1)) or m.group(2).upper() not in letters:
        return None
    label = m.group(2).upper()
    stop = _SENTENCE_END.search(text, m.end())
    others = {g.upper() for g in PAREN_LABEL.findall(text, m.end(), stop.start() if stop else len(text))} & set(letters)
    # "Metformin (C) or insulin (D)" names two options; "riboflavin (B)" where riboflavin is C's text, two
    said = norm_text(m.group(1))
    if options:
        named = {k for k, t in options.texts.items() if said == t or said.endswith(" " + t)}
        own = {w for w in options.texts.get(label, "").split() if len(w) >= 4}
        # "riboflavin (B)" where riboflavin is C's text, "we can eliminate (A)": not option B, not A
        if not named <= {label}:
            return None, m.end()
        if not named and not own & set(said.split()):
            return None
    return (label if others <= {label} else None), m.end()


_LABEL_DOT = re.compile(r"[ \t]*[(\[]?([A-Za-z0-9])[.):\]][ \t]+")
#: "... C. Dengue ... and E. Yellow fever", "E: Fingerstick glucose level followed by B: CT of the head"
_ANOTHER = re.compile(
    r"[^!?\n]{0,120}?\b(?:and|or|as\s+well\s+as|plus|&|followed\s+by)\s+(?:option\s+|choice\s+)?[(\[]?([A-Za-z0-9])[.):\]](?=[ \t]+[A-Za-z0-9])", _I
)
#: the next line opens with another label: "the answer would be:\na: femoral vein\nb: internal jugular vein",
#: or does after a line that only joins them: "the correct answer is:\nA: ...\nAnd\nJ: ..."
_NEXT_LINE_LABEL = re.compile(r"[^\n]*\n(?:[ \t>#•*-]*(?:and|or|plus|&)[ \t:]*\n)?[ \t>#•*-]*[(\[]?([A-Za-z0-9])[.):\]][ \t]", _I)
#: "The answer is (None of the above)", "the answer is not among the options"
_NONE_OF = re.compile(
    r"[ \t]*[(\[\"']?[ \t]*(?:none\s+of\s+(?:the\s+)?(?:above|these|them|the\s+(?:options|choices))|not\s+(?:listed|among|in\s+the\s+(?:options|choices))|no\s+(?:correct\s+)?(?:option|answer|choice))",
    _I,
)


#: "Answer: (A) IRV (...), (B) ERV (...), (D) TV (...)": more labelled options listed after a comma
_LISTED = re.compile(r"[^.!?\n]{0,120}?[,;][ \t]*(?:and[ \t]+)?[(\[]([A-Za-z0-9])[)\]](?=[ \t]+[A-Za-z0-9])", _I)


def _names_another(text: str, end: int, label: str, letters: str) -> bool:
    """'The correct answer is C. Dengue ... and E. Yellow fever.', 'Answer: (A) IRV, (B) ERV': a
    second option in the sentence."""
    return any((m := p.match(text, end)) and m.group(1).upper() in letters and m.group(1).upper() != label for p in (_ANOTHER, _LISTED))


def _cued(text: str, letters: str, options: OptionTexts) -> list[_Said]:
    """Statements where a cue introduces the label: "Answer: C", "the answer is (C)", "I'd go with C"."""
    said = []
    for pattern, tier, bare in _CUES:
        for m in pattern.finditer(text):
            # "the wrong answer is B", "the tempting answer is B" are not the reply's answer
            if _DISOWNED.search(text, max(0, m.start() - 30), m.start()):
                continue
            got: tuple[str | None, int] | None = _label_at(text, m.end(), letters)
            if got is None and tier >= ANSWER and (no := _NONE_OF.match(text, m.end())):
                said.append(_Said(m.start(), no.end(), tier, None, why="no_option"))
                continue
            if (
                got is None
                and options
                and (lt := _LABEL_DOT.match(text, m.end()))
                and lt.group(1).upper() in letters
                and options.follows(lt.group(1).upper(), text, lt.end())
            ):
                got = (lt.group(1).upper(), lt.end(1))
            if got is None and tier >= ANSWER:
                got = _named_by_text(text, m.end(), letters, options)
            if got is None and options:
                # "Answer: Olanzapine.", 'the answer is "no"': the option named by its text (from
                # the cue's end, or a word or two back when the cue swallowed one: '... is "no."')
                starts = [m.end()] + [w.start() for w in re.finditer(r"\S+", text[m.start() : m.end()])][-2:][::-1]
                got = next((g for p in starts if (g := options.at(text, p if p == m.end() else m.start() + p, exact_only=bare)) is not None), None)
                if got is not None:
                    said.append(_Said(m.start(), got[1], tier, got[0]))
                    continue
            nxt_word = _NEXT_WORD.match(text, got[1] + (text[got[1] : got[1] + 1] in ")]>")) if got is not None else None
            # ... a label ending its phrase may be followed by its reason ("I would lean towards option (F) because ...")
            if got is None or (bare and nxt_word and nxt_word.group(1).lower() not in _REASON_WORDS):
                continue
            label, end = got
            why = "hedged"
            # "These findings are classic for liver cirrhosis (option A)": the case's findings, not several answers
            if pattern is _SEVERAL and _CASE_PLURAL.search(m.group(0)):
                continue
            if label is not None and (pattern is _SEVERAL or _hedged(text, end, label, letters) or _names_another(text, end, label, letters)):
                label, why = None, "several_options"
            nxt = _NEXT_LINE_LABEL.match(text, end)
            if (
                label is not None
                and nxt
                and nxt.group(1).upper() in letters
                and nxt.group(1).upper() != label
                and (pattern in (_IS_COLON, _IS_COLON_ANSWER) or not text[end : nxt.start(1)].strip(" \t\n.:)").count("\n"))
            ):
                label, why = None, "several_options"
            said.append(_Said(m.start(), end, tier, label, why=why))
    return said


_CLAIM = re.compile(
    r"(?<![\w'’.-])((?:option|choice|letter|answer|trial|arm)\s+)?([(\[]?)([A-Za-z0-9])([)\]]?)"
    # an aside (only after an option named as one) between it and its claim: "Option F, stating that \"...\", remains the best
    # answer", "option A (dissatisfaction with ...) is the most compelling answer", "option (F) – \"1\" – is"
    r"(?(1)(?P<aside>\s*,[^.!?\n]{1,120}?,[\"”]?|[ \t]*\([^()\n]{1,80}\)|[ \t]+[–—-][^.!?\n]{1,60}?[–—-])?|)"
    r"[ \t]+(?:still\s+)?(?:is|would\s+be|must\s+be|seems\s+to\s+be|remains|appears\s+to\s+be|being|should\s+be\s+(?:regarded|considered|seen)\s+as)\s+"
    r"(?:(?:definitely|clearly|certainly|probably|likely|indeed|therefore|thus|still|generally|overall)\s+)?(?:(?:the|my|our)\s+)?"
    r"(?P<quals>(?:(?:final|correct|right|best|better|single\s+best|evidence[- ]based|(?:most|more)\s+(?:likely|appropriate|prudent|reasonable|suitable|accurate|favou?rable|compelling|precise))(?:\s+and)?\s+)*)"
    r"(?P<noun>answer|option|choice|response|one|fit|representation|" + _CONTENT + r")\b",
    _I,
)
_RIGHT = re.compile(
    r"(?<![\w'’.-])((?:option|choice|letter|answer|trial|arm)\s+)?([(\[]?)([A-Za-z0-9])([)\]]?)[ \t]+(?:is|seems|appears|may\s+be|might\s+be|would\s+be)(?:\s+to\s+be)?\s+"
    r"(?:(?:definitely|clearly|certainly|probably|likely|indeed|therefore|thus|generally|overall)\s+)?(?:the\s+)?(?:correct|right|best|(?:most|more)\s+(?:appropriate|likely|prudent|reasonable|suitable|sensible))"
    r"(?:\s+(?:(?:first|next|initial|immediate)\s+)?(?:step|answer|option|choice|treatment|management|diagnosis|test|intervention)(?:\s+in\s+management)?)?"
    r"(?=[ \t]*(?:[.!,;:)\n]|$|because|since|as|given|here|to\s|for\s|[-–—]))",
    _I,
)
#: Swedish, Norwegian, Danish: "Alternativ D, alla ovanstående, är korrekt", "alternativ B er riktig",
#: "Alternativ C är det mest lämpliga" (a leaning, as "Option B is correct" is; "är inte korrekt" is none)
_NORDIC_RIGHT = re.compile(
    r"\balternativ(?:et)?[ \t]+[(\[]?([A-Za-z0-9])[)\]]?(?:[ \t]*,[^,.!?\n]{1,80}?,)?[ \t]+(?:är|er)[ \t]+(?:det[ \t]+|den[ \t]+)?"
    r"(?:korrekt[ae]?|rätt[a]?|riktig[et]?|rigtig[et]?|mest[ \t]+(?:lämpliga|sannolika|passende|sandsynlige|sannsynlige)|bästa|beste|bedste)(?![\w])",
    _I,
)
_CLAUSE_OPENS = re.compile(
    r"(?:^|[.!?;:,\n–—]|\s-|\b(?:so|thus|therefore|hence|then|clearly|think|believe|feel|guess|say|that|and|no|yes|actually|wait|ultimately|overall|finally)\b)[\s\"'“‘(\[>#-]*$",
    _I,
)


_MAKING = re.compile(
    r"\b(?:making|makes|leaving|leaves|rendering)\s+(?:(?:option|choice)\s+)?[(\[]?([A-Za-z0-9])[)\]]?\s+(?:as\s+)?(?:the\s+)?(?:correct|right|best|only\s+(?:correct|remaining)|most\s+(?:likely|appropriate))\s+(?:answer|option|choice)\b",
    _I,
)
_ROMANCE_CLAIMS = (LABEL_FIRST, LABEL_FIRST_LEANING)
_IS_PAREN = re.compile(r"\b(?:is|are|would\s+be)\s+(?:option\s+|choice\s+)?\(([A-Za-z0-9])\)(?=[ \t]*(?:[.!\n]|$))", _I)


#: ... the label perhaps in quotes: "is 'D': Aqueduct of Sylvius"
_IS_LABEL_TEXT = re.compile(r"\b(?:is|are|be|was)[ \t]+(?:option[ \t]+|choice[ \t]+)?(?:[(\[]|(?<=\s)['‘](?=\w['’]))?([A-Za-z0-9])['’]?[.):\]][ \t]+", _I)


#: the next label of an inline list of options: ", B. cognitive/behavioral interventions"
_NEXT_IN_LIST = re.compile(r"[ \t]*[,;][ \t]*(?:(?:and|or)[ \t]+)?[(\[]?([A-Za-z0-9])[.):\]][ \t]+")


def _lists_on(text: str, at: int, label: str, letters: str, options: OptionTexts) -> bool:
    """Whether the option's own text at `at` is followed by another label and its own text ("The
    options are A. talking to a patient, B. cognitive/behavioral interventions, ..."): the reply
    restates the options, it names none."""
    own = options.texts_raw.get(label, "")
    end = at + len(own) if text[at : at + len(own)].casefold() == own.casefold() else -1
    m = _NEXT_IN_LIST.match(text, end) if end >= 0 else None
    return m is not None and (nxt := m.group(1).upper()) in letters and nxt != label and options.follows(nxt, text, m.end())


def _named_with_text(text: str, letters: str, options: OptionTexts) -> list[_Said]:
    """With the item's option texts: "... in Africa is B. Hepatitis B virus" (a label then its own
    text) is an answer; "acute renal failure (I)" (a text then its own label) a leaning."""
    if not options:
        return []
    said = []
    for m in _IS_LABEL_TEXT.finditer(text):
        label = m.group(1).upper()
        if label in letters and options.follows(label, text, m.end()) and not _lists_on(text, m.end(), label, letters, options):
            said.append(_Said(m.start(), m.end(), ANSWER, None if _names_another(text, m.end(1), label, letters) else label, why="several_options"))
    said += [_Said(a, b, LEANING, label) for a, b, label in options.mentions(text) if label in letters and not _CONCEDED.match(_sentence_after(text, b))]
    # a numbered answer list ("Please select the correct answer for each question.\n1. (A) Eplerenone
    # ...\n6. (D) Abnormal left ventricular relaxation"): the one line giving this item's label with
    # its own text answers this item (lines giving several of its options restate them)
    numbered = [(m, m.group(1).upper()) for m in _NUMBERED_LINE.finditer(text)]
    own = [(m, label) for m, label in numbered if label in letters and options.named(m.group(2), exact_only=True) == label]
    if len({label for _, label in own}) == 1:
        said += [_Said(m.start(), m.end(), ANSWER, label) for m, label in own]
    # a label opening a line or glued after a sentence ("... as soon as possible.d: \"how do you
    # understand diabetes?\"", "d: bartholin's gland inflammation (...)"), then its own whole text:
    # an answer when it is the only option so given (several restate the options)
    given = [(m, m.group(1).upper()) for m in _LABEL_THEN_TEXT.finditer(text) if _gives_own_text(text, m, letters, options)]
    if len({label for _, label in given}) == 1:
        said += [
            _Said(m.start(1), m.end(), ANSWER, None if _names_another(text, m.end(), label, letters) else label, why="several_options") for m, label in given
        ]
    said += _inline_label_text(text, letters, options)
    # the reply opening with a label and its own option's text ("1.E. Atrial myxoma The patient's
    # ...", "B：房室传导阻滞是...", glued in Chinese) answers, when no other label opens a line
    if (first := _OPENS_LABELLED.match(text)) and (label := first.group(1).upper()) in letters and _opens_own_text(text, first.end(), label, options):
        others = {m.group(1).upper() for m in (*LABEL_LINE.finditer(text), *_OPENER.finditer(text))} & set(letters)
        if others <= {label}:
            # "A. Enterovirus 70 and D. Coxsackie A24", "d) Comitantes o incomitantes.": a second option or thing after it
            several = _names_another(text, first.end(1), label, letters) or options.joined_after(label, text[first.end() :].split("\n", 1)[0])
            said.append(_Said(first.start(1), first.end(), ANSWER, None if several else label, why="several_options"))
    # a line giving one option's label with another option's text ("D. EEG" where EEG is C), or
    # with the start of another option's text cut inside a word ("D) Hyperpermeability of
    # superficial dermal microvas" where that begins C), contradicts itself: an answer with no
    # option, which leaves the reply ambiguous
    for m in LABEL_LINE.finditer(text):
        label, named = m.group(1).upper(), options.named(m.group(2), exact_only=True)
        if named is None and options.texts:
            named = options.cut_short(m.group(2))
        if label in letters and named is not None and named != label:
            said.append(_Said(m.start(), m.end(), ANSWER, None, contra=True, why="contradicts"))
    return said


#: a bracketed label inside a sentence, then text: "... will result in (C) increased renal blood flow, ..."
_PAREN_THEN_TEXT = re.compile(r"(?<=[ \t])\(([A-Za-z0-9])\)[ \t]+")
_SENTENCE_STOP = re.compile(r"[.!?](?=\s|$)|\n")


def _inline_label_text(text: str, letters: str, options: OptionTexts) -> list[_Said]:
    """ "... it is likely that lisinopril will result in (C) increased renal blood flow, decreased
    ...": a bracketed label inside a sentence followed by its own option's whole text to the
    sentence's end, the only option label the reply names, in a clause denying nothing: a leaning."""
    found = [m for m in _PAREN_THEN_TEXT.finditer(text) if m.group(1).upper() in letters]
    named = {m.group(1).upper() for m in found} | ({g.upper() for g in _BRACKETED_LABEL.findall(text)} & set(letters))
    if len(named) != 1:
        return []
    said = []
    for m in found:
        label = m.group(1).upper()
        stop = _SENTENCE_STOP.search(text, m.end())
        rest = text[m.end() : stop.start() if stop else len(text)]
        if options.named(rest, exact_only=True) == label and not _NEGATION_WORD.search(_clause_before(text, m.start())):
            said.append(_Said(m.start(), m.end() + len(rest), LEANING, label))
    return said


def _opens_own_text(text: str, i: int, label: str, options: OptionTexts) -> bool:
    """Whether the text at i opens with the option's own text (in Chinese glued to what follows:
    "房室传导阻滞是...")."""
    own = options.texts.get(label, "")
    return options.follows(label, text, i) or (bool(_CJK.match(own)) and norm_text(text[i : i + len(own) + 2]).startswith(own))


_CJK = re.compile(r"[\u4e00-\u9fff]")


def _gives_own_text(text: str, m: re.Match[str], letters: str, options: OptionTexts) -> bool:
    """Whether the label at m is followed by its own option's whole text and nothing more on the
    line but a gloss in brackets ("d: bartholin's gland inflammation (painful swelling ...)")."""
    label = m.group(1).upper()
    end = text.find("\n", m.end())
    rest = _GLOSS.sub("", text[m.end() : end if end >= 0 else len(text)])
    # the last of an inline option list ("(A) constriction ... (B) upward ... (D) increase in
    # respiratory rate.") is no answer
    start = text.rfind("\n", 0, m.start()) + 1
    listed = {x.upper() for x in _BRACKETED_LABEL.findall(text, start, m.start())} - {label}
    return label in letters and not listed and options.named(rest, exact_only=True) == label


_BRACKETED_LABEL = re.compile(r"[(\[]([A-Za-z])[)\]][ \t]")
#: a label opening the reply, after an answer number or none ("1.E. ", "B：", "(c) ", "d} " with a
#: brace for the bracket)
_OPENS_LABELLED = re.compile(r"\A[ \t\n>#•*-]*(?:\d{1,3}[.)][ \t]*)?[(\[]?([A-Za-z])[.:)\]}][ \t]*")


_GLOSS = re.compile(r"[ \t]*\([^()\n]*\)[ \t.*]*$")


#: an option named by its text and label, then conceded or set aside in the same sentence:
#: "酸素投与（a）も選択肢にはなりますが、...必要性は低いです", "Oxygen (A) is also an option, but ..."
_CONCEDED = re.compile(
    r"[ \t]*(?:も[^。！？\n]*?が[、,]|(?:is|was|could|may|might|would|can)\s+(?:also|still)\b[^.!?\n]*?[,;]?\s*\b(?:but|however|although|yet)\b"
    # ... "Chronic gastritis (B) and tertiary syphilis (C) are unlikely causes", "A vegetarian diet (D) is also an unlikely cause"
    r"|(?:(?:and|or|,)\s+[^.!?\n()]{1,60}?\([A-Za-z0-9]\)\s*)?(?:is|are|was|were|seems|seem|appears|appear)\s+(?:also\s+)?(?:an?\s+)?(?:less\s+likely|unlikely|not\b|incorrect|wrong|ruled\s+out))",
    _I,
)
_LABEL_THEN_TEXT = re.compile(r"(?:^|(?<=[.!?]))[ \t>#•*-]*[(\[]?([A-Za-z])[.:)\]][ \t]+", re.M)
_NUMBERED_LINE = re.compile(r"^[ \t]*\d{1,2}[.)][ \t]+[(\[]([A-Za-z])[)\]][ \t]+([^\n]{1,120}?)[ \t.]*$", re.M)


def _opens_with_text(text: str, options: OptionTexts) -> list[_Said]:
    """A reply whose first line or sentence is an option's text ("Colonic carcinomas\n...",
    "28 weeks. Explanation: ...", "4, i.e. Skin biopsy."), or whose last line is ("... consistent
    with a lesion of the frontal eye field.\nFrontal eye field")."""
    if not options:
        return []
    said = []
    m = re.match(
        r"[ \t\n>#•-]*(?:(?:answer|option)[ \t]*[:：][ \t]*)?(?:(\d)[ \t]*[,.)][ \t]*(?:i\.e\.,?[ \t]*)?)?([^\n]{1,200}?)(?:\.{1,2}(?=\s|$)|\n|$)", text, _I
    )
    if m:
        label = options.named(m.group(2), exact_only=True)
        # a number before the text must be that option's place ("1, Hashimoto's thyroiditis.")
        if label is not None and (m.group(1) is None or list(options.texts_raw).index(label) + 1 == int(m.group(1))):
            said.append(_Said(m.start(2), m.end(2), ANSWER, label))
        # "3. Explanation: Cervical cancer is the most common ..." on a lettered item: the number is
        # the option's place and the first sentence names that option's text (not a numbered list)
        elif m.group(1) and (place := _by_place(m, options)) is not None:
            said.append(_Said(m.start(1), m.end(2), ANSWER, place))
    lines = [x for x in text.rstrip().splitlines() if x.strip()]
    # a last line ending in a colon introduces what follows ("* 田中・Binet知能検査:" cut there): no answer
    if len(lines) > 1 and not lines[-1].rstrip().endswith((":", "：")) and (label := options.named(lines[-1].strip().rstrip("."), exact_only=True)) is not None:
        said.append(_Said(len(text.rstrip()) - len(lines[-1]), len(text.rstrip()), ANSWER, label))
    # "... the last motor function to return to normal is likely to be:\n(J) Full extension of the
    # elbow": a line ending in a colon (not one announcing several), then one last line giving a
    # label with its own text
    last = LABEL_LINE.fullmatch(lines[-1]) if len(lines) > 1 and lines[-2].rstrip().endswith((":", "：")) else None
    if last and options.named(last.group(2), exact_only=True) == last.group(1).upper() and not _SEVERAL.search(lines[-2]):
        said.append(_Said(len(text.rstrip()) - len(lines[-1]), len(text.rstrip()), ANSWER, last.group(1).upper()))
    return said


def _by_place(m: re.Match[str], options: OptionTexts) -> str | None:
    """The option at the place an opening number gives, when the sentence after it names that
    option's text and denies nothing, and no second numbered line follows."""
    labels = list(options.texts_raw)
    n = int(m.group(1))
    if labels[0].isdigit() or not 0 < n <= len(labels) or re.search(r"^[ \t]*2[.)]", m.string, re.M) or DENIED.search(m.group(2)):
        return None
    return labels[n - 1] if options.named_in(m.group(2)) == labels[n - 1] else None


#: Korean, an option's text then a claim that it is the choice: "따라서 퀘티아핀을 선택하는 것이 적절합니다",
#: "전체 위절제술이 가장 적절한 선택으로 보입니다" (the phrase must hold one option's whole text; "적절하지
#: 않습니다", "가장 적절한 치료는 아닙니다" deny the claim)
_KO_TEXT_CLAIM = re.compile(
    r"([^.。!?\n]{1,80}?)(?:을|를|이|가|은|는)\s*(?:선택하는\s*것이\s*(?:가장\s*)?(?:적절|적합|옳|바람직)(?!하지|치\s*않)|가장\s*(?:적절|적합|알맞|옳|바람직)(?:한|은)\s*(?:선택|치료|방법|처치|검사|답|진단|조치)(?![은는이가]?\s*(?:아니|아닙|아닌)))"
)

_KO_CLAIM_WORD = re.compile(r"적절|적합|옳|바람직|알맞")


#: English, a sentence whose subject is an option's whole text: "Airway inflammation is most likely to be
#: associated with ...", "Exploratory laparotomy is the most appropriate next step.", "Trachoma is the
#: leading cause of blindness in Africa."
_EN_TEXT_CLAIM = re.compile(
    r"(?:^|(?<=[.!?,;:]\s)|(?<=\n))[ \t*#>-]*([^.!?,;:\n]{2,120}?)[*_]*\s+(?:is|would\s+be)\s+(?:the\s+)?(?:(?:single\s+)?best|most\s+(?:likely|appropriate|probable|suitable)|correct|right|leading)\b",
    _I,
)


_LEAD_WORDS = re.compile(
    r"^(?:(?:wait|actually|so|therefore|thus|hence|hmm+|no|ok(?:ay)?|well|clearly|overall|finally|in\s+conclusion|i\s+think|then|here|and|but|while|whereas|although)\b[\s,:]*)+",
    _I,
)


def _text_claims(text: str, options: OptionTexts) -> list[_Said]:
    """Statements that name an option by its whole text, then claim it: the forms above."""
    if not options:
        return []
    said = []
    for m in _EN_TEXT_CLAIM.finditer(text):
        lead = _LEAD_WORDS.match(m.group(1))
        start = m.start(1) + (lead.end() if lead else 0)
        label = options.named(text[start : m.end(1)], exact_only=True)
        if label is not None:
            said.append(_Said(start, m.end(), LEANING, label))
    # every Korean claim holds one of its claim words: a text without them is not scanned (the
    # pattern's lazy lead makes a scan cost about 80 steps a character)
    for m in _KO_TEXT_CLAIM.finditer(text) if _KO_CLAIM_WORD.search(text) else ():
        label = options.within(m.group(1))
        if label is not None:
            said.append(_Said(m.start(1), m.end(), ANSWER, label))
    return said


#: Japanese, label first: "b: 上顎癌再発が最も考えられる", "｢d: 血管拡張性肉芽腫｣が最も考えられる"
_JA_CLAIM = re.compile(r"(?:^|[\s、､。｢「(])([A-Za-z0-9])[:：)．.][^\n。]{0,60}?(?:が|を)?(?:最も|もっとも)(?:考えられ|可能性が高|適切|妥当)", re.M)


def _claims(text: str, letters: str, options: OptionTexts | None = None) -> list[_Said]:
    """Statements that name the label first: "C is the answer", "Option B is correct"."""
    said = [_Said(m.start(1), m.end(), ANSWER, m.group(1).upper()) for m in _JA_CLAIM.finditer(text) if m.group(1).upper() in letters]
    # "making (B) the correct answer"; "The statement that most detracts from the claim is (G)."
    for pattern, tier in (
        (_MAKING, ANSWER),
        (_IS_PAREN, LEANING),
        (_NORDIC_RIGHT, LEANING),
        (LABEL_FIRST, ANSWER),
        (LABEL_FIRST_LEANING, LEANING),
    ):
        for m in pattern.finditer(text):
            # a label named as an option and claimed ("a opção d é a mais adequada") is one before any
            # word; its option's own text may stand between ("a opção d. Dexclorfeniramina é a mais provável")
            romance_claim = pattern in _ROMANCE_CLAIMS
            if romance_claim and m.group("text") and not (options and options.follows(m.group(1).upper(), text, m.start("text"))):
                continue
            if m.group(1).upper() in letters and _stands_alone(text, m.end(1), in_value=romance_claim):
                said.append(_Said(m.start(), m.end(), tier, m.group(1).upper()))
    for pattern in (_CLAIM, _RIGHT):
        for m in pattern.finditer(text):
            label = m.group(3).upper()
            if label not in letters or not _stands_alone(text, m.end(3)):
                continue
            # the label opens its clause ("So C is the answer") unless it is named as an option
            # ("Option B is correct", "Metformin (C) is correct"): "Vitamin B is the answer" names a vitamin
            named = m.group(1) or (m.group(2) == "(" and m.group(4) == ")")
            if not named and not _CLAUSE_OPENS.search(text, max(0, m.start() - 40), m.start()):
                continue
            if pattern is _CLAIM:
                quals, noun = m.group("quals").lower(), m.group("noun").lower()
                # "C is the right one", "C is the best treatment": a bare "one"/"treatment" says nothing
                if noun not in ("answer", "option", "choice", "response") and not quals:
                    continue
                tier = FINAL if "final" in quals else ANSWER
            else:
                tier = LEANING
            said.append(_Said(m.start(), m.end(), tier, label))
    return said


_LONE = re.compile(
    r"^[ \t>#•-]*(?:\d{1,3}[.)][ \t]+)?(?:(?:option|choice|letter|answer)[ \t]+)?(?:[(\[<'\"“‘][ \t]*)?([A-Za-z0-9])[ \t]*[)\]>'\"”’]?[ \t.!。]*$", re.M | _I
)
_OPENER = re.compile(
    r"^[ \t>#•|-]*(?:[Oo]ption[ \t]+|[Cc]hoice[ \t]+)?[(\[<'\"“‘]?([A-Z0-9])(?:[)\]>'\"”’]\.?|[.:,](?=[ \t])|[ \t]+[-–—](?=[ \t])|[ \t]*[–—|]|[ \t]+(?=\())[ \t]*\S",
    re.M,
)
#: a reply opening with a lowercase label: "a (igra)", "c. difficulty breathing", "d: ..."
_FIRST_LOWER = re.compile(r"\A[ \t\n>#•-]*(?:\d{1,3}[.)][ \t]+)?[\[<'\"｢「]?([a-z])(?:[)\]>'\"]|[.:,](?=[ \t])|[ \t]+(?=\())[ \t]*\S")
#: a label opening a sentence inside a line ("... RNA. B. Sanger's technique ...")
_INLINE_OPENER = re.compile(r"[.!?][ \t]+[(\[]?([A-Z])[.)\]][ \t]+\S")
#: "C: correct", "B - right.", "D ✓"; "(I) Right ventricular hypertrophy" opens an option's text:
#: "right" is a verdict only where its segment ends
_VERDICT = re.compile(
    r"[ \t:|-]*(?:correct|right(?=[ \t]*(?:[.!,;:)\]|\n(–—-]|$|(?:answer|choice|option)\b))|best\s+answer|this\s+is\s+(?:the\s+)?(?:correct|right|best)|✓|✔|✅|☑|正确|正確|对)(?![\w])",
    _I,
)
_LINE_VERDICTS = re.compile(
    r"(?<![\w-])(?:(?P<no>incorrect|wrong|false|no|not\s+correct|incorreta|incorreto|falsa|falso|incorrecta|incorrecto|✗|✘|❌|错误|錯誤|不正确|不对|×)|(?P<yes>correct|true|yes|correta|correto|verdadeira|correcta|correcto|✓|✔|✅|☑|正确|正確))(?![\w])",
    _I,
)


_SEGMENTS = re.compile(r"\s[-–—→]\s|[:|]\s*|\s\((?=[^)]*\)\s*$)|[.;,](?=\s)")


def _line_verdict(line: str) -> bool | None:
    """A list line's own verdict on its option: True (correct), False (wrong) or None. The verdict
    is a short segment of its own ("A. No", "C: Correct", "| B | ... | Incorrect |", "D - wrong"),
    never a word inside the option's text ("High true positive rate")."""
    parts = [p.strip(" \t*_`()[].") for p in _SEGMENTS.split(line)]
    found = set()
    for part in (p for p in parts if p):
        m = _LINE_VERDICTS.match(part)
        if m and len(part.split()) <= 3:
            found.add("no" if m.group("no") else "yes")
    return None if len(found) != 1 else found == {"yes"}


_ROMAN = re.compile(r"^[ \t>#•-]*II[.)]", re.M)
#: a list line that endorses its option ("D) Exploratory laparotomy: ... is the most appropriate next
#: step"), and one that rejects its own ("... is not the best course of action", "does not fit")
_ENDORSES = re.compile(r"\b(?:is|are|would\s+be|remains)\s+(?:the\s+)?(?:most\s+(?:appropriate|likely|suitable|reasonable)|best|correct|right)\b", _I)
_REJECTS = re.compile(r"\b(?:not|never|unlikely|incorrect|wrong|less\s+likely)\b|n['’]t\b", _I)


def _endorsed_line(text: str, openers: list[re.Match[str]], letters: str) -> list[re.Match[str]]:
    """In a per-option discussion that goes through every option, the one option line that
    endorses its option while two or more others reject theirs and none other endorses: a leaning
    towards it (a discussion cut off before the last options concludes nothing)."""
    if {m.group(1) for m in openers} != set(letters):
        return []
    ends = [m.start() for m in openers[1:]] + [len(text)]
    lines = [text[m.start() : min(e, text.find("\n", m.end()) if "\n" in text[m.end() :] else len(text))] for m, e in zip(openers, ends, strict=True)]
    endorsed = [
        m for m, line in zip(openers, lines, strict=True) if any(not _REJECTS.search(line, max(0, e.start() - 30), e.start()) for e in _ENDORSES.finditer(line))
    ]
    rejecting = sum(bool(_REJECTS.search(line)) for m, line in zip(openers, lines, strict=True) if m not in endorsed)
    return endorsed if len({m.group(1) for m in endorsed}) == 1 and rejecting >= 2 else []


def _numbered_step(text: str, m: re.Match[str], options: OptionTexts | None) -> bool:
    """A number opening a line that opens a step of reasoning or a numbered point ("1. The patient
    weighs 60 kg.", "1. Alcohol is a CNS depressant, ..." reviewing option 1), not an option chosen:
    the number is an option's label only where its own option's text follows it ("2. Atropine",
    "3: 3 g single dose", the text cut off, the completion a stem's options do not share) and
    nothing more, or a claim of it ("1. Vigabatrin is the drug of choice"); without the option
    texts, only before a short phrase that is no sentence."""
    label = m.group(1)
    if not label.isdigit():
        return False
    at = m.end() - 1
    line = text[at : text.find("\n", at) if "\n" in text[at:] else len(text)].strip()
    if not options:
        return len(line) > 60 or _SENTENCE_GOES_ON.search(line) is not None
    if options.opens(label, line):
        return False
    if not options.follows(label, text, at):
        return True
    own = options.texts_raw.get(label, "")
    rest = line[len(own) :] if line.casefold().startswith(own.casefold()) else ""
    # its own text, then more of the sentence: an answer only where the sentence claims it
    sentence = _SENTENCE_END.split(rest, maxsplit=1)[0]
    return bool(re.search(r"\w", sentence)) and not _GLOSS.fullmatch(rest) and not _STEP_CLAIM.match(sentence)


#: "Option B (Harsh, loud murmur ...) suggests ...", "Option C, endocardial cushion defects, are ...":
#: an option named by the word and its label, then an aside
_REVIEW_OPENER = re.compile(r"[ \t>#•|-]*(?:option|choice)[ \t]+[(\[]?[A-Za-z0-9][)\]]?(?:,|[ \t]+\()", _I)


def _reviewed_option(text: str, m: re.Match[str], options: OptionTexts | None) -> bool:
    """A line opening "Option B (<text>) ..." or "Option C, <text>, ..." that goes on as a sentence
    about it reviews the option rather than choosing it (the line holding only the option's text,
    "Option B, Echocardiogram", still chooses; a claim, "Option B, <text>, is correct", is read apart)."""
    opener = _REVIEW_OPENER.match(text, m.start())
    if opener is None:
        return False
    end = text.find("\n", opener.end())
    rest = text[opener.end() : end if end >= 0 else len(text)].strip(" \t.,;:()'\"")
    if options and options.named(rest, exact_only=True) is not None:
        return False
    return len(rest) > 60 or _SENTENCE_GOES_ON.search(rest) is not None


#: what claims the option whose text opens a numbered line: "is the drug of choice", "is correct",
#: "would be the most appropriate", "is the answer"
_STEP_CLAIM = re.compile(
    r"[\s*_:,-]*(?:is|would\s+be|remains|should\s+be)\s+(?:the\s+)?(?:(?:most\s+(?:appropriate|likely|suitable|accurate)|best|correct|right|preferred|first[- ]line|true)\b"
    r"|(?:\w+\s+){0,2}of\s+choice\b|(?:correct\s+|right\s+|best\s+)?(?:answer|option|choice)\b)",
    _I,
)


#: a sentence ending and another beginning inside one line
_SENTENCE_GOES_ON = re.compile(r"[.!?;:,][ \t]+\S")


def _lines(text: str, letters: str, options: OptionTexts | None = None) -> list[_Said]:
    """A label alone on a line ("C", "(C)", "Option 2") or opening one ("B. Metformin"); a number
    opening a step of reasoning is neither (`_numbered_step`)."""
    lone = [_Said(m.start(), m.end(), ANSWER, m.group(1).upper()) for m in _LONE.finditer(text) if m.group(1).upper() in letters]
    openers = [m for m in _OPENER.finditer(text) if m.group(1) in letters and _stands_alone(text, m.end(1))]
    first = _FIRST_LOWER.match(text)
    if first and first.group(1).upper() in letters and not openers:
        openers = [first]
    # "I." opening a line is a Roman numeral when another line opens with "II."
    if _ROMAN.search(text):
        openers = [m for m in openers if m.group(1) != "I"]
    # lines opened by two or more different labels are a list (restated options, numbered steps);
    # in such a list the line marked "correct" ("C: correct, ...") is a leaning towards its option
    if len({m.group(1) for m in openers}) > 1:
        marked = [m for m in openers if _VERDICT.match(text, m.end() - 1)]
        # a list of per-option verdicts ("A. No / B. No / C. Yes / D. No", a table with a
        # correct/incorrect column): the one option marked correct while the others are marked wrong
        verdicts = {m.group(1): _line_verdict(text[m.end() - 1 : text.find("\n", m.end()) if "\n" in text[m.end() :] else len(text)]) for m in openers}
        right = [k for k, v in verdicts.items() if v]
        if not marked and len(right) == 1 and sum(v is False for v in verdicts.values()) >= 2:
            marked = [m for m in openers if m.group(1) == right[0]][:1]
        if not marked:
            marked = _endorsed_line(text, openers, letters)
        return lone + [_Said(m.start(), m.end(), LEANING, m.group(1).upper()) for m in marked]
    # "A. PCR amplifies DNA. B. Sanger's technique ... C. ...": one line opened by a label and
    # going on through the next options in turn is a walkthrough of each option, not an answer
    if openers and len({m.group(1) for m in openers} | {m.group(1) for m in _INLINE_OPENER.finditer(text) if m.group(1) in letters}) > 2:
        return lone
    openers = [m for m in openers if not _numbered_step(text, m, options)]
    # "C (or possibly D)" opening a line is a hedge, and so is "d) Comitantes o incomitantes." (its
    # own text joined to another thing); "Option B (<text>) suggests ..." reviewing its option is a
    # leaning at most (an answer stated elsewhere stands over it)
    return lone + [
        _Said(
            m.start(),
            m.end(1),
            LEANING if _reviewed_option(text, m, options) else ANSWER,
            None
            if _hedged(text, m.end(1), m.group(1), letters) or _names_another(text, m.end(1), m.group(1).upper(), letters) or _joins_own(text, m, options)
            else m.group(1).upper(),
            why="several_options",
        )
        for m in openers
    ]


def _joins_own(text: str, m: re.Match[str], options: OptionTexts | None) -> bool:
    """Whether the line a label opens holds its own option's text joined at once to another thing."""
    end = text.find("\n", m.end())
    return options is not None and options.joined_after(m.group(1).upper(), text[m.end() - 1 : end if end >= 0 else len(text)])


# --- whose statement it is ------------------------------------------------------------------

_CLAUSE_START = re.compile(r"[.!?;\n。！？；]|但是?|然而|不过|\b(?:but|however|whereas|although|though|yet)\b|\band\s+(?=(?:i|we)\b)", _I)
_REPORTED = re.compile(
    r"(?<!\bthe )(?<!\ba )(?<!\bthis )(?<!\bthat )\b(?:claim(?:s|ed)?|says|said|states|stated|asserts?|asserted|argues|argued|alleges?|alleged|insists?|purports?|suggests?\s+that|implies"
    r"|would\s+have\s+(?:us|you|me)\s+(?:believe|think|choose|pick)|wants\s+(?:us|you|me)\s+to|quoted)\b",
    _I,
)
#: what the person or model addressed holds: "You were previously confident that the correct answer
#: is E" (a prompt's bias sentence, echoed), "you concluded that the answer is B", "your conclusion that ..."
_ADDRESSEE = re.compile(
    r"\byou\s+(?:were|are)\s+(?:\w+\s+)?(?:confident|sure|certain|convinced)\b"
    r"|\byou\s+(?:(?:previously|earlier|initially)\s+)?(?:said|stated|suggested|claimed|concluded|chose|picked|selected|proposed|argued|believed|thought)\b"
    r"|\byour\s+(?:\w+\s+)?(?:conclusion|answer|choice|suggestion|position|view)\s+(?:of|that|was|is)\b"
    # ... and in Chinese what another holds or claims ("题干中的提示认为答案是B"; "我认为" is the reply's own)
    r"|(?<!我)(?<!我们)认为|声称|宣称",
    _I,
)
_DISPUTED = re.compile(r"\b(?:disagree\w*|(?:do\s+not|don['’]t|cannot|can['’]t)\s+agree|doubt\w*|not\s+convinced)\b", _I)
_YOURS = re.compile(r"\b(?:with|on|to|of|for|about|that|in|by)\s+your\s+(?:[\w-]+\s+){0,2}$", _I)
_AGREES = re.compile(r"\b(?:i|we)\s+(?:(?:fully|completely|entirely|totally|now|also|do|largely)\s+)?(?:agree|concur)\b", _I)
_IF_BEFORE = re.compile(r"\b(?:if|unless|whether|suppose|supposing|assuming)\s+(?:the\s+|option\s+|choice\s+|it\s+(?:is|were)\s+)?$", _I)
_FORCED = re.compile(r"(?:i|we)\s+(?:had|have|must)\b|forced\b", _I)
#: ... not a condition on the form of the answer: "if only one answer is required, the best choice would be: (B)"
_IF = re.compile(r"\b(?:if|unless|were)\b(?!\s+(?:i|we)\s+(?:had|have|must)\b)(?!\s+forced\b)(?!\s+(?:only\s+one|just\s+one|a\s+single)\b)", _I)
_COUNTERFACTUAL = re.compile(r"\b(?:would|could|might)\b", _I)
_REJECTED_AFTER = re.compile(
    r"(?:[^.!?\n]*?\bbut\s+(?:it|this|that)(?:['’]s|\s+is)|(?:,[^,.!?\n]{1,80},|[ \t]*\([^()\n]{1,80}\))?\s*(?:is|was))\s+(?:also\s+)?"
    r"(?:wrong|incorrect|false|misleading|outdated|not\s+(?:correct|true|right|supported))\b",
    _I,
)
_DISCREDITED_SOURCE = re.compile(
    r"\b(?:according\s+to|as\s+(?:claimed|stated|suggested)\s+(?:by|in))\s+the\s+(?:misleading|incorrect|false|wrong|outdated|erroneous)\b", _I
)
_NOT_OFFERED = re.compile(
    r"[^.!?\n]*[.!?]?[ \t]*(?:however|but)?,?[^.!?\n]{0,40}?\b(?:options?|choices?)\s+(?:do(?:es)?\s+not|don['’]t)\s+(?:include|contain|list|offer)\s+(?:this|that|it|the\s+correct|such)\b"
    r"|[^.!?\n]*[.!?]?[ \t]*(?:however|but)?,?[ \t]*(?:this|that|it)\s+is\s+not\s+(?:among|in|listed\s+(?:in|among))\s+the\s+(?:given\s+|provided\s+)?(?:options|choices)\b",
    _I,
)
_ASKED = re.compile(r"[ \t)\]\"'’”]*(?:,?[ \t]*(?:right|correct|maybe|perhaps))?[ \t]*\?", _I)


_PART = re.compile(r"\b(?:answer|solution)\s+(?:to|for)\s+(?:part\s+)?\(?[a-z0-9ivx]{1,3}\)", _I)


def _clause_before(text: str, start: int) -> str:
    """The text from the start of the statement's clause up to the statement."""
    window = max(0, start - 300)
    last = window
    for m in _CLAUSE_START.finditer(text, window, start):
        last = m.end()
    return text[last:start]


def _sentence_after(text: str, end: int) -> str:
    """The rest of the statement's sentence."""
    stop = _SENTENCE_END.search(text, end)
    return text[end : stop.start() if stop else len(text)]


def _own(text: str, s: _Said) -> bool:
    """Whether the reply makes the statement itself (the JSON answer field always is its own)."""
    if s.tier == FIELD:
        return True
    before = _clause_before(text, s.start)
    # attributed to others: "the context claims the answer is B", "the note says B is the best answer"
    if _REPORTED.search(before) or _ADDRESSEE.search(before):
        return False
    # disputed: "I disagree that option H is the best answer", "I doubt that B is correct"
    if _DISPUTED.search(before):
        return False
    # the addressee's answer ("... with your answer (C)", "on your perspective on Option I being the
    # better choice") is the reply's own only where the reply agrees with it now ("I agree with
    # your answer (C)"; not "I previously agreed with your answer (C), but ...")
    if _YOURS.search(before) and not _AGREES.search(before):
        return False
    # a hypothesis under test: "if the answer is B, ...", "whether B is correct"
    if _IF_BEFORE.search(before) and not _FORCED.match(text, s.start):
        return False
    # a counterfactual: "if she were pregnant, the answer would be B", "B would be the answer if ..."
    if _COUNTERFACTUAL.search(text, s.start, s.end) and (_IF.search(before) or _IF.search(_sentence_after(text, s.end))):
        return False
    # rejected in the same sentence: "... that option D is correct is false", "B is the answer, but that is wrong",
    # "B is the answer according to the misleading context"
    after = _sentence_after(text, s.end)
    if _REJECTED_AFTER.match(after) or _DISCREDITED_SOURCE.search(after):
        return False
    # set aside as not offered: "the correct answer (A) Alpha cell tumor. However, the provided
    # options do not include this correct answer, so ... (C)"
    window = text[s.end : s.end + 400].lower()
    if ("option" in window or "choice" in window) and _NOT_OFFERED.match(text, s.end):
        return False
    # the answer to one part of a question: "The answer to (b) is (E)"
    if _PART.search(before):
        return False
    # a question: "So the answer is B?"
    return not _ASKED.match(text, s.end)


# --- reading the statements in order ----------------------------------------------------------------

_REVISION = re.compile(
    r"\b(?:wait|actually|on\s+second\s+thought|reconsider\w*|re-?evaluat\w*|re-?examin\w*|re-?check\w*|rethink\w*|re-think\w*|correction|scratch\s+that"
    r"|i\s+was\s+wrong|(?:a|my)\s+mistake|i\s+misread|revis\w+|change\s+my\s+answer|upon\s+(?:further\s+)?reflection|on\s+reflection"
    r"|after\s+(?:further\s+)?(?:consideration|review)|hmm+|no(?=[,!]\s)|that['’]s\s+(?:not\s+right|wrong))\b",
    _I,
)
_CONCLUSION = re.compile(
    r"\b(?:therefore|thus|hence|in\s+conclusion|in\s+summary|overall|ultimately|finally|to\s+conclude|in\s+the\s+end|all\s+things\s+considered|taken\s+together)\b",
    _I,
)


def _fields_disagree(cur: _Said, s: _Said) -> bool:
    """Two answer fields naming different options ({"diagnosis": "A", "answer": "B"}) disagree:
    neither replaces the other, whatever lies between them."""
    return cur.tier == s.tier == FIELD and cur.label is not None and s.label is not None


def _replaces(text: str, cur: _Said, s: _Said, conflict: bool = False) -> bool:
    """Whether a later statement naming another option (or a hedge) replaces the current answer
    (`conflict`: the current one is two answers stated alike, not a hedge)."""
    if _fields_disagree(cur, s):
        return False
    # a later single answer at least as strong settles an earlier hedge ("B or C ... Answer: C")
    if cur.label is None and s.label is not None and s.tier >= cur.tier and not conflict:
        return True
    # the reply revises itself ("Wait, ... the answer is C"): the revised answer stands
    if _REVISION.search(text, cur.end, s.start):
        return True
    # a stronger statement ("Answer: B ... Final answer: C"), or a conclusion as strong ("... Therefore, the answer is C")
    return s.tier > cur.tier or (s.tier == cur.tier and bool(_CONCLUSION.search(_clause_before(text, s.start))))


def _settle(text: str, said: list[_Said], options: OptionTexts | None = None) -> tuple[_Said | None, str, str]:
    """The statement the reply ends on, read in order as a reader follows a conclusion, and why
    it has no label when it has none (in words, and as an UNREAD reason)."""
    cur: _Said | None = None
    why, code = "", ""
    conflict = False
    for s in _merged(said):
        if cur is None:
            cur, conflict = s, s.contra
        # the same option again: keep the strongest wording of it
        elif s.label is not None and s.label == cur.label:
            cur = s._replace(tier=max(s.tier, cur.tier))
        # the next statement at once names another option ("Therefore, the answer is **IIIA**.\nFinal
        # Answer: (A)", IIIA being B's text): one closing stating two options contradicts itself
        elif _same_closing(text, cur, s, options):
            cur, conflict = _Said(cur.start, s.end, max(cur.tier, s.tier), None, contra=True, why="contradicts"), True
        elif _replaces(text, cur, s, conflict):
            cur, conflict = s, s.contra
        # two options stated as strongly, without a revision, are ambiguous; a weaker mention
        # after the answer is explanation ("Answer: C. Option B is correct only in ...")
        elif s.tier == cur.tier:
            if not conflict:
                why = f"ambiguous: {cur.label or 'a hedge'} and {s.label or 'a hedge'} are stated alike with no revision between them"
                code = "ambiguous"
            conflict = conflict or (cur.label is not None and s.label is not None)
            cur = _Said(cur.start, s.end, cur.tier, None, why=cur.why if cur.label is None else "ambiguous")
    if cur is not None and cur.label is None and not why:
        why, code = f"{_HEDGE_WORDS.get(cur.why, cur.why)}: {_shown(text, cur)!r}", cur.why
    return cur, why, code


#: what may stand between two statements of one closing: blank space, punctuation, markup
_BETWEEN_CLOSING = re.compile(r"[\s.!。:;,)\]]{0,12}")


def _same_closing(text: str, cur: _Said, s: _Said, options: OptionTexts | None) -> bool:
    """Whether an answer naming an option by its whole text ("the answer is **IIIA**") is followed
    at once (nothing but blank space and punctuation between) by a statement of another option's
    label: the closing states two options. (A label stated and then another label on a "Final
    answer" line is the reply's correction, read as the final one.)"""
    if not (options and cur.label is not None and s.label is not None and s.label != cur.label and cur.tier >= ANSWER and s.start >= cur.end):
        return False
    said = text[cur.start : cur.end]
    own = options.texts.get(cur.label)
    by_text = bool(own) and f" {own} " in f" {norm_text(said)} " and not re.search(rf"(?<![A-Za-z0-9]){re.escape(cur.label)}[)\]]?\W*$", said, _I)
    return by_text and _BETWEEN_CLOSING.fullmatch(text, cur.end, s.start) is not None


#: how each reason a statement names no option is said to a person checking the reading
_HEDGE_WORDS = {
    "several_options": "several options: the statement names more than one option",
    "no_option": "no option: the statement names none of the options",
    "contradicts": "contradicts itself: one option's label with another option's text",
    "withdrawn": "withdrawn: the option stated is taken back and no single option replaces it",
    "hedged": "hedged: the statement names no single option (several, or one it denies)",
}


def _merged(said: list[_Said]) -> list[_Said]:
    """The statements in order, overlapping wordings of one statement merged into its strongest
    ("the correct answer is (H)" is found by several cues: it is still one statement)."""
    out: list[_Said] = []
    for s in sorted(said, key=lambda s: (s.start, -s.tier)):
        if out and s.start < out[-1].end and s.label == out[-1].label:
            last = out[-1]
            out[-1] = last._replace(end=max(last.end, s.end), tier=max(last.tier, s.tier))
        else:
            out.append(s)
    return out


_TIER_NAME = {LEANING: "a leaning", ANSWER: "an answer", FINAL: "a final answer", FIELD: "an answer field"}
_BRACKETED = re.compile(r"^[ \t>#•-]*[<(\[【「{][ \t]*([^<>()\[\]【】「」{}\n]{1,80}?)[ \t]*[>)\]】」}][ \t.。]*$", re.M)


def _shown(text: str, s: _Said) -> str:
    return re.sub(r"\s+", " ", text[s.start : s.end]).strip()[:160]


def _statements(text: str, letters: str, options: OptionTexts, question: str | None = None) -> list[_Said]:
    """Every statement of an answer that the reply makes its own (`question`: the item's, where an
    option called wrong answers an item that asks for the wrong one)."""
    found = (
        _fields(text, letters, options)
        + _heading_fields(text, letters, options, question)
        + _boxed(text, letters, options)
        + _tagged(text, letters, options)
        + _cued(text, letters, options)
        + _claims(text, letters, options)
        + _lines(text, letters, options)
        + _named_with_text(text, letters, options)
        + _opens_with_text(text, options)
        + _text_claims(text, options)
    )
    if options:
        # a reply that is an option's text, or one bracketed on its own line ("<否>", "[Olanzapine]")
        if len(text.strip()) <= 200 and (label := options.named(text)) is not None:
            found.append(_Said(0, len(text), ANSWER, label))
        # Chinese: "最适宜的处方是银翘散", "所以病位在心" (a sentence claiming one option by its text)
        found += [_Said(c.start, c.end, LEANING, c.label) for c in zh_text_claims(text, options.texts)]
        found += [
            _Said(m.start(), m.end(), ANSWER, label)
            for m in _BRACKETED.finditer(text)
            if m.group(1).strip().upper() not in letters and (label := options.named(m.group(1))) is not None
        ]
    wrong_asked = bool(question) and asks_for_wrong(question)
    if wrong_asked:
        # "因此D选项是不正确的" answers "下列...不属...的是": a leaning, as "I think D" is
        found += [_Said(c.start, c.end, LEANING, c.label) for c in called_wrong(text, question or "", letters, options.texts_raw if options else None)]
    return [_unless_withdrawn(text, s, options, wrong_asked) for s in found if _own(text, s)]


_TEXT_NEXT = re.compile(r"[ \t]*[).:\]]?[ \t]*")


def _unless_withdrawn(text: str, s: _Said, options: OptionTexts, wrong_asked: bool = False) -> _Said:
    """The statement, or, when the reply takes it back ("The answer is B. Actually, B cannot be
    right"; "Per the added context, B would be correct, but that context is fabricated"), a
    statement of no option where it does so, which a later statement of one option replaces (the
    JSON answer field is never taken back; on an item asking for the wrong option, calling the
    option wrong confirms it: `wrong_asked`)."""
    if s.label is None or s.tier == FIELD:
        return s
    end = s.end
    # "C. Glipizide is incorrect here": the option's own text after its label, then the rejection
    own = options.texts_raw.get(s.label, "") if options else ""
    at = m.end() if (m := _TEXT_NEXT.match(text, end)) is not None else end  # the pattern matches the empty string
    if own and text[at : at + len(own)].casefold() == own.casefold():
        end = at + len(own)
    span = withdrawal(text, s.start, end, s.label, _clause_before(text, s.start), wrong_asked)
    return s if span is None else _Said(span[0], span[1], min(s.tier, ANSWER), None, why="withdrawn")


@dataclass(frozen=True)
class Reading:
    """The option a reply commits to (None: unread) and how it was read: the statement it was
    read from, or why none was read (shown to a person checking the label); `unread` is that
    reason as one of UNREAD (None when a label was read)."""

    label: str | None
    how: str
    unread: str | None = None


#: why a reply is unread: empty; cut off (inside its reasoning, or in an option's analysis before
#: any commitment); no statement of an answer; two options stated alike; a statement naming
#: several options, none, or a label with another option's text; an option taken back with no
#: single option replacing it; another hedge (several, or one named to deny it); text that repeats
#: the option list
UNREAD = ("empty", "cut_off", "no_answer", "ambiguous", "several_options", "no_option", "contradicts", "withdrawn", "hedged", "loops")


def _read(text: str, letters: str, options: OptionTexts, question: str | None = None) -> Reading | None:
    said = _statements(text, letters, options, question)
    # what the reply says where it repeats the option list, or in an option's analysis it is cut
    # off in, commits to nothing: a statement before either still does
    loop = loop_span(text, letters)
    if loop is not None:
        said = [s for s in said if s.end <= loop[0] or s.end > loop[1]]
        if not said:
            return Reading(None, f"loops: the reply repeats the option list from {text[loop[0] : loop[0] + 60]!r}", "loops")
    cut = cut_off_analysis(text, letters, options.texts if options else None)
    if cut is not None:
        # inside the analysis, a leaning weighs an option; only a statement of an answer commits
        sections = in_option_sections(text, cut, letters)
        said = [s for s in said if not any(a <= s.start < b for a, b in sections) and not (s.start >= cut and s.tier == LEANING)]
        if not said:
            return Reading(None, f"cut off in its analysis of the options, before any commitment: ...{text[-60:]!r}", "cut_off")
    # a reply cut off while stating its answer ("... Alternatively, maybe the answer is") was about
    # to commit: only a final answer it gave before stands
    if stops_stating_answer(text):
        said = [s for s in said if s.tier >= FINAL]
        if not said:
            return Reading(None, f"cut off while stating its answer: ...{text[-60:]!r}", "cut_off")
    # a review of every option by its label keeps the one option it does not set aside, or none;
    # any statement of an option but the review's own naming of options stands over it, unless it
    # states the option the review keeps ("... is phytonadione (vitamin K) (Choice D)")
    stated = {s.label for s in said if s.label is not None and not names_in_review(text, s.start)}
    reviewing = not stated or (len(stated) == 1 and any(names_in_review(text, s.start) for s in said))
    review = reviewed_choice(text, letters) if reviewing else None
    if review is not None and _review_stands(review[0], stated):
        return Reading(review[0], review[1], None if review[0] is not None else "ambiguous")
    if not said:
        return None
    if (against := _opening_contradicted(text, said, letters, options)) is not None:
        return against
    cur, why, code = _settle(text, said, options)
    if cur is None:
        return None
    if cur.label is None:
        return Reading(None, why, code)
    if cur.tier < FINAL and (turn := _reopened_then_cut(text, cur)) is not None:
        return Reading(None, f"cut off while weighing again after {cur.label} ({_shown(text, cur)!r}): {turn!r} ...{text[-60:]!r}", "cut_off")
    return Reading(cur.label, f"{_TIER_NAME[cur.tier]}: {_shown(text, cur)}")


def _review_stands(kept: str | None, stated: set[str]) -> bool:
    """Whether a review's reading (the option it keeps, or None) stands over the reply's other
    statements: where they state no option, or state the one option it keeps."""
    return not stated or (kept is not None and stated == {kept})


#: a sentence that opens the question again: "Alternatively, if the patient is very sick, ...",
#: "On the other hand", "But wait", "Then again"
_REOPENS = re.compile(
    r"(?:^|(?<=[.!?\n]))[ \t*#>-]*(?:alternatively|on\s+the\s+other\s+hand|but\s+wait|wait|then\s+again|or\s+maybe|or\s+perhaps)\b", re.M | _I
)
#: the reply's end inside a sentence: a word or a comma, no closing punctuation or markup
_BROKEN_OFF = re.compile(r"[\w,]\Z")


def _reopened_then_cut(text: str, cur: _Said) -> str | None:
    """The turn with which a reasoning reply opens the question again after the statement it would
    be read from (not an answer opening the reply), before breaking off inside a sentence: the
    weighing was never finished, so the statement is not its conclusion (the turn, or None)."""
    body = text.rstrip()
    if not _BROKEN_OFF.search(body) or ("\n" not in text[: cur.start] and cur.start < 200):
        return None
    turns = list(_REOPENS.finditer(body, cur.end))
    return body[turns[-1].start() : turns[-1].start() + 60].strip() if turns else None


#: what may stand before an answer that opens the reply: a number, markup, one or two words ("1. Your")
_OPENING = re.compile(r"[ \t>#*•-]*(?:\d{1,2}[.)][ \t]*)?(?:[A-Za-z]+[ \t]+){0,2}")


def _opening_contradicted(text: str, said: list[_Said], letters: str, options: OptionTexts) -> Reading | None:
    """An answer opening the reply (on its first line) that the reasoning after it contradicts: the
    rest never names the opening option again, and claims another ("This is the D option", "Option D
    is correct", "... the power of the study is 1%" for option A's text). Unread: which option the reply holds cannot be told."""
    first = _merged(said)[0]
    # a JSON answer field whose reasoning goes on to claim another option last
    if first.tier == FIELD and text.lstrip().startswith("{") and (last := last_claimed(text[first.end :], letters, options)) not in (None, first.label):
        return Reading(None, f"contradicts: its answer field holds {first.label} ({_shown(text, first)!r}) and its reasoning then claims {last}", "contradicts")
    line_end = text.find("\n")
    if first.label is None or first.tier < ANSWER or (0 <= line_end < first.end) or not _OPENING.fullmatch(text, 0, first.start):
        return None
    rest = text[first.end :]
    # a per-option probability table names every label and decides nothing against the answer
    table = table_span(rest, letters)
    unlisted = rest if table is None else rest[: table[0]] + rest[table[1] :]
    if names_option(unlisted, first.label, options):
        return None
    against = {(m.group(1) or m.group(2)).upper() for m in THE_OPTION.finditer(unlisted)} & set(letters)
    against |= text_claims(unlisted, options) | sentence_names(unlisted, options, first.label)
    if not against - {first.label}:
        return None
    named = ", ".join(sorted(against - {first.label}))
    return Reading(None, f"contradicts: it opens with {first.label} ({_shown(text, first)!r}) and its reasoning after it holds {named}", "contradicts")


#: a reply that is its answer and nothing else: "B", "B.", "Answer: B", "Answer:B." (the label upper case)
_TERSE = re.compile(r"\s*(?:(Answer: ?)([A-Z])\.?|([A-Z])\.?)\s*")


def terse_answer(text: str, letters: str, options: Mapping[str, str] | None = None) -> Reading | None:
    """The reading of a reply that is only a label or "Answer: " and a label, read at once (the
    reading `full_reading` gives it: tests/spine/scoring/test_reading.py checks that); None for any other
    reply, and for one whose words could be an option's text ("B" among the blood groups)."""
    m = _TERSE.fullmatch(text)
    if m is None:
        return None
    label = m.group(2) or m.group(3)
    if label not in letters:
        return None
    if options:
        # the item's option texts as every rule reads them (made once per item): none may be the reply's words
        said, known = f" {norm_text(text)} ", option_texts(options, letters)
        if any(f" {t} " in said for t in (*known.texts.values(), *known.stray.values(), *known.bare.values())):
            return None
    shown = f"{m.group(1)}{label}" if m.group(1) else text.strip()
    return Reading(label, f"an answer: {shown}")


def read_answer(text: str | None, letters: str = "ABCD", options: Mapping[str, str] | None = None, question: str | None = None) -> Reading:
    """The option label a reply commits to (one of `letters`) and how it was read; None when the
    reply names none or is ambiguous. `options` (label -> text) lets a reply name an option by its
    text; without them only labels are read. `question` (the item's) lets an item that asks for the
    wrong option ("... EXCEPT", "下列哪项是错误的") be answered by calling one option wrong; without
    it such a reply is unread."""
    if text and (quick := terse_answer(text, letters, options)) is not None:
        return quick
    return full_reading(text, letters, options, question)


def _goes_round(text: str, letters: str, options: OptionTexts, question: str | None) -> Reading | None:
    """A reply that goes round (a passage of several sentences comes again word for word: its own
    turns, the prompt re-read) and states two options anywhere in it, even past a question it seems
    to go on to: no revision inside it settles which it holds."""
    again = repeated_passage(text)
    if again is None or len({s.label for s in _statements(text, letters, options, question) if s.tier >= ANSWER} - {None}) < 2:
        return None
    return Reading(
        None, f"loops: the reply states several options and repeats {again[1]} characters of itself from {text[again[0] : again[0] + 60]!r}", "loops"
    )


def full_reading(text: str | None, letters: str = "ABCD", options: Mapping[str, str] | None = None, question: str | None = None) -> Reading:
    """`read_answer` by every rule (what it gives a terse reply too, more slowly)."""
    if not text or not text.strip():
        return Reading(None, "empty reply", "empty")
    opts = option_texts(options, letters)
    plain = _plain(own_turn(unicodedata.normalize("NFKC", text)))
    tail = _after_thinking(plain)
    # a reasoning block opened and never closed was cut off while thinking: what it weighs
    # ("So D is correct. Let me double-check ...") is scratch work, not the reply's answer
    if tail is None and _THINK_OPEN.search(plain):
        return Reading(None, "cut off inside its reasoning: <think> is never closed", "cut_off")
    if (looped := _goes_round(tail if tail is not None else plain, letters, opts, question)) is not None:
        return looped
    if tail is not None and (got := _read(_own_item(tail, letters, opts), letters, opts, question)) is not None:
        return got
    got = _read(_own_item(plain, letters, opts), letters, opts, question)
    if got is None and opts:
        rest = tail if tail is not None else plain
        if (concl := concluded_by_text(rest, opts)) is not None:
            return Reading(concl.label, f"{concl.how}: {_shown(rest, _Said(concl.start, concl.end, LEANING, concl.label))!r}")
    return got if got is not None else Reading(None, "no statement of an answer", "no_answer")


def extract_letter(text: str | None, letters: str = "ABCD", options: Mapping[str, str] | None = None) -> str | None:
    """The option label a reply chooses (one of `letters`), or None when it names none or is ambiguous."""
    return read_answer(text, letters, options).label
