"""The records that flow through the toolkit: Item, Probe (and GenericProbe, a family's probe of
plain mappings) and the suite manifest. Reading and writing them is fileio.py's (files) and
suite.py's (suite directories); this module imports neither, nor the family registry.

An Item is one source question of any family: it may carry options and a gold letter (an MCQ), a
free-text reference (a diagnosis, a correction), or neither (a patient question). A Probe is one
stressed view of an item: its family, its condition, what it renders and its facets (the strata it
is reported under). A family with fields of its own declares a Probe subclass; the suite loader
asks the family registry for it by the probe's `family`.

A suite is static: every seeded choice is already made and stored in its probes. The clean
condition of an item is not a probe: it is planned once per item and model and shared by all of
that item's probes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer, model_validator

LETTERS = "ABCDEFGHIJ"
#: Numbered options (MedJourney, some HLE rows) are keyed "1".."9": first-class labels, not letters.
NUMBERS = "123456789"


def option_labels(n: int, numbered: bool = False) -> str:
    """The labels of n options: A, B, ... or 1, 2, ..."""
    labels = NUMBERS if numbered else LETTERS
    if n > len(labels):
        raise ValueError(f"at most {len(labels)} {'numbered' if numbered else 'lettered'} options are supported, got {n}")
    return labels[:n]


#: The shared unstressed condition of every item (planned once per item, model and setting).
CLEAN = "clean"


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Item(Record):
    """One source question. Options (when present) are keyed A, B, ... (or 1, 2, ... for a
    numbered source) in display order and `answer` is one of the keys; `reference` is a
    free-text answer key (a diagnosis, a correction)."""

    id: str = Field(min_length=1)
    source: str = Field(min_length=1, description="source dataset, e.g. medqa, medmcqa, mmlu")
    question: str = Field(min_length=1)
    options: dict[str, str] | None = None
    answer: str | None = None
    reference: str | None = None
    subject: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("options")
    @classmethod
    def _options(cls, v: dict[str, str] | None) -> dict[str, str] | None:
        if v is None:
            return v
        if len(v) < 2:
            raise ValueError("an item needs at least two options")
        keys = "".join(v)
        numbered = keys[:1] == "1"
        if len(v) > len(NUMBERS if numbered else LETTERS):
            raise ValueError(f"at most {len(NUMBERS if numbered else LETTERS)} options are supported, got {len(v)}")
        expected = option_labels(len(v), numbered)
        if keys != expected:
            raise ValueError(f"option {'numbers' if numbered else 'letters'} must be {', '.join(expected)} in order, got {', '.join(v)}")
        for k, text in v.items():
            if not str(text).strip():
                raise ValueError(f"option {k} is empty")
        return v

    @model_validator(mode="after")
    def _answer_is_option(self) -> Item:
        if self.options is not None:
            if self.answer is None:
                raise ValueError("an item with options needs an answer letter")
            if self.answer not in self.options:
                raise ValueError(f"answer '{self.answer}' is not one of the option {'numbers' if self.numbered else 'letters'} {', '.join(self.options)}")
        elif self.answer is not None:
            raise ValueError("an answer letter needs options (use reference for a free-text answer)")
        return self

    @model_serializer(mode="wrap")
    def _drop_absent_reference(self, handler):
        # an MCQ item's line stays as it was before free-text references existed
        data = handler(self)
        if isinstance(data, dict) and data.get("reference") is None:
            data.pop("reference", None)
        return data

    @property
    def letters(self) -> str:
        """The option labels as one string ("ABCD", or "12345" for numbered options)."""
        return "".join(self.options or {})

    @property
    def numbered(self) -> bool:
        return self.letters[:1] == "1"

    @property
    def wrong_options(self) -> list[str]:
        return [k for k in self.options or {} if k != self.answer]

    @property
    def choices(self) -> dict[str, str]:
        """The options of a multiple-choice item, for code that reads only such items (ValueError
        naming the item when it has none)."""
        if self.options is None:
            raise ValueError(f"item {self.id} has no options (a multiple-choice item is needed here)")
        return self.options

    @property
    def answer_letter(self) -> str:
        """The answer's option label of a multiple-choice item (ValueError naming the item when it
        has none; an item with options always has one)."""
        if self.answer is None:
            raise ValueError(f"item {self.id} has no answer letter (a multiple-choice item is needed here)")
        return self.answer


class ProbeMismatch(ValueError):
    """A probe that does not fit its item; `field` names the probe field at fault."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


class Probe(Record):
    """One stressed view of an item: the fields every family shares. A family's probe adds what it
    renders and its facets, either as plain mappings (`GenericProbe`) or as typed fields (a
    subclass that overrides `facet_values`)."""

    id: str = Field(min_length=1)
    item_id: str = Field(min_length=1)
    family: str = Field(min_length=1)
    condition: str = Field(min_length=1)
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("condition")
    @classmethod
    def _not_clean(cls, v: str) -> str:
        if v == CLEAN:
            raise ValueError("'clean' is the shared unstressed condition, not a probe")
        return v

    def facet_values(self) -> dict[str, Any]:
        """The strata this probe is reported under (facet name -> value)."""
        return {}

    def check_against(self, item: Item) -> None:
        """Raise ValueError (ProbeMismatch names the field) when this probe does not fit its item."""


class GenericProbe(Probe):
    """A probe whose rendered parts and facets are plain mappings: enough for a family that needs
    no typed fields of its own."""

    parts: dict[str, Any] = Field(default_factory=dict, description="what the family renders (text, sentences)")
    facets: dict[str, str | None] = Field(default_factory=dict, description="strata this probe is reported under")

    def facet_values(self) -> dict[str, Any]:
        return dict(self.facets)


class SuiteManifest(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    version: str = "1"
    family: str
    seed: int = 0
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    generator: dict[str, Any] | None = None
    prompt_hashes: dict[str, str] = Field(default_factory=dict)
    counts: dict[str, Any] = Field(default_factory=dict)
    checksums: dict[str, str] = Field(default_factory=dict)
    description: str = ""
