"""Benchmark: `build misleading` on real MedMCQA items against a local stub generator.

    .venv/bin/python bench/bench_build.py [--items 50] [--repeats 3] [--delay 0] [--concurrency 16]
                                          [--design standard|crossed] [--stub process|thread]

The stub (medresilience.families.misleading.testing.FakeGenerator, served by the project's StubServer in a
child process by default, or a thread with --stub thread) answers with valid and invalid JSON in known proportions, so the numbers also
show the parse-retry path: by default 25% of the items get a broken first reply at each stage
(then a valid retry), 5% get only broken Stage 2 replies (recorded failures after 2 retries),
20% are rejected by the applicability filter and 5% get a sentence that names an option letter
(dropped by the checks). Every repeat builds into a fresh directory (cold: every call made); a
resume of the last build is timed too (warm: every call reused from the store).

Prints a Markdown table: items considered, kept, requests, calls per kept item, parse retries
and failures, seconds, items per second."""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "medmcqa" / "dev.json"


@contextlib.contextmanager
def _stub(mode: str, rates: dict, delay: float) -> Iterator[str]:
    """The fake generator's base URL, served from a child process or a thread."""
    from medresilience.families.misleading.testing import FakeGenerator
    from medresilience.testing.stub import Faults, policy_server

    with policy_server(FakeGenerator, rates, Faults(delay=delay), process=mode == "process") as url:
        yield url


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=50, help="usable MedMCQA items to build from")
    ap.add_argument("--repeats", type=int, default=3, help="cold builds (median reported)")
    ap.add_argument("--delay", type=float, default=0.0, help="seconds the stub waits before each reply (simulated latency)")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--invalid-json", type=float, default=0.25)
    ap.add_argument("--always-invalid", type=float, default=0.05)
    ap.add_argument("--reject", type=float, default=0.2)
    ap.add_argument("--letter", type=float, default=0.05)
    ap.add_argument("--design", default="standard", choices=("standard", "crossed"))
    ap.add_argument(
        "--stub", default="process", choices=("process", "thread"), help="serve the stub from a child process (no GIL shared with the builder) or a thread"
    )
    args = ap.parse_args(argv)
    if not DATA.exists():
        print(f"skipped: {DATA} not found (../shared/data is not available)", file=sys.stderr)
        return 0

    from medresilience.families.misleading.construct.inputs import load_build_items
    from medresilience.families.misleading.construct.pipeline import BuildOptions, build_misleading
    from medresilience.models.spec import parse_model_spec

    loaded = load_build_items(DATA, limit=args.items)
    rates = dict(reject=args.reject, invalid_json=args.invalid_json, always_invalid=args.always_invalid, letter=args.letter)
    rows = []
    with tempfile.TemporaryDirectory() as tmp, _stub(args.stub, rates, args.delay) as base_url:
        spec = parse_model_spec(f"openai:fake,base_url={base_url},concurrency={args.concurrency}")
        cold = []
        for i in range(args.repeats):
            t0 = time.perf_counter()
            res = build_misleading(loaded, spec, Path(tmp) / f"s{i}", BuildOptions(seed=0, design=args.design))
            cold.append((time.perf_counter() - t0, res.report))
        dt = statistics.median(c[0] for c in cold)
        rows.append(("cold (every call made)", dt, cold[-1][1]))
        t0 = time.perf_counter()
        res = build_misleading(loaded, spec, Path(tmp) / f"s{args.repeats - 1}", BuildOptions(seed=0, design=args.design))
        rows.append(("warm (resume, all reused)", time.perf_counter() - t0, res.report))

    print(
        f"build misleading, {len(loaded.items)} usable MedMCQA dev items ({len(loaded.skipped)} rows skipped before them: "
        f"{', '.join(f'{k} {v}' for k, v in loaded.skip_counts().items())}); design {args.design}; stub generator: "
        f"invalid first reply {args.invalid_json:.0%}, always-invalid Stage 2 {args.always_invalid:.0%}, "
        f"rejected {args.reject:.0%}, letter-naming {args.letter:.0%}; stub delay {args.delay}s; concurrency {args.concurrency}; "
        f"median of {args.repeats} cold builds\n"
    )
    print("| run | items | kept | requests | calls made | calls / kept item | parse retries | parse failures | seconds | items/s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, dt, rep in rows:
        t, it = rep["totals"], rep["items"]
        http = t["calls_made"]
        per_kept = t["requests"] / it["kept"] if it["kept"] else float("nan")
        print(
            f"| {name} | {it['considered']} | {it['kept']} | {t['requests']} | {http} | {per_kept:.2f} | "
            f"{t['retries']} | {t['failures']} | {dt:.3f} | {it['considered'] / dt:.1f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
