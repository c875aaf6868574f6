"""`medres build adaptive`: an adaptive suite from an items file or any suite's items. No model is
called: each MCQ item gets one probe holding the wrong option the attacker will push and the kind of
stress drawn for it (with, for the misleading kind, a content type and a provenance), every choice
drawn from (seed, item id) and stored in the probe. Items that cannot be MCQ items are skipped and
counted (`built_from.skipped`). The same source and seed give the same suite byte for byte (the
manifest's `created` is SOURCE_DATE_EPOCH when set)."""

from __future__ import annotations

from pathlib import Path

from ...build.workspace import created_stamp
from ...records import Item, SuiteManifest
from ...runtime.errors import ConfigError
from ...runtime.seeding import rng_for
from ...suite import Suite
from ..misleading.construct.checks import item_skip_reason
from ..misleading.construct.inputs import load_build_items
from ..misleading.taxonomy import CONTENT_TYPE_KEYS, PROVENANCE_KEYS
from .probe import AdaptiveProbe
from .taxonomy import CONDITION, FAMILY, KINDS


def probe_for(item: Item, seed: int) -> AdaptiveProbe:
    """The item's probe: its seeded target (a wrong option), kind, content type and provenance."""
    return AdaptiveProbe(
        id=f"{item.id}:{CONDITION}",
        item_id=item.id,
        target=rng_for(seed, item.id, "adaptive-target").choice(item.wrong_options),
        kind=rng_for(seed, item.id, "adaptive-kind").choice(KINDS),
        content_type=rng_for(seed, item.id, "adaptive-content-type").choice(CONTENT_TYPE_KEYS),
        provenance=rng_for(seed, item.id, "adaptive-provenance").choice(PROVENANCE_KEYS),
    )


def build_adaptive(source: Path | str, out: Path | str, seed: int = 0, name: str | None = None, limit: int | None = None) -> Suite:
    """Write an adaptive suite at `out` from an items file or a suite directory (its items)."""
    source, out = Path(source), Path(out)
    skipped: dict[str, int] = {}
    if (source / "suite.json").exists():
        src = Suite.load(source)
        items: list[Item] = []
        for item in src.items.values():
            why = item_skip_reason(item)
            if why is None:
                items.append(item)
            else:
                skipped[why[0]] = skipped.get(why[0], 0) + 1
        origin: dict[str, object] = {"suite": src.manifest.name, "family": src.manifest.family, "checksums": src.manifest.checksums}
    else:
        loaded = load_build_items(source)
        items = list(loaded.items)
        for s in loaded.skipped:
            skipped[s.reason] = skipped.get(s.reason, 0) + 1
        origin = {"items": source.name, "format": loaded.format}
    items = items[:limit] if limit is not None else items
    if not items:
        raise ConfigError("--from", f"{source} has no multiple-choice item an attack can push to a wrong option")
    manifest = SuiteManifest(
        name=name or out.name,
        family=FAMILY,
        seed=seed,
        created=created_stamp(),
        description="Adaptive attacks: each item answered clean, then attacked by a model over turns where it was right.",
        conditions=[CONDITION],
        built_from={**origin, "skipped": skipped},
    )
    suite = Suite(manifest, items, [probe_for(item, seed) for item in items])
    suite.save(out)
    return suite
