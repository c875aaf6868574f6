"""The perturbed cases clinicians review (the noise rubric: a red herring or a rewrite beside the original case, MedQA fragility), declared on the
family as `review_rubrics`; review.sample draws and assigns their units."""

from __future__ import annotations

from ...review.rubrics import Dimension, ReviewRubric, scale
from ...review.units import Candidate, probe_facets
from ...runtime.seeding import stable_hash
from ...suite import Suite


def candidates_noise(suite: Suite) -> list[Candidate]:
    out = []
    for p in suite.probes:
        item = suite.items[p.item_id]
        parts = getattr(p, "parts", {}) or {}
        display: list[dict[str, object]] = [
            {"kind": "text", "title": "Original case", "text": item.question},
            {"kind": "text", "title": "Perturbed case", "text": str(parts.get("text", ""))},
        ]
        herrings = found if isinstance(found := item.meta.get("red_herrings"), list) else []
        inserted = []
        for ins in parts.get("insertions") or []:
            try:
                inserted.append(["Inserted", str(herrings[int(ins["herring"])])])
            except (KeyError, IndexError, ValueError, TypeError):
                continue
        if inserted and not parts.get("blank"):
            display.append({"kind": "list", "title": "Inserted sentences", "items": inserted})
        if item.options:
            display.append({"kind": "options", "title": "Options", "options": [[k, v, k == item.answer] for k, v in item.options.items()]})
        strata = {"source": item.source, "subject": item.subject, "condition": p.condition, **probe_facets(p)}
        out.append(Candidate(f"N-{stable_hash(p.id)[:16]}", item.id, strata, display, {"probe_id": p.id, "condition": p.condition}))
    return out


RUBRIC_NOISE = ReviewRubric(
    key="noise",
    title="Noise review: red herrings and rewrites",
    unit="a clinical case and its perturbed version",
    instructions=(
        "Compare the perturbed case with the original. A red herring must carry no clinically significant "
        "information; a rewrite must be clinically equivalent to the original."
    ),
    dimensions=(
        Dimension(
            "redherring_significant",
            "Red herring clinically significant",
            "Does any inserted sentence carry clinically significant information?",
            scale(
                ("yes", "Yes", "At least one inserted sentence could change the assessment."),
                ("no", "No", "The inserted sentences are clinically irrelevant."),
                ("na", "Not a red-herring variant", "No sentences were inserted."),
            ),
            scale="nominal",
            passing=("no",),
            not_applicable="na",
        ),
        Dimension(
            "rewrite_equivalent",
            "Rewrite clinically equivalent",
            "Is the perturbed text clinically equivalent to the original?",
            scale(
                ("yes", "Yes", "Same findings, same answer."),
                ("no", "No", "A finding was lost, added or changed."),
                ("na", "Not a rewrite", "The text was not rewritten."),
            ),
            scale="nominal",
            passing=("yes",),
            not_applicable="na",
        ),
    ),
    blind=("generator",),
    families=("noise",),
    suite_actions=(("redherring_significant", "yes", "drop_probe"), ("rewrite_equivalent", "no", "drop_probe")),
    candidates=lambda suite: candidates_noise(suite),
    strata=("source", "condition"),
)
