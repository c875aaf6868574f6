"""Planning a run: how many items a family's headline comparison needs for a target power at a
given effect, and the smallest effect a given number of items detects (`medres plan`).

A family declares its headline comparisons (`Family.measures.comparisons`: the label rate whose
conditions pair, the event counted, the other side, the condition that must be right first, the
pairs one item gives).
A plan sizes each with the paired test the toolkit reports on it (`stats.tests.several_pairs`'s
rule): the exact McNemar test when an item gives one pair, with exact power; Durkalski's clustered
McNemar when it gives several (probes of one item, or epochs), with simulated power
(`stats.power`). The rates come either from assumptions (p1, p2 and the discordance or the
correlation) or from a pilot run: its pairs are read from the run's results frame the way the
family's report pairs them (answered units; a family whose unread replies are no answer pairs its
scored units only).

The plan counts items that enter the comparison; `kept` is the share of a suite's items that do (a
flip from a right clean answer pairs only items answered right clean on both sides: about the clean
accuracy of the weaker side), so the items to run are the items entering divided by it, rounded up.
With epochs (a family whose metrics read repeats) each item gives its pairs once per epoch."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..family import Family, HeadlineComparison
from ..runtime.errors import ConfigError, InputError, did_you_mean
from ..score import ANSWERED
from ..stats.power import (
    SIMULATIONS,
    ClusterDesign,
    PairedRates,
    clustered_power,
    clustered_size,
    mcnemar_power,
    mcnemar_size,
    paired_rates,
    pilot_rates,
    smallest_effect,
)

__all__ = ["Assumptions", "PlanRow", "assumed", "check_kept", "comparison_of", "detectable_effect", "from_pilot", "pilot_pairs", "plan_items"]


@dataclass(frozen=True)
class Assumptions:
    """What a plan stands on: the paired rates, the pairs per item (per epoch) and their
    intracluster correlation, the share of items that enter the comparison, where they came from,
    and, for the reverse plan, whether the discordance or the correlation stays fixed."""

    rates: PairedRates
    sizes: tuple[int, ...] = (1,)
    icc: float = 0.0
    kept: float = 1.0
    source: str = "assumed"
    hold: str = "discordance"  # "discordance" or "correlation": what a reverse plan holds fixed
    notes: tuple[str, ...] = ()
    pilot: dict[str, Any] = field(default_factory=dict)

    def design(self, epochs: int = 1) -> ClusterDesign:
        return ClusterDesign(tuple(int(s) * epochs for s in self.sizes), self.icc)


def check_kept(v: float) -> float:
    """The share of items that enter a comparison, in (0, 1]; ConfigError naming --kept otherwise."""
    if not 0.0 < float(v) <= 1.0:
        raise ConfigError("--kept", f"must lie in (0, 1], not {v!r}")
    return float(v)


def assumed(
    p1: float,
    p2: float,
    discordance: float | None = None,
    correlation: float | None = None,
    pairs_per_item: int = 1,
    icc: float = 0.0,
    kept: float = 1.0,
) -> Assumptions:
    """Assumed rates (see `stats.power.paired_rates`); bad values raise ConfigError naming the option."""
    try:
        rates = paired_rates(p1, p2, discordance, correlation)
        ClusterDesign((int(pairs_per_item),), icc)
    except ValueError as e:
        raise ConfigError(_flag_of(str(e)), str(e)) from None
    return Assumptions(rates, (int(pairs_per_item),), float(icc), check_kept(kept), hold="discordance" if discordance is not None else "correlation")


def _flag_of(message: str) -> str:
    """The command-line flag a rate's error message is about (its first word)."""
    word = message.split(" ", 1)[0]
    flags = {
        "p1": "--p1",
        "p2": "--p2",
        "discordance": "--discordance",
        "correlation": "--correlation",
        "icc": "--icc",
        "give": "--discordance / --correlation",
    }
    return flags.get(word, "--pairs-per-item" if "pairs per item" in message else "rates")


