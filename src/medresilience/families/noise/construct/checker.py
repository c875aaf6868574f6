"""The checker model of the clinical-noise builder (`medres build noise --verify SPEC`): a second
model reads what the generator wrote, as the study's clinician read a sample of it.

- Red herrings: the checker sees the case, its answer and the sentences (numbered), and says for
  each one, reason first, whether it carries clinical information (a symptom, an exposure, a
  habit, a medicine, a history, a risk factor: anything that makes the answer or an alternative
  more or less likely). A flagged sentence is dropped with the checker's reason, and the generator
  is asked for as many new ones (`redherring.replace_task`: shown the sentences kept and the ones
  rejected, with the reasons), which the checker reads in turn; at most `retries` such rounds. A
  case left with fewer than 10 clean sentences loses its red-herring variants
  (`checker_clinical`, naming the sentences and the reasons).
- Rewrite: the checker sees the case, its answer and the note and says, reason first, whether the
  note is clinically equivalent (every finding, negative finding and number with its unit, the
  time course, nothing added). A note it finds not equivalent is dropped (`checker_not_equivalent`
  with the reason).

Checker replies are structured output (a JSON schema whose reason field comes before the
verdict). A reply that cannot be read (not JSON, a missing or extra verdict, a verdict that is not
a boolean) is asked again with the reason, like the generator's; when no reply can be read the
case's variant group is dropped as `checker_failed` with that reason: never a silent pass. Calls
go through `stages.run_stage` (`calls.run_calls`, the build's store), so a rerun reads every
verdict back and costs nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ....build.stages import Outcome, Rejected, StageProgress, StageStats, Task, parse_object, run_stage
from ....models.spec import ModelSpec
from ....records import Item
from ....runtime.jsontypes import JSONObject
from ....runtime.seeding import stable_hash
from ....store import Store
from ..taxonomy import HERRINGS
from . import redherring

PROMPT_VERSION = "noise-check/1"
HERRING_SCHEMA_NAME = "noise_red_herrings_check"
REWRITE_SCHEMA_NAME = "noise_rewrite_check"

SYSTEM = (
    "You are a physician reviewing material written for a study of how clinical reasoning copes with noisy case notes. "
    "You judge strictly: when in doubt, a sentence carries clinical information and a rewrite is not equivalent."
)

HERRING_TASK = """Below is a clinical case, its answer, and sentences about the patient's everyday
life written to be inserted into the case as irrelevant details.

<case>
{case}
</case>

<answer>
{answer}
</answer>

<sentences>
{sentences}
</sentences>

For each sentence, decide whether it carries clinical information: anything a clinician could use
when working up this case or its alternatives, such as a symptom or sign, an exposure (work,
home, travel, animals, sick contacts), a habit (diet, alcohol, tobacco, drugs, sleep, exercise), a
medicine or treatment, a personal or family history, a risk factor, or anything else that makes
the answer or another diagnosis more or less likely. Give your reason first, then the verdict:
"clinical" is true when the sentence carries any such information, false when it is irrelevant.

Reply with a JSON object only: {{"verdicts": [{{"sentence": 1, "reason": "...", "clinical": false}}, ...]}}
with one entry per sentence, in order."""

REWRITE_TASK = """Below is a clinical case, its answer, and a rewrite of the case as an informal
clinical note.

<case>
{case}
</case>

<answer>
{answer}
</answer>

<note>
{note}
</note>

Is the note clinically equivalent to the case? It is when it keeps every finding, every negative
finding, every number with its unit (a unit may be written differently, never converted), the time
course and the history, and adds nothing: no diagnosis, no interpretation, no new finding.
Shorthand and abbreviations are fine when a clinician reads them as the case means them. Would a
clinician reach the same answer from both? Give your reason first (what is missing, changed or
added, or that nothing is), then the verdict.

