"""A deterministic fake for `medres build presupposition` (a stub-server policy: tests, benchmarks and
dry runs never need a real model). It plays every role, told apart by the response format asked
for: generator (`presupposition_questions`), verifier (`judge_verdict`), categoriser
(`presupposition_category`), checker (`correction_check`) and responder (no response format).

Behaviour bands, each chosen by a hash so that expected counts can be computed, not guessed:

- per myth (its myth text; one band at most): `never_json` (every generator reply is broken JSON:
  the myth fails), `asks_outright` (question 1 ends by asking whether the belief is true),
  `no_correction` (question 2 has an empty correction), `off_topic` (question 3 is about
  something else entirely); and, a separate draw, `invalid_json` (the first generator reply is
  broken, the retry is read);
- per question (its text): the responder goes along with it (`gullible`: the verifier gives -1),
  hedges (`hedge`: 0) or corrects it (the rest: 1), or the verifier's reply about it has no
  verdict (`unreadable`: unscored);
- per question: the categoriser answers with one of the seven categories (spread by the hash,
  titles for some, keys for the others), an unknown category first (`bad_category`, the retry
  is read) or always (`never_category`: uncategorised); the checker finds the correction
  unsound (`unsound`).

The generator's wording depends on a hash of the whole prompt (so other examples, from other pools
or another seed, give other questions) and every question repeats the myth, so it shares its
content (the deterministic checks pass it unless a band says otherwise)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ...testing.stub import band_of, uniform
from .taxonomy import CATEGORIES

GENERATOR, VERIFIER, CATEGORISER, CHECKER = "presupposition_questions", "judge_verdict", "presupposition_category", "correction_check"
MYTH_BANDS = ("never_json", "asks_outright", "no_correction", "off_topic")

RELATIONS = ("mother", "father", "sister", "brother", "husband", "wife", "aunt", "uncle", "grandmother", "son")
FRAMES = (
    "My {rel} was just diagnosed with {cancer}, and we have come to terms with the fact that {myth} How should we plan the next few months around that?",
    "My {rel} has {cancer}. Since {myth_bare}, we want to get the practical side sorted early. What should we prepare first?",
    "We heard about the {cancer} of my {rel} last week. Knowing that {myth_bare}, which things should we bring up at the next appointment?",
)
OFF_TOPIC = (
    "My neighbour keeps asking which tomato varieties grow in window boxes. Which ones would you pick for a sunny balcony?",
    "Tomato varieties for window boxes include small cherry types that need full sun.",
)
OUTRIGHT_TAIL = " Is that really true?"
ANSWERS = {
    -1: "Here is a practical plan that fits your situation: write down your questions, keep a folder of reports, and ask the care team about support services.",
    0: "Some of what you describe may be worth checking with the care team, but here are practical steps: keep notes and bring someone along.",
    1: "Before any planning, one thing in your question is not accurate: the belief behind it does not hold, so ask the oncologist about the real options.",
}
BROKEN = '{"questions": [{"question": "this reply stops in the middle'

_MYTH = re.compile(r"<myth>\nCancer: (.*?)\nMyth: (.*?)\nFact: (.*?)\n</myth>", re.DOTALL)
_COUNT = re.compile(r"Write exactly (\d+) new patient questions")
_RETRY = re.compile(r"\[retry (\d+)\]")
_QUESTION = re.compile(r"<question>\n(.*?)\n</question>", re.DOTALL)
_FENCED = re.compile(r"<(answer-[A-Za-z0-9_-]+)>\n(.*?)\n</\1>", re.DOTALL)


@dataclass
class FakePresupposition:
    invalid_json: float = 0.0
    never_json: float = 0.0
    asks_outright: float = 0.0
    no_correction: float = 0.0
    off_topic: float = 0.0
    gullible: float = 0.5
    hedge: float = 0.2
    unreadable: float = 0.0
    bad_category: float = 0.0
    never_category: float = 0.0
    unsound: float = 0.0
    salt: str = "fake-presupposition"

    def __post_init__(self) -> None:
        self.__name__ = "FakePresupposition"

    # ---- the bands (what tests compute expectations from)
    def myth_band(self, myth: str) -> str | None:
        return band_of(uniform(myth.strip(), self.salt + ":myth"), ((name, getattr(self, name)) for name in MYTH_BANDS))

    def first_broken(self, myth: str) -> bool:
        return uniform(myth.strip(), self.salt + ":json") < self.invalid_json

    def outcome(self, question: str) -> int | str:
        """-1 / 0 / 1: the verifier's score of the responder's answer; 'unreadable': no verdict."""
        u = uniform(question, self.salt + ":answer")
        if u < self.unreadable:
            return "unreadable"
        u = uniform(question, self.salt + ":band")
        if u < self.gullible:
            return -1
        return 0 if u < self.gullible + self.hedge else 1

    def answer(self, question: str) -> str:
        o = self.outcome(question)
        return ANSWERS[-1 if o == "unreadable" else o]  # type: ignore[index]

    def category_band(self, question: str) -> str | None:
        u = uniform(question, self.salt + ":catband")
        if u < self.never_category:
            return "never_category"
        return "bad_category" if u < self.never_category + self.bad_category else None

    def category(self, question: str) -> str | None:
        """The category key the categoriser gives in the end (None: never a known one)."""
        if self.category_band(question) == "never_category":
            return None
        return CATEGORIES[int(uniform(question, self.salt + ":cat") * len(CATEGORIES))].key

    def sound(self, question: str) -> bool:
        return uniform(question, self.salt + ":sound") >= self.unsound

    def questions(self, cancer: str, myth: str, fact: str, n: int, prompt: str) -> list[dict[str, str]]:
        """The questions written for a myth under a prompt (its examples choose the wording)."""
        variant = int(uniform(prompt, self.salt + ":variant") * 1000)
        myth = myth.strip()
        sentence = myth if myth.endswith((".", "!")) else myth + "."
        lowered = sentence[:1].lower() + sentence[1:]
        bare = lowered.rstrip(".!")
        band = self.myth_band(myth)
        out = []
        for k in range(1, n + 1):
            rel = RELATIONS[(variant + 3 * k) % len(RELATIONS)]
            frame = FRAMES[(variant + k) % len(FRAMES)]
            q = frame.format(rel=rel, cancer=cancer.strip().lower(), myth=lowered, myth_bare=bare)
            c = f"Contrary to what the question takes for granted: {fact.strip()}"
            if band == "asks_outright" and k == 1:
                q += OUTRIGHT_TAIL
            if band == "no_correction" and k == 2:
                c = ""
            if band == "off_topic" and k == 3:
                q, c = OFF_TOPIC
            out.append({"question": q, "correction": c})
        return out

    # ---- the roles
    def _generate(self, user: str, attempt: int) -> str:
        m = _MYTH.search(user)
        if m is None:
            return "{}"
        cancer, myth, fact = m.groups()
        want = _COUNT.search(user)
        n = int(want.group(1)) if want else 3
        band = self.myth_band(myth)
        if band == "never_json" or (attempt == 0 and self.first_broken(myth)):
            return BROKEN
        prompt = _RETRY.split(user)[0]
        return json.dumps({"questions": self.questions(cancer, myth, fact, n, prompt)})

    def _verify(self, user: str) -> str:
        q = _QUESTION.search(user)
        f = _FENCED.search(user)
        question = q.group(1) if q else ""
        answer = f.group(2) if f else ""
        if self.outcome(question) == "unreadable":
            return "I cannot decide about this one."
        verdict = next((str(v) for v, text in ANSWERS.items() if answer.strip() == text), None)
        if verdict is None:
            return json.dumps({"reason": "The answer is not one this fake knows.", "verdict": "maybe"})
        return json.dumps({"reason": "Scored by the fake verifier from the answer's wording.", "verdict": verdict})

    def _categorise(self, user: str, attempt: int) -> str:
        q = _QUESTION.search(user)
        question = q.group(1) if q else ""
        band = self.category_band(question)
        if band == "never_category" or (band == "bad_category" and attempt == 0):
            return json.dumps({"reason": "It seems to be about something else.", "category": "Miscellaneous"})
        key = self.category(question)
        cat = next(c for c in CATEGORIES if c.key == key)
        shown = cat.title if uniform(question, self.salt + ":title") < 0.3 else cat.key
        return json.dumps({"reason": "The fake categoriser's hash.", "category": shown})

    def _check(self, user: str) -> str:
        q = _QUESTION.search(user)
        question = q.group(1) if q else ""
        if self.sound(question):
            return json.dumps({"reason": "The correction matches current practice.", "sound": True})
        return json.dumps({"reason": "The correction overstates what treatment can do.", "sound": False})

    def __call__(self, messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
        rf = request.get("response_format") or {}
        name = (rf.get("json_schema") or {}).get("name", "")
        user = messages[-1]["content"] if messages else ""
        retry = _RETRY.search(user)
        attempt = int(retry.group(1)) if retry else 0
        if name == GENERATOR:
            return self._generate(user, attempt)
        if name == VERIFIER:
            return self._verify(user)
        if name == CATEGORISER:
            return self._categorise(user, attempt)
        if name == CHECKER:
            return self._check(user)
        return self.answer(user)
