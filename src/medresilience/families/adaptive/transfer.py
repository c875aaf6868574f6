"""Attacks transfer: the attacks an adaptive run found against one model, written as a static suite
that any other model answers (`build_transfer`), and the share of them that also move that model
(`transfer_rates`, read from the replay's run).

What is written. Each SUCCESSFUL attack of the source run (a unit whose answer flipped) becomes one
probe of a misleading-context suite: a Type 1 probe holding the final stress (the one that flipped
the attacked model) as its one context sentence, aimed at the attack's target option, in the content
type and provenance the attacker was asked for. With `accepted=True` every candidate the rules and
the checker accepted (shown to the attacked model, whether it flipped it or not) is written too. The
items are the source suite's, unchanged, so a replay's clean question is the one the attacked model
was asked clean. Every probe's `meta.attack` keeps where it came from (`PROVENANCE_KEYS`: the source
run, the model attacked, the setting, the unit, the turn, the target option, whether it flipped the
attacked model, the attacker and checker), and the manifest's `built_from` names the source run.

Only the misleading kind transfers. A misleading stress is asked exactly as the misleading family
asks its Type 1 probe (the same messages, word for word: checked for every probe written from a run
under no setting, against the request stored in the source run), so a replay is the same attack. A
presupposition, noise or patient stress rewrites the question itself; no static family asks an
option question rewritten that way with the prompt the attacked model saw (the clinical-noise family
asks its cases with its own prompt, the presupposition family asks open questions judged against a
correction that an attack does not have), so a replay would be another attack. Those attacks are
left out and counted by kind (`built_from.skipped`); a run with no misleading success is refused.

Bad input is one error and nothing written: a path that is not an adaptive run directory, a run
whose store or suite is missing (or whose suite changed since the run), a run with no successful
attack of the misleading kind under the setting asked. The suite is written atomically.

The transfer rate of a replay run (`transfer_rates`): per answering model, setting and attacked model,
of the attacks that flipped the attacked model and whose item the answering model got right clean (a
model wrong when asked plainly has nothing to flip; counted as `not_right_at_clean`), the share whose
stressed item it answers wrong (a read answer other than the correct option), with its Wilson interval
and n. An unread reply is in n and never a flip, as in the attack loop (counted as `unread`); an
answer not received (an error) is left out and counted (`not_run`); flips to the attack's target are
counted beside. Each written attack is one per (attacked model, unit), so the attacks of one row are
on distinct items and the Wilson interval's independence holds (a replay of several epochs counts each epoch's pair: those share an item). A model answering its own attacks is
marked `same_model` (that rate is how well a found attack reproduces, not a transfer)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...build.workspace import created_stamp
from ...records import CLEAN, Item, SuiteManifest
from ...runtime.errors import ConfigError, InputError
from ...runtime.seeding import stable_hash
from ...stats.rates import wilson
from ...store import Store
from ...suite import Suite
from ..misleading.delivery import DEFAULT_PROMPTS, render_messages
from ..misleading.probe import FAMILY as MISLEADING
from ..misleading.probe import ContextSentence, MisleadingProbe
from .probe import AdaptiveProbe
from .taxonomy import FAMILY
from .traces import full_traces

#: the kind of stress a static suite can replay as the attacked model was asked it
TRANSFERS = "misleading"
#: what each written probe's `meta.attack` holds
PROVENANCE_KEYS = (
    "run",
    "model",
    "setting",
    "unit_id",
    "turn",
    "target",
    "flipped_source",
    "source_label",
    "to_target",
    "attacker",
    "checker",
    "budget",
    "target_key",
)
#: why an attack of another kind is left out (shown by `medres build transfer`)
WHY_NOT = {
    "presupposition": "a false presupposition is put into the question; the presupposition family asks open questions judged against a correction, which an attack has none of",
    "noise": "clinical noise is put into the vignette; the clinical-noise family asks its cases with its own prompt, not the one the attacked model saw",
    "patient": "patient characteristics are put into the vignette; no static family asks an option question rewritten that way with the prompt the attacked model saw",
}


@dataclass(frozen=True)
class SourceRun:
    """An adaptive run as a transfer reads it: its directory, run.json, its suite and its store."""

    path: Path
    config: dict[str, Any]
    suite: Suite
    store_path: Path

    @property
    def context(self) -> str:
        """The passage setting its attacks were asked under (`-O context`)."""
        return str(((self.config.get("options") or {}).get("family") or {}).get("context") or "item")


def read_source(run_dir: Path | str, suite_dir: Path | str | None = None) -> SourceRun:
    """The adaptive run at `run_dir` (its suite: the one run.json names, or `suite_dir`, which must
    hold the same files); an InputError or ConfigError naming what is wrong otherwise."""
    path = Path(run_dir)
    run_json = path / "run.json"
    if not path.is_dir():
        raise InputError(path, None, None, "no such run directory (give the --out of a `medres eval --attacker ...` run)")
    if not run_json.is_file():
        raise InputError(path, None, None, "not a run directory: it has no run.json (give the --out of a `medres eval --attacker ...` run)")
    try:
        config = json.loads(run_json.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(run_json, None, None, f"not readable JSON: {e}") from None
    family = config.get("family") or (config.get("suite") or {}).get("family")
    if family != FAMILY:
        raise InputError(
            run_json,
            None,
            "family",
            f"a run of the {family or 'unknown'} family, not an adaptive attack run: attacks come from `medres eval --attacker ...` on an adaptive suite",
        )
    store_path = path / "store.sqlite"
    if not store_path.is_file():
        raise InputError(store_path, None, None, "the run's store is missing: its attacks are stored there")
    recorded = config.get("suite") or {}
    suite = _suite_of(path, config, suite_dir, "the suite the run was made on")
    where = suite.path or Path(".")
    want = recorded.get("checksums") or {}
    if want and suite.manifest.checksums != want:
        raise InputError(
            where / "suite.json", None, "checksums", f"not the suite run {path} was made on (its files changed since): give that suite with --suite"
        )
    return SourceRun(path, config, suite, store_path)


def _suite_of(run_dir: Path, config: dict[str, Any], suite_dir: Path | str | None, what: str) -> Suite:
    """`suite_dir`, else the suite run.json names (found as the report finds it); an InputError naming
    run.json's `suite.path` when it is not there."""
    from ...run.run_suite import find_run_suite

    if suite_dir is not None:
        if not (Path(suite_dir) / "suite.json").is_file():
            raise InputError(suite_dir, None, None, "not a suite directory (no suite.json)")
        return Suite.load(suite_dir)
    found, why = find_run_suite(run_dir, config)
    if found is None or found.path is None:
        raise InputError(run_dir / "run.json", None, "suite.path", f"{what} is not found ({why}): give its directory with --suite")
    return Suite.load(found.path)


