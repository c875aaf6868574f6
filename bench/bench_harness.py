"""Harness benchmarks for the foundation (issue #2). Prints Markdown tables for BENCHMARKS.md.

    .venv/bin/python bench/bench_harness.py throughput [--requests 2000]
    .venv/bin/python bench/bench_harness.py scale [--units 10000 100000 1000000]
    .venv/bin/python bench/bench_harness.py resume [--units 100000 1000000]
    .venv/bin/python bench/bench_harness.py calls
    .venv/bin/python bench/bench_harness.py embedded [--items 20] [--model qwen]
    .venv/bin/python bench/bench_harness.py slots [--slots 1 2 4 8] [--requests 16] [--model qwen]

throughput: the full path (plan -> dedupe -> requests -> SQLite store, scores included) against a
local instant stub server in a subprocess, next to a bare `openai` SDK loop (same SDK, same aiohttp
transport, same stub, same run) at concurrency 16, 64 and 128.
calls: the number of calls for N items with k wrong options each under --type1 all.
embedded: seconds per item, letter generation vs logprob scoring, on MedQA items from
../shared/data (clean condition), each mode in its own process so peak memory is its own.
slots: the embedded server's parallel slots (its `concurrency`) against throughput, with as many
requests in flight as slots, on two workloads from ../shared/data: long free-text answers to
Cancer-Myth questions (max_tokens 256: generation-bound) and MedQA letter answers (max_tokens 16:
prompt-bound). A fresh server per slot count, so no prompt cache carries over."""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def _synthetic_suite(n_items: int):
    from medresilience.families.misleading.bundles import probes_from_bundle
    from medresilience.records import Item, SuiteManifest
    from medresilience.suite import Suite

    items, probes = [], []
    for i in range(n_items):
        opts = {k: f"option {k} for synthetic question {i}" for k in "ABCD"}
        it = Item(id=f"s{i}", source="synthetic", question=f"Synthetic question {i}?", options=opts, answer="ABCD"[i % 4])
        sentences = {k: f"Sentence for option {k} of question {i}." for k in "ABCD"}
        items.append(it)
        probes += probes_from_bundle(it, sentences, "cue_remapping", "neutral", seed=1)
    return Suite(SuiteManifest(family="misleading", name="synthetic", seed=1), items, probes)


def _payloads(url: str, n_items: int) -> list[tuple[list, dict]]:
    """The exact messages and parameters the harness sends, so both sides do the same HTTP work."""
    from medresilience.models.spec import parse_model_spec
    from medresilience.run.runner import EvalOptions, plan

    spec = parse_model_spec(f"openai:stub-model,base_url={url}")
    return [(p.messages, p.params) for p in plan(_synthetic_suite(n_items), [spec], EvalOptions())]


async def _bare_loop(url: str, payloads: list[tuple[list, dict]], concurrency: int) -> float:
    import openai

    client = openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0, http_client=openai.DefaultAioHttpClient())
    sem = asyncio.Semaphore(concurrency)
    n = len(payloads)

    async def one(i: int) -> None:
        messages, params = payloads[i]
        async with sem:
            await client.chat.completions.create(model="stub-model", messages=messages, **params)

    t = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    dt = time.perf_counter() - t
    await client.close()
    return n / dt


def _harness(url: str, n_items: int, concurrency: int) -> tuple[float, int]:
    from medresilience.models.spec import parse_model_spec
    from medresilience.run.runner import EvalOptions, execute, plan
    from medresilience.store import Store

    suite = _synthetic_suite(n_items)
    spec = parse_model_spec(f"openai:stub-model,base_url={url},concurrency={concurrency}")
    with tempfile.TemporaryDirectory() as d, Store(Path(d) / "store.sqlite") as store:
        t = time.perf_counter()
        planned = plan(suite, [spec], EvalOptions())
        stats = asyncio.run(execute(planned, [spec], store))
        dt = time.perf_counter() - t
        assert stats.errors == 0 and store.count("calls") == stats.called
    return stats.called / dt, stats.called


