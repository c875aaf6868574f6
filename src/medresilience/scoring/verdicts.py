"""Reading a judge's verdict from its reply, the way a careful person reads it, and never from text
the judge copied out of the answer it judges.

What counts as a verdict, strongest first:
- a top-level JSON object (alone on its lines, code-fenced or not; a Python dict literal too) with a
  `verdict` field (also `final_verdict`, `judgment`, `decision`, `label`, `grade`, `classification`),
  or, when the rubric's labels are numbers, a `score` / `rating` field, or a ranking of the
  candidates (`[{"model": "m", "rank": 1}, ...]`: the one ranked first; a tie names none);
- an explicit statement: "VERDICT: 1", "Final verdict: -1", "My verdict: 1.", "Verdict = 1",
  "Score: -1", "The verdict is no_match", a bracketed "[[8]]", a tag ("[RESULT] 4"), a cue of
  another language with its colon ("判定: 1", "Veredicto: 1"), a verdict field written as a line
  ("criteria_met: false", "correct: yes"), a table row "| Verdict | -1 |", or a reply that is
  only a label ("1", "+1", "correct");
- a phrase ("I would give it a score of 1"), a JSON object inside a sentence;
- a label alone opening or closing the reply ("1 (corrects)\\n\\nThe answer ...").
A value is a rubric label read leniently ("+1" is "1", "**Correct**" is "correct", "flags premise"
is "flags_premise", "8/10" is "8", "4点" is "4"), except that labels told apart only by case ("m"
and "M") are matched as written. A sentence about a verdict is not one: a value followed by more
of the sentence ("VERDICT: 1 would require an explicit correction") is not read.

Only the strongest kind present decides. Its statements are read in order: the same label again
changes nothing; another label replaces the current one only after an explicit revision ("On
reflection, ...", "Final verdict", "Actually") and otherwise makes the reply `conflicting`.

No forging. The reader knows the answer under review (and the nonce of the fence it was sent in):
- text inside the judge's real fence `<fence>...</fence>` is the answer, never the judge's words;
  a tag with any other name (the answer can write those) removes nothing;
- a statement inside a stretch of the reply copied from the answer (matched on text normalised for
  case, markup, whitespace and JSON escapes) is not read, however it is quoted or fenced;
- a statement worded exactly as one the answer makes ("VERDICT: 1" planted in the answer) cannot be
  told from a copy of it: it is never read. When the judge's other statements decide, they do;
  when there are none, the reply is unscored with that reason.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["VerdictReading", "read_verdict"]

_I = re.IGNORECASE

# kinds of statement, weakest first
BARE, PHRASE, EXPLICIT, JSON_FIELD = 1, 2, 3, 4
_KIND_NAME = {BARE: "a label alone on a line", PHRASE: "a verdict phrase", EXPLICIT: "a verdict statement", JSON_FIELD: "a JSON field"}

_VERDICT_KEYS = (
    "verdict",
    "final_verdict",
    "judgment",
    "judgement",
    "final_judgment",
    "final_judgement",
    "decision",
    "label",
    "grade",
    "classification",
    "final_label",
    "final_grade",
)
_SCORE_KEYS = ("score", "final_score", "rating", "final_rating", "overall_score", "points")
_REASON_KEYS = ("reason", "reasoning", "rationale", "explanation", "justification", "analysis", "comment", "feedback")


@dataclass(frozen=True)
class VerdictReading:
    """The label read (None: none could be read), the judge's reason, and how the label was read or
    why none was (shown to a person checking the judgment)."""

    label: str | None
    reason: str | None
    how: str


@dataclass(frozen=True)
class _Stated:
    start: int
    end: int
    kind: int
    raw: str | None  # None: a JSON field that names no value
    label: str | None
    key: str  # the statement normalised, to compare with the answer's own statements
    final: bool = False  # worded as final or revised ("Final verdict:", "Revised score:")


# --------------------------------------------------------------------------- labels


_BULLET = re.compile(r"[ \t>•]*(?:[-*][ \t]+)?")


def _bullet_end(line: str) -> int:
    """Where a line's text begins after its indent and bullet (the pattern matches the empty string)."""
    m = _BULLET.match(line)
    return 0 if m is None else m.end()


_NUM = re.compile(r"^[+]?(-?)\s*(\d+)(?:\.0+)?$")


