"""Items needed for 80% and 90% power, and the smallest effect the released benchmarks detect, for
model pairs at the scale of the released benchmarks (`medres plan` through the library: the same
family declarations, the same paired tests).

    python bench/plan_sizes.py [--sims 4000] [--reverse-sims 1000] [--seed 0] [--check 1000]

Scenarios (the rates are typical of the studies' tables, the discordance an assumption stated in
each row):
- MedMisBench: 10,932 items, 48,889 Type 1 pairs (4.47 per item with -O type1=all); clean accuracy
  about 71% (both of two models right clean on about 60%), Type 1 ASR about 50%;
- Cancer-Myth: 585 questions (PCR at most 43%), NFP 150 control questions;
- MedQA noise: 512 diagnosis cases, 3 runs each in the study (temperature 0.7);
- pressure after commitment: built from a misleading suite (flip under repeat about 5%).

With --check N, each clustered row is re-simulated N times with the toolkit's own test
(stats.cluster_mcnemar) at the planned size, and the simulated power printed beside the planned."""

from __future__ import annotations

import argparse
import time

import numpy as np

from medresilience import stats
from medresilience.analyses import planning
from medresilience.family import get
from medresilience.stats.power import ClusterDesign

# (family, comparison, label, p1, discordance per effect, pairs per item, icc, kept, epochs, released items, effects)
SCENARIOS = [
    ("misleading", "type2_asr", "MedMisBench Type 2 ASR, model B vs A", 0.50, 0.25, (1,), 0.0, 0.6, 1, 10_932, (-0.02, -0.05, -0.10)),
    ("misleading", "type1_asr", "MedMisBench Type 1 ASR (type1=sample), B vs A", 0.50, 0.25, (1,), 0.0, 0.6, 1, 10_932, (-0.02, -0.05, -0.10)),
    ("misleading", "type1_asr", "MedMisBench Type 1 ASR (type1=all, 4-5 probes), icc 0.3", 0.50, 0.25, (4, 5), 0.3, 0.6, 1, 10_932, (-0.02, -0.05, -0.10)),
    ("misleading", "type1_asr", "MedMisBench Type 1 ASR (type1=all, 4-5 probes), icc 0.6", 0.50, 0.25, (4, 5), 0.6, 0.6, 1, 10_932, (-0.02, -0.05, -0.10)),
    ("presupposition", "pcr", "Cancer-Myth PCR, model B vs A", 0.35, 0.30, (1,), 0.0, 1.0, 1, 585, (0.05, 0.10, 0.15)),
    ("presupposition", "overcaution", "Cancer-Myth NFP over-caution, setting vs none", 0.10, 0.25, (1,), 0.0, 1.0, 1, 150, (0.10, 0.20, 0.30)),
    ("noise", "redherring-10_drop", "MedQA noise, 10 red herrings vs original, 1 run", 0.70, 0.20, (1,), 0.0, 1.0, 1, 512, (-0.03, -0.05, -0.10)),
    ("noise", "redherring-10_drop", "MedQA noise, 3 runs, icc 0.5", 0.70, 0.20, (1,), 0.5, 1.0, 3, 512, (-0.03, -0.05, -0.10)),
    ("noise", "redherring-10_drop", "MedQA noise, 3 runs, icc 0.9", 0.70, 0.20, (1,), 0.9, 1.0, 3, 512, (-0.03, -0.05, -0.10)),
    ("pressure", "flip_doubt", "Pressure: doubt vs repeat (flip)", 0.05, None, (1,), 0.0, 0.6, 1, 10_932, (0.02, 0.05, 0.10)),
]


def discordance_for(p1: float, effect: float, given: float | None) -> float:
    """The row's discordance: as given (at least |effect|), else the smallest the rates allow plus
    half of what is left below p1 + p2 (a flip under one condition rarely repeats under the other)."""
    if given is not None:
        return max(given, abs(effect))
    p2 = p1 + effect
    return abs(effect) + 0.5 * (min(p1 + p2, 2 - p1 - p2) - abs(effect))


