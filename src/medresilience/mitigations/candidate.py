"""The optimised-prompt file `medres mitigate optimise` writes and `--setting optimised:FILE` reads.

A JSON object, versioned by `format` ("medresilience.optimised-prompt") and `version` (1):

- `prompt` (the precaution text added to the system message) and `prompt_hash` (its SHA-256, first
  16 hex characters: a hand-edited prompt no longer matches and the file is refused), `seed_prompt`;
- `train` and `val`: per suite drawn from, its name, family, path, `suite_hash` (from the checksums
  of its manifest, or of its content when it has none) and the examples drawn (`item` id, `probe`
  id or null for a clean-only example, `content`: a hash of the item's record);
- `task_model`, `reflection_model`, `judge_model` (null without a judged suite): label, identity
  (what keys its calls) and the spec without secrets;
- `method` ("gepa"), `budget` (GEPA metric calls), `metric_calls` (used), `seed`, `per_suite`,
  `reflection_minibatch`;
- `seed_val_score`, `best_val_score`, `best` (an index of `history`), `history` (every candidate
  GEPA kept: its prompt, parents, validation score and per-example scores, the metric calls spent
  when it was found), `evaluations` (each batch evaluated: the split, the candidate, the mean);
- `calls` (per model label: calls, tokens, cost, errors, from the work store), `packages`
  (medresilience, gepa, python), `created`, `work_dir` (where the store of every call is).

`OptimisedPrompt.overlap(suite)` says, in one line per split, when a suite shares items with the
file's training or validation examples: the same suite (same `suite_hash`), or items with the same
id or the same content. Scores of the optimised setting on such items are not held out."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..runtime.errors import InputError, validation_problem
from ..runtime.fileio import atomic_write
from ..runtime.jsontypes import JSONObject
from ..runtime.seeding import stable_hash

if TYPE_CHECKING:  # pragma: no cover
    from ..records import Item
    from ..suite import Suite

FORMAT = "medresilience.optimised-prompt"
SCHEMA = FORMAT
VERSION = 1
#: the name of the one text component GEPA evolves
COMPONENT = "precaution"
SPLITS = {"train": "training", "val": "validation"}


def prompt_hash(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:16]


def suite_hash(suite: Suite) -> str:
    """A suite's fingerprint: a hash of its manifest's file checksums, or of its items and probes
    when it has none (a suite never saved)."""
    if suite.manifest.checksums:
        return stable_hash("checksums", sorted(suite.manifest.checksums.items()))[:16]
    return stable_hash("content", [i.model_dump(mode="json") for i in suite.items.values()], [p.model_dump(mode="json") for p in suite.probes])[:16]


def item_hash(item: Item) -> str:
    """A hash of an item's record without its id: the same question (text, options, answer,
    reference, source) under another id or in another suite has the same hash."""
    data = item.model_dump(mode="json")
    data.pop("id", None)
    return stable_hash("item", data)[:16]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ExampleRef(_Record):
    item: str = Field(min_length=1)
    probe: str | None = None
    content: str = Field(min_length=1, description="item_hash of the item's record")


class SplitSuite(_Record):
    """One suite of a split and the examples drawn from it."""

    name: str
    family: str
    path: str | None = None
    suite_hash: str = Field(min_length=1)
    checksums: dict[str, str] = Field(default_factory=dict)
    examples: list[ExampleRef]

    @property
    def item_ids(self) -> list[str]:
        return [e.item for e in self.examples]


class ModelRecord(_Record):
    label: str
    identity: JSONObject
    identity_hash: str
    spec: JSONObject = Field(default_factory=dict, description="the spec without secrets")


class CandidateRecord(_Record):
    index: int = Field(ge=0)
    parents: list[int | None] = Field(default_factory=list)
    prompt: str
    prompt_hash: str
    val_score: float
    val_scores: dict[str, float] = Field(default_factory=dict, description="example ref -> score")
    found_after: int = Field(0, ge=0, description="metric calls spent when it was found")


class EvaluationRecord(_Record):
    split: Literal["train", "val"]
    candidate: str = Field(description="prompt_hash of the candidate evaluated")
    examples: int
    score: float = Field(description="mean score on the batch")
    unscored: int = 0
    invalid: int = 0


class OptimisedPrompt(_Record):
    """The optimised-prompt file (see the module docstring for each field)."""

    format: Literal["medresilience.optimised-prompt"]
    version: int
    name: str = Field(min_length=1)
    prompt: str = Field(min_length=1)
    prompt_hash: str
    seed_prompt: str
    method: Literal["gepa"] = "gepa"
    budget: int = Field(ge=1)
    metric_calls: int = Field(ge=0)
    seed: int
    per_suite: int = Field(ge=1)
    reflection_minibatch: int = Field(ge=1)
    task_model: ModelRecord
    reflection_model: ModelRecord
    judge_model: ModelRecord | None = None
    train: list[SplitSuite] = Field(min_length=1)
    val: list[SplitSuite] = Field(min_length=1)
    seed_val_score: float
    best_val_score: float
    best: int = Field(ge=0)
    history: list[CandidateRecord] = Field(min_length=1)
    evaluations: list[EvaluationRecord] = Field(default_factory=list)
    calls: dict[str, JSONObject] = Field(default_factory=dict)
    packages: dict[str, str] = Field(default_factory=dict)
    created: str = ""
    work_dir: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> OptimisedPrompt:
        if self.version != VERSION:
            raise ValueError(f"version {self.version} is not one this medresilience reads (it reads version {VERSION})")
        if prompt_hash(self.prompt) != self.prompt_hash:
            raise ValueError("prompt_hash does not match the prompt (the prompt was changed after the optimiser wrote it)")
        if self.best >= len(self.history):
            raise ValueError(f"best is {self.best} but the history holds {len(self.history)} candidates")
        if self.history[self.best].prompt != self.prompt:
            raise ValueError("the prompt is not the history's best candidate")
        return self

    # ---- the split
    def examples(self, split: str) -> list[tuple[SplitSuite, ExampleRef]]:
        return [(s, e) for s in getattr(self, split) for e in s.examples]

    def overlap(self, suite: Suite, label: str = "the optimised prompt") -> list[str]:
        """One warning per split whose examples overlap the suite: the same suite (same suite_hash),
        or items with the same id or the same content. Empty when the suite is held out."""
        h = suite_hash(suite)
        by_content = {item_hash(it): it.id for it in suite.items.values()}
        out: list[str] = []
        for split, title in SPLITS.items():
            same = [s for s in getattr(self, split) if s.suite_hash == h]
            hit: set[str] = set()
            for _s, e in self.examples(split):
                if e.item in suite.items:
                    hit.add(e.item)
                if e.content in by_content:
                    hit.add(by_content[e.content])
            if not same and not hit:
                continue
            why = []
            if same:
                why.append(f"it is the suite {same[0].name!r} the optimiser drew its {title} examples from (same checksums)")
            if hit:
                shown = sorted(hit)
                ids = ", ".join(shown[:8]) + (f", ... ({len(shown) - 8} more)" if len(shown) > 8 else "")
                why.append(f"{len(hit)} of its items were {title} examples of the optimiser (same id or content: {ids})")
            out.append(
                f"suite {suite.manifest.name!r} is not held out from {label}: "
                + "; ".join(why)
                + ". Scores under this setting on these items are not an independent test of the prompt."
            )
        return out

    def summary(self) -> str:
        """One line: the method, models, budget, seed and the validation scores."""
        return (
            f"{self.method} {self.packages.get('gepa', '')}".strip()
            + f"; task model {self.task_model.label}, reflection model {self.reflection_model.label}"
            + f"; budget {self.budget} metric calls ({self.metric_calls} used), seed {self.seed}"
            + f"; validation score {self.seed_val_score:.3f} (seed prompt) -> {self.best_val_score:.3f}"
        )

    def split_text(self) -> str:
        """The train/val split as compact JSON (suite name, hash, item and probe ids): recorded with
        a run so a report can check overlap from run.json alone."""
        data = {
            split: [
                {
                    "suite": s.name,
                    "suite_hash": s.suite_hash,
                    "items": s.item_ids,
                    "probes": [e.probe for e in s.examples],
                    "content": [e.content for e in s.examples],
                }
                for s in getattr(self, split)
            ]
            for split in SPLITS
        }
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    def write(self, path: Path | str) -> Path:
        path = Path(path)
        with atomic_write(path) as fh:
            fh.write(self.model_dump_json(indent=2) + "\n")
        return path


def file_hash(path: Path | str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_candidate(path: Path | str) -> OptimisedPrompt:
    """Read and check an optimised-prompt file; any fault is one InputError naming the file and
    the field."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(path, None, None, "optimised-prompt file not found (write one with: medres mitigate optimise ... --out FILE)") from None
    except IsADirectoryError:
        raise InputError(path, None, None, "is a directory, not an optimised-prompt file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(path, None, None, f"cannot read the optimised-prompt file ({e})") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as e:
        raise InputError(path, e.lineno, None, f"not valid JSON ({e.msg})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(path, None, "format", f"not an optimised-prompt file (expected format {FORMAT!r}; write one with medres mitigate optimise)")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version != VERSION:
        newer = isinstance(version, int) and not isinstance(version, bool) and version > VERSION
        raise InputError(
            path,
            None,
            "version",
            f"version {version!r} is not one this medresilience reads (it reads version {VERSION})" + ("; upgrade medresilience" if newer else ""),
        )
    try:
        return OptimisedPrompt.model_validate(data)
    except ValidationError as e:
        where, msg = validation_problem(e)
        raise InputError(path, None, where, msg) from None