def throughput(args) -> None:
    from medresilience.testing.stub import StubProcess

    n_items = args.requests // 5
    rows = []
    with StubProcess(policy="hash") as stub:
        payloads = _payloads(stub.base_url, n_items)
        asyncio.run(_bare_loop(stub.base_url, payloads[:200], 16))  # warm up
        for c in (16, 64, 128):
            bare = [asyncio.run(_bare_loop(stub.base_url, payloads, c)) for _ in range(args.repeats)]
            full = [_harness(stub.base_url, n_items, c) for _ in range(args.repeats)]
            b, h = max(bare), max(r for r, _ in full)
            rows.append((c, n_items * 5, b, h, h / b))
    print("| concurrency | requests | bare SDK loop (req/s) | medres full path (req/s) | ratio |")
    print("|---|---|---|---|---|")
    for c, n, b, h, r in rows:
        print(f"| {c} | {n} | {b:,.0f} | {h:,.0f} | {100 * r:.0f}% |")


def calls(args) -> None:
    from medresilience.models.spec import parse_model_spec
    from medresilience.run.runner import EvalOptions, execute, plan
    from medresilience.store import Store
    from medresilience.testing.stub import StubServer

    print("| items N | wrong options k | expected N + N*k + N | calls made (Type 1 all) | second run |")
    print("|---|---|---|---|---|")
    with StubServer(policy="hash") as stub:
        for n in (10, 100):
            suite = _synthetic_suite(n)
            spec = parse_model_spec(f"openai:stub-model,base_url={stub.base_url},concurrency=32")
            with tempfile.TemporaryDirectory() as d, Store(Path(d) / "s.sqlite") as store:
                s1 = asyncio.run(execute(plan(suite, [spec], EvalOptions()), [spec], store))
                s2 = asyncio.run(execute(plan(suite, [spec], EvalOptions()), [spec], store))
            print(f"| {n} | 3 | {n + 3 * n + n} | {s1.called} | {s2.called} made, {s2.cached} reused |")


