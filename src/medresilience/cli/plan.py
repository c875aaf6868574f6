"""`medres plan FAMILY [COMPARISON ...]`: the items a headline comparison needs for a target power
(from assumed rates or a pilot run), or with --items the smallest effect a suite of that size
detects: thin, the library's `planning` does the work."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from .kit import console, user_errors


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{100 * v:.1f}%"


def _rows(plans) -> tuple[list[str], list[list[str]]]:
    headers = ["Comparison", "Test", "Power", "Effect", "p1 → p2", "Discordance", "Pairs/item", "ICC", "Items entering", "Items", "Method"]
    rows = []
    for p in plans:
        d = p.as_dict()
        effect = "—" if p.rates is None else f"{100 * p.rates.effect:+.1f} pts"
        rates = "—" if p.rates is None else f"{_pct(p.rates.p1)} → {_pct(p.rates.p2)}"
        rows.append(
            [
                p.comparison,
                p.test.replace("_", " "),
                f"{_pct(p.power)} (target {_pct(p.target)})",
                effect,
                rates,
                "—" if p.rates is None else f"{p.rates.discordance:.3f}",
                str(d["pairs_per_item"]) + (f" ({p.epochs} epochs)" if p.epochs > 1 else ""),
                f"{p.assumptions.icc:.2f}",
                "—" if p.items_entering is None else f"{p.items_entering:,}",
                "—" if p.items is None else f"{p.items:,}" + (f" (kept {_pct(p.assumptions.kept)})" if p.assumptions.kept < 1 else ""),
                p.method,
            ]
        )
    return headers, rows


def _list(fam) -> None:
    for c in fam.measures.comparisons:
        other = c.versus_condition or "two sides (models, or a setting vs none)"
        given = f"; items right {c.given} first" if c.given else ""
        console.print(
            f"{c.key}: {c.title} — counts {c.event} on {', '.join(c.conditions)} vs {other}{given}; {c.pairs_per_item} pair(s) per item",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


def _print(plans, family: str, alpha: float, reverse: bool) -> None:
    from .tables import fitted

    what = "smallest detectable effect" if reverse else "items for the target power"
    headers, rows = _rows(plans)
    console.print(fitted(f"medres plan {family}: {what}, alpha {alpha:g} (two-sided)", headers, rows, console.width))
    for note in dict.fromkeys(n for p in plans for n in p.as_dict()["notes"]):
        console.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)
    console.print(
        f"assumptions: {plans[0].assumptions.source}; items = items entering / kept, rounded up; the test is the one the report computes on these pairs",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


def _assumptions(planning, fam, comp, rates: dict, pilot: dict):
    """The assumptions of one comparison: assumed rates, or the pilot's with the flags given over them."""
    from dataclasses import replace

    if pilot["run"] is None:
        ppi = rates["pairs_per_item"] if rates["pairs_per_item"] is not None else comp.pairs_per_item
        kept = rates["kept"] if rates["kept"] is not None else 1.0
        return planning.assumed(rates["p1"], rates["p2"], rates["discordance"], rates["correlation"], ppi, rates["icc"] or 0.0, kept)
    base = planning.from_pilot(pilot["run"], fam, comp, pilot["a"], pilot["b"], pilot["setting_a"], pilot["setting_b"], pilot["effect"])
    base = planning.with_pairs(base, rates["pairs_per_item"], rates["icc"])
    return base if rates["kept"] is None else replace(base, kept=planning.check_kept(rates["kept"]))


