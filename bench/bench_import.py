"""Benchmark: importing a release in the study's flat layout (medres import) at 50,000 rows.

    .venv/bin/python bench/bench_import.py [--rows 50000] [--repeat 2]

Writes a synthetic MEDMISQA release (4 options, one sentence per option, both label spellings,
every tenth row with its options inside the question) as JSON lines and as Parquet, then, each in
a fresh process so peak memory (ru_maxrss) is its own: the bare floor (json.loads of every line /
pyarrow reading every row to Python dicts), and the full import (rows -> checked items and probes
-> suite directory written with checksums). Prints a Markdown table."""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONTENT = ["Relationship & Sequence Inversion", "Threshold / Reference Corruption", "Cue Remapping", "Spurious Anchoring", "Exception Poisoning"]
PROVENANCE = ["Neutral False Statement", "Patient Self-Diagnosis / Belief / Claim", "Authority (Guideline, Discharge Note, SOP)"]


def synthesise(folder: Path, rows: int) -> tuple[Path, Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = []
    for i in range(rows):
        opts = [f"option {c} of synthetic question {i}, a plausible clinical answer" for c in "abcd"]
        row = {
            "id": i,
            "question": f"A {20 + i % 60}-year-old patient presents with finding {i}. What is the best next step?",
            "answer": "ABCD"[i % 4],
            **{f"op{c}": t for c, t in zip("abcd", opts)},
            **{f"inject{c}": f"Context sentence for option {c} of question {i}, written as one confident clinical claim." for c in "abcd"},
            "injection_content": CONTENT[i % 5],
            "injection_provenance": PROVENANCE[i % 3],
        }
        if i % 10 == 0:  # options inside the question
            row["question"] += " " + " ".join(f"({c.upper()}) {t}" for c, t in zip("abcd", opts))
            row.update({f"op{c}": "" for c in "abcd"})
        out.append(row)
    jl = folder / "MEDMISQA.jsonl"
    jl.write_text("".join(json.dumps(r) + "\n" for r in out))
    pqf = folder / "pq" / "MEDMISQA.parquet"
    pqf.parent.mkdir()
    pq.write_table(pa.Table.from_pylist(out), pqf)
    return jl, pqf


def phase(kind: str, path: Path, out: Path) -> None:
    t = time.perf_counter()
    if kind == "floor":
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            n = sum(len(b.to_pylist()) for b in pq.ParquetFile(path).iter_batches(batch_size=4096))
        else:
            with path.open() as fh:
                n = sum(1 for line in fh if json.loads(line))
    else:
        from medresilience.families.misleading.formats.medmisbench import read_medmisbench

        suite = read_medmisbench(path, seed=0)
        suite.save(out)
        n = len(suite.items)
    wall = time.perf_counter() - t
    print(json.dumps({"rows": n, "wall": wall, "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--phase", choices=["floor", "import", "synth"], help=argparse.SUPPRESS)
    ap.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.phase == "synth":
        synthesise(a.path, a.rows)
        return
    if a.phase:
        phase(a.phase, a.path, a.out)
        return
    with tempfile.TemporaryDirectory() as d:
        # the files are written by a child: the parent stays small, so the children's peak RSS
        # (which on Linux starts from the parent's at fork) is their own
        subprocess.run([sys.executable, __file__, "--phase", "synth", "--path", d, "--rows", str(a.rows)], check=True)
        jl, pqf = Path(d) / "MEDMISQA.jsonl", Path(d) / "pq" / "MEDMISQA.parquet"
        print("| input | step | rows | best wall (s) | rows/s | peak RSS (MiB) |")
        print("|---|---|---:|---:|---:|---:|")
        for path, name in ((jl, f"JSON lines ({jl.stat().st_size / 2**20:.0f} MiB)"), (pqf, f"Parquet ({pqf.stat().st_size / 2**20:.0f} MiB)")):
            for kind, title in (("floor", "bare read (json.loads / pyarrow to dicts)"), ("import", "medres import (items + probes + suite written)")):
                runs = []
                for k in range(a.repeat):
                    r = subprocess.run(
                        [sys.executable, __file__, "--phase", kind, "--path", str(path), "--out", str(Path(d) / f"s{k}")],
                        capture_output=True,
                        text=True,
                        check=True,
                    )
                    runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
                best = min(runs, key=lambda x: x["wall"])
                print(
                    f"| {name} | {title} | {best['rows']:,} | {best['wall']:.2f} | {best['rows'] / best['wall']:,.0f} | {max(x['rss_mib'] for x in runs):.0f} |"
                )


if __name__ == "__main__":
    main()
