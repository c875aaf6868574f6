"""What the clinical-noise family sends and how it scores the replies.

Two modes (`-O mode=...`):

- `mcq` (the default): the case (original or perturbed), its question sentence and the options;
  the reply is read for a letter (`--scoring letter`, or `logprob`) by `scoring.mcq`. Runs on any
  model, no judge needed.
- `diagnosis` (free text, the study's task): the case and its question in open form; the model
  reasons step by step and ends with one marked line, `FINAL DIAGNOSIS: ...`. The marked line is
  judged against the case's reference (the gold option's text) by the shared LLM judge
  (`-O judge=SPEC`) with the rubric `DIAGNOSIS_RUBRIC` (match / no_match; another rubric file with
  `-O rubric=PATH`). A reply without the marked line is `invalid` (no judge call); a judge reply
  without a readable verdict is `unscored` with its reason: neither is ever a score.
  `--scoring judge` is accepted in this mode (the units are scored by the judge either way).

The judge sees the original case (never the perturbed one), the reference and the model's final
diagnosis only (not its reasoning), so every variant of a case is judged the same way."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from ...calls import CallRequest
from ...records import Item, Probe
from ...runtime.errors import ConfigError
from ...runtime.jsontypes import JSONObject
from ...scoring.judge import Judge, JudgeScorer, JudgeSpecOption, Rubric
from ...scoring.mcq import mcq_scorer
from ...sources.passage import PassageMode, with_passage
from .construct.cases import GENERIC_OPEN, full_question
from .taxonomy import parse_variants

MCQ_SYSTEM = "You are a physician answering a multiple-choice question about a clinical case. Exactly one option is correct."
MCQ_LETTER = "Give the letter of the single best option and nothing else, as 'Answer: X'."
MCQ_LOGPROB = "Give only the letter of the single best option."
MCQ_NUMBER = "Give the number of the single best option and nothing else, as 'Answer: N'."
MCQ_NUMBER_LOGPROB = "Give only the number of the single best option."

DIAGNOSIS_SYSTEM = "You are an experienced physician working up a patient from the case notes you are given."
DIAGNOSIS_INSTRUCTION = (
    "Work through the case step by step: what the findings point to and what they rule out. "
    "Then end your reply with one line of exactly this form, naming a single specific answer in fewer than ten words:\n"
    "FINAL DIAGNOSIS: <your answer>"
)
MARKER = "FINAL DIAGNOSIS"
#: the reply budget of diagnosis mode (reasoning takes room)
DIAGNOSIS_MAX_TOKENS = 2048

DIAGNOSIS_RUBRIC = Rubric.model_validate(
    {
        "name": "noise-diagnosis-match",
        "version": "1",
        "instructions": (
            "You check a model's final answer to a clinical case against the reference answer. The answer matches when it "
            "names the same condition or cause as the reference: other wording, a synonym, an abbreviation or extra detail "
            "that does not change it are fine. It does not match when it names another condition, a broader category "
            "that would include other conditions, a mere finding, or several candidates without choosing one."
        ),
        "inputs": ["case", "reference"],
        "verdicts": {
            "match": {"value": 1, "description": "the answer names the reference condition or cause"},
            "no_match": {"value": 0, "description": "the answer names something else, is too vague, or hedges between candidates"},
        },
    }
)

_MARKED = re.compile(rf"^[ \t>*_#`-]*{MARKER}[ \t*_`]*[:\-–][ \t*_`]*(.*?)[ \t*_`.]*$", re.IGNORECASE | re.MULTILINE)


def final_diagnosis(text: str | None) -> str | None:
    """The last marked final diagnosis of a reply (None when it has none, or it is empty)."""
    found = [m.group(1).strip() for m in _MARKED.finditer(text or "")]
    found = [f for f in found if f and not f.startswith("<")]
    return found[-1] if found else None


class NoiseOptions(BaseModel):
    """The family's evaluation options (`medres eval -O mode=diagnosis -O judge=SPEC`).

    mode: mcq (letter scoring, no judge) or diagnosis (free text judged against the reference);
    judge: the judge model spec (diagnosis mode); rubric: a rubric file replacing the built-in one;
    variants: the conditions to plan, comma separated (default: every variant in the suite);
    max_tokens: the reply budget of diagnosis mode;
    context: `item` asks an item that has a passage (PubMedQA's abstract) with it, `none` without."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["mcq", "diagnosis"] = "mcq"
    judge: JudgeSpecOption = None
    rubric: str | None = None
    variants: tuple[str, ...] | None = None
    max_tokens: int | None = None
    context: PassageMode = "item"  # an item's passage (PubMedQA's abstract) before the case; none: left out

    @field_validator("variants", mode="before")
    @classmethod
    def _variants(cls, v: Any) -> tuple[str, ...] | None:
        return parse_variants(v)

    @model_validator(mode="after")
    def _judge_needed(self) -> NoiseOptions:
        if self.mode == "diagnosis" and not self.judge:
            raise ValueError("mode=diagnosis needs a judge model: -O judge=SPEC")
        if self.judge and self.mode != "diagnosis":
            raise ValueError("a judge model is used only in diagnosis mode (-O mode=diagnosis); mcq answers are read, not judged")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")
        return self


def effective_mode(scoring: str, options: NoiseOptions) -> str:
    """`diagnosis` or `mcq`; a scoring that does not fit the mode is a ConfigError."""
    if options.mode == "diagnosis":
        if scoring == "logprob":
            raise ConfigError("--scoring", "diagnosis mode is judged; use --scoring letter or judge")
        return "diagnosis"
    if scoring == "judge":
        raise ConfigError("--scoring", "scoring by judge is the free-text mode: add -O mode=diagnosis -O judge=SPEC")
    return "mcq"


def case_text(item: Item, probe: Probe | None) -> str:
    """The case as this unit shows it: the original, or the probe's perturbed text."""
    if probe is None:
        return item.question
    return str(getattr(probe, "parts", {}).get("text") or item.question)


def _options_block(item: Item) -> str:
    return "\n".join(f"{k}. {v}" for k, v in (item.options or {}).items())


def render_mcq(item: Item, probe: Probe | None, scoring: str, passage_mode: str = "item") -> list[dict[str, str]]:
    if scoring == "logprob":
        instruction = MCQ_NUMBER_LOGPROB if item.numbered else MCQ_LOGPROB
    else:
        instruction = MCQ_NUMBER if item.numbered else MCQ_LETTER
    user = f"{full_question(item, case_text(item, probe))}\n\n{_options_block(item)}\n\n{instruction}"
    return [{"role": "system", "content": MCQ_SYSTEM}, {"role": "user", "content": with_passage(user, item, passage_mode)}]


def open_ask(item: Item) -> str:
    return str(item.meta.get("open_ask") or GENERIC_OPEN.get(str(item.meta.get("ask_kind")), GENERIC_OPEN["diagnosis"]))


def render_diagnosis(item: Item, probe: Probe | None, passage_mode: str = "item") -> list[dict[str, str]]:
    user = f"Case notes:\n<case>\n{case_text(item, probe)}\n</case>\n\nQuestion: {open_ask(item)}\n\n{DIAGNOSIS_INSTRUCTION}"
    return [{"role": "system", "content": DIAGNOSIS_SYSTEM}, {"role": "user", "content": with_passage(user, item, passage_mode)}]


def render(item: Item, probe: Probe | None, scoring: str, options: NoiseOptions) -> list[dict[str, str]]:
    if effective_mode(scoring, options) == "diagnosis":
        return render_diagnosis(item, probe, options.context)
    if item.options is None:
        raise ConfigError("-O mode", f"case {item.id} has no options: evaluate it with -O mode=diagnosis -O judge=SPEC")
    return render_mcq(item, probe, scoring, options.context)


class DiagnosisJudgeScorer(JudgeScorer):
    """The judge of one unit, shown only the reply's marked final diagnosis; a reply without one
    gets no judge call (it is read as invalid)."""

    def judge_requests(self, answer_key: str, answer_text: str | None) -> list[CallRequest]:
        return super().judge_requests(answer_key, final_diagnosis(answer_text))


_JUDGES: dict[tuple[str, str | None], Judge] = {}


def rubric_of(options: NoiseOptions) -> Rubric:
    if options.rubric is None:
        return DIAGNOSIS_RUBRIC
    r = Rubric.load(Path(options.rubric))
    missing = [n for n in r.inputs if n not in ("case", "reference")]
    if missing:
        raise ConfigError("-O rubric", f"the rubric asks for {', '.join(missing)}; this family gives case and reference")
    return r


def judge_of(options: NoiseOptions) -> Judge:
    """One Judge per (judge spec, rubric) for the whole run."""
    key = (str(options.judge), options.rubric)
    if key not in _JUDGES:
        from ...models.spec import parse_model_spec

        _JUDGES[key] = Judge(parse_model_spec(str(options.judge)), rubric_of(options), structured=True)
    return _JUDGES[key]


def scorer(item: Item, probe: Probe | None, scoring: str, options: NoiseOptions):
    if effective_mode(scoring, options) == "diagnosis":
        if not item.reference:
            raise ConfigError("-O mode", f"case {item.id} has no reference diagnosis to judge against")
        fields = {"case": item.question, "reference": item.reference}
        return DiagnosisJudgeScorer(judge_of(options), fields)
    return mcq_scorer(item, scoring)


def prompts(options: NoiseOptions) -> dict[str, str]:
    # the passage setting is recorded only when it differs from the default, so earlier runs' hashes stand
    passage = {"context": options.context} if options.context != "item" else {}
    if options.mode == "diagnosis":
        r = rubric_of(options)
        return {
            "mode": options.mode,
            "system": DIAGNOSIS_SYSTEM,
            "instruction": DIAGNOSIS_INSTRUCTION,
            "rubric": r.model_dump_json(),
            "rubric_hash": r.hash,
            "mcq_system": MCQ_SYSTEM,
            "mcq_letter": MCQ_LETTER,
            **passage,
        }
    return {
        "mode": options.mode,
        "system": MCQ_SYSTEM,
        "letter_instruction": MCQ_LETTER,
        "logprob_instruction": MCQ_LOGPROB,
        "number_instruction": MCQ_NUMBER,
        "number_logprob_instruction": MCQ_NUMBER_LOGPROB,
        **passage,
    }


def decoding(options: NoiseOptions) -> JSONObject:
    if options.mode == "diagnosis":
        return {"max_tokens": options.max_tokens or DIAGNOSIS_MAX_TOKENS}
    return {} if options.max_tokens is None else {"max_tokens": options.max_tokens}
