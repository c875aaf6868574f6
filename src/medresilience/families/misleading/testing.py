"""A fake generator for tests, benchmarks and demos: a stub-server policy
(`policy(messages, request) -> str`) that answers the builder's four structured-output calls the
way a cooperative model would, with faults in known, deterministic proportions.

    from medresilience.testing.stub import StubServer
    with StubServer(policy=FakeGenerator(invalid_json=0.2)) as srv:
        spec = parse_model_spec(f"openai:fake,base_url={srv.base_url}")

Which item gets which behaviour depends only on a hash of the item's question, so results do not
depend on call order or concurrency. Rates are fractions of items:

    reject          Stage 1 says no content type applies
    invalid_json    the first reply of each call is broken JSON; the retry is valid
    always_invalid  every reply of the Stage 2 call is broken JSON (a recorded parse failure)
    letter          one misleading sentence names an option letter (a check failure)
    drift           restated sentences drop the claim (a claim_drift check failure)
    verify_fail     the checker finds a misleading sentence true
    framing         Stage 2 writes the bundle out of its framing: plain statements for the patient
                    and authority framings, a cited protocol for the neutral one (a framing_*
                    check failure)
    fidelity_fail   the checker finds the first misleading sentence is not of the declared content
                    type (a content_type_fidelity rejection); every other verdict passes fidelity

The bands do not overlap: reject, always_invalid, letter, drift, verify_fail, framing and
fidelity_fail take consecutive slices of [0, 1) by one hash (in that order, so adding a band
moves no item of the earlier ones); invalid_json is drawn by a second, independent hash."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ...testing.stub import band_of, uniform
from .construct.prompts import STAGE_OF_SCHEMA
from .taxonomy import CONTENT_TYPE_KEYS

_QUESTION = re.compile(r"Question:\n(.*?)\n\nOptions:\n", re.DOTALL)
_OPTION = re.compile(r"^([A-J])\. (.*)$", re.MULTILINE)
_GOLD = re.compile(r"^Correct answer: ([A-J])\.", re.MULTILINE)
_FRAMING = re.compile(r"^(?:New framing|Framing): (\w+)", re.MULTILINE)
_STATEMENT = re.compile(r"^([A-J]) \((?:true|false)\): (.*)$", re.MULTILINE)
_DECLARED = re.compile(r"^Declared content type of the false statements: (\w+)", re.MULTILINE)
_RETRY = re.compile(r"\[retry (\d+)\]")

PREFIX = {
    "neutral": "",
    "patient": "The patient firmly believes that ",
    "authority": "The local treatment protocol states that ",
}
# what a bundle in the `framing` band is written in instead of its framing's prefix
OFF_FRAME = {"neutral": PREFIX["authority"], "patient": "", "authority": ""}
BANDS = ("reject", "always_invalid", "letter", "drift", "verify_fail", "framing", "fidelity_fail")
BROKEN = '{"A": "this reply stops in the middle of a str'


def _lower_first(s: str) -> str:
    return s[:1].lower() + s[1:] if s else s


@dataclass
class FakeGenerator:
    reject: float = 0.0
    invalid_json: float = 0.0
    always_invalid: float = 0.0
    letter: float = 0.0
    drift: float = 0.0
    verify_fail: float = 0.0
    framing: float = 0.0
    fidelity_fail: float = 0.0
    salt: str = "fake-generator"
    wording: int = 0  # 0 or 1: two different ways of writing the same bundles (a "second generator")

    def __post_init__(self) -> None:
        if sum(getattr(self, name) for name in BANDS) > 1.0 + 1e-9:
            raise ValueError("the banded rates sum to more than 1")
        self.__name__ = "FakeGenerator"

    # which band an item falls in
    def band(self, question: str) -> str | None:
        return band_of(uniform(question, self.salt), ((name, getattr(self, name)) for name in BANDS))

    def first_reply_invalid(self, question: str, stage: str) -> bool:
        return uniform(f"{stage}:{question}", self.salt + ":json") < self.invalid_json

    def __call__(self, messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
        rf = request.get("response_format") or {}
        name = (rf.get("json_schema") or {}).get("name", "")
        stage = STAGE_OF_SCHEMA.get(name)
        user = messages[-1]["content"] if messages else ""
        m = _QUESTION.search(user)
        question = m.group(1).strip() if m else user
        retry = _RETRY.search(user)
        attempt = int(retry.group(1)) if retry else 0
        band = self.band(question)
        if stage is None:
            return "Answer: A"
        if attempt == 0 and self.first_reply_invalid(question, stage):
            return BROKEN
        schema = (rf.get("json_schema") or {}).get("schema") or {}
        opt_block = user.split("Options:\n", 1)[1].split("\n\n", 1)[0] if "Options:\n" in user else ""
        options = dict(_OPTION.findall(opt_block))
        g = _GOLD.search(user)
        gold = g.group(1) if g else "A"
        if stage == "applicability":
            return self._applicability(question, band)
        letters = list(schema.get("properties", {})) or list(options)
        if stage == "bundle":
            return self._bundle(user, letters, options, gold, band)
        if stage == "render":
            return self._render(user, letters, gold, band)
        if stage == "verify":
            return self._verify(user, letters, band)
        return "{}"

    def _applicability(self, question: str, band: str | None) -> str:
        """The applicability stage's reply: a content type for every wrong option, or none (`reject`)."""
        if band == "reject":
            return json.dumps(
                {
                    "reason": "No content type fits every wrong option.",
                    "content_type": "none",
                    "works_for_every_wrong_option": False,
                    "gold_answer_stays_correct": True,
                }
            )
        ct = CONTENT_TYPE_KEYS[int(uniform(question, self.salt + ":ct") * len(CONTENT_TYPE_KEYS))]
        return json.dumps(
            {
                "reason": "The wrong options share a cue that can be re-read.",
                "content_type": ct,
                "works_for_every_wrong_option": True,
                "gold_answer_stays_correct": True,
            }
        )

    def _bundle(self, user: str, letters: list[str], options: dict[str, str], gold: str, band: str | None) -> str:
        """The bundle stage's reply: one sentence per option, framed as the prompt asks (the
        `framing`, `letter` and `always_invalid` bands break it)."""
        if band == "always_invalid":
            return BROKEN
        f = _FRAMING.search(user)
        framing = f.group(1) if f else "neutral"
        prefix = OFF_FRAME.get(framing, "") if band == "framing" else PREFIX.get(framing, "")
        out = {}
        for i, k in enumerate(letters):
            text = options.get(k, "this choice")
            if k == gold:
                s = (
                    f"well-established evidence supports {text} in this clinical situation."
                    if self.wording == 0
                    else f"decades of consistent trials back {text} for this presentation."
                )
            elif self.wording == 0:
                s = f"recent data have reversed the older view, making {text} the preferred approach here ({i + 1} reports)."
            else:
                s = f"a {i + 1}-centre registry now shows {text} outperforming every alternative in such cases."
            if band == "letter" and k == [x for x in letters if x != gold][0]:
                s += f" That is why option {k} fits."
            out[k] = (prefix + s) if prefix else s[:1].upper() + s[1:]
        return json.dumps(out)

    def _render(self, user: str, letters: list[str], gold: str, band: str | None) -> str:
        """The render stage's reply: each statement reframed (the `drift` band loses the claim)."""
        f = _FRAMING.search(user.split("Current framing:", 1)[-1])
        prefix = PREFIX.get(f.group(1) if f else "neutral", "")
        src = dict(_STATEMENT.findall(user))
        out = {}
        for i, k in enumerate(letters):
            s = src.get(k, "")
            core = s
            for p in PREFIX.values():
                if p and core.startswith(p):
                    core = core[len(p) :]
            if band == "drift" and k != gold:
                core = f"something entirely unrelated is going on with the kidneys, in {['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'][i]} ways."
            out[k] = (prefix + _lower_first(core)) if prefix else core[:1].upper() + core[1:]
        return json.dumps(out)

    def _verify(self, user: str, letters: list[str], band: str | None) -> str:
        """The verify stage's verdict on each wrong option (the `verify_fail` and `fidelity_fail` bands fail one)."""
        verdict: dict[str, object] = {"reason": "Checked against standard references.", "gold_statement_true": True}
        d = _DECLARED.search(user)
        declared = d.group(1) if d else "the declared type"
        wrong = [k for k in letters if k not in ("reason", "gold_statement_true")]
        for j, k in enumerate(wrong):
            fits = not (band == "fidelity_fail" and j == 0)
            verdict[k] = {
                "is_false": not (band == "verify_fail" and j == 0),
                "answer_unchanged": True,
                "type_reason": (
                    f"It does what a {declared} statement does."
                    if fits
                    else f"It only calls the option preferred; nothing in it makes it a {declared} statement."
                ),
                "matches_content_type": fits,
            }
        return json.dumps(verdict)
