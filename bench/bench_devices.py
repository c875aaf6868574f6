"""What each speed device of the run path buys (issue #42, item 7): the whole `medres eval` (the
real command, from start to exit: plan, calls, store, results, the HTML report) against the stub
server, with and without one device, alternating run by run (the order swapped every other run) on
the same suite and the same stub, so that a machine that speeds up or slows down weighs on both.

    .venv/bin/python bench/bench_devices.py [--items 3334] [--runs 5] [--delays 0.05 0] [--devices NAME ...]

The devices and how a run turns each off: the results worker (MEDRES_RESULTS_WORKER=0), uvloop
(MEDRES_EVENT_LOOP=asyncio), and the rest by MEDRES_DEVICES_OFF=name (runtime/devices.py lists them).
Each run is a fresh process pinned to one core, the stub pinned to the other (when the machine has
two), from bytecode. "cpu" is the user and system time of the command and its results worker
(getrusage). The difference is the run without the device minus the run with it, paired by round:
its median and (min .. max) over the rounds; "buys" is that median as a share of the median run
without the device; "cpu buys" the same of the cpu, paired alike (on a machine shared with other
work the cpu varies less than the whole run, which waits for a core). Every round's whole-run
difference is printed below the table. The machine's load average is printed before and after each
device, and every run's line below the table gives its 1-minute load average just before it started
(with/without, whole run and cpu)."""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_versions import ENTRY, _cores, _once  # noqa: E402
from medresilience.runtime import devices  # noqa: E402

#: each device: the environment of a run without it
OFF = {
    "results_worker": {"MEDRES_RESULTS_WORKER": "0"},
    "uvloop": {"MEDRES_EVENT_LOOP": "asyncio"},
    **{name: {devices.VARIABLE: name} for name in devices.DEVICES},
}


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=3334, help="suite items (three units each)")
    ap.add_argument("--runs", type=int, default=5, help="runs with and runs without, each")
    ap.add_argument("--delays", type=float, nargs="+", default=[0.05, 0.0])
    ap.add_argument("--devices", nargs="+", default=list(OFF), choices=list(OFF))
    ap.add_argument("--concurrency", type=int, default=64)
    args = ap.parse_args()

    from bench_harness import _synthetic_suite
    from medresilience.testing.stub import Faults, StubProcess

    compileall.compile_dir(str(ROOT / "src"), quiet=1)
    stub_core, client_core = _cores()
    base = {k: v for k, v in os.environ.items() if k not in ("MEDRES_RESULTS_WORKER", "MEDRES_EVENT_LOOP", "MEDRES_DEVICES_OFF")}
    print(f"{3 * args.items:,} units, {args.concurrency} in flight, {args.runs} alternating runs with and without each device\n")
    print(
        "| device | latency | with: whole run (s) | without (s) | difference (s): median (min .. max) | buys | cpu with / without (s) | cpu buys | load before; after |"
    )
    print("| --- | ---: | ---: | ---: | --- | ---: | --- | ---: | --- |", flush=True)
    rounds: list[str] = []
    runs: list[str] = []
    with tempfile.TemporaryDirectory() as d:
        suite = _synthetic_suite(args.items).save(Path(d) / "suite")
        for delay in args.delays:
            with StubProcess(policy="hash", faults=Faults(delay=delay)) as stub:
                if stub_core is not None:
                    os.sched_setaffinity(stub.proc.pid, {stub_core})
                spec = f"openai:stub-model,base_url={stub.base_url},concurrency={args.concurrency}"
                for device in args.devices:
                    load = _load()
                    seen: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
                    for r in range(args.runs):
                        for with_it in (True, False) if r % 2 == 0 else (False, True):
                            env = base if with_it else {**base, **OFF[device]}
                            out = Path(d) / f"{device}-{delay}-{r}-{int(with_it)}"
                            argv = [sys.executable, "-c", ENTRY, "eval", "--suite", str(suite), "--model", spec, "--out", str(out)]
                            before = os.getloadavg()[0]
                            seen[with_it].append(_once(argv, env, client_core))
                            runs.append(
                                f"- {device} at {1000 * delay:g} ms, round {r + 1}, {'with' if with_it else 'without'}: "
                                f"load {before:.2f} before, whole run {seen[with_it][-1][0]:.2f} s, cpu {seen[with_it][-1][1]:.2f} s"
                            )
                    w = statistics.median(x for x, _ in seen[True])
                    wo = statistics.median(x for x, _ in seen[False])
                    diffs = [b[0] - a[0] for a, b in zip(seen[True], seen[False])]
                    dm = statistics.median(diffs)
                    cw, cwo = statistics.median(c for _, c in seen[True]), statistics.median(c for _, c in seen[False])
                    cpu_dm = statistics.median(b[1] - a[1] for a, b in zip(seen[True], seen[False]))
                    print(
                        f"| {device} | {1000 * delay:g} ms | {w:.2f} | {wo:.2f} | {dm:+.2f} ({min(diffs):+.2f} .. {max(diffs):+.2f}) | "
                        f"{100 * dm / wo:+.1f}% | {cw:.2f} / {cwo:.2f} | {100 * cpu_dm / cwo:+.1f}% | {load}; {_load()} |",
                        flush=True,
                    )
                    rounds.append(f"- {device} at {1000 * delay:g} ms, without minus with, by round (s): {' '.join(f'{x:+.2f}' for x in diffs)}")
    print("", *rounds, "", *runs, sep="\n")


if __name__ == "__main__":
    main()