def _embedded_one(model: str, n_items: int, scoring: str) -> dict:
    from medresilience.models.spec import parse_model_spec
    from medresilience.records import SuiteManifest
    from medresilience.run.evaluation import evaluate
    from medresilience.run.runner import EvalOptions
    from medresilience.sources import load_items
    from medresilience.suite import Suite

    path = ROOT.parent / "shared" / "data" / "medqa" / "us_4options_test_even.jsonl"
    items = []
    for it in load_items(path):
        items.append(it)
        if len(items) == n_items:
            break
    suite = Suite(SuiteManifest(family="misleading", name="medqa20"), items, [])
    spec = parse_model_spec(f"embedded:{model}")
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        res = evaluate(suite, [spec], Path(d) / "run", EvalOptions(scoring=scoring, conditions=("clean",)))
        dt = time.perf_counter() - t
    acc = res.results.models[spec.label]["none"]["overall"]["clean_acc"]
    return {
        "scoring": scoring,
        "items": n_items,
        "seconds_per_item": dt / n_items,
        "accuracy": acc,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def embedded(args) -> None:
    rows = []
    for scoring in ("letter", "logprob"):
        out = subprocess.run(
            [sys.executable, __file__, "_embedded_one", "--model", args.model, "--items", str(args.items), "--scoring", scoring],
            capture_output=True,
            text=True,
            check=True,
        )
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print("| model | scoring | items | seconds / item (incl. server start) | clean accuracy | peak RSS (MB) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        a = r["accuracy"]
        print(f"| {args.model} | {r['scoring']} | {r['items']} | {r['seconds_per_item']:.2f} | {a['k']}/{a['n']} | {r['peak_rss_mb']:.0f} |")


def _slot_workloads(n: int) -> dict[str, list[tuple[list[dict[str, str]], int]]]:
    from medresilience.sources import load_items

    data = ROOT.parent / "shared" / "data"
    rows = json.loads((data / "cancer_myth" / "all_data_before_validation.json").read_text())[:n]
    long = [([{"role": "user", "content": r["example_question"]}], 256) for r in rows]
    mcq = []
    for it in load_items(data / "medqa" / "us_4options_test_even.jsonl"):
        opts = "\n".join(f"{k}. {v}" for k, v in (it.options or {}).items())
        mcq.append(([{"role": "user", "content": f"{it.question}\n{opts}\nReply with the letter only, as 'Answer: X'."}], 16))
        if len(mcq) == n:
            break
    return {"long answers (256 tokens)": long, "MedQA letters (16 tokens)": mcq}


async def _drive(url: str, model: str, work: list[tuple[list[dict[str, str]], int]], slots: int) -> tuple[float, int]:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=url, api_key="none", timeout=1800)
    gate = asyncio.Semaphore(slots)

    async def one(messages, max_tokens) -> int:
        async with gate:
            r = await client.chat.completions.create(model=model, messages=messages, max_tokens=max_tokens, temperature=0, seed=0)
            return r.usage.completion_tokens

    t = time.perf_counter()
    tokens = await asyncio.gather(*(one(m, k) for m, k in work))
    await client.close()
    return time.perf_counter() - t, sum(tokens)


def slots(args) -> None:
    from medresilience.models import embedded

    workloads = _slot_workloads(args.requests)
    print("| workload | slots | requests | wall (s) | completion tokens / s | seconds / request |")
    print("|---|---|---|---|---|---|")
    for name, work in workloads.items():
        for n in args.slots:
            with embedded.serve(args.model, n_parallel=n) as url:
                wall, tokens = asyncio.run(_drive(url, args.model, work, n))
            print(f"| {name} | {n} | {len(work)} | {wall:.1f} | {tokens / wall:.1f} | {wall / len(work):.2f} |", flush=True)


def _scale_one(units: int, path: str, way: str, db: str) -> dict:
    """One process: plan and run `units` units (items x 5 units each) against the stub at `path`,
    all at once (`whole`: plan + execute) or in chunks (`chunks`: execute_plan); then the same
    again on the same store (a resume with nothing to do)."""
    from medresilience.models.spec import parse_model_spec
    from medresilience.run.runner import EvalOptions, execute, execute_plan, plan
    from medresilience.store import Store

    suite = _synthetic_suite(max(1, units // 5))
    spec = parse_model_spec(f"openai:stub-model,base_url={path},concurrency=64")
    opts = EvalOptions(family={"type1": "all"})
    out = {"way": way, "units": len(suite.items) * 5}
    with Store(db) as store:
        store.record_run("bench", {})
        for phase in ("run", "resume"):
            t = time.perf_counter()
            if way == "whole":
                stats = asyncio.run(execute(plan(suite, [spec], opts), [spec], store))
            else:
                stats = asyncio.run(execute_plan(suite, [spec], opts, store))
            out[f"{phase}_s"] = time.perf_counter() - t
            out[f"{phase}_called"] = stats.called
            out[f"{phase}_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def _resume_setup(units: int):
    from medresilience.family import get
    from medresilience.models.spec import parse_model_spec
    from medresilience.run.runner import EvalOptions

    suite = _synthetic_suite(max(1, units // 5))
    spec = parse_model_spec("openai:stub-model,base_url=http://127.0.0.1:9/v1,concurrency=64")
    opts = EvalOptions(family={"type1": "all"})
    fam = get("misleading")
    return suite, spec, opts, fam, fam.parse_options(opts.family)


def _fill(units: int, db: str) -> None:
    """Store every planned call of the synthetic suite as answered (through the store's own
    writer, no HTTP), so that a run on it is an empty resume."""
    from medresilience.models.openai_compatible import Completion
    from medresilience.run.runner import _plan_pairs, select_units
    from medresilience.store import CallRow, ScoreRow, Store

    suite, spec, opts, fam, fopts = _resume_setup(units)
    suite.save(Path(db).with_suffix(".suite"))  # for the runs that load it from disk
    with Store(db) as store:
        store.record_run("fill", {})
        pairs = select_units(suite, fam, fopts, opts)
        for i in range(0, len(pairs), 20_000):
            planned = _plan_pairs(pairs[i : i + 20_000], fam, fopts, [spec], opts)
            store.add_plan([p.unit for p in planned], [(p.unit.key, spec.label, p.messages, p.params) for p in planned])
            # each answer with its score, as a run writes them: a run on this store is a settled rerun
            done = Completion("Answer: A", "stop", 0, 0, 0.0, 1)
            scores = [(p.unit.key, p.unit.scoring, p.score(done)) for p in planned]
            store.write_results(
                [CallRow(p.unit.key, spec.label, "ok", text=done.text) for p in planned],
                [ScoreRow(k, name, s.label, s.status, s.detail, s.value) for k, name, s in scores],
            )


def _resume_one(units: int, way: str, db: str) -> dict:
    """One process: an empty resume of `units` planned units, all at once or in chunks."""
    from medresilience.run.runner import execute, execute_plan, plan
    from medresilience.store import Store

    suite, spec, opts, _, _ = _resume_setup(units)
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with Store(db) as store:
        store.record_run("bench", {})
        t = time.perf_counter()
        if way == "whole":
            stats = asyncio.run(execute(plan(suite, [spec], opts), [spec], store))
        else:
            stats = asyncio.run(execute_plan(suite, [spec], opts, store))
        return {
            "way": way,
            "units": len(suite.items) * 5,
            "resume_s": time.perf_counter() - t,
            "called": stats.called,
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "suite_mb": loaded,
        }


def _evaluate_once(units: int, db: str, phase: str) -> dict:
    """One process, as `medres eval --suite DIR` runs: the suite saved by the fill loaded lazily
    from disk, then `evaluate` on a copy of the filled store. `ordinary`: the first run on it (plan,
    render and look up every unit: nothing to call; then summarise); `settled`: the same run again,
    now settled (nothing read, planned or computed: the units are retagged, the results kept)."""
    import shutil

    from medresilience import evaluate
    from medresilience.suite import Suite

    _, spec, opts, _, _ = _resume_setup(0)
    out = Path(db).with_suffix(".run")
    if phase == "ordinary":
        out.mkdir(exist_ok=True)
        shutil.copy(db, out / "store.sqlite")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t = time.perf_counter()
    suite = Suite.load(Path(db).with_suffix(".suite"), lazy=True)
    r = evaluate(suite, [spec], out, opts)
    return {
        "way": phase,
        "units": r.stats.planned_units,
        "resume_s": time.perf_counter() - t,
        "called": r.stats.called,
        "settled": r.stats.settled_from is not None,
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "suite_mb": before,
    }


def resume(args) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for units in args.units:
            db = str(Path(d) / f"r-{units}.sqlite")
            subprocess.run([sys.executable, __file__, "_resume_one", "--n", str(units), "--way", "fill", "--db", db], check=True)
            for way in args.ways:
                r = subprocess.run(
                    [sys.executable, __file__, "_resume_one", "--n", str(units), "--way", way, "--db", db], capture_output=True, text=True, check=True
                )
                rows.append(json.loads(r.stdout.strip().splitlines()[-1]))
    print("| planned units | planning | empty resume (s) | calls made | peak RSS (MB) | of which the loaded suite (MB) |")
    print("|---:|---|---:|---:|---:|---:|")
    names = {
        "ordinary": "`evaluate` of the suite loaded lazily from disk, first run on the store",
        "settled": "`evaluate` of the suite loaded lazily from disk, the same run again",
    }
    for r in rows:
        if r["way"] in names:
            print(
                f"| {r['units']:,} | {names[r['way']]}{' (settled: nothing read or planned)' if r['settled'] else ''} | "
                f"{r['resume_s']:.1f} | {r['called']} | {r['rss_mb']:.0f} | (read in the run) |"
            )
        else:
            print(f"| {r['units']:,} | {r['way']} | {r['resume_s']:.1f} | {r['called']} | {r['rss_mb']:.0f} | {r['suite_mb']:.0f} |")


def scale(args) -> None:
    from medresilience.testing.stub import StubProcess

    rows = []
    with StubProcess(policy="hash") as stub, tempfile.TemporaryDirectory() as d:
        for units in args.units:
            for way in args.ways:
                db = str(Path(d) / f"{way}-{units}.sqlite")
                r = subprocess.run(
                    [sys.executable, __file__, "_scale_one", "--n", str(units), "--url", stub.base_url, "--way", way, "--db", db],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                rows.append(json.loads(r.stdout.strip().splitlines()[-1]))
    print("| planned units | planning | run (s) | calls/s | peak RSS after run (MB) | empty resume (s) | peak RSS after resume (MB) |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['units']:,} | {r['way']} | {r['run_s']:.1f} | {r['run_called'] / r['run_s']:,.0f} | {r['run_rss_mb']:.0f} | "
            f"{r['resume_s']:.1f} | {r['resume_rss_mb']:.0f} |"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("throughput")
    t.add_argument("--requests", type=int, default=2000)
    t.add_argument("--repeats", type=int, default=2)
    sub.add_parser("calls")
    e = sub.add_parser("embedded")
    e.add_argument("--items", type=int, default=20)
    e.add_argument("--model", default="qwen")
    one = sub.add_parser("_embedded_one")
    one.add_argument("--items", type=int, default=20)
    one.add_argument("--model", default="qwen")
    one.add_argument("--scoring", default="letter")
    sl = sub.add_parser("slots")
    sl.add_argument("--slots", type=int, nargs="+", default=[1, 2, 4, 8])
    sl.add_argument("--requests", type=int, default=16)
    sl.add_argument("--model", default="qwen")
    sc = sub.add_parser("scale")
    sc.add_argument("--units", type=int, nargs="+", default=[10_000, 100_000])
    sc.add_argument("--ways", nargs="+", default=["whole", "chunks"], choices=["whole", "chunks"])
    rs = sub.add_parser("resume")
    rs.add_argument("--units", type=int, nargs="+", default=[100_000, 1_000_000])
    rs.add_argument("--ways", nargs="+", default=["whole", "chunks", "ordinary", "settled"], choices=["whole", "chunks", "ordinary", "settled"])
    ro = sub.add_parser("_resume_one")
    ro.add_argument("--n", type=int)
    ro.add_argument("--way")
    ro.add_argument("--db")
    so = sub.add_parser("_scale_one")
    so.add_argument("--n", type=int)
    so.add_argument("--url")
    so.add_argument("--way")
    so.add_argument("--db")
    args = ap.parse_args()
    if args.cmd == "scale":
        scale(args)
        return
    if args.cmd == "resume":
        resume(args)
        return
    if args.cmd == "_resume_one":
        if args.way == "fill":
            _fill(args.n, args.db)
        elif args.way in ("ordinary", "settled"):
            print(json.dumps(_evaluate_once(args.n, args.db, args.way)))
        else:
            print(json.dumps(_resume_one(args.n, args.way, args.db)))
        return
    if args.cmd == "_scale_one":
        print(json.dumps(_scale_one(args.n, args.url, args.way, args.db)))
        return
    if args.cmd == "throughput":
        throughput(args)
    elif args.cmd == "calls":
        calls(args)
    elif args.cmd == "embedded":
        embedded(args)
    elif args.cmd == "slots":
        slots(args)
    else:
        print(json.dumps(_embedded_one(args.model, args.items, args.scoring)))


if __name__ == "__main__":
    main()
