"""The clinical-noise probe: a GenericProbe (parts and facets as mappings) that checks, when a suite
is loaded, that what it renders follows from its case: red-herring and whitespace texts are the
case with the recorded insertions of the case's stored red herrings, an abbreviated text is the
case with its recorded replacements. A probe that does not fit is an InputError naming the line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from ...records import GenericProbe, Item, ProbeMismatch
from .construct.abbreviations import apply as apply_replacements
from .construct.split import insert
from .taxonomy import FAMILY


def rebuild(case_text: str, herrings: Sequence[str], insertions: Sequence[dict[str, Any]], blank: bool = False) -> str:
    """The perturbed text from the case and the insertions (in their listed order at one offset):
    each inserted string is a space and the sentence (or as many spaces, `blank`)."""
    pieces = []
    for ins in insertions:
        s = " " + herrings[int(ins["herring"])]
        if len(s) != int(ins["chars"]):
            raise ValueError(f"insertion of herring {ins['herring']} records {ins['chars']} characters, the sentence has {len(s)}")
        pieces.append((int(ins["at"]), " " * len(s) if blank else s))
    return insert(case_text, pieces)


class NoiseProbe(GenericProbe):
    family: Literal["noise"] = FAMILY

    def check_against(self, item: Item) -> None:
        text = self.parts.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ProbeMismatch("parts", "a noise probe renders a non-empty parts.text")
        try:
            if "insertions" in self.parts:
                herrings = item.meta.get("red_herrings")
                if not isinstance(herrings, list):
                    raise ValueError(f"item {item.id} stores no red_herrings")
                expected = rebuild(item.question, herrings, self.parts["insertions"], bool(self.parts.get("blank")))
            elif "replacements" in self.parts:
                expected = apply_replacements(item.question, self.parts["replacements"])
            else:
                return
        except (ValueError, IndexError, KeyError, TypeError) as e:
            raise ProbeMismatch("parts", f"does not follow from item {item.id}: {e}") from None
        if expected != text:
            raise ProbeMismatch("parts", f"parts.text is not item {item.id} with the recorded changes")
