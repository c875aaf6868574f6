"""Benchmark: building the deterministic clinical-noise variants (medres build noise) for 10,000
vignettes.

    .venv/bin/python bench/bench_noise.py [--rows 10000] [--repeat 2] [--cases-only]

The 637 MedQA test rows of ../shared/data (us_4options_test_even.jsonl) are replicated under new
ids (`medqa-12~r3`) to `--rows` items, written as an items .jsonl (with `--cases-only`, only the
rows that are diagnosis cases are replicated, so every item is a case). The fake generator's red
herrings (families.noise.testing.FakeGenerator, served by the stub server) are stored once
for the distinct cases, in a work store every measured build shares: the measured builds make no
call (the generator's URL points nowhere; a build that tried one would fail the benchmark) and
read every red-herring reply back from the store, as a rerun of a real build does.

Each step runs in a fresh process (the inputs are written by another child, so the measured
process's peak RSS, ru_maxrss, is its own); best wall of `--repeat`, largest RSS:

- floor: read the items file (json.loads of every line) and split every vignette into sentences
  (`split.split`), nothing else;
- abbreviations: the build with the abbreviations variant only (the Vanderbilt inventories, no
  store);
- deterministic: the build with every variant that needs no new call: red herrings 1 / 5 / 10
  spread and the block of 10 (from the stored replies), the whitespace control and abbreviations.

Builds read the items, find the diagnosis cases (the others are skipped and counted), draw the
positions, check every probe against its case and write the suite, build_report and decisions.
Prints a Markdown table."""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEDQA = ROOT.parent / "shared" / "data" / "medqa" / "us_4options_test_even.jsonl"
INVENTORIES = ROOT.parent / "shared" / "data" / "abbreviations"
HERRINGS = ("redherring-1", "redherring-5", "redherring-10", "together-10", "whitespace")
STEPS = {
    "floor": "bare floor: read + split every vignette",
    "abbreviations": "build: abbreviations only",
    "deterministic": "build: red herrings (stored) 1/5/10 + block + whitespace + abbreviations",
}
GENERATOR = "openai:fake-gen,max_retries=0,base_url="


def synthesise(folder: Path, rows: int, cases_only: bool = False) -> None:
    """items.jsonl of `rows` items, and the fake generator's replies in folder/work/store.sqlite."""
    from medresilience.families.noise.construct.build import NoiseBuildOptions, build_noise
    from medresilience.families.noise.construct.cases import CaseSkip, diagnosis_cases, load_items_file
    from medresilience.families.noise.testing import FakeGenerator
    from medresilience.models.spec import parse_model_spec
    from medresilience.runtime.fileio import write_jsonl
    from medresilience.testing.stub import StubServer

    base = load_items_file(MEDQA)
    if cases_only:
        base = [it for it, x in zip(base, diagnosis_cases(base)) if not isinstance(x, CaseSkip)]
    items = [base[i % len(base)].model_copy(update={"id": f"{base[i % len(base)].id}~r{i // len(base)}"}) for i in range(rows)]
    write_jsonl(folder / "items.jsonl", items)
    with StubServer(policy=FakeGenerator()) as srv:
        res = build_noise(
            base, folder / "seed-suite", parse_model_spec(GENERATOR + srv.base_url), NoiseBuildOptions(variants=HERRINGS), work_dir=folder / "work"
        )
    print(json.dumps({"rows": rows, "distinct_cases": res.report["items"]["cases"], "calls": res.report["totals"]["calls_made"]}))


def phase(kind: str, folder: Path, out: Path) -> None:
    """One measured step (imports before the clock starts)."""
    from medresilience.families.noise.construct.build import NoiseBuildOptions, build_noise
    from medresilience.families.noise.construct.split import split
    from medresilience.models.spec import parse_model_spec

    t = time.perf_counter()
    if kind == "floor":
        rows = sentences = 0
        with (folder / "items.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                sentences += len(split(json.loads(line)["question"]))
                rows += 1
        res = {"rows": rows, "cases": None, "probes": None, "sentences": sentences}
    else:
        variants = ("abbreviations",) if kind == "abbreviations" else (*HERRINGS, "abbreviations")
        gen = None if kind == "abbreviations" else parse_model_spec(GENERATOR + "http://127.0.0.1:9")
        b = build_noise(folder / "items.jsonl", out, gen, NoiseBuildOptions(variants=variants, abbreviations=(str(INVENTORIES),)), work_dir=folder / "work")
        t_ = b.report["totals"]
        if t_["calls_made"] or t_["call_errors"]:
            raise SystemExit(f"the build made calls ({t_}): the stored replies were not found")
        res = {"rows": b.report["items"]["input"], "cases": b.report["items"]["cases"], "probes": b.report["items"]["probes"], "reused": t_["reused"]}
    res |= {"wall": time.perf_counter() - t, "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    print(json.dumps(res))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--cases-only", action="store_true", help="replicate only the MedQA rows that are diagnosis cases")
    ap.add_argument("--phase", choices=["synth", *STEPS], help=argparse.SUPPRESS)
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.phase == "synth":
        synthesise(a.folder, a.rows, a.cases_only)
        return
    if a.phase:
        phase(a.phase, a.folder, a.out)
        return
    with tempfile.TemporaryDirectory() as d:
        # the inputs are written by a child: the parent stays small, so the children's peak RSS
        # (which on Linux starts from the parent's at fork) is their own
        r = subprocess.run(
            [sys.executable, __file__, "--phase", "synth", "--folder", d, "--rows", str(a.rows), *(["--cases-only"] if a.cases_only else [])],
            check=True,
            capture_output=True,
            text=True,
        )
        synth = json.loads(r.stdout.strip().splitlines()[-1])
        print(f"{synth['rows']:,} items ({synth['distinct_cases']} distinct diagnosis cases, whose red herrings took {synth['calls']} stored calls)\n")
        print("| step | items | cases | probes | best wall (s) | items/s | cases/s | peak RSS (MiB) |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for kind, title in STEPS.items():
            runs = []
            for k in range(a.repeat):
                r = subprocess.run(
                    [sys.executable, __file__, "--phase", kind, "--folder", d, "--out", str(Path(d) / f"{kind}-{k}")], capture_output=True, text=True
                )
                if r.returncode:
                    raise SystemExit(r.stderr[-2000:])
                runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
            best = min(runs, key=lambda x: x["wall"])
            cases = "—" if best["cases"] is None else f"{best['cases']:,}"
            probes = "—" if best["probes"] is None else f"{best['probes']:,}"
            cps = "—" if best["cases"] is None else f"{best['cases'] / best['wall']:,.0f}"
            print(
                f"| {title} | {best['rows']:,} | {cases} | {probes} | {best['wall']:.2f} | {best['rows'] / best['wall']:,.0f} | "
                f"{cps} | {max(x['rss_mib'] for x in runs):.0f} |"
            )


if __name__ == "__main__":
    main()
