"""Benchmark: `build presupposition` (the adversarial generator / responder / verifier loop) on the
study's myth file against a local stub, round size 1 against larger rounds, in one run.

    .venv/bin/python bench/bench_presupposition.py [--myths 200] [--concurrency 32] [--round-sizes 1,16]
                                                   [--delay 0] [--stub process|thread]

The stub (medresilience.families.presupposition.testing.FakePresupposition, served by the
project's StubServer in a child process by default) plays generator, responder, verifier and
categoriser, with known shares of broken first generator replies (10%), questions that ask outright
(5% of myths), empty corrections (5%), unreadable verdicts (5%) and unknown first categories (10%).
Each round size builds the first `--myths` myths of ../shared/data/cancer_myth/myth_treatment.jsonl
into a fresh directory (cold: every call made), then the same build again (warm: every call reused
from the store). `--delay` adds simulated latency to every reply.

Prints a Markdown table: myths, questions, kept, requests, calls made, requests per kept question,
seconds, myths per second."""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "cancer_myth" / "myth_treatment.jsonl"
RATES = dict(invalid_json=0.1, asks_outright=0.05, no_correction=0.05, unreadable=0.05, bad_category=0.1)


@contextlib.contextmanager
def _stub(mode: str, delay: float) -> Iterator[str]:
    """The fake's base URL, served from a child process or a thread."""
    from medresilience.families.presupposition.testing import FakePresupposition
    from medresilience.testing.stub import Faults, policy_server

    with policy_server(FakePresupposition, RATES, Faults(delay=delay), process=mode == "process") as url:
        yield url


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--myths", type=int, default=200, help="the first N myths of the study's file")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--round-sizes", default="1,16", help="comma-separated round sizes to compare")
    ap.add_argument("--delay", type=float, default=0.0, help="seconds the stub waits before each reply (simulated latency)")
    ap.add_argument("--stub", default="process", choices=("process", "thread"))
    args = ap.parse_args(argv)
    if not DATA.exists():
        print(f"skipped: {DATA} not found (../shared/data is not available)", file=sys.stderr)
        return 0

    from medresilience.families.presupposition.construct.build import PresuppositionBuildOptions, build_presupposition
    from medresilience.families.presupposition.formats.myths import read_myths
    from medresilience.models.spec import parse_model_spec

    myths = read_myths(DATA)[: args.myths]
    sizes = [int(x) for x in args.round_sizes.split(",") if x.strip()]
    rows = []
    with tempfile.TemporaryDirectory() as tmp, _stub(args.stub, args.delay) as url:
        gen = parse_model_spec(f"openai:fake-gen,base_url={url},concurrency={args.concurrency},max_retries=0")
        ver = parse_model_spec(f"openai:fake-ver,base_url={url},concurrency={args.concurrency},max_retries=0")
        for size in sizes:
            opts = PresuppositionBuildOptions(seed=0, round_size=size)
            for run in ("cold", "warm"):
                t0 = time.perf_counter()
                res = build_presupposition(myths, Path(tmp) / f"r{size}", [gen], ver, options=opts)
                rows.append((size, run, time.perf_counter() - t0, res.report))

    print(
        f"build presupposition, the first {len(myths)} myths of myth_treatment.jsonl; M=3 questions per myth; stub generator, "
        f"responder (same), verifier and categoriser; stub delay {args.delay}s; concurrency {args.concurrency}\n"
    )
    print("| round size | run | rounds | questions | kept | requests | calls made | requests / kept question | seconds | myths/s |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size, run, dt, rep in rows:
        t, it = rep["totals"], rep["items"]
        per_kept = rep["requests_per_kept_question"]
        rounds = -(-len(myths) // size)
        print(
            f"| {size} | {run} | {rounds} | {it['questions']} | {it['kept']} | {t['requests']} | {t['calls_made']} | "
            f"{per_kept if per_kept is not None else '—'} | {dt:.2f} | {len(myths) / dt:.1f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