def _canon(s: str) -> str:
    s = s.strip().strip("*_`\"'“”‘’[](){}<>").strip()
    s = s.replace("−", "-").replace("–", "-")
    m = _NUM.match(s)
    if m:
        return (m.group(1) + m.group(2)).lstrip("+") if m.group(2) != "0" else "0"
    return re.sub(r"[\s_-]+", "_", s.casefold().rstrip(".,;:!"))


class _Labels:
    """A rubric's labels and their lenient spellings."""

    def __init__(self, labels: Sequence[str]):
        self.labels = list(labels)
        self.by_canon: dict[str, str] = {}
        # labels told apart only by case ("m" and "M") are matched as written
        self.by_case: dict[str, str] = {}
        for label in self.labels:
            key = _canon(label)
            if key in self.by_canon and self.by_canon[key] != label:
                self.by_case[label.strip()] = label
                self.by_case.setdefault(self.by_canon[key].strip(), self.by_canon[key])
            self.by_canon.setdefault(key, label)
        self.case_bound = {_canon(label) for label in self.by_case}
        self.numeric = all(_NUM.match(label.strip()) for label in self.labels)
        self.max_words = max(len(re.split(r"[\s_-]+", label)) for label in self.labels)

    def match(self, raw: str) -> str | None:
        raw = raw.strip()
        if not raw:
            return None
        key = _canon(raw)
        got = self.by_case.get(raw.strip("*_`\"'“”‘’[](){}<>").strip().rstrip(".,;:!")) if key in self.case_bound else self.by_canon.get(key)
        if got is None and self.numeric:
            # "8/10", "8 out of 10": the score before the scale, when the scale is the rubric's own
            # ("3/5" on a 1-10 rubric is no score of it)
            m = re.match(r"^([+-]?\d+(?:\.0+)?)\s*(?:/|out\s+of)\s*(\d+)$", raw, _I)
            if m and int(m.group(2)) == max(int(label) for label in self.labels):
                got = self.by_canon.get(_canon(m.group(1)))
        return got


_ARTICLE = re.compile(r"[ \t]*an?[ \t]+(?=[+\-−]?\d)", _I)
# a value: a signed number, or one to four words (labels such as "flags premise", "A>B")
_VALUE = re.compile(r"[ \t]*[\[(\"'“‘<]*[ \t]*([+\-−]?\s?\d+(?:\.\d+)?(?:\s*(?:/|out\s+of)\s*\d+)?|[^\W\d][\w>=<+-]*(?:[ \t_-]+[^\W\d][\w-]*){0,3})", _I)
# what may follow a value for it to be the whole statement: nothing, punctuation, a gloss
_VALUE_ENDS = re.compile(
    r"(?:点|分|점)?[ \t\]\)\"'”’>}|]*(?:$|[.,;:!\n。、，；：！]|[(\[（]|[-–—]\s|\s+(?:because|since|as|given|for|out\s+of|points?)\b|\s*$)", _I | re.M
)


_NAMED_ANSWER = re.compile(r"[ \t]+answer\b", _I)


def _value_at(text: str, i: int, labels: _Labels) -> tuple[str | None, str, int] | None:
    """The label a value at i names, its raw text and its end; None when the value goes on as a
    sentence ("1 would require ..."), so that it is a sentence about a verdict, not a verdict."""
    if labels.numeric and (art := _ARTICLE.match(text, i)):
        i = art.end()  # "is a 10"
    m = _VALUE.match(text, i)
    if not m:
        return None
    raw = m.group(1)
    words = re.split(r"([ \t_-]+)", raw)
    # the longest run of leading words that is a label; the rest must end the statement
    for n in range(len(words), 0, -1):
        part = "".join(words[:n]).rstrip(" \t_-")
        if not part:
            continue
        end = m.start(1) + len(part)
        label = labels.match(part)
        if label is not None:
            if not labels.numeric and (named := _NAMED_ANSWER.match(text, end)) and _VALUE_ENDS.match(text, named.end()):
                end = named.end()  # "VERDICT: gold answer"
            return (label, part, end) if _VALUE_ENDS.match(text, end) else None
    # no label: an unknown value if it ends the statement ("VERDICT: maybe")
    first = words[0]
    end = m.start(1) + len(first)
    if _VALUE_ENDS.match(text, end) and len(raw.split()) <= 1:
        return None, first, end
    return None


# --------------------------------------------------------------------------- finding statements

_MARKUP = re.compile(r"\*+|`+|#+|(?<!\w)_+|_+(?!\w)|~~")