def comparison_of(family: Family, key: str) -> HeadlineComparison:
    """The family's headline comparison of that key; ConfigError naming the known ones otherwise."""
    known = {c.key: c for c in family.measures.comparisons}
    if not known:
        raise ConfigError("comparison", f"family {family.name} declares no headline comparison to plan")
    if key not in known:
        raise ConfigError("comparison", f"family {family.name} has no comparison {key!r}{did_you_mean(key, list(known))} (its comparisons: {', '.join(known)})")
    return known[key]


@dataclass(frozen=True)
class Side:
    """One side of a pilot: a model under a setting."""

    model: str
    setting: str

    def __str__(self) -> str:
        return self.model if self.setting == "none" else f"{self.model} ({self.setting})"


def _sides(frame: pd.DataFrame) -> list[Side]:
    seen = frame[["model", "setting"]].astype(str).drop_duplicates()
    return [Side(m, s) for m, s in zip(seen["model"], seen["setting"])]


def _pick(sides: list[Side], model: str | None, setting: str | None, flag: str, taken: Side | None = None) -> Side:
    """The one side matching the model and setting given (a setting not given: none, where the
    model has it and another side is left), else a ConfigError listing the sides."""
    cands = [s for s in sides if (model is None or s.model == model) and (setting is None or s.setting == setting) and s != taken]
    if len(cands) > 1 and setting is None:
        cands = [s for s in cands if s.setting == "none"] or cands
    if len(cands) != 1:
        listed = "; ".join(f"{s.model} / {s.setting}" for s in sides)
        why = "no side matches" if not cands else "several sides match"
        raise ConfigError(flag, f"{why} (the pilot's sides, model / setting: {listed}); name the model and setting")
    return cands[0]


def _two_sides(sides: list[Side], a: tuple[str | None, str | None], b: tuple[str | None, str | None]) -> tuple[Side, Side]:
    """Sides A and B of a two-sided comparison: each as named; one not named is the pilot's other
    side when it has exactly two (A the first), else a ConfigError asking to name it."""
    named_a, named_b = a != (None, None), b != (None, None)
    side_a = _pick(sides, *a, "--a") if named_a else None
    side_b = _pick(sides, *b, "--b", taken=side_a) if named_b else None
    if side_a is None or side_b is None:
        rest = [s for s in sides if s not in (side_a, side_b)]
        if len(sides) != 2 or not rest:
            listed = "; ".join(f"{s.model} / {s.setting}" for s in sides)
            raise ConfigError("--a / --b", f"the pilot has {len(sides)} sides (model / setting: {listed}); name both sides of the comparison")
        side_a = side_a or rest.pop(0)
        side_b = side_b or rest.pop(0)
    return side_a, side_b


def _flag(x: np.ndarray, event: str) -> np.ndarray:
    return x if event == "right" else ~x


def _by_pair(units: pd.DataFrame) -> pd.Series:
    """Right or not by (item, epoch), the first unit of each."""
    key = units["item_id"].astype(str) + "\x1f" + units["epoch"].astype(str)
    return pd.Series(units["correct"].to_numpy(dtype=bool), index=key.to_numpy()).groupby(level=0, sort=False).first()


def _keys(units: pd.DataFrame) -> np.ndarray:
    return (units["item_id"].astype(str) + "\x1f" + units["epoch"].astype(str)).to_numpy()


