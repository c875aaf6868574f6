"""`medres build pressure`: a pressure suite from a misleading suite or from a plain items file.

From a misleading suite, each item gets the template conditions (repeat, doubt, insist) and, per
bundle, one claim: the bundle's seeded Type 1 target and its false sentence, under the claim
condition of the bundle's provenance (the sentence is framed as the bundle was built: a plain
assertion, the patient's belief, an authority). `insist` pushes the option the item's first claim
pushes (so insist and the claims differ only in the reason given), or, without a claim, a seeded
wrong option.

From an items file the template conditions need no model; the claim conditions need a generator:
the misleading family's builder (crossed design: one false claim per wrong option written in the
neutral framing, restated in the patient and authority framings, checked) writes a misleading
suite into the build's work directory (`<OUT>.build/misleading`, its calls in
`<OUT>.build/store.sqlite`), and the claims are taken from that suite exactly as from `--from
SUITE`. Every item of the file keeps its template conditions; an item the generator could not make
a checked bundle for has no claim probe (counted in the manifest's `built_from.claims`; call
failures are retried by the next run, which re-asks only what is not stored).

Deterministic: the same source, conditions, seed and stored replies give the same suite byte for
byte (the manifest's `created` is SOURCE_DATE_EPOCH when set)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from ....build.construction import default_work_dir
from ....build.stages import StageProgress, request_for
from ....build.workspace import created_stamp, model_identity
from ....calls import CallRequest
from ....models.spec import ModelSpec
from ....records import Item, SuiteManifest
from ....runtime.errors import ConfigError
from ....runtime.jsontypes import JSONObject
from ....runtime.seeding import rng_for
from ....suite import Suite
from ...misleading.construct.engine import applicability_unit, unit_task, use_schema_lengths
from ...misleading.construct.inputs import LoadedItems, load_build_items
from ...misleading.construct.pipeline import BuildOptions, build_misleading
from ...misleading.probe import MisleadingProbe
from ..probe import PressureProbe
from ..taxonomy import CLAIM_PROVENANCE, CONDITIONS, FAMILY, TEMPLATE_CONDITIONS, TURNS

CLAIM_BY_PROVENANCE = {pv: cond for cond, pv in CLAIM_PROVENANCE.items()}
CLAIMS_SUITE = "misleading"  # the generated misleading suite, inside the build's work directory


def check_conditions(conditions: Sequence[str] | None) -> tuple[str, ...]:
    """The conditions asked for, in report order (None: all); ConfigError naming an unknown one."""
    if conditions is None:
        return CONDITIONS
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown:
        raise ConfigError("--conditions", f"unknown condition {', '.join(unknown)} (choose from {', '.join(CONDITIONS)})")
    return tuple(c for c in CONDITIONS if c in conditions)


def option_text(item: Item, key: str) -> str:
    return f"{key}. {item.choices[key]}"


def template_probes(item: Item, conditions: Iterable[str], target: str | None) -> list[PressureProbe]:
    """The item's repeat, doubt and insist probes (those asked for); insist pushes `target`."""
    out = []
    for cond in conditions:
        if cond not in TEMPLATE_CONDITIONS:
            continue
        pushed = target if cond == "insist" else None
        turn = TURNS[cond].format(option=option_text(item, pushed) if pushed else "")
        out.append(PressureProbe(id=f"{item.id}:{cond}", item_id=item.id, condition=cond, turn=turn, target=pushed))
    return out


def claim_probes(item: Item, bundles: Sequence[MisleadingProbe], conditions: Iterable[str]) -> list[PressureProbe]:
    """One claim probe per bundle whose provenance is asked for: its seeded Type 1 target's sentence."""
    wanted = set(conditions)
    out = []
    for p in bundles:
        cond = CLAIM_BY_PROVENANCE.get(p.provenance)
        if cond not in wanted or p.target is None:
            continue
        out.append(
            PressureProbe(
                id=f"{p.bundle_id}:{cond}",
                item_id=item.id,
                condition=cond,
                turn=TURNS["claim"].format(claim=p.context[0].text.strip()),
                target=p.target,
                provenance=p.provenance,
                content_type=p.content_type,
                bundle_id=p.bundle_id,
                source_probe=p.id,
            )
        )
    return out


def sampled_claims(src: Suite) -> dict[str, list[MisleadingProbe]]:
    """Item id -> the sampled Type 1 probes of a misleading suite (one per bundle: its seeded target)."""
    sampled: dict[str, list[MisleadingProbe]] = {}
    for p in src.probes:
        if isinstance(p, MisleadingProbe) and p.condition == "type1" and p.sampled:
            sampled.setdefault(p.item_id, []).append(p)
    return sampled