def _unmarked(text: str) -> str:
    """The text with markdown emphasis, code ticks and heading marks blanked (same length, so
    positions stay those of the reply)."""
    return _MARKUP.sub(lambda m: " " * len(m.group(0)), text)


_CUE = re.compile(
    r"(?:(?<![\w-])(?P<qual>final|overall|my|our|revised|updated|corrected|adjusted|new|the)[ \t]+)?"
    r"(?<![\w-])(?P<noun>verdict|score|rating|grade|judg(?:e)?ment|decision|evaluation|assessment|classification|label|conclusion|result)"
    r"(?:[ \t]+(?:score|label|verdict))?(?:[ \t]+(?:for|of)[ \t]+(?:this|the|that)[ \t]+(?:answer|response|reply|conversation|assistant)(?:['’]s[ \t]+\w+)?)?"
    r"(?P<sep>[ \t]*(?:[:：=]|->|→|[-–—](?=[ \t])|\bis\b:?|\bwould\s+be\b)[ \t]*|[ \t]*\n[ \t\n]*|[ \t]*\|[ \t]*)",
    _I,
)
_BRACKETS = re.compile(r"\[\[[ \t]*([^\[\]\n]{1,20}?)[ \t]*\]\]")
_STRONG_NOUNS = ("verdict", "judgment", "judgement", "grade", "rating", "score", "decision")
_PHRASE = re.compile(
    r"\b(?:(?:i|we)\s+(?:would\s+|will\s+|therefore\s+|thus\s+|hence\s+)?(?:give|assign|award|rate|score|grade)|give|assign|award|deserves?|earns?|merits?|warrants?)[ \t]+"
    r"(?:(?:it|this(?:[ \t]+(?:answer|response|reply))?|the[ \t]+(?:answer|response|reply|assistant['’]s[ \t]+(?:answer|response)))[ \t]+)?(?:(?:an?|the)[ \t]+)?"
    r"(?:(?:score|rating|verdict|grade|label)[ \t]+)?(?:(?:of|as|at)[ \t]+)?(?:an?[ \t]+)?"
    r"|\b(?:is|was|be)[ \t]+(?:rated|scored|graded)[ \t]+(?:as[ \t]+)?(?:an?[ \t]+)?(?:score[ \t]+of[ \t]+)?"
    # "The assistant's response rate is 10/10." ("rate" for rating, said of the response under
    # review; a clinical "overall response rate" is none)
    r"|\b(?:assistant['’]s|model['’]s|this)[ \t]+(?:response|answer|reply)[ \t]+rat(?:e|ing)[ \t]+(?:is|was|would[ \t]+be)[ \t]+(?:an?[ \t]+)?",
    _I,
)
# a statement under a condition, or one about verdicts in general, is not a verdict
# "does not deserve a 1", "wouldn't merit a score of 1": a phrase denied is no verdict
_NEGATED = re.compile(r"(?:\b(?:not|never|hardly|cannot)|n['’]t)[ \t]+(?:(?:quite|really|fully|yet)[ \t]+)?$", _I)
_ALTERNATIVE = re.compile(r"[ \t]*(?:or|/)[ \t]*\[\[", _I)
_FINAL_WORD = re.compile(r"\bfinal\b", _I)
_HYPOTHETICAL = re.compile(
    r"\b(?:if|unless|whether|would\s+(?:only|have)|rather\s+than|instead\s+of|could|might|improved|better\s+(?:answer|response))\b[^.!?\n]*$", _I
)


# a statement inside a quoted format or example ('the format is "Rating: [[5]]"') quotes the rubric
_QUOTED_FORMAT = re.compile(r"\b(?:format|template|for\s+example|e\.g\.|example|such\s+as)\b[^.!?\n]*[\"“'‘`][^\"”'’`]*$", _I)


def _clause_before(text: str, start: int) -> str:
    cut = max(text.rfind(c, 0, start) for c in ".!?\n;")
    return text[cut + 1 : start]


def _key(text: str) -> str:
    return re.sub(r"\s+", " ", _unmarked(text)).strip().casefold()