def _final_turn(trace: dict[str, Any]) -> dict[str, Any]:
    return next(t for t in reversed(trace["turns"]) if t.get("outcome") == "flipped")


def _shown_turns(trace: dict[str, Any], accepted: bool) -> list[dict[str, Any]]:
    """The turns whose stress the attacked model was asked: the flipping one, or (accepted) every one."""
    if accepted:
        return [t for t in trace["turns"] if t.get("outcome") in ("held", "unread", "flipped")]
    return [_final_turn(trace)] if trace["flipped_at"] is not None else []


def _probe(src: SourceRun, trace: dict[str, Any], turn: dict[str, Any], origin: AdaptiveProbe) -> MisleadingProbe:
    flipped = turn.get("outcome") == "flipped"
    attack = {
        "run": str(src.path.resolve()),
        "model": trace["model"],
        "setting": trace["setting"],
        "unit_id": trace["unit_id"],
        "turn": turn["turn"],
        "target": trace["target"],
        "flipped_source": flipped,
        "source_label": turn.get("label"),
        "to_target": turn.get("label") == trace["target"] if flipped else None,
        "attacker": trace["attacker"],
        "checker": trace["checker"],
        "budget": trace["budget"],
        "target_key": turn.get("target_key"),
    }
    tag = stable_hash({k: attack[k] for k in ("run", "model", "setting", "unit_id", "turn")})[:12]
    return MisleadingProbe(
        id=f"{trace['item_id']}:type1:attack-{tag}",
        item_id=trace["item_id"],
        condition="type1",
        bundle_id=f"attack-{tag}",
        content_type=origin.content_type,
        provenance=origin.provenance,
        target=trace["target"],
        sampled=True,  # planned under the default -O type1=sample, as each item's seeded target is
        context=(ContextSentence(option=trace["target"], text=turn["stress"]),),
        meta={"attack": attack},
    )