def pilot_pairs(frame: pd.DataFrame, comparison: HeadlineComparison, a: Side, b: Side | None, statuses: tuple[str, ...] = ANSWERED) -> tuple[pd.DataFrame, int]:
    """(the comparison's pairs in a results frame: columns a, b (the event under each side) and item;
    the items with an answered unit of its conditions, on both sides for a two-sided comparison).
    Two sides (`versus` None) pair the same unit (item, probe, condition, epoch); one side pairs each
    unit with the `versus` condition's unit of its item and epoch."""
    f = frame.assign(epoch=frame.get("epoch", 0))
    f = f[f["status"].astype(str).isin(statuses)]
    conds = set(comparison.conditions)

    def side_units(s: Side) -> pd.DataFrame:
        return f[(f["model"].astype(str) == s.model) & (f["setting"].astype(str) == s.setting)]

    ua = side_units(a)
    if comparison.versus is None:
        if b is None:
            raise ConfigError("--b", "a two-sided comparison needs two sides")
        ub = side_units(b)
        key = ["item_id", "probe_id", "condition", "epoch"]
        cols = [*key, "correct"]
        sa, sb = (u[u["condition"].astype(str).isin(conds)][cols].astype({k: str for k in key}) for u in (ua, ub))
        if sa.duplicated(key).any() or sb.duplicated(key).any():
            raise ConfigError("--pilot", "a side holds a unit twice (several scorings): plan from a run with one scoring")
        pairs = sa.merge(sb, on=key, suffixes=("_a", "_b"))
        entered = int(pairs["item_id"].nunique())
        keep = np.ones(len(pairs), dtype=bool)
        if comparison.given is not None:
            for u in (ua, ub):
                right = _by_pair(u[u["condition"].astype(str) == comparison.given])
                keep = keep & right.reindex(_keys(pairs)).eq(True).to_numpy()
        pairs = pairs[keep]
        xa, xb = pairs["correct_a"].to_numpy(dtype=bool), pairs["correct_b"].to_numpy(dtype=bool)
    else:
        units = ua[ua["condition"].astype(str).isin(conds)]
        entered = int(units["item_id"].astype(str).nunique())
        ref = _by_pair(ua[ua["condition"].astype(str) == comparison.versus_condition]).reindex(_keys(units))
        keep = ref.notna().to_numpy()
        if comparison.given is not None:
            keep = keep & _by_pair(ua[ua["condition"].astype(str) == comparison.given]).reindex(_keys(units)).eq(True).to_numpy()
        pairs = units[keep].assign(item_id=units["item_id"].astype(str)[keep])
        xa, xb = ref.to_numpy()[keep].astype(bool), pairs["correct"].to_numpy(dtype=bool)
    out = pd.DataFrame({"a": _flag(xa, comparison.event), "b": _flag(xb, comparison.event), "item": pairs["item_id"].astype(str).to_numpy()})
    return out, entered


def from_pilot(
    run_dir: Path | str,
    family: Family,
    comparison: HeadlineComparison,
    a_model: str | None = None,
    b_model: str | None = None,
    a_setting: str | None = None,
    b_setting: str | None = None,
    effect: float | None = None,
) -> Assumptions:
    """The assumptions a pilot run's pairs give (`stats.power.pilot_rates`): its rates, discordant
    shares, pairs per item and their intracluster correlation, and the share of items that
    entered. `effect`: plan for this effect instead of the pilot's own (the pilot's first rate and
    discordance kept)."""
    from ..report.rundir import load_run

    run = load_run(run_dir)
    if run.frame is None:
        raise InputError(run_dir, None, None, "the suite the run was made on cannot be found, or has changed since (a pilot's units are read with their suite)")
    if run.family != family.name:
        raise ConfigError("--pilot", f"the pilot is a {run.family or 'unknown'} run, not {family.name}")
    sides = _sides(run.frame)
    if comparison.versus is None:
        a, b = _two_sides(sides, (a_model, a_setting), (b_model, b_setting))
    else:
        a, b = _pick(sides, a_model, a_setting, "--a"), None
    statuses = ANSWERED if family.outcomes.unread_flips else ("valid",)
    pairs, entered = pilot_pairs(run.frame, comparison, a, b, statuses)
    if pairs.empty:
        raise ConfigError("--pilot", f"the pilot has no pairs for {comparison.key} between {a} and {b or comparison.versus_condition}")
    est = pilot_rates(pairs["a"].to_numpy(), pairs["b"].to_numpy(), pairs["item"].tolist())
    epochs = int(run.frame["epoch"].nunique()) if "epoch" in run.frame else 1
    per_epoch = tuple(max(1, round(s / epochs)) for s in est["sizes"])
    rates: PairedRates = est["rates"]
    notes = []
    if effect is not None:
        try:
            rates = paired_rates(rates.p1, rates.p1 + effect, discordance=rates.discordance)
        except ValueError as e:
            raise ConfigError("--effect", f"{e} (the pilot's p1 and discordance kept)") from None
    if max(est["sizes"]) == 1:
        notes.append("the pilot gives one pair per item: its icc is unknown (0 assumed; give --icc for a design that repeats)")
    pilot = {
        "run": str(run_dir),
        "a": str(a),
        "b": str(b) if b is not None else comparison.versus_condition,
        "pairs": est["pairs"],
        "items": est["items"],
        "entered_of": entered,
        "epochs": epochs,
        "observed": est["rates"].as_dict(),
    }
    kept = est["items"] / entered if entered else 1.0
    return Assumptions(rates, per_epoch, est["icc"], kept, source=f"pilot {run_dir}", notes=tuple(notes), pilot=pilot)


