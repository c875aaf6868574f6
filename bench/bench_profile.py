"""Where `medres eval` spends its CPU: one run of the whole path (plan, calls, store, results,
report) against the instant local stub server in a subprocess, under cProfile, split into the
request phase and the fixed part around it, with the functions that take the most time.

    .venv/bin/python bench/bench_profile.py [--requests 2000] [--concurrency 64] [--top 25]

The stub answers at once (its own process, so its CPU is not counted here); the harness's CPU per
request is the request phase's time over the requests made. Prints Markdown for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_harness import _synthetic_suite  # noqa: E402


class _Timed:
    """Wall time of the steps of a run, measured by wrapping them (a coroutine's profile counts
    only the slices it runs, so the request phase is timed from its start to its end)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def wrap_async(self, module, name: str, label: str) -> None:
        fn = getattr(module, name)

        async def timed(*a, **k):
            t = time.perf_counter()
            try:
                return await fn(*a, **k)
            finally:
                self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - t

        setattr(module, name, timed)

    def wrap(self, module, name: str, label: str) -> None:
        fn = getattr(module, name)

        def timed(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - t

        setattr(module, name, timed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()

    from medresilience import EvalOptions, evaluate
    from medresilience.models.spec import parse_model_spec
    from medresilience.report.build import build_report
    from medresilience.run import evaluation
    from medresilience.testing.stub import StubProcess

    timed = _Timed()
    timed.wrap_async(evaluation, "execute_plan", "request phase (plan, calls, store writes)")
    timed.wrap(evaluation, "summarise_with_frame", "results (frame, metrics, results.json/md)")
    n_items = max(1, args.requests // 3)  # clean, one Type 1 probe and the Type 2 bundle per item
    suite = _synthetic_suite(n_items)
    with StubProcess(policy="hash") as stub:
        spec = parse_model_spec(f"openai:stub-model,base_url={stub.base_url},concurrency={args.concurrency}")
        for profiled in (False, True):  # the timings without the profiler's overhead, then the profile
            timed.seconds.clear()
            prof = cProfile.Profile()
            with tempfile.TemporaryDirectory() as d:
                t0 = time.perf_counter()
                if profiled:
                    prof.enable()
                res = evaluate(suite, [spec], Path(d) / "run", EvalOptions())
                t1 = time.perf_counter()
                build_report([Path(d) / "run"], frames={Path(d) / "run": res.frame})  # what `medres eval` does next
                prof.disable()
                t2 = time.perf_counter()
            timed.seconds["the HTML report and figures"] = t2 - t1
            calls = res.stats.called
            request = timed.seconds["request phase (plan, calls, store writes)"]
            wall = t2 - t0
            how = "under the profiler" if profiled else "without the profiler"
            print(f"### One `medres eval` run {how}: {calls:,} requests at concurrency {args.concurrency}, instant stub\n")
            print(
                f"Wall time {wall:.2f} s ({calls / wall:,.0f} req/s end to end); request phase {request:.2f} s "
                f"({calls / request:,.0f} req/s, {1000 * request / calls:.2f} ms of harness time a request); the rest {wall - request:.2f} s.\n"
            )
            print("| step | seconds (wall) |\n| --- | ---: |")
            for k, v in timed.seconds.items():
                print(f"| {k} | {v:.2f} |")
            rest = t1 - t0 - sum(v for k, v in timed.seconds.items() if "report" not in k)
            print(f"| everything else in evaluate (suite check, serving, run.json, store open/close) | {rest:.2f} |\n")
    for key, title in (("tottime", "own time"), ("cumtime", "cumulative time")):
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats(key).print_stats(args.top)
        print(f"\n<details><summary>top {args.top} functions by {title}</summary>\n\n```")
        lines = buf.getvalue().splitlines()
        start = next((i for i, x in enumerate(lines) if x.strip().startswith("ncalls")), 0)
        print("\n".join(x.replace(str(ROOT) + "/", "") for x in lines[start:] if x.strip()))
        print("```\n</details>")


if __name__ == "__main__":
    main()
