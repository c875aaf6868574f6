"""How many batches the answer-loop settings need through `medres eval --batch openai`, and what
they cost live vs as a batch: each setting is run on the bundled suite's first N items, live and
then as a batch, against the stub (the scripted team or agent, every batch ended at the first
look), with the model priced at gpt-4o-mini's list prices ($0.15 / $0.60 per 1M prompt / completion
tokens; the stub counts tokens as words, so the money is illustrative, the ratio is not). For each:
the units, the batches the run took, the runs of the command (each one but the last exits 3), the
model calls, and results.json's cost as made, all live and all as a batch. The batch run's results
(without how its replies came) are checked equal to the live run's.

    .venv/bin/python bench/bench_batch_loops.py [--items 10]

Prints a Markdown table."""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import tempfile
from pathlib import Path

from medresilience.corpus import CorpusIndex, build_index
from medresilience.run.bundled_suite import sample_suite_dir
from medresilience.testing.eval_command import stub_eval_command
from medresilience.testing.stub import BatchEndpoints, BatchFaults, StubServer, scripted_agent, scripted_team

PRICES = "price_input=0.15,price_output=0.6"
CONVERGE = {"cardiologist": ["B", "C"], "nephrologist": ["C"], "pharmacist": ["D", "C"]}
ADVANCED = {"cardiologist": ["C"], "nephrologist": ["C"], "pharmacist": ["D"], "neurologist": ["C"], "geriatrician": ["C"], "internist": ["B"]}
PASSAGE = {"id": "p-cpr", "title": "Resuscitation", "text": "High-quality CPR in cardiac arrest: push hard and fast and keep interruptions short."}


def _command(out: Path, url: str, setting: str, items: int, *extra: str) -> list[str]:
    return stub_eval_command(sample_suite_dir(), out, url, [setting], *extra, limit=items, model_opts=f"concurrency=8,{PRICES}")


def _results(out: Path) -> dict:
    data = json.loads((out / "results.json").read_text())
    data.pop("last_execution")
    data["run"].pop("run_id")
    for u in data["usage"].values():
        for k in ("batch_calls", "live_calls", "cost", "cost_live", "cost_batch"):
            u.pop(k)
    return data


def measure(setting: str, policy, items: int, root: Path) -> dict:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    eps = BatchEndpoints(BatchFaults(polls=0))
    with StubServer(policy=policy, batches=eps) as srv:
        live = subprocess.run(_command(root / "live", srv.base_url, setting, items), env=env, capture_output=True, text=True)
        assert live.returncode == 0, live.stderr
        runs = 0
        while True:
            runs += 1
            done = subprocess.run(_command(root / "batch", srv.base_url, setting, items, "--batch", "openai"), env=env, capture_output=True, text=True)
            if done.returncode != 3:
                break
        assert done.returncode == 0, done.stdout + done.stderr
    assert _results(root / "batch") == _results(root / "live"), f"{setting}: the batch run's results differ from the live run's"
    con = sqlite3.connect(root / "batch" / "store.sqlite")
    batches = con.execute("SELECT COUNT(*) FROM batches").fetchone()[0]
    units = con.execute("SELECT COUNT(*) FROM units").fetchone()[0]
    con.close()
    u = json.loads((root / "batch" / "results.json").read_text())["usage"]["stub-model"]
    assert not eps.paid_twice()
    return {"setting": setting, "units": units, "batches": batches, "runs": runs, "calls": u["batch_calls"], **{k: u[k] for k in ("cost_live", "cost_batch")}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--items", type=int, default=10)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "corpus.jsonl").write_text(json.dumps(PASSAGE) + "\n")
        build_index(root / "corpus.jsonl", root / "corpus.sqlite")
        with CorpusIndex(root / "corpus.sqlite") as idx:
            pid = f"P{idx.search('cardiac arrest', 1)[0].rowid}"
        agent = scripted_agent([("search", "cardiac arrest"), ("read", pid), ("answer", f'Answer: C\nSOURCE: {pid} "push hard and fast"')])
        cases = [
            ("none", scripted_team()),
            ("team,mode=basic", scripted_team(basic="Answer: B")),
            ("team,mode=intermediate", scripted_team(positions=CONVERGE)),
            ("team,mode=intermediate,rounds=2", scripted_team(positions={"cardiologist": ["B"], "nephrologist": ["C"], "pharmacist": ["D"]})),
            ("team,monitor=self", scripted_team(positions=CONVERGE)),
            ("team,experts=3", scripted_team(level="advanced", positions=ADVANCED)),
            (f"agent:{root / 'corpus.sqlite'},protocol=text", agent),
        ]
        rows = [measure(s, p, args.items, root / f"case{i}") for i, (s, p) in enumerate(cases)]
    print("| setting | units | batches | runs of the command | calls | cost live | cost as a batch |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        name = "agent:INDEX,protocol=text" if r["setting"].startswith("agent:") else r["setting"]
        print(f"| `{name}` | {r['units']} | {r['batches']} | {r['runs']} | {r['calls']} | ${r['cost_live']:.4f} | ${r['cost_batch']:.4f} |")


if __name__ == "__main__":
    main()
