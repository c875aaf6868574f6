"""`medres export` on runs of growing size (issue #28 item 4): wall time, peak memory and file size
of each format. Prints a Markdown table for BENCHMARKS.md (and one JSON line per export).

    .venv/bin/python bench/bench_export.py --units 10000 50000 [--keep DIR]

For each N a misleading suite of N/5 items (bench_memory.write_suite: one clean unit, three Type 1
and one Type 2 probe an item under `-O type1=all`) is run with `medres eval` against the instant
stub server (its own process, policy `hash`); then `medres export RUN --format F` runs in a fresh
child process for each format (inspect as .eval, jsonl, parquet). Peak RSS is the child's own
(`os.wait4`'s `ru_maxrss`). The rows stream from the store in chunks, so the flat formats' memory
should not grow with N; the inspect log also recomputes the run's headline metrics through the
results frame (a few bytes a unit)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from bench_memory import MEDRES, ROOT, _env, eval_once, write_suite

FORMATS = (("inspect", ".eval"), ("jsonl", ".jsonl"), ("parquet", ".parquet"))


def export_once(run: Path, fmt: str, out: Path) -> dict:
    """`medres export` in a child process: its exit code, wall time, peak RSS (MiB), file size (MiB)."""
    t = time.perf_counter()
    proc = subprocess.Popen(
        [*MEDRES, "export", str(run), "--format", fmt, "--out", str(out)], env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    err = proc.stderr.read() if proc.stderr else ""
    rc = os.waitstatus_to_exitcode(status)
    size = out.stat().st_size / 2**20 if out.exists() else 0.0
    return {
        "format": fmt,
        "rc": rc,
        "wall_s": wall,
        "peak_rss_mib": usage.ru_maxrss / 1024,
        "file_mib": size,
        "stderr_tail": err.strip().splitlines()[-1:] if rc else [],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--units", type=int, nargs="+", default=[10_000, 50_000])
    ap.add_argument("--keep", type=Path, default=None, help="work here (default: a temporary directory)")
    args = ap.parse_args()
    from medresilience.testing.stub import StubProcess

    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    rows = []
    with tempfile.TemporaryDirectory(dir=args.keep) as tmp, StubProcess(policy="hash") as stub:
        base = Path(tmp)
        for units in args.units:
            suite, run = base / f"suite-{units}", base / f"run-{units}"
            write_suite(suite, max(1, units // 5))
            made = eval_once(suite, run, stub.base_url)
            if made["rc"] != 0:
                raise SystemExit(f"medres eval failed: {made}")
            for fmt, suffix in FORMATS:
                r = {"units": units, "commit": commit, **export_once(run, fmt, base / f"units-{units}{suffix}")}
                rows.append(r)
                print(json.dumps(r), flush=True)
                (base / f"units-{units}{suffix}").unlink(missing_ok=True)
            shutil.rmtree(suite, ignore_errors=True)
            shutil.rmtree(run, ignore_errors=True)
    print("| units | format | wall (s) | units/s | peak RSS (MiB) | file (MiB) | exit |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['units']:,} | {r['format']} | {r['wall_s']:.1f} | {r['units'] / r['wall_s']:,.0f} | {r['peak_rss_mib']:.0f} | {r['file_mib']:.1f} | {r['rc']} |"
        )


if __name__ == "__main__":
    main()
