"""An item's passage: the text its question is asked about, which an importer keeps in
``meta["context"]`` (PubMedQA's abstract, one labelled section a line). Every family asks such an
item with its passage before the question, as inspect_evals and lm-eval ask PubMedQA; the
evaluation option ``-O context=none`` asks the question alone. Items without a passage are asked
as they always were, so their prompts (and request keys) do not change."""

from __future__ import annotations

from typing import Literal

from ..records import Item

__all__ = ["HEADER", "PassageMode", "passage", "passage_block", "with_passage"]

#: ``item``: ask with the item's passage (the default); ``none``: leave it out
PassageMode = Literal["item", "none"]
HEADER = "Context:"


def passage(item: Item, mode: str = "item") -> str | None:
    """The item's passage (None without one, or under ``none``)."""
    if mode == "none":
        return None
    text = (item.meta or {}).get("context")
    return text.strip() or None if isinstance(text, str) else None


def passage_block(item: Item, mode: str = "item") -> str | None:
    """``"Context:\\n<passage>"``, or None when the item is asked without one."""
    text = passage(item, mode)
    return None if text is None else f"{HEADER}\n{text}"


def with_passage(text: str, item: Item, mode: str = "item") -> str:
    """A prompt text with the item's passage block before it (unchanged without one)."""
    block = passage_block(item, mode)
    return text if block is None else f"{block}\n\n{text}"
