"""Peak memory and wall time of `medres eval` with work to do, at 10k, 100k and 1M units (issue #26
item 11). Prints a Markdown table for BENCHMARKS.md (and one JSON line per run).

    .venv/bin/python bench/bench_memory.py --units 10000 100000 [--keep DIR] [--without DEVICE]

For each N a misleading suite of N/5 items is written on disk, item by item (the suite is never
held in memory here): four options each, one bundle of four sentences, so one clean unit, three
Type 1 and one Type 2 probe an item under `-O type1=all` (5 units an item). Then `medres eval`
runs it in a fresh child process against the instant stub server (`StubProcess`, policy `hash`,
its own process) at concurrency 64, into an empty run directory: every unit has a call to make.
The child's peak RSS is its own (`os.wait4`'s `ru_maxrss`), wall time from spawn to exit.
`--without DEVICE` runs `medres eval` twice on each suite, into two empty run directories: first
with every device on, then with MEDRES_DEVICES_OFF=DEVICE (runtime/devices.py), one row each.
`--resume` also measures a second `medres eval` on the same run directory after the first was
killed (SIGKILL) half way: it must make only the calls left.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEDRES = [sys.executable, "-c", "from medresilience.cli import app; app()"]


def write_suite(directory: Path, n_items: int) -> None:
    """A misleading suite of `n_items` synthetic items, written line by line with its manifest."""
    from medresilience.families.misleading.bundles import probes_from_bundle
    from medresilience.records import Item, SuiteManifest
    from medresilience.runtime.fileio import dump_line, sha256_file

    directory.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {"items": 0, "probes": 0}
    with open(directory / "items.jsonl", "w", encoding="utf-8") as fi, open(directory / "probes.jsonl", "w", encoding="utf-8") as fp:
        for i in range(n_items):
            opts = {k: f"option {k} for synthetic question {i}" for k in "ABCD"}
            it = Item(id=f"s{i}", source=f"synthetic{i % 3}", question=f"Synthetic question {i}?", options=opts, answer="ABCD"[i % 4])
            fi.write(dump_line(it))
            counts["items"] += 1
            sentences = {k: f"Sentence for option {k} of question {i}." for k in "ABCD"}
            for p in probes_from_bundle(it, sentences, "cue_remapping", "neutral", seed=1):
                fp.write(dump_line(p))
                counts["probes"] += 1
                counts[p.condition] = counts.get(p.condition, 0) + 1
    checksums = {f: sha256_file(directory / f) for f in ("items.jsonl", "probes.jsonl")}
    manifest = SuiteManifest(name=f"synthetic-{n_items}", family="misleading", seed=1, counts=counts, checksums=checksums)
    (directory / "suite.json").write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra or {})
    return env


def eval_once(suite: Path, out: Path, url: str, kill_after: float | None = None, env: dict[str, str] | None = None) -> dict:
    """`medres eval` in a child process: its exit code, wall time and peak RSS (MiB); killed with
    SIGKILL after `kill_after` seconds when given."""
    argv = [*MEDRES, "eval", "--suite", str(suite), "--out", str(out), "-O", "type1=all", "--model", f"openai:stub-model,base_url={url},concurrency=64"]
    t = time.perf_counter()
    proc = subprocess.Popen(argv, env=_env(env), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if kill_after is not None:
        try:
            proc.wait(kill_after)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    err = proc.stderr.read() if proc.stderr else ""
    rc = os.waitstatus_to_exitcode(status)
    return {"rc": rc, "wall_s": wall, "peak_rss_mib": usage.ru_maxrss / 1024, "stderr_tail": err.strip().splitlines()[-1:] if rc else []}


def store_counts(out: Path) -> dict:
    import sqlite3

    con = sqlite3.connect(out / "store.sqlite")
    try:
        return {
            "calls_ok": con.execute("SELECT COUNT(*) FROM calls WHERE status = 'ok'").fetchone()[0],
            "units": con.execute("SELECT COUNT(*) FROM units").fetchone()[0],
            "scores": con.execute("SELECT COUNT(*) FROM scores").fetchone()[0],
        }
    finally:
        con.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--units", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--keep", type=Path, default=None, help="write suites and runs here (default: a temporary directory)")
    ap.add_argument("--resume", action="store_true", help="also kill a run half way and measure the rerun")
    ap.add_argument("--without", default=None, help="also run each suite with this device off (MEDRES_DEVICES_OFF)")

    args = ap.parse_args()
    from medresilience.runtime import devices
    from medresilience.testing.stub import StubProcess

    if args.without is not None and args.without not in devices.DEVICES:
        ap.error(f"--without: {args.without!r} is not a device; the devices: {', '.join(devices.DEVICES)}")
    ways = [("on", None)] + ([(f"{args.without} off", {devices.VARIABLE: args.without})] if args.without else [])
    rows = []
    with tempfile.TemporaryDirectory(dir=args.keep) as tmp, StubProcess(policy="hash") as stub:
        base = Path(tmp)
        for units in args.units:
            suite = base / f"suite-{units}"
            t = time.perf_counter()
            write_suite(suite, max(1, units // 5))
            made = time.perf_counter() - t
            for way, env in ways:
                out = base / f"run-{units}"
                r = {
                    "units": units,
                    "devices": way,
                    "suite_mib": sum(f.stat().st_size for f in suite.iterdir()) / 2**20,
                    "suite_write_s": made,
                    "commit": subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
                    "load_before": " ".join(f"{x:.2f}" for x in os.getloadavg()),
                }
                r["first"] = eval_once(suite, out, stub.base_url, env=env)
                r["first"].update(store_counts(out))
                r["load_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
                if args.resume:
                    out2 = base / f"killed-{units}"
                    r["killed"] = eval_once(suite, out2, stub.base_url, kill_after=r["first"]["wall_s"] / 2, env=env)
                    before = store_counts(out2)
                    r["rerun"] = eval_once(suite, out2, stub.base_url, env=env)
                    r["rerun"].update(store_counts(out2), calls_before=before["calls_ok"])
                    shutil.rmtree(out2, ignore_errors=True)
                rows.append(r)
                print(json.dumps(r), flush=True)
                shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(suite, ignore_errors=True)
    print("| units | devices | suite on disk (MiB) | `medres eval` wall (s) | calls/s | peak RSS (MiB) | exit | load before; after |")
    print("|---:|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        f = r["first"]
        print(
            f"| {r['units']:,} | {r['devices']} | {r['suite_mib']:.0f} | {f['wall_s']:.1f} | {f['calls_ok'] / f['wall_s']:,.0f} | {f['peak_rss_mib']:.0f} | {f['rc']} | {r['load_before']}; {r['load_after']} |"
        )


if __name__ == "__main__":
    main()
