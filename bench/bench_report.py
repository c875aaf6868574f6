"""Benchmark: report generation on a synthetic store of N scored rows (default 1,000,000).

    .venv/bin/python bench/bench_report.py                  # 1M rows, 10 models x 2 settings
    .venv/bin/python bench/bench_report.py --rows 200000    # smaller
    .venv/bin/python bench/bench_report.py --dir /tmp/x     # where the synthetic run lives (cached)

The synthetic run is written straight through the store's own writers (Store.add_plan /
Store.write_results, in batches) together with a matching suite (Type 1 all: one Type 1 probe per
wrong option plus one Type 2 probe per item) and a run.json, so the report reads exactly what a
real run leaves behind. Outcomes are drawn from a seeded model of clean accuracy, flips (to the
target, elsewhere, unreadable), API errors and missing units.

Report generation runs in a fresh child process (`--phase report`), so its wall time and peak
resident memory (ru_maxrss of the child) are measured alone, without the synthesis. A Markdown
table is printed at the end.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

SOURCES = ("medqa", "medmcqa", "mmlu")
N_OPTIONS = 4
UNITS_PER_ITEM = 1 + (N_OPTIONS - 1) + 1  # clean + Type 1 (all) + Type 2


def synthesise(run_dir: Path, rows: int, n_models: int, seed: int = 0, batch: int = 50_000) -> dict:
    from medresilience.families.misleading.bundles import probes_from_bundle
    from medresilience.families.misleading.taxonomy import CONTENT_TYPE_KEYS, PROVENANCE_KEYS
    from medresilience.models.spec import parse_model_spec
    from medresilience.records import Item, SuiteManifest
    from medresilience.run.evaluation import run_config
    from medresilience.run.runner import EvalOptions
    from medresilience.store import CallRow, ScoreRow, Store, UnitRow
    from medresilience.suite import Suite

    settings = ("none", "caution")
    per_item = n_models * len(settings) * UNITS_PER_ITEM
    n_items = max(1, rows // per_item)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()

    # ---- suite: n_items items, each with one bundle (Type 1 all + Type 2)
    letters = "ABCD"[:N_OPTIONS]
    items, probes = [], []
    for i in range(n_items):
        gold = letters[i % N_OPTIONS]
        item = Item(
            id=f"it{i:06d}",
            source=SOURCES[i % len(SOURCES)],
            question=f"Synthetic question {i}?",
            options={k: f"option {k} of {i}" for k in letters},
            answer=gold,
        )
        sentences = {k: f"Sentence for option {k} of question {i}." for k in letters}
        ct = CONTENT_TYPE_KEYS[(i // 3) % len(CONTENT_TYPE_KEYS)]
        pv = PROVENANCE_KEYS[(i // 7) % len(PROVENANCE_KEYS)]
        items.append(item)
        probes += probes_from_bundle(item, sentences, ct, pv, seed)
    suite = Suite(SuiteManifest(family="misleading", name="bench", seed=seed), items, probes)
    suite_dir = run_dir / "suite"
    suite.save(suite_dir)
    suite = Suite.load(suite_dir)

    # ---- run.json
    specs = [parse_model_spec(f"openai:bench-model-{m},base_url=http://127.0.0.1:9/v1,api_key_env=BENCH_KEY") for m in range(n_models)]
    from medresilience.family import get
    from medresilience.run.resolved import resolve_run

    opts = EvalOptions(settings=settings, family={"type1": "all"})
    config = run_config(resolve_run(suite, specs, opts, family=get("misleading"), check_keys=False))
    (run_dir / "run.json").write_text(json.dumps(config, indent=2))

    # ---- store
    by_item: dict[str, list] = {}
    for p in suite.probes:
        by_item.setdefault(p.item_id, []).append(p)
    ct_index = {k: j for j, k in enumerate(CONTENT_TYPE_KEYS)}
    store = Store(run_dir / "store.sqlite")
    store.conn.execute("PRAGMA synchronous=OFF")
    store.record_run("bench", config)
    units, calls, scores, requests = [], [], [], []
    n_rows = 0

    def flush() -> None:
        store.add_plan(units, requests)
        store.write_results(calls, scores)
        units.clear(), calls.clear(), scores.clear(), requests.clear()

    for m, spec in enumerate(specs):
        acc = 0.55 + 0.35 * m / max(1, n_models - 1)  # clean accuracy varies by model
        for setting in settings:
            flip_scale = 0.5 if setting != "none" else 1.0
            for it in suite.items.values():
                wrong = [k for k in letters if k != it.answer]
                clean_ok = rng.random() < acc
                rows_here = [(it.id, None, "clean", None)]
                rows_here += [(it.id, p, p.condition, p.target) for p in by_item[it.id]]
                for item_id, probe, cond, target in rows_here:
                    n_rows += 1
                    base = item_id if probe is None else probe.id
                    unit_id = f"{base}|{cond}|{setting}|letter"
                    key = f"{n_rows:064x}"
                    units.append(UnitRow(spec.label, unit_id, item_id, None if probe is None else probe.id, cond, setting, "letter", key))
                    requests.append((key, spec.model, [], {}))
                    u = rng.random()
                    if u < 0.002:
                        continue  # missing: planned, never run
                    if u < 0.006:
                        calls.append(CallRow(key, spec.model, "error", error="synthetic 500"))
                        continue
                    if cond == "clean":
                        label = it.answer if clean_ok else wrong[int(rng.integers(len(wrong)))]
                    else:
                        flip_p = flip_scale * (0.15 + 0.05 * ct_index[probe.content_type]) * (1.6 if cond == "type2" else 1.0)
                        correct = (clean_ok and rng.random() >= flip_p) or (not clean_ok and rng.random() < 0.1)
                        if correct:
                            label = it.answer
                        elif target is not None and rng.random() < 0.7:
                            label = target
                        else:
                            label = wrong[int(rng.integers(len(wrong)))]
                    invalid = rng.random() < 0.01
                    pt, ctok = 120 + int(rng.integers(80)), 4
                    calls.append(
                        CallRow(
                            key,
                            spec.model,
                            "ok",
                            text=f"Answer: {label}",
                            finish_reason="stop",
                            prompt_tokens=pt,
                            completion_tokens=ctok,
                            cost=(pt * 0.15 + ctok * 0.6) / 1e6,
                            latency_s=0.01,
                        )
                    )
                    scores.append(
                        ScoreRow(
                            key, "letter", None if invalid else label, "invalid" if invalid else "valid", value=None if invalid else float(label == it.answer)
                        )
                    )
                    if len(units) >= batch:
                        flush()
    flush()
    store.close()
    return {"rows": n_rows, "items": n_items, "probes": len(suite.probes), "models": n_models, "settings": len(settings), "seconds": time.perf_counter() - t0}


def report_phase(run_dir: Path, out_dir: Path) -> None:
    """Child process: generate the report, print a JSON line with timings and peak memory."""
    t0 = time.perf_counter()
    from medresilience.report import build_report

    t_import = time.perf_counter() - t0
    t1 = time.perf_counter()
    res = build_report([run_dir], out_dir)
    wall = time.perf_counter() - t1
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"wall_s": wall, "import_s": t_import, "peak_rss_mib": peak_kib / 1024, "timings": res.timings, "html_bytes": res.html.stat().st_size}))


def tail_phase(run_dir: Path, out_dir: Path) -> None:
    """Child process: what `medres eval` does after its calls (the results from the store, results.json,
    the report from the same frame), with the imports the calls did not already make; one JSON line."""
    t0 = time.perf_counter()
    from medresilience.report import build_report
    from medresilience.run.evaluation import summarise_with_frame, write_results
    from medresilience.run.run_suite import find_run_suite
    from medresilience.store import Store

    t_import = time.perf_counter() - t0
    t1 = time.perf_counter()
    config = json.loads((run_dir / "run.json").read_text())
    suite, _ = find_run_suite(run_dir, config)
    with Store(run_dir / "store.sqlite") as store:
        results, frame = summarise_with_frame(store, suite, config)
    write_results(run_dir, results)
    t_results = time.perf_counter() - t1
    build_report([run_dir], out_dir, frames={run_dir: frame})
    wall = time.perf_counter() - t1
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"wall_s": wall, "import_s": t_import, "results_s": t_results, "report_s": wall - t_results, "peak_rss_mib": peak_kib / 1024}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--models", type=int, default=10)
    ap.add_argument("--dir", type=Path, default=None, help="synthetic run directory (kept and reused)")
    ap.add_argument("--fresh", action="store_true", help="re-synthesise even if the directory exists")
    ap.add_argument("--repeat", type=int, default=1, help="time the report this many times (fresh processes)")
    ap.add_argument("--tail", action="store_true", help="time what `medres eval` does after its calls (results and report) instead of the report alone")
    ap.add_argument("--phase", choices=["all", "report", "tail"], default="all", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    run_dir = args.dir or Path(f"/tmp/medres-bench-{args.rows}-{args.models}")
    out_dir = args.out or run_dir / "report"
    if args.phase == "report":
        report_phase(run_dir, out_dir)
        return
    if args.phase == "tail":
        tail_phase(run_dir, out_dir)
        return

    meta_path = run_dir / "bench.json"
    if args.fresh or not meta_path.exists():
        shutil.rmtree(run_dir, ignore_errors=True)
        run_dir.mkdir(parents=True)
        meta = synthesise(run_dir, args.rows, args.models)
        meta_path.write_text(json.dumps(meta))
        print(f"synthesised {meta['rows']:,} rows in {meta['seconds']:.1f}s -> {run_dir}", file=sys.stderr)
    meta = json.loads(meta_path.read_text())
    db_mib = (run_dir / "store.sqlite").stat().st_size / 2**20

    if args.tail:
        _print_tail(run_dir, out_dir, meta, args.repeat)
        return
    runs = _children("report", run_dir, out_dir, args.repeat)
    best = min(runs, key=lambda r: r["wall_s"])
    print()
    print("| rows | items | probes | models x settings | store (MiB) | report wall (s) | peak RSS (MiB) | breakdown (s) |")
    print("|---:|---:|---:|---|---:|---:|---:|---|")
    breakdown = ", ".join(f"{k} {v:.2f}" for k, v in best["timings"].items())
    print(
        f"| {meta['rows']:,} | {meta['items']:,} | {meta['probes']:,} | {meta['models']} x {meta['settings']} "
        f"| {db_mib:.0f} | {best['wall_s']:.2f} | {max(r['peak_rss_mib'] for r in runs):.0f} | {breakdown} |"
    )
    print()
    print(
        f"report wall times over {len(runs)} fresh process(es): "
        + ", ".join(f"{r['wall_s']:.2f}s" for r in runs)
        + f"; imports {best['import_s']:.2f}s (not counted); HTML {best['html_bytes'] / 1024:.0f} KiB; "
        f"peak RSS is ru_maxrss of the report process (includes the Python + numpy/pandas/matplotlib baseline)"
    )


def _children(phase: str, run_dir: Path, out_dir: Path, repeat: int) -> list[dict]:
    """The JSON line of `repeat` fresh processes running `phase` (a child that fails stops the bench)."""
    runs = []
    for _ in range(repeat):
        cmd = [sys.executable, __file__, "--phase", phase, "--dir", str(run_dir), "--out", str(out_dir)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.stderr.write(proc.stdout + proc.stderr)
            raise SystemExit(proc.returncode)
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return runs


def _print_tail(run_dir: Path, out_dir: Path, meta: dict, repeat: int) -> None:
    runs = _children("tail", run_dir, out_dir, repeat)
    best = min(runs, key=lambda r: r["wall_s"])
    print("| rows | models x settings | imports (s) | results (s) | report (s) | after the calls (s) | peak RSS (MiB) |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    print(
        f"| {meta['rows']:,} | {meta['models']} x {meta['settings']} | {best['import_s']:.2f} | {best['results_s']:.2f} | {best['report_s']:.2f} "
        f"| {best['wall_s']:.2f} | {max(r['peak_rss_mib'] for r in runs):.0f} |"
    )


if __name__ == "__main__":
    main()