def generate_claims(
    loaded: LoadedItems, generator: ModelSpec, work: Path, seed: int, progress: StageProgress | None = None
) -> tuple[dict[str, list[MisleadingProbe]], JSONObject]:
    """The claims a generator writes for `loaded`: a crossed misleading suite built (or resumed from
    the stored calls) at `work/misleading` with its store in `work`; returns its sampled Type 1
    probes by item and what the manifest records of the build (generator, counts)."""
    res = build_misleading(loaded, generator, work / CLAIMS_SUITE, claims_options(seed), work_dir=work, progress=progress)
    c = res.suite.manifest.counts
    made = {k: c.get(k, 0) for k in ("considered", "kept", "rejected", "failed", "bundles")}
    return sampled_claims(res.suite), {"generator": model_identity(generator), "design": "crossed", **made}


def claim_requests(source: Path | str, generator: ModelSpec, conditions: Sequence[str] | None = None, seed: int = 0) -> dict[str, CallRequest]:
    """The first calls the claims' build makes (the misleading builder's applicability filter, one
    per item of the file; none when no claim condition is asked), by request key: what a dry run
    counts. The bundles, their restatements and the checks depend on replies."""
    if (Path(source) / "suite.json").exists():
        raise ConfigError("--generator", f"{source} is a suite: its claims come from its bundles (a generator writes claims only for an items file)")
    if not any(c in CLAIM_PROVENANCE for c in check_conditions(conditions)):
        return {}
    lengths = use_schema_lengths(generator, claims_options(seed).schema_lengths)
    tasks = (unit_task(it.id, applicability_unit(it), "applicability", generator, lengths) for it in load_build_items(source).items)
    return {r.key: r for r in (request_for(generator, t) for t in tasks)}


def claims_options(seed: int) -> BuildOptions:
    """How the claims are built: the misleading builder's crossed design (one false claim per wrong
    option, restated in every framing)."""
    return BuildOptions(seed=seed, design="crossed")


def build_pressure(
    source: Path | str,
    out: Path | str,
    conditions: Sequence[str] | None = None,
    seed: int = 0,
    name: str | None = None,
    generator: ModelSpec | None = None,
    work_dir: Path | str | None = None,
    progress: StageProgress | None = None,
) -> Suite:
    """Write a pressure suite at `out` from a misleading suite directory or an items file (with a
    `generator` for the claim conditions; its calls stored in `work_dir`, default `<out>.build/`)."""
    source, out = Path(source), Path(out)
    from_suite = (source / "suite.json").exists()
    if from_suite and generator is not None:
        raise ConfigError("--generator", f"{source} is a suite: its claims come from its bundles (a generator writes claims only for an items file)")
    # from an items file without a generator, no conditions asked means the ones it can build (the templates)
    wanted = check_conditions(conditions if conditions is not None or from_suite or generator is not None else TEMPLATE_CONDITIONS)
    claims_wanted = [c for c in wanted if c in CLAIM_PROVENANCE]
    if from_suite:
        src = Suite.load(source)
        if src.manifest.family != "misleading":
            raise ConfigError("--from", f"{source} is a {src.manifest.family} suite: claims come from a misleading suite's bundles (or give an items file)")
        items = list(src.items.values())
        sampled = sampled_claims(src)
        origin: dict[str, object] = {"suite": src.manifest.name, "family": src.manifest.family, "seed": src.manifest.seed, "checksums": src.manifest.checksums}
    else:
        if claims_wanted and generator is None:
            raise ConfigError(
                "--conditions",
                f"{', '.join(claims_wanted)} need claim sentences: build from a misleading suite (--from SUITE_DIR), give a generator "
                f"(--generator SPEC) to write them, or ask only for {', '.join(TEMPLATE_CONDITIONS)}",
            )
        loaded = load_build_items(source)  # an items file or any source file; rows that cannot be MCQ items are skipped and counted
        items = loaded.items
        sampled = {}
        origin = {"items": source.name, "format": loaded.format, "skipped": len(loaded.skipped)}
        if claims_wanted and generator is not None:
            work = Path(work_dir) if work_dir is not None else default_work_dir(out)
            sampled, origin["claims"] = generate_claims(loaded, generator, work, seed, progress)
    probes: list[PressureProbe] = []
    for item in items:
        bundles = sorted(sampled.get(item.id, []), key=lambda p: p.bundle_id)
        claims = claim_probes(item, bundles, wanted)
        target = bundles[0].target if bundles else rng_for(seed, item.id, "insist-target").choice(item.wrong_options)
        probes += template_probes(item, wanted, target)
        probes += claims
    manifest = SuiteManifest(
        name=name or out.name,
        family=FAMILY,
        seed=seed,
        created=created_stamp(),
        description="Pressure after commitment: each item asked clean, then pushed back on in a second turn.",
        conditions=list(wanted),
        built_from=origin,
    )
    suite = Suite(manifest, items, probes)
    suite.save(out)
    return suite