def _json_candidates(text: str, labels: _Labels) -> tuple[list[_Stated], list[tuple[int, int]], bool]:
    """JSON objects (and Python dict literals) in the reply: their verdict statements, their spans,
    and whether some object had fields but no verdict."""
    found: list[_Stated] = []
    spans: list[tuple[int, int]] = []
    without = False
    decoder = json.JSONDecoder()
    i = text.find("{")
    while i != -1:
        obj: object = None
        end = -1
        try:
            obj, end = decoder.raw_decode(text, i)
        except ValueError:
            close = _matching_brace(text, i)
            if close is not None:
                try:
                    obj = ast.literal_eval(text[i : close + 1])
                    end = close + 1
                except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
                    obj = None
        if not isinstance(obj, dict):
            i = text.find("{", i + 1)
            continue
        spans.append((i, end))
        got = _field_of(obj, labels)
        if got is None:
            without = without or bool(obj)
        else:
            raw, field = got
            # top-level: the object stands on its own lines (a code fence around it is fine)
            line_start = text.rfind("\n", 0, i) + 1
            line_end = text.find("\n", end)
            alone = not text[line_start:i].strip(" \t>`json") and not text[end : len(text) if line_end == -1 else line_end].strip(" \t`.")
            found.append(
                _Stated(
                    i,
                    end,
                    JSON_FIELD if alone else PHRASE,
                    raw,
                    _json_label(raw, labels),
                    "json:" + _key(text[i:end]),
                    final=field.startswith("final"),
                )
            )
        i = text.find("{", end)
    return found, spans, without


def _json_label(raw: str | None, labels: _Labels) -> str | None:
    """A JSON verdict value's label: the value itself, or a label opening it with a gloss ("1 -
    corrects the premise", "1 (corrects)", "gold answer"); a label going on as a sentence ("1 would
    require ...") is none."""
    if raw is None:
        return None
    got = labels.match(raw)
    if got is None and (value := _value_at(raw.strip(), 0, labels)) is not None:
        got = value[0]
    return got


def _matching_brace(text: str, i: int) -> int | None:
    depth = 0
    quote: str | None = None
    for j in range(i, min(len(text), i + 20000)):
        c = text[j]
        if quote:
            if c == "\\":
                continue
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return j
    return None


def _field_of(obj: Mapping[str, object], labels: _Labels, depth: int = 0) -> tuple[str | None, str] | None:
    """The verdict a JSON object gives: (raw value, field name), or None when it names none."""
    keys = {str(k).casefold(): k for k in obj}
    names = _VERDICT_KEYS + (_SCORE_KEYS if labels.numeric else ())
    for name in names:
        if name in keys:
            v = obj[keys[name]]
            if isinstance(v, bool):
                raw = "true" if v else "false"
                return (raw if labels.match(raw) else None), name
            if isinstance(v, int | float | str):
                return (str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)), name
            if isinstance(v, dict) and depth < 2:
                inner = _field_of(v, labels, depth + 1)
                if inner is not None:
                    return inner
            return None, name
    for v in obj.values():
        if isinstance(v, dict) and depth < 2:
            inner = _field_of(v, labels, depth + 1)
            if inner is not None:
                return inner
    ranked = _ranked_first(obj, labels)
    if ranked is not None:
        return ranked
    # another field named for a verdict ("criteria_met": true, "if_score": 0.8) whose value is a label
    named = [(k, v) for k, v in obj.items() if _VERDICTISH.search(str(k)) and not isinstance(v, dict | list)]
    hits = [(k, ("true" if v else "false") if isinstance(v, bool) else str(v)) for k, v in named]
    hits = [(k, raw) for k, raw in hits if labels.match(raw) is not None]
    if len(hits) == 1:
        return hits[0][1], str(hits[0][0]).casefold()
    # a rubric's own name for its score ({"Reason": "...", "Sharpness": -1}): the one field beside
    # the reason whose value is a label, when nothing else in the object could be one
    others = [(k, v) for k, v in obj.items() if str(k).casefold() not in _REASON_KEYS and not _NOT_VERDICT.search(str(k))]
    if len(others) == 1 and not isinstance(others[0][1], dict | list | bool) and labels.match(str(others[0][1])) is not None:
        v = others[0][1]
        return (str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)), str(others[0][0]).casefold()
    return None


_RANK_KEYS = ("rank", "ranking", "position", "place")


