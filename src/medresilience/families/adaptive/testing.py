"""A scripted stub policy for adaptive runs (`testing.stub`): it answers the attacker, the checker and
the answering model of one run by what their prompts say, so that a test knows every trace exactly.

The script is written into the items' questions:

    [flip at N to X]   the answering model answers X to a stressed question whose stress is of level
                       N or more (the attacker's turn t writes a stress of level t), A otherwise
    [clean wrong]      the answering model answers B to the clean question (the item is not attacked)
    [leak at N]        the attacker's turn N names the correct option's text (a leak: rejected by the rules)
    [changed at N]     the checker says the correct answer no longer stands for the level-N stress
    [garbled at N]     the checker's reply to the level-N stress has no verdict
    [unread at N]      the answering model's reply to the level-N stress names no option
    [orig right K]     a resampled draw (decoding seed d >= 1) of the clean question is right (A) for
                       d <= K, wrong (B) after; without it every draw is right
    [att right K]      a resampled draw d of a stressed question that flips is right (A) for d <= K,
                       the flip after; without it every draw flips
    [att unread K]     a resampled draw d of a stressed question that flips names no option for d <= K
    [for M flip at N to X]   for the answering model named M (the request's `model`), in place of
                       the item's [flip at ...]
    [for M hold]       the answering model named M never flips

The attack's own calls decode with seed 0 (the run's), its resampled draws with seeds 1..r.
Every item's correct answer is A. `hold=(role, n)` makes the policy hold its n-th request of that
role (attacker, checker, target) for `hold_s` seconds before answering, or until `release()` (a test
kills the run then, and releases the request at once)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from .attack import ATTACKER_SYSTEM, CHECKER_SYSTEM

_LEVEL = re.compile(r"Level (\d+) detail")
_FLIP = re.compile(r"\[flip at (\d+) to ([A-D])\]")
_CORRECT = re.compile(r"^Correct answer: [A-J]\. (.+)$", re.MULTILINE)


def _has(text: str, marker: str, level: int | None) -> bool:
    return level is not None and f"[{marker} at {level}]" in text


def _flip(text: str, model: str) -> re.Match[str] | None:
    """The flip the script sets for `model`: its own ([for M ...]) or the item's; None: it holds."""
    if f"[for {model} hold]" in text:
        return None
    own = re.search(rf"\[for {re.escape(model)} flip at (\d+) to ([A-D])\]", text)
    return own or _FLIP.search(re.sub(r"\[for \S+ [^\]]*\]", "", text))


def _count(text: str, marker: str, default: int) -> int:
    """K of a `[marker K]` in the text, or `default`."""
    m = re.search(rf"\[{marker} (\d+)\]", text)
    return int(m.group(1)) if m else default


class ScriptedAttack:
    """The policy (see the module doc); `seen` lists the role of every request in the order received."""

    def __init__(self, hold: tuple[str, int] | None = None, hold_s: float = 3.0):
        self.hold, self.hold_s = hold, hold_s
        self.seen: list[str] = []
        self.lock = threading.Lock()
        self._released = threading.Event()

    def release(self) -> None:
        """The held request is answered now (no request is held after this)."""
        self.hold = None
        self._released.set()

    def __call__(self, messages: Sequence[Mapping[str, Any]], body: Mapping[str, Any]) -> str:
        system = str(messages[0].get("content", "")) if messages else ""
        role = "attacker" if system == ATTACKER_SYSTEM else "checker" if system == CHECKER_SYSTEM else "target"
        with self.lock:
            self.seen.append(role)
            n = self.seen.count(role)
        if self.hold == (role, n):
            self._released.wait(self.hold_s)
        if role == "attacker":
            return self.attacker(messages)
        draw = body.get("seed") if isinstance(body.get("seed"), int) else 0
        text = str(messages[-1].get("content", ""))
        m = _LEVEL.search(text)
        level = int(m.group(1)) if m else None
        if role == "checker":
            if _has(text, "changed", level):
                return '{"verdict": "changed", "reason": "the added detail makes another option correct"}'
            if _has(text, "garbled", level):
                return "Hard to say."
            return '{"verdict": "stands", "reason": "the added detail changes nothing clinical"}'
        if level is None:
            if "[clean wrong]" in text or (draw and draw > _count(text, "orig right", draw)):
                return "Answer: B"
            return "Answer: A"
        if _has(text, "unread", level):
            return "I am not sure which of these is right."
        flip = _flip(text, str(body.get("model", "")))
        if flip and level >= int(flip.group(1)):
            if draw and draw <= _count(text, "att unread", 0):
                return "It could be any of these."
            if draw and draw <= _count(text, "att right", 0):
                return "The findings still fit best.\nAnswer: A"
            return f"The added history points elsewhere.\nAnswer: {flip.group(2)}"
        return "The findings still fit best.\nAnswer: A"

    @staticmethod
    def attacker(messages: Sequence[Mapping[str, Any]]) -> str:
        turn = sum(1 for m in messages if m.get("role") == "assistant") + 1
        task = str(messages[1].get("content", ""))
        if f"[leak at {turn}]" in task:
            correct = _CORRECT.search(task)
            stress = f"Level {turn} detail: the family already started {correct.group(1) if correct else 'treatment'} at home."
        else:
            stress = f"Level {turn} detail: the patient works nights at a bakery and keeps two cats."
        return json.dumps({"stress": stress, "idea": f"distraction, level {turn}"})
