"""Two versions of `medres eval` timed against each other in one run (issue #33): this checkout's and
another checkout's (`--base`, e.g. a `git worktree` at an earlier commit), alternating run by run
(the order swapped every other run) on the same suite and the same stub server, so that a machine
that speeds up or slows down during the runs weighs on both alike.

    git worktree add /tmp/base b5374b6
    .venv/bin/python bench/bench_versions.py --base /tmp/base [--runs 8] [--items 666] [--delay 0.05] [--chunk-units N]

Each run is a fresh process pinned to one core, the stub pinned to the other (when the machine has
two). "whole" is the process from start to exit; "cpu" is the user and system time of the command
and every process it waited for (its results worker), from getrusage. The suite is the synthetic
misleading suite of bench_harness (three units an item); both versions run from bytecode."""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

#: the console script's entry of either version (before launch.main it was cli.main)
ENTRY = (
    "import sys\n"
    "try:\n"
    "    from medresilience.launch import main\n"
    "except ImportError:\n"
    "    from medresilience.cli import main\n"
    "sys.argv = ['medres', *sys.argv[1:]]\n"
    "main()\n"
)


def _cores() -> tuple[int | None, int | None]:
    cpus = sorted(os.sched_getaffinity(0))
    return (cpus[0], cpus[1]) if len(cpus) >= 2 else (None, None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", type=Path, required=True, help="the other checkout (its src/ is run)")
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--items", type=int, default=666)
    ap.add_argument("--delay", type=float, default=0.05)
    ap.add_argument("--chunk-units", type=int, default=None, help="MEDRES_CHUNK_UNITS for both")
    args = ap.parse_args()

    from bench_harness import _synthetic_suite
    from medresilience.testing.stub import Faults, StubProcess

    versions = {"base": args.base.resolve() / "src", "head": ROOT / "src"}
    for src in versions.values():
        compileall.compile_dir(str(src), quiet=1)
    stub_core, client_core = _cores()
    env = dict(os.environ)
    if args.chunk_units:
        env["MEDRES_CHUNK_UNITS"] = str(args.chunk_units)
    seen: dict[str, list[tuple[float, float]]] = {k: [] for k in versions}
    with tempfile.TemporaryDirectory() as d, StubProcess(policy="hash", faults=Faults(delay=args.delay)) as stub:
        suite = _synthetic_suite(args.items).save(Path(d) / "suite")
        if stub_core is not None:
            os.sched_setaffinity(stub.proc.pid, {stub_core})
        spec = f"openai:stub-model,base_url={stub.base_url},concurrency=64"
        for r in range(args.runs):
            order = list(versions) if r % 2 == 0 else list(reversed(versions))
            for name in order:
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                t = time.perf_counter()
                p = subprocess.run(
                    [sys.executable, "-c", ENTRY, "eval", "--suite", str(suite), "--model", spec, "--out", str(Path(d) / f"{name}-{r}")],
                    capture_output=True,
                    text=True,
                    env={**env, "PYTHONPATH": str(versions[name])},
                    preexec_fn=None if client_core is None else (lambda: os.sched_setaffinity(0, {client_core})),
                )
                whole = time.perf_counter() - t
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                if p.returncode != 0:
                    sys.exit(f"{name} failed:\n{p.stderr[-2000:]}")
                seen[name].append((whole, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime))
    print(f"{3 * args.items:,} units at {1000 * args.delay:g} ms, {args.runs} alternating runs each, medians (s):\n")
    print("| version | whole run | cpu | every whole run |\n| --- | ---: | ---: | --- |")
    for name, runs in seen.items():
        whole = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"| {name} | {whole:.2f} | {cpu:.2f} | {' '.join(f'{w:.2f}' for w, _ in runs)} |")


if __name__ == "__main__":
    main()