def _ranked_first(obj: Mapping[str, object], labels: _Labels) -> tuple[str | None, str] | None:
    """A ranking of the candidates ({"ordered_models": [{"model": "m", "rank": 1}, {"model": "M",
    "rank": 2}]}): each entry a rank and one value that is a label. The one entry ranked first is
    the verdict; several sharing the first rank are a tie, which names no label."""
    for key, v in obj.items():
        if not isinstance(v, list) or len(v) < 2 or not all(isinstance(e, dict) for e in v):
            continue
        entries = []
        for e in v:
            ranks = [r for k, r in e.items() if str(k).casefold() in _RANK_KEYS]
            named = [str(x) for k, x in e.items() if str(k).casefold() not in _RANK_KEYS and isinstance(x, str | int) and not isinstance(x, bool)]
            named = [x for x in named if labels.match(x) is not None]
            if len(ranks) != 1 or isinstance(ranks[0], bool) or not re.fullmatch(r"\d+", str(ranks[0]).strip()) or len(named) != 1:
                break
            entries.append((int(str(ranks[0]).strip()), named[0]))
        else:
            best = min(r for r, _ in entries)
            first = [x for r, x in entries if r == best]
            return (first[0] if len(first) == 1 else "a tie of " + " and ".join(first)), str(key).casefold()
    return None


_NOT_VERDICT = re.compile(r"confidence|certainty|probab|count|length|index|\bid\b|number|step|turn|time|tokens?", _I)


_VERDICTISH = re.compile(r"score|verdict|grade|rating|label|result|judg|decision|criteria_met|\bmet\b|correct|pass", _I)


_LOOSE_FIELD = re.compile(r"[\"'](" + "|".join(_VERDICT_KEYS + _SCORE_KEYS) + r")[\"']\s*:\s*[\"']?", _I)


def _after_cues(plain: str, labels: _Labels, inside_json: Callable[[int], bool]) -> list[_Stated]:
    """The verdicts a cue word names ("Verdict: 1", "final score = 0", a heading "Verdict" on its own
    line, a table row whose first cell names it), outside JSON and outside a hypothetical clause."""
    out: list[_Stated] = []
    for m in _CUE.finditer(plain):
        if inside_json(m.start()):
            continue
        noun, qual = m.group("noun").casefold(), (m.group("qual") or "").casefold()
        # "evaluation", "label", "conclusion" ... name a verdict only with a colon or an equals sign
        if noun not in _STRONG_NOUNS and not re.search(r"[:：=]", m.group("sep")) and qual not in ("final", "my", "overall"):
            continue
        opening = plain[plain.rfind("\n", 0, m.start()) + 1 : m.start()]
        if "\n" in m.group("sep") and not re.match(r"^[ \t>#*]*$", opening):
            continue  # "verdict" then a line break is a heading only when it opens its line
        if "|" in m.group("sep") and not re.match(r"^[ \t]*\|[ \t]*$", opening):
            continue  # "| Verdict | -1 |": a table row naming the verdict in its first cell
        got = _value_at(plain, m.end(), labels)
        if got is None or _HYPOTHETICAL.search(_clause_before(plain, m.start())):
            continue
        final = qual in ("final", "revised", "updated", "corrected", "adjusted", "new")
        out.append(_Stated(m.start(), got[2], EXPLICIT, got[1], got[0], _key(plain[m.start() : got[2]]), final))
    return out


def _statements(text: str, labels: _Labels) -> tuple[list[_Stated], bool]:
    """Every verdict statement of a text, in order, and whether it had JSON without a verdict."""
    plain = _unmarked(text)
    said, spans, without = _json_candidates(text, labels)

    def inside_json(pos: int) -> bool:
        return any(s <= pos < e for s, e in spans)

    # a verdict field in JSON too broken to parse (an answer pasted unescaped into the reason)
    for m in _LOOSE_FIELD.finditer(text):
        if inside_json(m.start()) or (m.group(1).casefold() in _SCORE_KEYS and not labels.numeric):
            continue
        got = _value_at(text, m.end(), labels)
        if got:
            said.append(_Stated(m.start(), got[2], JSON_FIELD, got[1], got[0], "json:" + _key(text[m.start() : got[2]])))
    said += _after_cues(plain, labels, inside_json)
    for m in _BRACKETS.finditer(plain):
        if (
            inside_json(m.start())
            or _HYPOTHETICAL.search(_clause_before(plain, m.start()))
            or _ALTERNATIVE.match(plain, m.end())
            or re.search(r"\bor[ \t]*$", plain[max(0, m.start() - 6) : m.start()])
        ):
            continue
        label = labels.match(m.group(1))
        line = plain[plain.rfind("\n", 0, m.start()) + 1 : m.start()]
        said.append(_Stated(m.start(), m.end(), EXPLICIT, m.group(1), label, _key(m.group(0)), final=bool(_FINAL_WORD.search(line))))
    for m in _PHRASE.finditer(plain):
        if inside_json(m.start()) or _HYPOTHETICAL.search(_clause_before(plain, m.start())) or _NEGATED.search(plain, max(0, m.start() - 40), m.start()):
            continue
        got = _value_at(plain, m.end(), labels)
        if got and got[0] is not None:
            said.append(_Stated(m.start(), got[2], PHRASE, got[1], got[0], _key(plain[m.start() : got[2]])))
    said += _tagged(plain, labels, inside_json)
    said += _bare(plain, labels, inside_json)
    return sorted(said, key=lambda s: (s.start, -s.kind)), without