def plan_cmd(
    family: Annotated[str, typer.Argument(help="the test family (medres plan FAMILY --list lists its headline comparisons)")],
    comparisons: Annotated[Optional[list[str]], typer.Argument(help="its headline comparisons to plan (default: all it declares)")] = None,
    p1: Annotated[Optional[float], typer.Option("--p1", help="assumed rate under A (the reference side), in [0, 1]")] = None,
    p2: Annotated[Optional[float], typer.Option("--p2", help="assumed rate under B, in [0, 1]: the effect is p2 - p1")] = None,
    discordance: Annotated[Optional[float], typer.Option("--discordance", help="assumed share of discordant pairs (the event under one side only)")] = None,
    correlation: Annotated[
        Optional[float], typer.Option("--correlation", help="assumed correlation (phi) of the paired outcomes, instead of --discordance")
    ] = None,
    pilot: Annotated[Optional[Path], typer.Option("--pilot", help="a pilot run directory: its rates, discordance, pairs per item and ICC")] = None,
    a: Annotated[Optional[str], typer.Option("--a", help="pilot: the model of side A (default: the pilot's first)")] = None,
    b: Annotated[Optional[str], typer.Option("--b", help="pilot: the model of side B, for a comparison of two sides")] = None,
    setting_a: Annotated[Optional[str], typer.Option("--setting-a", help="pilot: side A's setting (default none)")] = None,
    setting_b: Annotated[Optional[str], typer.Option("--setting-b", help="pilot: side B's setting (default none, or the one left)")] = None,
    effect: Annotated[Optional[float], typer.Option("--effect", help="pilot: plan for this effect p2 - p1 instead of the pilot's")] = None,
    power: Annotated[Optional[list[float]], typer.Option("--power", help="target power (repeat for several; default 0.8)")] = None,
    alpha: Annotated[float, typer.Option("--alpha", help="two-sided significance level")] = 0.05,
    items: Annotated[Optional[int], typer.Option("--items", help="reverse: the smallest effect a suite of this many items detects")] = None,
    direction: Annotated[str, typer.Option("--direction", help="reverse: up (p2 above p1) or down")] = "up",
    pairs_per_item: Annotated[
        Optional[int], typer.Option("--pairs-per-item", help="pairs one item gives per epoch (default: the family's design, or the pilot's)")
    ] = None,
    icc: Annotated[Optional[float], typer.Option("--icc", help="intracluster correlation of an item's pairs, in [0, 1) (default 0, or the pilot's)")] = None,
    kept: Annotated[
        Optional[float],
        typer.Option(
            "--kept",
            help="share of items that enter the comparison (e.g. the items right clean on both sides, where a comparison counts flips from a right clean answer; default 1, or the pilot's)",
        ),
    ] = None,
    epochs: Annotated[
        Optional[list[int]], typer.Option("--epochs", help="answers per unit (a family that reads repeats; repeat for several; default 1)")
    ] = None,
    sims: Annotated[int, typer.Option("--sims", help="simulated runs behind a clustered test's power")] = 10_000,
    seed: Annotated[int, typer.Option("--seed", help="seed of the simulation")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="print the plan as JSON")] = False,
    list_: Annotated[bool, typer.Option("--list", help="list the family's headline comparisons and stop")] = False,
) -> None:
    """How many items a headline comparison needs for a target power, from assumed rates (--p1, --p2
    and --discordance or --correlation) or a pilot run (--pilot); with --items, the smallest effect
    that many items detect. The test is the one the report uses: exact McNemar with one pair per
    item (exact power), Durkalski's clustered McNemar with several (simulated power)."""
    from ..analyses import planning
    from ..family import get
    from ..runtime.errors import ConfigError

    try:
        fam = get(family)
    except KeyError as e:
        raise ConfigError("FAMILY", str(e).strip("'\"")) from None
    if list_:
        _list(fam)
        return
    chosen = [planning.comparison_of(fam, k) for k in comparisons] if comparisons else list(fam.measures.comparisons)
    if not chosen:
        raise ConfigError("FAMILY", f"family {fam.name} declares no headline comparison to plan")
    if pilot is None:
        if p1 is None or p2 is None:
            raise ConfigError("--p1 / --p2", "give the assumed rates (--p1, --p2 and --discordance or --correlation), or a pilot run (--pilot)")
        if effect is not None:
            raise ConfigError("--effect", "with assumed rates the effect is --p2 minus --p1")
    elif p1 is not None or p2 is not None or discordance is not None or correlation is not None:
        raise ConfigError("--pilot", "give a pilot run or assumed rates, not both")
    rates = {"p1": p1, "p2": p2, "discordance": discordance, "correlation": correlation, "pairs_per_item": pairs_per_item, "icc": icc, "kept": kept}
    source = {"run": pilot, "a": a, "b": b, "setting_a": setting_a, "setting_b": setting_b, "effect": effect}
    plans = []
    for comp in chosen:
        base = _assumptions(planning, fam, comp, rates, source)
        for ep in epochs or [1]:
            for target in power or [0.8]:
                if items is None:
                    plans.append(planning.plan_items(fam, comp, base, target, alpha, ep, sims, seed))
                else:
                    plans.append(planning.detectable_effect(fam, comp, base, items, target, alpha, ep, direction, sims, seed))
    if as_json:
        console.print_json(json.dumps([p.as_dict() for p in plans]))
        return
    _print(plans, fam.name, alpha, items is not None)


def register(app: typer.Typer) -> None:
    app.command("plan")(user_errors(plan_cmd))
