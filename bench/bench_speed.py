"""Harness speed against its peers in one run (issue #33): the same 2,000 four-option MCQ requests,
64 in flight, sent to the local stub server by
- a raw aiohttp loop (no SDK, no harness: the client ceiling),
- a bare `openai` SDK loop (`chat.completions.create` over the SDK's aiohttp transport),
- `medres eval` (the real command: plan, calls, store, results, the HTML report),
- inspect_ai's `multiple_choice` and lm-eval's `local-chat-completions`, where installed,
at a stub latency of 0 and 50 ms. The stub runs in its own process pinned to one core and each
client in its own process pinned to the other (when the machine has two), so a client's CPU is its
own. Each cell is the median of --repeats runs.

    .venv/bin/python bench/bench_speed.py [--requests 2000] [--repeats 3] [--delays 0 0.05] [--no-peers]

"whole run" is the client process from start to exit (interpreter, imports, everything it
writes); "request phase" is the time from the first request to the last reply as the client
measures it (for `medres eval`: the planning, calls and store writes of `evaluation.execute_plan`;
for inspect_ai: its eval log's start to end). The ceiling at latency d is concurrency / d."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
MEDRES = str(ROOT / ".venv" / "bin" / "medres")


def _pin(core: int | None):
    """A preexec function pinning a child to one core (None: no pinning)."""
    return None if core is None else (lambda: os.sched_setaffinity(0, {core}))


def _cores() -> tuple[int | None, int | None]:
    cpus = sorted(os.sched_getaffinity(0))
    return (cpus[0], cpus[1]) if len(cpus) >= 2 else (None, None)


# ---- the clients, each run as `bench_speed.py _client KIND URL PAYLOADS CONCURRENCY` in its own process


async def _raw_aiohttp(url: str, payloads: list, concurrency: int) -> float:
    import aiohttp

    sem = asyncio.Semaphore(concurrency)
    headers = {"Authorization": "Bearer x", "Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:

        async def one(p) -> None:
            async with sem, s.post(url + "/chat/completions", data=json.dumps(p), headers=headers) as r:
                _ = json.loads(await r.read())["choices"][0]["message"]["content"]

        t = time.perf_counter()
        await asyncio.gather(*(one(p) for p in payloads))
        return time.perf_counter() - t


async def _bare_sdk(url: str, payloads: list, concurrency: int) -> float:
    import openai

    sem = asyncio.Semaphore(concurrency)
    async with openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0, http_client=openai.DefaultAioHttpClient()) as client:

        async def one(p) -> None:
            async with sem:
                r = await client.chat.completions.create(**p)
                _ = r.choices[0].message.content

        t = time.perf_counter()
        await asyncio.gather(*(one(p) for p in payloads))
        return time.perf_counter() - t


def _client(kind: str, url: str, payload_file: str, concurrency: int) -> None:
    payloads = json.loads(Path(payload_file).read_text())
    run = {"aiohttp": _raw_aiohttp, "sdk": _bare_sdk}[kind]
    phase = asyncio.run(run(url, payloads, concurrency))
    print(json.dumps({"requests": len(payloads), "phase": phase}))


def _medres(argv: list[str]) -> None:
    """The real `medres eval` command (launch.main, the console script's entry), with its request phase timed."""
    from medresilience import launch
    from medresilience.runtime.heap import frozen_imports

    with frozen_imports():  # as launch.main imports the command's modules
        from medresilience.run import evaluation

    inner, seconds = evaluation.execute_plan, []

    async def timed(*a, **k):
        t = time.perf_counter()
        try:
            return await inner(*a, **k)
        finally:
            seconds.append(time.perf_counter() - t)

    evaluation.execute_plan = timed
    sys.argv = ["medres", *argv]
    try:
        launch.main()
    finally:
        print(json.dumps({"phase": sum(seconds)}), file=sys.stderr)


# ---- the parent


def compiled_sources() -> None:
    """Compile the project's sources to bytecode before the timed runs, as an installed package's
    are (the peers' are, in site-packages): where PYTHONDONTWRITEBYTECODE is set, as on the machine
    of BENCHMARKS.md, every run would otherwise compile them again (about 0.1 s a process)."""
    import compileall

    compileall.compile_dir(str(ROOT / "src"), quiet=1)


def _run(argv: list[str], core: int | None, env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[float, str, str]:
    t = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, preexec_fn=_pin(core), env=env, cwd=cwd)
    whole = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError(f"{argv[:4]} exited {p.returncode}: {p.stderr[-2000:]}")
    return whole, p.stdout, p.stderr


def _inspect_task(d: Path, n: int) -> Path:
    task = d / "mcq_task.py"
    task.write_text(
        "from inspect_ai import Task, task\n"
        "from inspect_ai.dataset import Sample\n"
        "from inspect_ai.scorer import choice\n"
        "from inspect_ai.solver import multiple_choice\n\n"
        "@task\n"
        "def mcq():\n"
        f"    samples = [Sample(input=f'Synthetic question {{i}}?', choices=[f'option {{k}} for synthetic question {{i}}' for k in 'ABCD'], target='ABCD'[i % 4]) for i in range({n})]\n"
        "    return Task(dataset=samples, solver=multiple_choice(), scorer=choice())\n"
    )
    return task


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _one_delay(delay: float, args, d: Path, client_core: int | None, stub_core: int | None) -> dict[str, list[tuple[float, float]]]:
    from bench_harness import _payloads, _synthetic_suite
    from medresilience.testing.stub import Faults, StubProcess

    n_items = args.requests // 3  # clean, one Type 1 probe and the Type 2 bundle per item
    suite_dir = _synthetic_suite(n_items).save(d / "suite")
    out: dict[str, list[tuple[float, float]]] = {}
    with StubProcess(policy="hash", faults=Faults(delay=delay)) as stub:
        if stub_core is not None:
            os.sched_setaffinity(stub.proc.pid, {stub_core})
        url = stub.base_url
        payloads = [{"model": "stub-model", "messages": m, **p} for m, p in _payloads(url, n_items)]
        (d / "payloads.json").write_text(json.dumps(payloads))
        me = [sys.executable, __file__]
        for r in range(args.repeats):
            for kind in ("aiohttp", "sdk"):
                whole, stdout, _ = _run([*me, "_client", kind, url, str(d / "payloads.json"), str(args.concurrency)], client_core)
                res = json.loads(stdout)
                out.setdefault(kind, []).append((res["requests"] / whole, res["requests"] / res["phase"]))
            spec = f"openai:stub-model,base_url={url},concurrency={args.concurrency}"
            run_dir = d / f"run-{delay}-{r}"
            whole, _, stderr = _run([*me, "_medres", "eval", "--suite", str(suite_dir), "--model", spec, "--out", str(run_dir)], client_core)
            phase = json.loads(stderr.strip().splitlines()[-1])["phase"]
            out.setdefault("medres", []).append((len(payloads) / whole, len(payloads) / phase))
            if args.peers and _installed("inspect_ai"):
                out.setdefault("inspect", []).append(_inspect_once(d, url, args, client_core, r))
    return out


def _inspect_once(d: Path, url: str, args, core: int | None, r: int) -> tuple[float, float]:
    from inspect_ai.log import read_eval_log

    task = _inspect_task(d, args.requests)
    logs = d / f"inspect-logs-{r}-{time.time_ns()}"
    env = dict(os.environ, STUB_API_KEY="x", STUB_BASE_URL=url, INSPECT_DISPLAY="none")
    inspect = str(ROOT / ".venv" / "bin" / "inspect")
    argv = [
        inspect,
        "eval",
        task.name,
        "--model",
        "openai-api/stub/stub-model",
        "--max-connections",
        str(args.concurrency),
        "--log-dir",
        str(logs),
        "--log-format",
        "json",
        "--display",
        "none",
    ]
    whole, _, _ = _run(argv, core, env, cwd=task.parent)
    log = read_eval_log(str(next(logs.glob("*.json"))), header_only=True)
    from datetime import datetime

    phase = (datetime.fromisoformat(log.stats.completed_at) - datetime.fromisoformat(log.stats.started_at)).total_seconds()
    return args.requests / whole, args.requests / phase


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--delays", type=float, nargs="+", default=[0.0, 0.05])
    ap.add_argument("--no-peers", dest="peers", action="store_false", help="skip inspect_ai and lm-eval")
    args = ap.parse_args()
    compiled_sources()
    stub_core, client_core = _cores()
    results: dict[float, dict[str, list[tuple[float, float]]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for delay in args.delays:
            results[delay] = _one_delay(delay, args, Path(tmp), client_core, stub_core)
    _print(results, args, stub_core is not None)


def _print(results: dict, args, pinned: bool) -> None:
    names = {
        "aiohttp": "raw aiohttp loop",
        "sdk": "openai SDK loop (aiohttp transport)",
        "medres": "`medres eval` (plan, calls, store, results, report)",
        "inspect": "inspect_ai multiple_choice",
    }
    delays = list(results)
    head = " | ".join(f"{1000 * dl:g} ms whole run | {1000 * dl:g} ms request phase" for dl in delays)
    print(
        f"{args.requests:,} requests, {args.concurrency} in flight, median of {args.repeats}; {'stub and client pinned to one core each' if pinned else 'not pinned (one core)'}. req/s:\n"
    )
    print(f"| client | {head} |\n| --- |" + " ---: |" * (2 * len(delays)))
    med = {dl: {k: (statistics.median(w for w, _ in v), statistics.median(p for _, p in v)) for k, v in results[dl].items()} for dl in delays}
    for kind, name in names.items():
        if all(kind in med[dl] for dl in delays):
            print(f"| {name} | " + " | ".join(f"{med[dl][kind][0]:,.0f} | {med[dl][kind][1]:,.0f}" for dl in delays) + " |")
    if not _installed("lm_eval"):
        print("\nlm-eval is not installed here: no lm-eval row.")
    print()
    for dl in delays:
        m = med[dl]["medres"]
        line = f"- {1000 * dl:g} ms: medres whole run = {m[1] / m[0]:.2f}x its request phase's time"
        if dl > 0:
            line += f"; request phase {100 * m[1] * dl / args.concurrency:.0f}% of the ceiling ({args.concurrency / dl:,.0f} req/s)"
        for kind in ("sdk", "aiohttp", "inspect"):
            if kind in med[dl]:
                line += f"; end to end {m[0] / med[dl][kind][0]:.1f}x {names[kind].split(' (')[0]}"
        print(line)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_client":
        _client(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    elif len(sys.argv) > 1 and sys.argv[1] == "_medres":
        _medres(sys.argv[2:])
    else:
        main()