# Statements named by a tag, a word of another language or a field written as a line:
# "[RESULT] 4" (Prometheus), "判定: 1", "Veredicto: 1", "criteria_met: false", "correct: yes".
# Each needs its separator (a colon or equals sign, the tag's bracket) and a value that ends
# the statement, as every statement does.
_TAG = re.compile(r"\[[ \t]*(?:result|verdict|score|grade|rating|judg(?:e)?ment|label)[ \t]*\][ \t]*[:：=]?[ \t]*", _I)
_FOREIGN_CUE = re.compile(
    r"(?:最终|最終|総合|综合|总体|總體|최종[ \t]*)?(?:判定|判断|判斷|評価|评价|評價|评分|評分|評点|得分|分数|分數|点数|採点|スコア|結論|结论|判決|판정|평가|점수|결론)"
    r"(?:结果|結果)?[ \t]*[:：=][ \t]*"
    r"|(?<![\w-])(?:veredicto|veredito|verdetto|giudizio|urteil|(?:gesamt|end)?bewertung|punteggio|valutazione|puntuaci[oó]n|pontua[cç][aã]o|"
    r"calificaci[oó]n|avalia[cç][aã]o|[eé]valuation)(?:[ \t]+final[e]?)?[ \t]*[:：=][ \t]*"
    r"|(?<![\w-])note[ \t]+finale[ \t]*[:：=][ \t]*",
    _I,
)
_FIELD_LINE = re.compile(r"^[ \t>*_#-]*(?:criteria_met|is_correct|correct|is_match|match|is_equivalent|equivalent|passed|pass)[ \t*_`]*[:：=][ \t]*", _I | re.M)


def _tagged(plain: str, labels: _Labels, inside_json: Callable[[int], bool]) -> list[_Stated]:
    """The statements these name, when their value is a label (a value that is none, such as a
    whole sentence written without spaces after "结论：", is no statement here)."""
    out = []
    for pattern in (_TAG, _FOREIGN_CUE, _FIELD_LINE):
        for m in pattern.finditer(plain):
            if inside_json(m.start()) or _HYPOTHETICAL.search(_clause_before(plain, m.start())):
                continue
            got = _value_at(plain, m.end(), labels)
            if got is not None and got[0] is not None:
                line = plain[plain.rfind("\n", 0, m.start()) + 1 : m.start()]
                out.append(_Stated(m.start(), got[2], EXPLICIT, got[1], got[0], _key(plain[m.start() : got[2]]), final=bool(_FINAL_WORD.search(line))))
    return out


def _bare(plain: str, labels: _Labels, inside_json: Callable[[int], bool]) -> list[_Stated]:
    """A reply that is only a label, or a label alone opening or closing it."""
    lines = [(m.start(), m.group(0)) for m in re.finditer(r"[^\n]+", plain) if m.group(0).strip()]
    if not lines:
        return []
    whole = plain.strip()
    label = labels.match(whole.rstrip(".!"))
    if label is not None and "\n" not in whole:
        start = plain.index(whole)
        return [_Stated(start, start + len(whole), EXPLICIT, whole, label, _key(whole))]
    out = []
    listing = _rubric_listing(plain, lines, labels)
    for pos, line in {lines[0], lines[-1]}:
        if pos in listing:
            continue
        lead = _bullet_end(line)  # a bullet, not a minus sign
        if inside_json(pos + lead):
            continue
        got = _value_at(plain, pos + lead, labels)
        # a label alone, or with a gloss in brackets or after a dash ("1 (corrects)", "-1 - ignores it")
        if got and got[0] is not None:
            rest = plain[got[2] : pos + len(line)].strip()
            if not rest or (rest[0] in "([-–—:." and (rest[0] != "." or not rest[1:].strip())):
                out.append(_Stated(pos + lead, got[2], BARE, got[1], got[0], _key(plain[pos + lead : got[2]])))
    return out


