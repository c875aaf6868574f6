"""Red herrings: sentences about the patient's everyday life that matter nothing to the diagnosis,
written once per case by a generator model (10 per case, stored in the case's meta as
`red_herrings`), then inserted into the case at sentence boundaries (`split.insertion_points`).

Variants, each drawn with `seeding.rng_for(seed, item id, variant)`:

- `redherring-10`: each of the 10 sentences gets a boundary drawn at random (several may share
  one; there they keep their order);
- `redherring-5` / `redherring-1`: 5 of those 10 drawn at random, then 1 of those 5, each at the
  boundary it has in `redherring-10` (nested: the 1 is among the 5, the 5 among the 10);
- `together-10`: the same 10, in their order, as one block at one boundary drawn at random;
- `whitespace`: `redherring-10` with each inserted sentence replaced by spaces of the same length
  at the same place (the study's control for the longer prompt).

A probe's parts hold the rendered text and its insertions: `{"at": offset in the case,
"herring": index in red_herrings, "chars": length of the inserted string}`. An inserted string
is one space then the sentence (or as many spaces), put right after the boundary's punctuation;
`rebuild(case, parts, blank)` rebuilds the text from the case and the parts.

Checks on the generated sentences (deterministic; a failing reply is asked again with the
reason): 10 sentences, each one sentence of at most `MAX_CHARS`, all different, none naming an
option of the question (the gold answer included), none using the clinical words of
`CLINICAL_WORDS` (a lexicon check: an everyday sentence that bears on the diagnosis in subtler
ways, an exposure or a habit, is not caught by it)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ....build.stages import Rejected, Task, parse_object
from ....records import Item
from ....runtime.jsontypes import JSONObject
from ....runtime.seeding import rng_for, stable_hash
from ..probe import NoiseProbe, rebuild
from ..taxonomy import DISTRIBUTED, DOSES, FAMILY, HERRINGS, TOGETHER, WHITESPACE, facets_of
from .split import CLOSERS, SENTENCE_END, insertion_points, split

PROMPT_VERSION = "noise-redherring/1"
SCHEMA_NAME = "noise_red_herrings"
MAX_CHARS = 240
MAX_TOKENS = 1200

SYSTEM = "You write material for testing how clinical reasoning copes with irrelevant details. You never add medical facts to a case."
INSTRUCTIONS = """Below is a clinical case.

<case>
{case}
</case>

Write {n} short sentences about this patient's everyday life that could sit in the case history
without mattering to it at all: hobbies, work, family, plans, tastes, the home. Rules:
- nothing about health, the body, symptoms, medicines, treatment, food or drink, tobacco,
  alcohol or drugs, sleep, exercise, travel, animals, or anything else a clinician could use;
- nothing that contradicts or repeats the case, and no names of diseases or tests;
- each sentence stands alone, is different from the others, and refers to the patient as the case
  does (he, she, the patient);
- one sentence each, at most 30 words, ending with a period.

