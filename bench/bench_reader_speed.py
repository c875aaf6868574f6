"""The answer reader's CPU per reply, this checkout against another revision, on the real replies of
tests/data/replies (every mcq file) and on a terse "Answer: B" (the harness benchmark's replies).

    .venv/bin/python bench/bench_reader_speed.py --base a9cbae2 [--repeat 3]

Each side reads in its own process from its own sources (the base from `git archive`), the best of
`--repeat` passes, alternating sides."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_TIMER = r"""
import glob, json, sys, time
from medresilience.scoring.letters import read_answer
rows = [json.loads(l) for f in sorted(glob.glob(sys.argv[1] + "/mcq_*.jsonl")) for l in open(f, encoding="utf-8")]
t = time.perf_counter()
for r in rows:
    read_answer(r["reply"], r["letters"], r.get("option_texts"))
corpus = time.perf_counter() - t
t = time.perf_counter()
for _ in range(20000):
    read_answer("Answer: B", "ABCD", None)
terse = (time.perf_counter() - t) / 20000
print(json.dumps({"replies": len(rows), "corpus_s": corpus, "terse_us": terse * 1e6}))
"""


def _time(src: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _TIMER, str(ROOT / "tests" / "data" / "replies")], env={"PYTHONPATH": str(src)}, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True, help="the revision to compare with")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.base, "src"], capture_output=True, check=True).stdout
        tar_path = Path(tmp) / "base.tar"
        tar_path.write_bytes(archive)
        with tarfile.open(tar_path) as tar:
            tar.extractall(tmp, filter="data")
        sides = {args.base: Path(tmp) / "src", "this checkout": ROOT / "src"}
        best: dict[str, dict] = {}
        for _ in range(args.repeat):
            for name, src in sides.items():
                got = _time(src)
                if name not in best or got["corpus_s"] < best[name]["corpus_s"]:
                    best[name] = got
    print("| reader | replies | corpus, s | per reply, ms | terse 'Answer: B', µs |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, b in best.items():
        print(f"| {name} | {b['replies']} | {b['corpus_s']:.2f} | {1000 * b['corpus_s'] / b['replies']:.2f} | {b['terse_us']:.1f} |")


if __name__ == "__main__":
    main()