def _rubric_listing(plain: str, lines: list[tuple[int, str]], labels: _Labels) -> set[int]:
    """The lines of a rubric the reply restates ("-1: the answer does not notice ...", "0: hints
    ...", "1: ..."): lines that open with a label and a colon or dash and go on as a description,
    when two or more different labels open lines that way. None of them is a verdict."""
    opened: dict[int, str] = {}
    for pos, line in lines:
        lead = _bullet_end(line)
        m = _VALUE.match(plain, pos + lead)
        if not m:
            continue
        label = labels.match(m.group(1).split()[0]) if m.group(1).split() else None
        if label is not None and re.match(r"[ \t*_`]*(?:[:：]|[-–—][ \t])[ \t]*\S", plain[m.start(1) + len(m.group(1).split()[0]) : pos + len(line)]):
            opened[pos] = label
    return set(opened) if len(set(opened.values())) >= 2 else set()


# --------------------------------------------------------------------------- copies of the answer

_ESCAPES = re.compile(r"\\([\"'\\/nrt])")


def _normalised(text: str) -> tuple[str, list[int]]:
    """The text casefolded, without markup, JSON escapes undone and whitespace collapsed, with the
    index in the original text of every character kept."""
    out: list[str] = []
    where: list[int] = []
    i, n = 0, len(text)
    space = True
    while i < n:
        c = text[i]
        step = 1
        if c == "\\" and i + 1 < n and text[i + 1] in "\"'\\/nrt":
            c = {"n": " ", "r": " ", "t": " "}.get(text[i + 1], text[i + 1])
            step = 2
        if c in "*`#_>~|" or c.isspace():
            if (not space and c.isspace()) or (not space and c in "_"):
                out.append(" ")
                where.append(i)
                space = True
            i += step
            continue
        c = {"“": '"', "”": '"', "‘": "'", "’": "'", "−": "-", "–": "-", "—": "-"}.get(c, c)
        out.append(c.casefold())
        where.append(i)
        space = False
        i += step
    return "".join(out), where


def _copied(reply: str, answer: str) -> list[tuple[int, int]]:
    """Stretches of the reply (as spans of its text) copied from the answer: runs of the reply's
    normalised text made of pieces that occur in the answer's, long enough not to be chance (24
    characters, or the whole answer when it is shorter)."""
    a, _ = _normalised(answer)
    r, where = _normalised(reply)
    if not a.strip() or not r:
        return []
    k = min(12, len(a))
    grams = {a[i : i + k] for i in range(len(a) - k + 1)}
    covered = [False] * len(r)
    for i in range(len(r) - k + 1):
        if r[i : i + k] in grams:
            for j in range(i, i + k):
                covered[j] = True
    need = min(24, len(a.strip()))
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(r):
        if not covered[i]:
            i += 1
            continue
        j = i
        while j < len(r) and covered[j]:
            j += 1
        if j - i >= need:
            spans.append((where[i], where[j - 1] + 1))
        i = j
    return spans


def _fenced(reply: str, fence: str | None) -> list[tuple[int, int]]:
    """The spans of the reply inside the judge's real fence (closed; an unclosed one is left to
    the copy check, so a fence the answer fakes can never hide the judge's own words)."""
    if not fence:
        return []
    spans = []
    opener = re.compile(rf"<{re.escape(fence)}>", _I)
    closer = re.compile(rf"</{re.escape(fence)}>", _I)
    i = 0
    while (m := opener.search(reply, i)) is not None:
        c = closer.search(reply, m.end())
        if c is None:
            break
        spans.append((m.start(), c.end()))
        i = c.end()
    return spans


# --------------------------------------------------------------------------- reading

_REVISION = re.compile(
    r"\b(?:on\s+(?:further\s+)?reflection|on\s+second\s+thought|upon\s+(?:further\s+)?(?:reflection|review|consideration)|after\s+(?:further\s+)?"
    r"(?:reflection|review|consideration)|actually|wait|correction|reconsider\w*|re-?evaluat\w*|revis(?:e|ed|ing)\s+(?:my|the|this)?\s*(?:verdict|score|rating|judg\w*|assessment|grade)|i\s+revise|i\s+was\s+wrong|changing\s+my|"
    r"i\s+(?:will|would|must)\s+(?:change|revise|correct)|let\s+me\s+(?:re|correct))\b",
    _I,
)


