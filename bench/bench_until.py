"""What `medres eval --until` saves, and what it keeps: simulated runs at the scale of the released
benchmarks (MedMisBench 10,932 items, Cancer-Myth 585 questions, the MedQA fragility study's 512
cases), with known rates and known paired differences, each stopped by the anytime-valid rule
(`stats.sequential`, what --until uses) and by the naive rule (the fixed-sample interval looked at
after every item and reported as if n had been fixed). For each: the items used (the calls scale
with them: every item's units are called once) against the full suite, and how often the interval
at the stopping time covers the truth, over 1,000 seeded runs. Looks after every item from the 10th.
The confidence sequence's grid: 1000 steps for a width rule (as `medres eval --until` uses), 200 for
a decision (its one-step widening does not move a decision much, and it is five times faster).

    .venv/bin/python bench/bench_until.py [--runs 1000] [--out until.json]

Prints a Markdown table."""

from __future__ import annotations

import argparse
import json
import time

from medresilience.stats.stopping_sim import simulate_decided, simulate_width

#: (scale, what, kind, truth, rule): a width rule on a rate p, or a decided rule on a paired
#: difference with discordant shares (p10, p01)
SCENARIOS = [
    ("MedMisBench, 10,932 items", "Type 2 ASR 35%", "width", (0.35,), 0.1),
    ("MedMisBench, 10,932 items", "ASR of two models, 35% vs 30% (20% discordant)", "decided", (0.125, 0.075), None),
    ("MedMisBench, 10,932 items", "clean vs Type 2 accuracy, 80% vs 60% (24% discordant)", "decided", (0.22, 0.02), None),
    ("Cancer-Myth, 585 questions", "PCR 42%", "width", (0.42,), 0.2),
    ("Cancer-Myth, 585 questions", "PCR of two models, 42% vs 27% (25% discordant)", "decided", (0.20, 0.05), None),
    ("MedQA fragility, 512 cases", "accuracy, clean 80% vs 10 red herrings 72% (16% discordant)", "decided", (0.12, 0.04), None),
    ("MedQA fragility, 512 cases", "no difference (16% discordant)", "decided", (0.08, 0.08), None),
]
SIZES = {"MedMisBench": 10_932, "Cancer-Myth": 585, "MedQA": 512}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--breaks", type=int, default=200, help="grid steps of the confidence sequence of a difference (a width rule uses 1000, what --until uses)")
    ap.add_argument("--batch", type=int, default=50, help="runs simulated at once (memory)")
    ap.add_argument("--out", default=None, help="also write the numbers as JSON")
    args = ap.parse_args()
    rows = []
    print("| suite | what | rule | items used, anytime (mean; median) | coverage, anytime | items used, naive (mean) | coverage, naive | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for i, (scale, what, kind, truth, width) in enumerate(SCENARIOS):
        n_max = next(v for k, v in SIZES.items() if scale.startswith(k))
        t0 = time.perf_counter()
        if kind == "width":
            out = simulate_width(truth[0], width, n_max, runs=args.runs, seed=args.seed + i, breaks=1000, batch=args.batch)
            rule = f"--until {width:g}"
        else:
            out = simulate_decided(*truth, n_max, runs=args.runs, seed=args.seed + i, breaks=args.breaks, batch=args.batch)
            rule = "--until-decided"
        secs = time.perf_counter() - t0
        a, n = out["anytime"], out["naive"]
        rows.append({"suite": scale, "what": what, "rule": rule, "n_max": n_max, "anytime": a.as_dict(), "naive": n.as_dict(), "seconds": secs})
        print(
            f"| {scale} | {what} | {rule} | {a.mean_n:,.0f} ({100 * a.mean_n / n_max:.0f}%); {a.median_n:,.0f} | {100 * a.coverage:.1f}% | "
            f"{n.mean_n:,.0f} ({100 * n.mean_n / n_max:.0f}%) | {100 * n.coverage:.1f}% | {secs:.0f} |",
            flush=True,
        )
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump({"runs": args.runs, "seed": args.seed, "breaks": args.breaks, "rows": rows}, fh, indent=2)


if __name__ == "__main__":
    main()
