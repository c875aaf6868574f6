"""The clinical-noise family's conditions (one per variant, in report order) and the facets each
is reported under. The original case is the spine's `clean` condition, planned once per item."""

from __future__ import annotations

from typing import Final

FAMILY: Final = "noise"

#: red herrings inserted one at a time at random sentence boundaries (nested: 1 in 5 in 10)
DISTRIBUTED = ("redherring-1", "redherring-5", "redherring-10")
#: the same 10 red herrings as one block at one boundary
TOGETHER = "together-10"
#: the 10 red herrings of redherring-10 replaced by whitespace of the same lengths (the control)
WHITESPACE = "whitespace"
ABBREVIATIONS = "abbreviations"
REWRITE = "rewrite"

CONDITIONS = (*DISTRIBUTED, TOGETHER, WHITESPACE, ABBREVIATIONS, REWRITE)
HERRING_VARIANTS = (*DISTRIBUTED, TOGETHER, WHITESPACE)
GENERATED = (*HERRING_VARIANTS, REWRITE)  # the variants that need a generator model
FACETS = ("perturbation", "dose", "placement")
#: the name of every variant pooled (a comparison's and a trade-off's row over all perturbed units)
POOLED = "perturbed"

#: how many red herrings a case gets (the largest dose)
HERRINGS = 10
DOSES = {"redherring-1": 1, "redherring-5": 5, "redherring-10": 10}

TITLES = {
    "clean": "Original",
    "redherring-1": "Red herrings, 1",
    "redherring-5": "Red herrings, 5",
    "redherring-10": "Red herrings, 10",
    TOGETHER: "Red herrings, 10 as one block",
    WHITESPACE: "Whitespace control (10)",
    ABBREVIATIONS: "Abbreviations",
    REWRITE: "Rewritten as a note",
}

#: the headline rates (keys of an overall block) and their column titles
HEADLINE_COLUMNS = (
    ("clean_acc", "Original acc"),
    ("redherring-10_acc", "Red herrings (10) acc"),
    ("together-10_acc", "Block of 10 acc"),
    ("whitespace_acc", "Whitespace acc"),
    ("abbreviations_acc", "Abbreviations acc"),
    ("rewrite_acc", "Rewrite acc"),
    ("redherring-10_flip", "Red herrings (10) flip rate"),
    ("redherring-10_flip_read", "Red herrings (10) flip rate, unread left out"),
)


def facets_of(variant: str) -> dict[str, str | None]:
    """The facet values of a variant's probes."""
    if variant in DOSES:
        return {"perturbation": "redherring", "dose": str(DOSES[variant]), "placement": "distributed"}
    if variant == TOGETHER:
        return {"perturbation": "redherring", "dose": str(HERRINGS), "placement": "together"}
    if variant == WHITESPACE:
        return {"perturbation": "whitespace", "dose": str(HERRINGS), "placement": "distributed"}
    if variant in (ABBREVIATIONS, REWRITE):
        return {"perturbation": variant, "dose": None, "placement": None}
    raise ValueError(f"unknown variant {variant!r} (known: {', '.join(CONDITIONS)})")


def parse_variants(value: str | list[str] | tuple[str, ...] | None) -> tuple[str, ...] | None:
    """'a,b' or ['a', 'b'] -> ('a', 'b') in report order; None stays None. Unknown names raise
    ValueError naming the known ones; 'all' is every variant."""
    if value is None:
        return None
    raw = value.split(",") if isinstance(value, str) else [x for v in value for x in str(v).split(",")]
    names = [x.strip() for x in raw if x.strip()]
    if "all" in names:
        return CONDITIONS
    unknown = [n for n in names if n not in CONDITIONS]
    if unknown:
        raise ValueError(f"unknown variant(s) {', '.join(unknown)} (known: {', '.join(CONDITIONS)}, or all)")
    if not names:
        raise ValueError(f"no variant named (known: {', '.join(CONDITIONS)}, or all)")
    return tuple(c for c in CONDITIONS if c in names)