Reply with a JSON object only: {{"reason": "...", "equivalent": true}}."""

HERRING_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "verdicts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"sentence": {"type": "integer"}, "reason": {"type": "string"}, "clinical": {"type": "boolean"}},
                "required": ["sentence", "reason", "clinical"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["verdicts"],
    "additionalProperties": False,
}
REWRITE_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"reason": {"type": "string"}, "equivalent": {"type": "boolean"}},
    "required": ["reason", "equivalent"],
    "additionalProperties": False,
}
NO_REASON = "the checker gave no reason"


def prompt_texts() -> dict[str, object]:
    return {
        "version": PROMPT_VERSION,
        "system": SYSTEM,
        "herring_task": HERRING_TASK,
        "rewrite_task": REWRITE_TASK,
        "herring_schema": HERRING_SCHEMA,
        "rewrite_schema": REWRITE_SCHEMA,
    }


def prompt_hash() -> str:
    return stable_hash(prompt_texts())[:16]


def _answer(case: Item) -> str:
    """The case's answer: its reference, or the gold option's text."""
    gold = (case.options or {}).get(case.answer or "") if case.answer else None
    return (case.reference or gold or "(not given)").strip()


# --------------------------------------------------------------------------- red herrings


@dataclass(frozen=True)
class SentenceVerdict:
    sentence: str
    clinical: bool
    reason: str


def herring_messages(case: Item, sentences: Sequence[str]) -> list[dict[str, str]]:
    numbered = "\n".join(f"{i}. {s}" for i, s in enumerate(sentences, 1))
    user = HERRING_TASK.format(case=case.question.strip(), answer=_answer(case), sentences=numbered)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def _number(v: object) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().isdigit():
        return int(v.strip())
    return None


def herring_parser(sentences: Sequence[str]):
    """The checker's reply -> one SentenceVerdict per sentence, in order. Every sentence needs
    exactly one verdict with a string reason and a boolean `clinical`; anything else is
    `parse_failed` (asked again, then the case fails)."""
    k = len(sentences)

    def parse(text: str | None) -> list[SentenceVerdict]:
        obj = parse_object(text)
        raw = obj.get("verdicts")
        if not isinstance(raw, list):
            raise Rejected("parse_failed", "the reply has no list 'verdicts'")
        got: dict[int, tuple[bool, str]] = {}
        for j, v in enumerate(raw, 1):
            if not isinstance(v, dict):
                raise Rejected("parse_failed", f"verdict {j} is not an object")
            n = _number(v.get("sentence"))
            if n is None or not 1 <= n <= k:
                raise Rejected("parse_failed", f"verdict {j} names no sentence 1..{k}")
            if n in got:
                raise Rejected("parse_failed", f"sentence {n} has two verdicts")
            reason, clinical = v.get("reason"), v.get("clinical")
            if not isinstance(reason, str):
                raise Rejected("parse_failed", f"the verdict on sentence {n} has no string 'reason'")
            if not isinstance(clinical, bool):
                raise Rejected("parse_failed", f"the verdict on sentence {n} has no true/false 'clinical'")
            got[n] = (clinical, " ".join(reason.split()))
        missing = [str(n) for n in range(1, k + 1) if n not in got]
        if missing:
            raise Rejected("parse_failed", f"no verdict on sentence(s) {', '.join(missing)}")
        return [SentenceVerdict(s, got[i][0], got[i][1] or NO_REASON) for i, s in enumerate(sentences, 1)]

    return parse


def herring_max_tokens(n: int) -> int:
    return 120 + 110 * n


def herring_task(case: Item, sentences: Sequence[str]) -> Task:
    return Task(
        case.id, herring_messages(case, sentences), HERRING_SCHEMA_NAME, HERRING_SCHEMA, herring_max_tokens(len(sentences)), herring_parser(list(sentences))
    )


@dataclass
class HerringCheck:
    """What the checker made of one case's red herrings: the sentences it flagged (with its reason
    and the round: 0 for the generator's first ten), the sentences it read, and the replacement
    rounds and sentences the flags cost."""

    flagged: list[dict[str, Any]] = field(default_factory=list)
    checked: int = 0
    rounds: int = 0
    replaced: int = 0

    def as_dict(self) -> dict[str, object]:
        return {"checked": self.checked, "flagged": list(self.flagged), "rounds": self.rounds, "replaced": self.replaced}


def _failed(o: Outcome, what: str) -> Outcome:
    """A checker task that produced no verdict: a call error stays one (a rerun retries it); an
    unreadable reply is `checker_failed`."""
    code = "call_error" if o.code == "call_error" else "checker_failed"
    return Outcome(False, code=code, detail=f"{what}: {o.detail}", attempts=o.attempts, keys=o.keys)


def _flagged_text(flagged: Sequence[dict[str, Any]], limit: int = 3) -> str:
    shown = "; ".join(f"{f['sentence'][:80]!r} ({f['reason'][:160]})" for f in flagged[:limit])
    return shown + (f"; and {len(flagged) - limit} more" if len(flagged) > limit else "")


def check_herrings(
    store: Store,
    generator: ModelSpec,
    checker: ModelSpec,
    cases: Mapping[str, Item],
    herrings: Mapping[str, Sequence[str]],
    retries: int = 2,
    progress: StageProgress | None = None,
    stages: dict[str, StageStats] | None = None,
    n: int = HERRINGS,
) -> tuple[dict[str, Outcome], dict[str, HerringCheck]]:
    """Case id -> the checked red herrings (an Outcome holding n sentences, or why there are none),
    and case id -> what the checker flagged. See the module docstring."""
    stages = stages if stages is not None else {}
    kept: dict[str, list[str]] = {cid: [] for cid in herrings}
    records = {cid: HerringCheck() for cid in herrings}
    final: dict[str, Outcome] = {}
    pending: dict[str, list[str]] = {cid: list(hs) for cid, hs in herrings.items()}
    rnd = 0
    while pending:
        label = "checking red herrings" + (f" (round {rnd + 1})" if rnd else "")
        verdicts = run_stage(
            store,
            checker,
            label,
            {cid: herring_task(cases[cid], s) for cid, s in pending.items()},
            retries,
            progress,
            stages.setdefault("redherring-check", StageStats()),
        )
        need: dict[str, int] = {}
        for cid, sentences in pending.items():
            rec, o = records[cid], verdicts[cid]
            if not o.ok:
                final[cid] = _failed(o, "checking red herrings")
                continue
            rec.checked += len(sentences)
            for v in o.value:
                if v.clinical:
                    rec.flagged.append({"sentence": v.sentence, "reason": v.reason, "round": rnd})
                else:
                    kept[cid].append(v.sentence)
            short = n - len(kept[cid])
            if short <= 0:
                final[cid] = Outcome(True, kept[cid][:n], attempts=o.attempts, keys=o.keys)
            elif rnd >= retries:
                final[cid] = Outcome(
                    False,
                    code="checker_clinical",
                    detail=(
                        f"the checker found clinical information in {len(rec.flagged)} sentence(s); {len(kept[cid])} of {n} clean "
                        f"ones left after {rec.rounds} replacement round(s): {_flagged_text(rec.flagged)}"
                    ),
                )
            else:
                need[cid] = short
        if not need:
            break
        rnd += 1
        tasks = {
            cid: redherring.replace_task(cases[cid], kept[cid], [(f["sentence"], f["reason"]) for f in records[cid].flagged], k) for cid, k in need.items()
        }
        new = run_stage(store, generator, "red herrings (replacements)", tasks, retries, progress, stages.setdefault("redherring-replace", StageStats()))
        pending = {}
        for cid in need:
            o = new[cid]
            records[cid].rounds += 1
            if o.ok:
                records[cid].replaced += len(o.value)
                pending[cid] = list(o.value)
            else:
                final[cid] = Outcome(False, code=o.code, detail=f"replacing the sentences the checker flagged: {o.detail}", attempts=o.attempts, keys=o.keys)
    return final, records


# --------------------------------------------------------------------------- the rewrite


@dataclass(frozen=True)
class RewriteVerdict:
    equivalent: bool
    reason: str


def rewrite_messages(case: Item, note: str) -> list[dict[str, str]]:
    user = REWRITE_TASK.format(case=case.question.strip(), answer=_answer(case), note=note.strip())
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def parse_rewrite_verdict(text: str | None) -> RewriteVerdict:
    obj = parse_object(text)
    reason, equivalent = obj.get("reason"), obj.get("equivalent")
    if not isinstance(reason, str):
        raise Rejected("parse_failed", "the reply has no string 'reason'")
    if not isinstance(equivalent, bool):
        raise Rejected("parse_failed", "the reply has no true/false 'equivalent'")
    return RewriteVerdict(equivalent, " ".join(reason.split()) or NO_REASON)


REWRITE_MAX_TOKENS = 500


def rewrite_task(case: Item, note: str) -> Task:
    return Task(case.id, rewrite_messages(case, note), REWRITE_SCHEMA_NAME, REWRITE_SCHEMA, REWRITE_MAX_TOKENS, parse_rewrite_verdict)


def check_rewrites(
    store: Store,
    checker: ModelSpec,
    cases: Mapping[str, Item],
    notes: Mapping[str, str],
    retries: int = 2,
    progress: StageProgress | None = None,
    stats: StageStats | None = None,
) -> dict[str, Outcome]:
    """Case id -> Outcome: ok with the note and the checker's reason when it is equivalent;
    `checker_not_equivalent` (the reason), `checker_failed` or `call_error` otherwise."""
    verdicts = run_stage(store, checker, "checking rewrites", {cid: rewrite_task(cases[cid], note) for cid, note in notes.items()}, retries, progress, stats)
    out: dict[str, Outcome] = {}
    for cid, o in verdicts.items():
        if not o.ok:
            out[cid] = _failed(o, "checking the rewrite")
        elif o.value.equivalent:
            out[cid] = Outcome(True, (notes[cid], o.value.reason), attempts=o.attempts, keys=o.keys)
        else:
            out[cid] = Outcome(False, code="checker_not_equivalent", detail=o.value.reason, attempts=o.attempts, keys=o.keys)
    return out