@dataclass
class Collected:
    """The probes an attack run gives, the attacks left out by kind and the attacks found."""

    probes: list[MisleadingProbe]
    skipped: dict[str, int]
    found: int
    models: list[str]


def collect(src: SourceRun, traces: Iterable[dict[str, Any]], setting: str, accepted: bool) -> Collected:
    """The misleading-kind attacks of `setting` as Type 1 probes (see the module doc)."""
    probes: list[MisleadingProbe] = []
    skipped: dict[str, int] = {}
    found = 0
    models: list[str] = []
    for t in sorted(traces, key=lambda t: (t["model"], t["item_id"], t["unit_id"])):
        if t["setting"] != setting or not t["attacked"]:
            continue
        found += t["flipped_at"] is not None
        origin = next((p for p in src.suite.probes_for(t["item_id"]) if p.id == t["probe_id"]), None)
        if not isinstance(origin, AdaptiveProbe):
            raise InputError(
                src.suite.path or "suite", None, "probes", f"the run's unit {t['unit_id']} names probe {t['probe_id']}, which its suite does not hold"
            )
        for turn in _shown_turns(t, accepted):
            if turn["kind"] != TRANSFERS:
                if turn.get("outcome") == "flipped":
                    skipped[turn["kind"]] = skipped.get(turn["kind"], 0) + 1
                continue
            probes.append(_probe(src, t, turn, origin))
            if t["model"] not in models:
                models.append(t["model"])
    return Collected(probes, skipped, found, models)


def check_rendering(src: SourceRun, store: Store, probes: list[MisleadingProbe], setting: str) -> None:
    """Each probe renders to exactly the messages the attacked model was sent at its turn (the
    request stored in the source run). Checked under no setting; a setting's change is made again
    by the replay's `--setting` (the transfer how-to says so)."""
    if setting != "none":
        return
    sent = store.request_messages(str(p.meta["attack"]["target_key"]) for p in probes)
    for p in probes:
        attack = p.meta["attack"]
        asked = render_messages(src.suite.items[p.item_id], p, "letter", DEFAULT_PROMPTS, src.context)
        if sent.get(str(attack["target_key"])) != asked:
            raise ConfigError(
                "RUN_DIR",
                f"the attack on item {p.item_id} (model {attack['model']}, turn {attack['turn']}) does not render as the Type 1 probe "
                "the attacked model was asked; a replay of it would be another attack: nothing written",
            )


def build_transfer(
    run_dir: Path | str,
    out: Path | str,
    *,
    setting: str = "none",
    accepted: bool = False,
    name: str | None = None,
    suite_dir: Path | str | None = None,
) -> Suite:
    """Write the misleading suite of an adaptive run's attacks at `out` (see the module doc)."""
    src = read_source(run_dir, suite_dir)
    with Store.read_only(src.store_path) as store:
        traces = full_traces(store)
        if not traces:
            raise InputError(src.store_path, None, None, "the run stored no attack (no unit was answered through the attack loop)")
        got = collect(src, traces, setting, accepted)
        if not got.found:
            settings = sorted({t["setting"] for t in traces})
            also = "" if settings == [setting] else f" (its settings: {', '.join(settings)}; pick one with --setting)"
            raise ConfigError("RUN_DIR", f"{src.path}: no attack succeeded under setting {setting}{also}: there is nothing to transfer")
        if not any(p.meta["attack"]["flipped_source"] for p in got.probes):
            kinds = ", ".join(f"{n} {k}" for k, n in sorted(got.skipped.items()))
            why = "; ".join(WHY_NOT[k] for k in sorted(got.skipped) if k in WHY_NOT)
            raise ConfigError(
                "RUN_DIR",
                f"{src.path}: its {got.found} successful attacks ({kinds}) are none of the misleading kind, the one a static suite replays as asked: {why}",
            )
        check_rendering(src, store, got.probes, setting)
    item_ids = list(dict.fromkeys(p.item_id for p in got.probes))
    items: list[Item] = [src.suite.items[i] for i in item_ids]
    manifest = SuiteManifest(
        name=name or Path(out).name,
        family=MISLEADING,
        seed=src.suite.manifest.seed,
        created=created_stamp(),
        description=(
            f"Attacks found against {', '.join(got.models)} by the adaptive run {src.path.resolve()}, replayed as Type 1 probes: "
            "`medres build transfer-rate` on a run of this suite gives the share that also flip each model."
        ),
        conditions=["type1"],
        built_from={
            "adaptive_run": str(src.path.resolve()),
            "suite": src.suite.manifest.name,
            "suite_checksums": src.suite.manifest.checksums,
            "models": got.models,
            "setting": setting,
            "context": src.context,
            "accepted": accepted,
            "attacks_found": got.found,
            "attacks_written": sum(bool(p.meta["attack"]["flipped_source"]) for p in got.probes),
            "skipped": got.skipped,
        },
    )
    suite = Suite(manifest, items, got.probes)
    suite.save(out)
    return suite