def check(rates, design: ClusterDesign, items: int, runs: int, seed: int) -> float:
    """The share of `runs` simulated suites of `items` items in which stats.cluster_mcnemar rejects."""
    rng = np.random.default_rng(seed + 1)
    shares = rates.shares()
    pattern = np.array([[True, True], [True, False], [False, True], [False, False]])
    hits = 0
    for _ in range(runs):
        m = rng.choice(design.sizes, size=items)
        q = rng.dirichlet(shares * (1 / design.icc - 1), size=items) if design.icc > 0 else np.broadcast_to(shares, (items, 4))
        counts = rng.multinomial(m, q)  # (items, 4)
        rows = np.repeat(np.tile(pattern, (items, 1)), counts.ravel(), axis=0)
        clusters = np.repeat(np.arange(items), m)
        p = stats.cluster_mcnemar(rows[:, 0], rows[:, 1], clusters)["p"]
        hits += p is not None and p <= 0.05
    return hits / runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check", type=int, default=0)
    ap.add_argument("--reverse-sims", type=int, default=1000, help="simulated runs per step of a clustered smallest-effect search")
    args = ap.parse_args()
    print(
        "| comparison | p1 | effect | discordance | pairs/item | test | items entering, 80% | items to run, 80% | items entering, 90% | items to run, 90% |"
        + (" simulated power at 80% plan |" if args.check else "")
    )
    print("|---|---|---|---|---|---|---|---|---|---|" + ("---|" if args.check else ""))
    smallest = []
    t0 = time.perf_counter()
    for fam_name, key, label, p1, disc, sizes, icc, kept, epochs, released, effects in SCENARIOS:
        fam = get(fam_name)
        comp = planning.comparison_of(fam, key)
        for effect in effects:
            d = discordance_for(p1, effect, disc)
            a = planning.assumed(p1, p1 + effect, discordance=d, pairs_per_item=sizes[0], icc=icc, kept=kept)
            a = planning.Assumptions(a.rates, sizes, icc, kept)
            rows = [planning.plan_items(fam, comp, a, power, epochs=epochs, sims=args.sims, seed=args.seed) for power in (0.8, 0.9)]
            ppi = "–".join(str(s * epochs) for s in sorted(set(sizes)))
            cells = [label, f"{p1:.2f}", f"{100 * effect:+.0f} pts", f"{d:.3f}", ppi, rows[0].test.replace("_", " ")]
            for r in rows:
                cells += [f"{r.items_entering:,}", f"{r.items:,}"]
            if args.check:
                design = a.design(epochs)
                cells.append(
                    f"{100 * check(a.rates, design, rows[0].items_entering, args.check, args.seed):.1f}% (planned {100 * rows[0].power:.1f}%)"
                    if design.clustered
                    else "exact"
                )
            print("| " + " | ".join(cells) + " |")
        d = discordance_for(p1, effects[1], disc)
        a = planning.Assumptions(planning.assumed(p1, p1 + effects[1], discordance=d).rates, sizes, icc, kept)
        direction = "up" if effects[1] > 0 else "down"
        for power in (0.8, 0.9):
            t = time.perf_counter()
            r = planning.detectable_effect(fam, comp, a, released, power, epochs=epochs, direction=direction, sims=args.reverse_sims, seed=args.seed)
            smallest.append((label, released, power, r, time.perf_counter() - t))
    print()
    print("| comparison | released items | items entering | power | smallest detectable effect | discordance held | test | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for label, released, power, r, secs in smallest:
        eff = "none reaches it" if r.rates is None else f"{100 * abs(r.rates.effect):.1f} pts"
        held = "—" if r.rates is None else f"{r.rates.discordance:.3f}"
        print(f"| {label} | {released:,} | {r.items_entering:,} | {100 * power:.0f}% | {eff} | {held} | {r.test.replace('_', ' ')} | {secs:.1f} |")
    print(
        f"\n(planned in {time.perf_counter() - t0:.0f} s: {args.sims:,} simulated runs per clustered plan, {args.reverse_sims:,} per step of a"
        f" clustered smallest-effect search, seed {args.seed})"
    )


if __name__ == "__main__":
    main()