Reply with a JSON object only: {{"sentences": ["...", "..."]}} holding exactly {n} sentences."""

SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"sentences": {"type": "array", "items": {"type": "string"}}},
    "required": ["sentences"],
    "additionalProperties": False,
}

#: word stems a red herring must not use (a lexicon check for plainly clinical content; a stem may carry a
#: lookahead: "pain" but not "paint")
CLINICAL_WORDS: tuple[str, ...] = (
    "ache",
    "alcohol",
    "allerg",
    "antibiot",
    "beer",
    "blood",
    "bone",
    "cancer",
    "cannabis",
    "cigar",
    "clinic",
    "cocaine",
    "cough",
    "diagnos",
    "diet",
    "disease",
    "doctor",
    "dose",
    "drug",
    "exercis",
    "fatigue",
    "fever",
    "fractur",
    "heart",
    "heroin",
    "hospital",
    "illness",
    "infect",
    "injur",
    "kidney",
    "liver",
    "lung",
    "marijuana",
    "medic",
    "nause",
    "nurse",
    "opioid",
    "pain(?!t)",
    "pill",
    "pregnan",
    "prescri",
    "rash",
    "sick",
    "sleep",
    "smok",
    "surg",
    "symptom",
    "syndrome",
    "tablet",
    "therap",
    "tobacco",
    "tumor",
    "tumour",
    "vaccin",
    "vap",
    "vomit",
    "weight",
    "wine",
)
_CLINICAL = re.compile(r"\b(?:" + "|".join(CLINICAL_WORDS) + r")", re.IGNORECASE)
#: where `split` could cut a one-line text: sentence-final punctuation (and closers), then whitespace
_MAYBE_CUT = re.compile(f"[{re.escape(SENTENCE_END)}][{re.escape(CLOSERS)}]*\\s")


def prompt_texts() -> dict[str, str]:
    return {"version": PROMPT_VERSION, "system": SYSTEM, "instructions": INSTRUCTIONS}


def prompt_hash() -> str:
    return stable_hash(prompt_texts())[:16]


def messages(case: Item, n: int = HERRINGS) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": INSTRUCTIONS.format(case=case.question.strip(), n=n)}]


def check_sentences(raw: Sequence[object], case: Item, n: int = HERRINGS, avoid: Sequence[str] = ()) -> list[str]:
    """The first n sentences, normalised; Rejected (with a code) when they do not pass the checks
    (a sentence of `avoid`, those already kept or rejected, counts as a duplicate)."""
    if len(raw) < n:
        raise Rejected("too_few", f"{len(raw)} sentences, expected {n}")
    out: list[str] = []
    options = [o for o in (case.options or {}).values() if len(o.strip()) >= 4]
    if case.reference and case.reference not in options:
        options.append(case.reference)
    named = [(o, re.compile(rf"(?<!\w){re.escape(o)}(?!\w)", re.IGNORECASE)) for o in options]
    for i, s in enumerate(raw[:n], 1):
        if not isinstance(s, str):
            raise Rejected("parse_failed", f"sentence {i} is not a string")
        s = " ".join(s.split())
        if not s:
            raise Rejected("empty_sentence", f"sentence {i} is empty")
        if s[-1] not in ".!":
            s += "."
        if len(s) > MAX_CHARS:
            raise Rejected("too_long", f"sentence {i} has {len(s)} characters (at most {MAX_CHARS})")
        if _MAYBE_CUT.search(s) and len(split(s)) != 1:  # (one line with no such punctuation is one sentence)
            raise Rejected("not_one_sentence", f"sentence {i} is more than one sentence: {s[:80]!r}")
        m = _CLINICAL.search(s)
        if m:
            raise Rejected("clinical_content", f"sentence {i} uses a clinical word ({m.group(0)!r}): {s[:80]!r}")
        for o, rx in named:
            if rx.search(s):
                raise Rejected("names_an_option", f"sentence {i} names an answer option ({o!r})")
        if s.lower() in (x.lower() for x in (*avoid, *out)):
            raise Rejected("duplicate", f"sentence {i} repeats an earlier one")
        out.append(s)
    return out


def parser(case: Item, n: int = HERRINGS, avoid: Sequence[str] = ()):
    def parse(text: str | None) -> list[str]:
        obj = parse_object(text)
        raw = obj.get("sentences")
        if not isinstance(raw, list):
            raise Rejected("parse_failed", "the reply has no list 'sentences'")
        return check_sentences(raw, case, n, avoid)

    return parse


def task(case: Item, n: int = HERRINGS) -> Task:
    return Task(case.id, messages(case, n), SCHEMA_NAME, SCHEMA, MAX_TOKENS, parser(case, n))


# --------------------------------------------------------------------------- replacements

#: when the checker model (`checker.py`) finds clinical information in some sentences, the
#: generator is asked for as many new ones, shown the sentences kept (not to repeat them) and the
#: ones rejected with the checker's reasons (not to write anything like them)
REPLACE_INSTRUCTIONS = """Below is a clinical case, sentences about the patient's everyday life
already written for it, and sentences that were rejected because a clinician could use them.

<case>
{case}
</case>

<kept>
{kept}
</kept>

<rejected>
{rejected}
</rejected>

Write {n} new short sentences about this patient's everyday life that could sit in the case
history without mattering to it at all: hobbies, work, family, plans, tastes, the home. Rules:
- nothing about health, the body, symptoms, medicines, treatment, food or drink, tobacco,
  alcohol or drugs, sleep, exercise, travel, animals, or anything else a clinician could use;
