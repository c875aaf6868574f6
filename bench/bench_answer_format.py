"""Structured answers against the prompt format on one model: the bundled sample suite's clean
questions (a seeded random sample of `--limit` items), asked once in each format, each run in its
own directory. Prints, per format: accuracy with its Wilson interval and n (unread counted wrong,
as the study does), the unread replies and why, the paired discordant counts, and the seconds.

    python bench/bench_answer_format.py --model "embedded,max_tokens=256" --limit 20 --out /tmp/af

Run it under the shared heavy-work lock when the model is the embedded one."""

from __future__ import annotations

import argparse
import json
import sqlite3
import time
from pathlib import Path

from medresilience import EvalOptions, evaluate, parse_model_spec
from medresilience.run.bundled_suite import sample_suite
from medresilience.stats.rates import wilson


def units(run: Path) -> dict[str, tuple[str | None, str, float | None, str]]:
    """item id -> (label, status, value, why unread) of the clean units of a run."""
    con = sqlite3.connect(run / "store.sqlite")
    try:
        q = """SELECT u.item_id, s.label, s.status, s.value, s.detail FROM units u
               LEFT JOIN scores s ON s.key = u.key AND s.scorer = u.scoring WHERE u.condition = 'clean'"""
        out = {}
        for item, label, status, value, detail in con.execute(q):
            d = json.loads(detail) if detail else {}
            out[item] = (label, status or "missing", value, "" if status == "valid" else str(d.get("reason") or d.get("read") or ""))
        return out
    finally:
        con.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="embedded,max_tokens=256")
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--sample-seed", type=int, default=41)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    spec = parse_model_spec(args.model)
    suite = sample_suite()
    got = {}
    for fmt in ("prompt", "schema"):
        t0 = time.perf_counter()
        opts = EvalOptions(limit=args.limit, sample_seed=args.sample_seed, conditions=("clean",), answer_format=fmt)
        res = evaluate(suite, [spec], args.out / fmt, opts)
        secs = time.perf_counter() - t0
        u = units(args.out / fmt)
        right = sum(1 for _, _, v, _ in u.values() if v == 1.0)
        unread = {k: why for k, (_, st, _, why) in u.items() if st != "valid"}
        r = wilson(right, len(u))
        got[fmt] = u
        print(
            f"{fmt}: accuracy {right}/{len(u)} = {r.p:.3f} [{r.lo:.3f}, {r.hi:.3f}]; unread {len(unread)}; "
            f"calls {res.stats.called}; {secs:.0f} s; fallbacks {res.stats.fallbacks or 'none'}; warnings {res.warnings or 'none'}"
        )
        for k, why in unread.items():
            print(f"  unread {k}: {why}")
    a, b = got["prompt"], got["schema"]
    both = sorted(set(a) & set(b))
    only_prompt = sum(1 for k in both if a[k][2] == 1.0 and b[k][2] != 1.0)
    only_schema = sum(1 for k in both if b[k][2] == 1.0 and a[k][2] != 1.0)
    same = sum(1 for k in both if a[k][0] == b[k][0])
    print(f"paired on {len(both)} items: right in prompt only {only_prompt}, in schema only {only_schema}; same label {same}")


if __name__ == "__main__":
    main()
