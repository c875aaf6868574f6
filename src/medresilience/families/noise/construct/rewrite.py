"""The rewrite variant: a generator model restyles the case as an informal clinical note (terse,
shorthand, the way a busy clinician writes) keeping every finding.

A rewrite is checked deterministically before it is used; a failing one is asked again with the
reason, then dropped with it:

- `numbers_lost`: every number of the case must survive in the note (as often as it occurs; its
  unit may be written differently: "38°C" -> "38 C", "125/85 mm Hg" -> "BP 125/85"). Numbers are
  compared as values: thousands separators and trailing decimal zeros do not matter ("16,400" ==
  "16400", "5.0" == "5"), superscript digits count as digits ("mm³" == "mm3");
- `names_the_answer`: the note names the gold answer (the case did not);
- `too_short`: the note is under a third of the case's length (something was dropped);
- `unchanged`: the note is the case itself (the same words, whatever the spacing, case and
  quotation marks): no rewrite at all.

Number words ("two weeks") are not numbers here: the note may write them either way."""

from __future__ import annotations

import re
from collections import Counter

from ....build.stages import Rejected, Task, parse_object
from ....records import Item
from ....runtime.jsontypes import JSONObject
from ....runtime.seeding import stable_hash
from ..probe import NoiseProbe
from ..taxonomy import FAMILY, REWRITE, facets_of

PROMPT_VERSION = "noise-rewrite/1"
SCHEMA_NAME = "noise_rewrite"
MIN_RATIO = 1 / 3

SYSTEM = "You rewrite clinical cases in the style of real clinical notes without changing any clinical fact."
INSTRUCTIONS = """Rewrite the clinical case below as an informal note, the way a busy clinician
writes in a chart: shorthand, sentence fragments, common abbreviations, a conversational tone.

<case>
{case}
</case>

Rules:
- keep every finding, every negative finding and every number exactly as given (you may write a
  unit differently, never convert it: 38°C stays 38, 125/85 mm Hg stays 125/85);
- add nothing that is not in the case: no diagnosis, no interpretation, no question;
- keep lab values; a table may become a list.

Reply with a JSON object only: {{"note": "..."}}."""

SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"note": {"type": "string"}},
    "required": ["note"],
    "additionalProperties": False,
}

_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹₀₁₂₃₄₅₆₇₈₉", "01234567890123456789")
_NUMBER = re.compile(r"(?<![\d.,])\d+(?:,\d{3})+(?![\d])(?:\.\d+)?|(?<![\d.,])\d+(?:\.\d+)?")


def prompt_texts() -> dict[str, str]:
    return {"version": PROMPT_VERSION, "system": SYSTEM, "instructions": INSTRUCTIONS}


def prompt_hash() -> str:
    return stable_hash(prompt_texts())[:16]


def numbers(text: str) -> Counter[str]:
    """The numbers of a text as normalised values, with their counts."""
    out: Counter[str] = Counter()
    for m in _NUMBER.finditer(text.translate(_SUPERSCRIPTS)):
        v = m.group(0).replace(",", "")
        if "." in v:
            v = v.rstrip("0").rstrip(".")
        v = v.lstrip("0") or "0"
        if v.startswith("."):
            v = "0" + v
        out[v] += 1
    return out


def missing_numbers(original: str, rewritten: str) -> list[str]:
    """The numbers of the original the rewrite lost (each as often as it is short)."""
    have = numbers(rewritten)
    lost: list[str] = []
    for v, n in numbers(original).items():
        lost += [v] * max(0, n - have.get(v, 0))
    return sorted(lost, key=lambda x: (float(x), x))


def _words(text: str) -> list[str]:
    return re.findall(r"\w+(?:[./-]\w+)*", text.lower())


def check_note(note: str, case: Item) -> str:
    """The note, cleaned; Rejected with a code when a check fails."""
    text = note.strip()
    if not text:
        raise Rejected("parse_failed", "the note is empty")
    lost = missing_numbers(case.question, text)
    if lost:
        shown = ", ".join(lost[:8]) + (f" and {len(lost) - 8} more" if len(lost) > 8 else "")
        raise Rejected("numbers_lost", f"the note lost {len(lost)} number(s) of the case: {shown}")
    ref = case.reference
    if ref and len(ref) >= 4:
        rx = re.compile(rf"(?<!\w){re.escape(ref)}(?!\w)", re.IGNORECASE)
        if rx.search(text) and not rx.search(case.question):
            raise Rejected("names_the_answer", f"the note names the answer ({ref!r})")
    if _words(text) == _words(case.question):
        raise Rejected("unchanged", "the note is the case as it was written: restyle it as an informal note")
    if len(text) < MIN_RATIO * len(case.question.strip()):
        raise Rejected("too_short", f"the note has {len(text)} characters, under a third of the case's {len(case.question.strip())}")
    return text


def parser(case: Item):
    def parse(text: str | None) -> str:
        obj = parse_object(text)
        note = obj.get("note")
        if not isinstance(note, str):
            raise Rejected("parse_failed", "the reply has no string 'note'")
        return check_note(note, case)

    return parse


def max_tokens(case: Item) -> int:
    return min(4096, 256 + len(case.question) // 2)


def messages(case: Item) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": INSTRUCTIONS.format(case=case.question.strip())}]


def task(case: Item) -> Task:
    return Task(case.id, messages(case), SCHEMA_NAME, SCHEMA, max_tokens(case), parser(case))


def probe(case: Item, note: str, generator: str | None = None) -> NoiseProbe:
    return NoiseProbe(
        id=f"{case.id}:{REWRITE}",
        item_id=case.id,
        family=FAMILY,
        condition=REWRITE,
        parts={"text": note},
        facets=facets_of(REWRITE),
        meta={"generator": generator} if generator else {},
    )