- nothing like the rejected sentences, and none of the kept ones again;
- nothing that contradicts or repeats the case, and no names of diseases or tests;
- each sentence stands alone, is different from the others, and refers to the patient as the case
  does (he, she, the patient);
- one sentence each, at most 30 words, ending with a period.

Reply with a JSON object only: {{"sentences": ["...", "..."]}} holding exactly {n} sentences."""


def replace_prompt_hash() -> str:
    return stable_hash({"version": PROMPT_VERSION, "system": SYSTEM, "instructions": REPLACE_INSTRUCTIONS})[:16]


def _lines(sentences: Sequence[str]) -> str:
    return "\n".join(f"- {s}" for s in sentences) or "(none)"


def replace_messages(case: Item, kept: Sequence[str], rejected: Sequence[tuple[str, str]], n: int) -> list[dict[str, str]]:
    rej = "\n".join(f"- {s} (rejected: {' '.join(why.split())})" for s, why in rejected) or "(none)"
    user = REPLACE_INSTRUCTIONS.format(case=case.question.strip(), kept=_lines(kept), rejected=rej, n=n)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def replace_task(case: Item, kept: Sequence[str], rejected: Sequence[tuple[str, str]], n: int) -> Task:
    """A generator task for n new sentences, none of them one already kept or rejected."""
    avoid = [*kept, *(s for s, _ in rejected)]
    return Task(case.id, replace_messages(case, kept, rejected, n), SCHEMA_NAME, SCHEMA, MAX_TOKENS, parser(case, n, avoid))


# --------------------------------------------------------------------------- placing them


def draw_positions(seed: int, item_id: str, points: Sequence[int], n: int = HERRINGS) -> list[int]:
    """The boundary (an offset from `points`) of each of the n red herrings of `redherring-10`."""
    rng = rng_for(seed, item_id, "redherring-10")
    return [rng.choice(list(points)) for _ in range(n)]


def draw_subsets(seed: int, item_id: str, n: int = HERRINGS) -> dict[str, list[int]]:
    """The herring indices of each distributed dose, nested: {variant: sorted indices}."""
    ten = list(range(n))
    five = sorted(rng_for(seed, item_id, "redherring-5").sample(ten, DOSES["redherring-5"]))
    one = sorted(rng_for(seed, item_id, "redherring-1").sample(five, DOSES["redherring-1"]))
    return {"redherring-10": ten, "redherring-5": five, "redherring-1": one}


def draw_block(seed: int, item_id: str, points: Sequence[int]) -> int:
    return rng_for(seed, item_id, TOGETHER).choice(list(points))


def _insertions(herrings: Sequence[str], placed: Sequence[tuple[int, int]]) -> list[JSONObject]:
    return [{"at": at, "herring": h, "chars": len(herrings[h]) + 1} for at, h in placed]


def variant_probes(
    case: Item, herrings: Sequence[str], seed: int, variants: Sequence[str], generator: str | None = None, points: Sequence[int] | None = None
) -> list[NoiseProbe]:
    """The probes of the red-herring variants of one case (none without an insertion point);
    `points`: the case's insertion points, when the caller has them already."""
    points = insertion_points(case.question) if points is None else points
    if not points:
        return []
    n = len(herrings)
    positions = draw_positions(seed, case.id, points, n)
    subsets = draw_subsets(seed, case.id, n)
    block = draw_block(seed, case.id, points)
    meta = {"generator": generator} if generator else {}
    out: list[NoiseProbe] = []
    for v in variants:
        if v in DISTRIBUTED or v == WHITESPACE:
            chosen = subsets["redherring-10" if v == WHITESPACE else v]
            placed = sorted((positions[h], h) for h in chosen)
        elif v == TOGETHER:
            placed = [(block, h) for h in range(n)]
        else:
            continue
        ins = _insertions(herrings, placed)
        text = rebuild(case.question, herrings, ins, blank=v == WHITESPACE)
        parts: dict[str, object] = {"text": text, "insertions": ins}
        if v == WHITESPACE:
            parts["blank"] = True
        out.append(NoiseProbe(id=f"{case.id}:{v}", item_id=case.id, family=FAMILY, condition=v, parts=parts, facets=facets_of(v), meta=dict(meta)))
    return out