@dataclass(frozen=True)
class PlanRow:
    """One line of a plan: a comparison sized (or its smallest detectable effect), the test that
    sizes it, the power reached and what it assumed."""

    family: str
    comparison: str
    title: str
    test: str
    method: str
    alpha: float
    target: float
    power: float | None
    items_entering: int | None
    items: int | None
    pairs: int | None
    epochs: int
    rates: PairedRates | None
    assumptions: Assumptions
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        a = self.assumptions
        return {
            "family": self.family,
            "comparison": self.comparison,
            "title": self.title,
            "test": self.test,
            "method": self.method,
            "alpha": self.alpha,
            "target_power": self.target,
            "power": self.power,
            "items_entering": self.items_entering,
            "items": self.items,
            "pairs": self.pairs,
            "epochs": self.epochs,
            **({"effect": None} if self.rates is None else self.rates.as_dict()),
            "pairs_per_item": list(a.design(self.epochs).sizes) if len(set(a.sizes)) > 1 else a.sizes[0] * self.epochs,
            "icc": a.icc,
            "kept": a.kept,
            "source": a.source,
            "notes": [*a.notes, *([self.note] if self.note else [])],
            **({"pilot": a.pilot} if a.pilot else {}),
        }


def _test_of(design: ClusterDesign, sims: int, seed: int) -> tuple[str, str]:
    if design.clustered:
        return "cluster_mcnemar", f"simulated ({sims:,} runs, seed {seed})"
    return "mcnemar_exact", "exact"


def _check_epochs(family: Family, epochs: int) -> int:
    if int(epochs) != epochs or epochs < 1:
        raise ConfigError("--epochs", f"must be a whole number >= 1, not {epochs!r}")
    if epochs > 1 and not family.evaluation.epochs:
        raise ConfigError("--epochs", f"family {family.name} reads one answer per unit (its metrics take no epochs)")
    return int(epochs)


