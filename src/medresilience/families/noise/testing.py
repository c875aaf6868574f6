"""A deterministic fake generator for the clinical-noise builder (a stub-server policy: tests,
benchmarks and dry runs never need a real model).

Red herrings: 10 sentences drawn from a bank of everyday sentences by a hash of the case. Rewrite:
the case restyled by fixed substitutions (every number kept). Behaviour bands, each chosen by a
hash of the case text (so expected counts can be computed, not guessed):

- `invalid_json`: the first reply of a stage is broken JSON (the retry succeeds);
- `clinical`: the first red-herring reply slips a clinical sentence in (the retry succeeds);
- `always_clinical`: every red-herring reply does (the case's red herrings are dropped);
- `lose_number`: every rewrite drops the case's first number (the rewrite is dropped).

It also plays the checker model (`checker.py`, told apart by the schema it is asked for):

- `flag_one`: the checker flags the case's third red herring (`herrings(case)[2]`) as clinical;
  the generator's replacement (the next sentence of the case's bank order not yet used) passes;
- `flag_always`: the checker flags the first sentence of every list it reads, so every
  replacement is flagged again and the case's red herrings are dropped after the rounds;
- `not_equivalent`: the checker finds the rewrite not clinically equivalent (it is dropped);
- `checker_unreadable`: no checker reply about the case can be read (both checks fail);
- `checker_garbled` (a separate draw, like `invalid_json`): the first reply of each check is
  broken JSON (the retry is read).

Asked for replacements (a prompt with `<kept>` and `<rejected>` blocks), the generator writes
the next sentences of the case's bank order that are neither kept nor rejected.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ...testing.stub import band_of, uniform
from .construct.checker import HERRING_SCHEMA_NAME as HERRING_CHECK
from .construct.checker import REWRITE_SCHEMA_NAME as REWRITE_CHECK
from .construct.redherring import SCHEMA_NAME as HERRING_SCHEMA
from .construct.rewrite import SCHEMA_NAME as REWRITE_SCHEMA

BANK = (
    "The patient collects old postcards from coastal towns.",
    "The patient's sister recently repainted the front porch a pale shade of blue.",
    "The patient has been learning to play the accordion from online videos.",
    "The patient works as a bookkeeper for a family-owned hardware store.",
    "The patient's favourite television show is a long-running quiz program.",
    "The patient recently rearranged the furniture in the living room.",
    "The patient volunteers at the public library on Saturday mornings.",
    "The patient keeps a detailed journal of local weather observations.",
    "The patient's grandson is applying to architecture schools this year.",
    "The patient enjoys solving crossword puzzles in the Sunday newspaper.",
    "The patient recently bought a new set of kitchen curtains.",
    "The patient prefers listening to jazz records on a vintage turntable.",
    "The patient is saving up to replace the family car next spring.",
    "The patient sings in a community choir that performs twice a year.",
    "The patient spent last weekend sorting old family photographs.",
    "The patient has lived in the same neighbourhood for many years.",
    "The patient likes to watch documentaries about ancient architecture.",
    "The patient recently started a book club with three neighbours.",
    "The patient's daughter is planning a small garden party for next month.",
    "The patient repairs antique clocks as a weekend pastime.",
    "The patient keeps a shelf of mystery novels sorted by author.",
    "The patient enjoys building scale models of historic sailing ships.",
    "The patient recently signed up for an evening class in pottery.",
    "The patient's brother runs a small printing shop downtown.",
)
CLINICAL = "The patient also mentions a mild headache and takes medication for it."

_CASE = re.compile(r"<case>\n(.*?)\n</case>", re.DOTALL)
_RETRY = re.compile(r"\[retry (\d+)\]")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
BANDS = ("always_clinical", "lose_number", "flag_one", "flag_always", "not_equivalent", "checker_unreadable")
_BLOCK = re.compile(r"<(kept|rejected|sentences)>\n(.*?)\n</\1>", re.DOTALL)
_WANT = re.compile(r"holding exactly (\d+) sentences")
_LISTED = re.compile(r"^(?:- |\d+\. )(.*?)(?: \(rejected: .*\))?$")
FLAG_REASON = "It describes something a clinician could weigh when working up this case."
PASS_REASON = "An everyday detail with no bearing on the diagnosis."
BROKEN = '{"sentences": ["this reply stops in the middle'

REWRITES = (
    (r"\bThe patient\b", "Pt"),
    (r"\bthe patient\b", "pt"),
    (r"\bblood pressure\b", "BP"),
    (r"\btemperature\b", "temp"),
    (r"\bPhysical examination shows\b", "On exam:"),
    (r"\bLaboratory studies show\b", "Labs"),
    (r"\bhistory of\b", "hx of"),
    (r"\bwith\b", "w/"),
    (r"\bwithout\b", "w/o"),
    (r"\bpatient's\b", "pt's"),
)


@dataclass
class FakeGenerator:
    invalid_json: float = 0.0
    clinical: float = 0.0
    always_clinical: float = 0.0
    lose_number: float = 0.0
    flag_one: float = 0.0
    flag_always: float = 0.0
    not_equivalent: float = 0.0
    checker_unreadable: float = 0.0
    checker_garbled: float = 0.0
    salt: str = "fake-noise-generator"

    def __post_init__(self) -> None:
        self.__name__ = "FakeGenerator"

    def band(self, case: str) -> str | None:
        return band_of(uniform(case, self.salt), ((name, getattr(self, name)) for name in BANDS))

    def bank_order(self, case: str) -> list[str]:
        """The bank, in this case's order (its red herrings are the first 10)."""
        order = sorted(range(len(BANK)), key=lambda i: uniform(f"{i}:{case}", self.salt + ":bank"))
        return [BANK[i] for i in order]

    def herrings(self, case: str) -> list[str]:
        return self.bank_order(case)[:10]

    def flagged(self, case: str, sentences: list[str]) -> list[bool]:
        """Which of the sentences the checker finds clinical."""
        band = self.band(case)
        flagged_one = self.herrings(case)[2]
        return [s == CLINICAL or (band == "flag_one" and s == flagged_one) or (band == "flag_always" and i == 0) for i, s in enumerate(sentences)]

    def replacements(self, case: str, avoid: set[str], n: int) -> list[str]:
        return [s for s in self.bank_order(case) if s not in avoid][:n]

    def _check(self, name: str, case: str, user: str, attempt: int) -> str:
        if self.band(case) == "checker_unreadable":
            return "Everything looks fine to me."
        if attempt == 0 and uniform(f"{name}:{case}", self.salt + ":check-json") < self.checker_garbled:
            return '{"verdicts": [{"sentence": 1, "reason": "cut'
        if name == REWRITE_CHECK:
            if self.band(case) == "not_equivalent":
                return json.dumps({"reason": "The note leaves out a finding of the case.", "equivalent": False})
            return json.dumps({"reason": "Every finding and number is kept; nothing is added.", "equivalent": True})
        listed = _listed(user, "sentences")
        verdicts = [{"sentence": i, "reason": FLAG_REASON if f else PASS_REASON, "clinical": f} for i, f in enumerate(self.flagged(case, listed), 1)]
        return json.dumps({"verdicts": verdicts})

    def restyle(self, case: str, band: str | None) -> str:
        out = case
        for pattern, repl in REWRITES:
            out = re.sub(pattern, repl, out)
        out = "So, " + out[:1].lower() + out[1:]
        if band == "lose_number":
            out = _NUMBER.sub("", out, count=1)
        return out

    def __call__(self, messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
        rf = request.get("response_format") or {}
        name = (rf.get("json_schema") or {}).get("name", "")
        user = messages[-1]["content"] if messages else ""
        m = _CASE.search(user)
        case = m.group(1) if m else user
        retry = _RETRY.search(user)
        attempt = int(retry.group(1)) if retry else 0
        band = self.band(case)
        if name in (HERRING_CHECK, REWRITE_CHECK):
            return self._check(name, case, user, attempt)
        first_broken = attempt == 0 and uniform(f"{name}:{case}", self.salt + ":json") < self.invalid_json
        if name == HERRING_SCHEMA and "<kept>" in user:  # replacements for sentences the checker flagged
            want = _WANT.search(user)
            avoid = set(_listed(user, "kept")) | set(_listed(user, "rejected"))
            return json.dumps({"sentences": self.replacements(case, avoid, int(want.group(1)) if want else 1)})
        if name == HERRING_SCHEMA:
            if first_broken:
                return BROKEN
            sentences = self.herrings(case)
            if band == "always_clinical" or (attempt == 0 and uniform(case, self.salt + ":clinical") < self.clinical):
                sentences[3] = CLINICAL
            return json.dumps({"sentences": sentences})
        if name == REWRITE_SCHEMA:
            if first_broken:
                return '{"note": "cut off'
            return json.dumps({"note": self.restyle(case, band)})
        return "Answer: A"


def _listed(user: str, block: str) -> list[str]:
    """The sentences listed in one block of a prompt (`- s`, `- s (rejected: why)` or `1. s`)."""
    for name, body in _BLOCK.findall(user):
        if name == block:
            return [m.group(1) for line in body.splitlines() if (m := _LISTED.match(line))]
    return []