def _reason_of(text: str, s: _Stated) -> str | None:
    if s.raw is not None and s.key.startswith("json:"):
        try:
            obj = json.loads(text[s.start : s.end])
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            for k, v in obj.items():
                if str(k).casefold() in _REASON_KEYS and isinstance(v, str):
                    return v
    before = text[: s.start].strip()
    return before or None


_THINK_END = re.compile(r"</think(?:ing)?>", _I)
_THINK_OPEN = re.compile(r"<think(?:ing)?>", _I)


def read_verdict(reply: str | None, labels: Sequence[str], answer: str | None = None, fence: str | None = None, rubric: str = "") -> VerdictReading:
    """The verdict a judge's reply gives (one of `labels`), or None with the reason none was read.
    `answer`: the text under review, whose copies in the reply are never read; `fence`: the tag
    name the answer was sent in (e.g. "answer-3f2a..."), whose contents are the answer's."""
    text = reply or ""
    if not text.strip():
        return VerdictReading(None, None, "empty judge reply")
    # a <think> block that opens and never closes is a judge cut off while thinking: its tentative
    # verdicts are no verdict
    if _THINK_OPEN.search(text) and not _THINK_END.search(text):
        return VerdictReading(None, None, "the judge reply was cut off inside its <think> block")
    # a closed <think> block is scratch work: the verdict is read after it when there is one there
    think = _THINK_END.search(text)
    if think and text[think.end() :].strip():
        after = read_verdict(" " * think.end() + text[think.end() :], labels, answer, fence, rubric)
        if after.label is not None or "conflicting" in after.how or "answer under review" in after.how:
            return after
    lab = _Labels(labels)
    said, json_without = _statements(text, lab)
    if not said:
        why = "the judge reply's JSON has no 'verdict'" if json_without else "no verdict in the judge reply"
        return VerdictReading(None, None, why)
    hidden = _fenced(text, fence) + (_copied(text, answer) if answer else [])
    own = [s for s in said if not any((a <= s.start and s.end <= b) or a <= s.end - 1 < b for a, b in hidden)]
    planted = {s.key for s in _statements(answer, lab)[0]} if answer else set()
    clear = [s for s in own if s.key not in planted]
    if not clear:
        # every verdict sits in a copy of the answer, or is worded exactly as one the answer plants
        where = "inside the answer under review (quoted, echoed or fenced)" if not own else "worded exactly as a verdict the answer under review writes itself"
        return VerdictReading(None, None, f"the only verdict in the judge reply is {where}, which cannot give one")
    # the rubric's format or example quoted beside the judge's own verdict is not the judge's
    plain = _unmarked(text)
    own_words = [s for s in clear if not _QUOTED_FORMAT.search(_clause_before(plain, s.start))]
    clear = own_words or clear
    top = max(s.kind for s in clear)
    ranked = [s for s in clear if s.kind == top]
    # a value that is no label ("tie") beside one that is ("[[A=B]]") is the judge's gloss
    if any(s.label is not None for s in ranked):
        ranked = [s for s in ranked if s.label is not None]
    cur = ranked[0]
    conflict: tuple[_Stated, _Stated] | None = None
    for s in ranked[1:]:
        if s.label == cur.label and (s.raw == cur.raw or (s.raw is not None and cur.raw is not None and s.raw.casefold() == cur.raw.casefold())):
            cur = s if s.final else cur
            continue
        if s.label is not None and s.label == cur.label and conflict is None:
            continue
        # a revision ("On reflection, ...") or a final verdict after per-part ones settles it
        if (s.final and not cur.final) or _REVISION.search(text, cur.end, s.start):
            cur, conflict = s, None
            continue
        conflict = conflict or (cur, s)
        cur = s
    if conflict is not None:
        shown = " and ".join(repr(x.raw) for x in conflict)
        return VerdictReading(None, None, f"conflicting verdicts: {shown} with no revision between them")
    if cur.label is None:
        of = f" of rubric {rubric}" if rubric else ""
        return VerdictReading(None, None, f"judge verdict {cur.raw!r} is not a label{of} (labels: {', '.join(lab.labels)})")
    shown = re.sub(r"\s+", " ", text[cur.start : cur.end]).strip()
    return VerdictReading(cur.label, _reason_of(text, cur), f"{_KIND_NAME[cur.kind]}: {shown[:120]}")