def plan_items(
    family: Family,
    comparison: HeadlineComparison,
    assumptions: Assumptions,
    power: float = 0.8,
    alpha: float = 0.05,
    epochs: int = 1,
    sims: int = SIMULATIONS,
    seed: int = 0,
) -> PlanRow:
    """The items the comparison needs for `power` at the assumed effect (see the module)."""
    epochs = _check_epochs(family, epochs)
    design = assumptions.design(epochs)
    test, method = _test_of(design, sims, seed)
    try:
        if design.clustered:
            g, got = clustered_size(assumptions.rates, design, power, alpha, sims, seed)
        else:
            g, got = mcnemar_size(assumptions.rates, power, alpha)
    except ValueError as e:
        hint = "; plan for the difference you want to detect with --effect" if assumptions.pilot and "is 0" in str(e) else ""
        raise ConfigError("plan", f"{e}{hint}") from None
    pairs = g * design.sizes[0] if len(set(design.sizes)) == 1 else round(g * design.mean_pairs)
    return PlanRow(
        family.name,
        comparison.key,
        comparison.title,
        test,
        method,
        alpha,
        power,
        got,
        g,
        math.ceil(g / assumptions.kept - 1e-9),
        pairs,
        epochs,
        assumptions.rates,
        assumptions,
    )


def detectable_effect(
    family: Family,
    comparison: HeadlineComparison,
    assumptions: Assumptions,
    items: int,
    power: float = 0.8,
    alpha: float = 0.05,
    epochs: int = 1,
    direction: str = "up",
    sims: int = SIMULATIONS,
    seed: int = 0,
) -> PlanRow:
    """The smallest effect `items` suite items detect with `power` (of them, the share `kept` enters
    the comparison), holding the first rate and the discordance (or the correlation) fixed."""
    epochs = _check_epochs(family, epochs)
    if int(items) != items or items < 1:
        raise ConfigError("--items", f"must be a whole number >= 1, not {items!r}")
    design = assumptions.design(epochs)
    test, method = _test_of(design, sims, seed)
    g = int(math.floor(items * assumptions.kept + 1e-9))
    r = assumptions.rates
    hold = {"discordance": r.discordance} if assumptions.hold == "discordance" or r.correlation is None else {"correlation": r.correlation}
    found = None
    if g >= 1:
        try:
            found = smallest_effect(g, r.p1, power=power, alpha=alpha, design=design, direction=direction, sims=sims, seed=seed, **hold)
        except ValueError as e:
            raise ConfigError("plan", str(e)) from None
    pairs = g * design.sizes[0] if len(set(design.sizes)) == 1 else round(g * design.mean_pairs)
    held = ", ".join(f"{k} {v:.3g}" for k, v in hold.items())
    if found is None:
        note = f"no effect the rates allow reaches power {power:g} with {g} items entering (p1 {r.p1:.3g}, {held} held)"
        return PlanRow(family.name, comparison.key, comparison.title, test, method, alpha, power, None, g, int(items), pairs, epochs, None, assumptions, note)
    rates, got = found
    note = f"smallest effect {'above' if direction == 'up' else 'below'} p1 (p1 and {held} held)"
    return PlanRow(family.name, comparison.key, comparison.title, test, method, alpha, power, got, g, int(items), pairs, epochs, rates, assumptions, note)


def power_of(
    family: Family,
    comparison: HeadlineComparison,
    assumptions: Assumptions,
    items: int,
    alpha: float = 0.05,
    epochs: int = 1,
    sims: int = SIMULATIONS,
    seed: int = 0,
) -> float:
    """The power of the comparison's test with `items` suite items at the assumed rates."""
    design = assumptions.design(_check_epochs(family, epochs))
    g = int(math.floor(items * assumptions.kept + 1e-9))
    if design.clustered:
        return clustered_power(g, assumptions.rates, design, alpha, sims, seed)
    return mcnemar_power(g, assumptions.rates, alpha)


def with_pairs(assumptions: Assumptions, pairs_per_item: int | None, icc: float | None) -> Assumptions:
    """The assumptions with the pairs per item or the icc given on the command line."""
    out = assumptions
    try:
        if pairs_per_item is not None:
            out = replace(out, sizes=(int(pairs_per_item),))
        if icc is not None:
            out = replace(out, icc=float(icc), notes=tuple(n for n in out.notes if "icc" not in n))
        out.design()
    except ValueError as e:
        raise ConfigError("--pairs-per-item / --icc", str(e)) from None
    return out
