"""Option-aligned context bundles and the probes derived from them.

A bundle is one generation for one item: a truthful sentence for the gold option and a misleading
sentence for each wrong option, in one content type and one provenance framing. Type 1 and Type 2
are views of the same bundle: Type 1 shows one wrong option's sentence, Type 2 all sentences in a
seeded order. The seeded Type 1 target (`sampled=True`) is drawn here and stored in the probe."""

from __future__ import annotations

from collections.abc import Mapping

from ...records import Item
from ...runtime.seeding import rng_for
from .probe import ContextSentence
from .probe import MisleadingProbe as Probe
from .taxonomy import content_type_key, provenance_key


def bundle_id_for(item_id: str, content_type: str, provenance: str, variant: str = "") -> str:
    base = f"{item_id}:{content_type_key(content_type)}:{provenance_key(provenance)}"
    return f"{base}:{variant}" if variant else base


def check_bundle(item: Item, sentences: Mapping[str, str]) -> None:
    """Raise ValueError when a bundle does not have exactly one non-empty sentence per option."""
    if item.options is None:
        raise ValueError(f"item {item.id} has no options to mislead toward")
    missing = [k for k in item.options if not str(sentences.get(k, "")).strip()]
    if missing:
        raise ValueError(f"no context sentence for option(s) {', '.join(missing)}")
    extra = [k for k in sentences if k not in item.options]
    if extra:
        raise ValueError(f"context sentence for unknown option(s) {', '.join(extra)}")


def probes_from_bundle(
    item: Item,
    sentences: Mapping[str, str],
    content_type: str,
    provenance: str,
    seed: int,
    bundle_id: str | None = None,
    meta: dict | None = None,
) -> list[Probe]:
    """One Type 1 probe per wrong option (one of them marked as the seeded sample) and one Type 2
    probe with the whole bundle in a seeded order."""
    check_bundle(item, sentences)
    ct, pv = content_type_key(content_type), provenance_key(provenance)
    bid = bundle_id or bundle_id_for(item.id, ct, pv)
    wrong = item.wrong_options
    sampled = rng_for(seed, bid, "type1-target").choice(wrong)
    order = list(item.options or {})  # check_bundle: it has options
    rng_for(seed, bid, "type2-order").shuffle(order)
    common = dict(item_id=item.id, bundle_id=bid, content_type=ct, provenance=pv, meta=dict(meta or {}))
    probes = [
        Probe(
            id=f"{bid}:t1:{w}",
            condition="type1",
            target=w,
            sampled=(w == sampled),
            context=(ContextSentence(option=w, text=sentences[w].strip()),),
            **common,
        )
        for w in wrong
    ]
    probes.append(
        Probe(
            id=f"{bid}:t2",
            condition="type2",
            context=tuple(ContextSentence(option=k, text=sentences[k].strip()) for k in order),
            **common,
        )
    )
    return probes


def bundle_of(probes: list[Probe]) -> dict[str, str]:
    """The option -> sentence bundle recovered from a bundle's probes (its Type 2 probe, or the
    union of its Type 1 sentences when no Type 2 probe is present)."""
    t2 = [p for p in probes if p.condition == "type2"]
    src = t2[0].context if t2 else tuple(s for p in probes for s in p.context)
    return {s.option: s.text for s in sorted(src, key=lambda s: s.option)}