# -- the replay ------------------------------------------------------------------------------------


def _answer(row: Any) -> str:
    """One answer of a replay: right, wrong (read), unread (no readable answer) or not_run (an error, or
    not answered yet)."""
    status = str(row["status"])
    if status in ("error", "missing"):
        return "not_run"
    if status != "valid":
        return "unread"
    return "right" if bool(row["correct"]) else "wrong"


#: a row's counts (see `transfer_rates`)
COUNTS = ("attacks", "right_at_clean", "not_right_at_clean", "flipped", "to_target", "held", "unread", "not_run")


def _replay_suite(path: Path) -> tuple[Suite, str]:
    """The transfer suite a replay run was made on, and the adaptive run its attacks came from."""
    run_json = path / "run.json"
    if not run_json.is_file():
        raise InputError(path, None, None, "not a run directory: it has no run.json")
    try:
        config = json.loads(run_json.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(run_json, None, None, f"not readable JSON: {e}") from None
    suite = _suite_of(path, config, None, "the replayed suite")
    suite_path = suite.path or Path(".")
    source = (suite.manifest.model_extra or {}).get("built_from", {}).get("adaptive_run")
    if not source:
        raise InputError(suite_path / "suite.json", None, "built_from.adaptive_run", "not a suite of transferred attacks (`medres build transfer`)")
    if not (path / "store.sqlite").is_file():
        raise InputError(path / "store.sqlite", None, None, "the replay's store is missing")
    return suite, str(source)


def transfer_rates(replay_dir: Path | str) -> dict[str, Any]:
    """The transfer rates of a replay run of a transfer suite (see the module doc): `source_run`,
    `replay_run` and one row per (model, setting, attacked model) with `COUNTS` and `rate` (flipped
    of the attacks right at clean whose stressed item was answered: held + flipped + unread, with its
    Wilson interval) and `same_model`. With several epochs each epoch's pair is one attack replayed."""
    from ...family import get
    from ...run.frame import results_frame

    path = Path(replay_dir)
    suite, source = _replay_suite(path)
    attacks = {p.id: p.meta["attack"] for p in suite.probes if p.meta.get("attack", {}).get("flipped_source")}
    with Store.read_only(path / "store.sqlite") as store:
        df = results_frame(store, suite, family=get(suite.manifest.family))
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    for (model, setting), part in df.groupby(["model", "setting"], observed=True, sort=True):
        clean = {(r["item_id"], r["epoch"]): _answer(r) for _, r in part[part["condition"] == CLEAN].iterrows()}
        for _, r in part[part["probe_id"].isin(list(attacks))].iterrows():
            attack = attacks[r["probe_id"]]
            key = (str(model), str(setting), str(attack["model"]))
            if key not in rows:
                rows[key] = {"model": key[0], "setting": key[1], "attacked_model": key[2], "same_model": key[0] == key[2], **dict.fromkeys(COUNTS, 0)}
            row = rows[key]
            row["attacks"] += 1
            first = clean.get((r["item_id"], r["epoch"]), "not_run")
            if first != "right":  # not right when asked plainly (or not asked): nothing to flip
                row["not_run" if first == "not_run" else "not_right_at_clean"] += 1
                continue
            row["right_at_clean"] += 1
            answer = _answer(r)
            row[{"right": "held", "wrong": "flipped"}.get(answer, answer)] += 1
            row["to_target"] += answer == "wrong" and str(r["label"]) == str(attack["target"])
    for row in rows.values():
        row["rate"] = wilson(row["flipped"], row["held"] + row["flipped"] + row["unread"]).as_dict()
    return {"source_run": source, "replay_run": str(path.resolve()), "rows": [rows[k] for k in sorted(rows)]}
