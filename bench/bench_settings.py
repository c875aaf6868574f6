"""Benchmark: what a mitigation setting adds per item to an evaluation, against the stub server.

    .venv/bin/python bench/bench_settings.py [--repeat 3] [--delay 0.05] [--concurrency 16]

The bundled sample suite (48 items; clean, the seeded Type 1 probe and the Type 2 bundle: 144
units a setting) is evaluated against the stub server in its own process (policy hash), under
each setting alone, in a fresh run directory: `none`, `caution` (one call per unit, a longer
system prompt), `monitor` (the answering model writes a note first: two calls per unit) and
`monitor:SPEC` (another stub process writes the notes). Twice: with an instant stub (the harness's
own overhead) and with `--delay` seconds added to every reply (a model that takes time: the pre-calls
and the answers are two rounds). Best of `--repeat`, alternating the settings. A rerun of the last
run directory (nothing to call: the settled fast path) is timed too. Tokens per item are the stub's
counts (words) read back from the store with `Store.setting_costs`, answer and linked calls
together. Prints a Markdown table."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def bench(work: Path, repeat: int, delay: float, concurrency: int) -> list[dict]:
    from medresilience.models.spec import parse_model_spec
    from medresilience.run.bundled_suite import sample_suite
    from medresilience.run.evaluation import evaluate
    from medresilience.run.runner import EvalOptions
    from medresilience.store import Store
    from medresilience.testing.stub import Faults, StubProcess

    suite = sample_suite()
    items = len(suite.items)
    rows: list[dict] = []
    faults = Faults(delay=delay)
    with StubProcess(policy="hash", faults=faults) as stub, StubProcess(policy="hash", faults=faults) as mon:
        spec = parse_model_spec(f"openai:stub,base_url={stub.base_url},concurrency={concurrency}")
        other = f"monitor:openai:mon,base_url={mon.base_url},label=mon,concurrency={concurrency}"
        settings = [("none", "none"), ("caution", "caution"), ("monitor", "monitor"), ("monitor:SPEC", other)]
        evaluate(suite, [spec], work / "warm-up", EvalOptions(settings=("none",)))  # imports, connections, first-call costs
        best: dict[str, dict] = {}
        for r in range(repeat):
            for label, setting in settings:
                b = best.setdefault(label, {"eval": float("inf")})
                out = work / f"d{delay}-{label.replace(':', '_')}-{r}"
                t = time.perf_counter()
                res = evaluate(suite, [spec], out, EvalOptions(settings=(setting,)))
                b["eval"] = min(b["eval"], time.perf_counter() - t)
                assert res.stats.errors == 0 and res.stats.not_run == 0
                b["units"], b["calls"] = res.stats.planned_units, res.stats.called
                t = time.perf_counter()
                again = evaluate(suite, [spec], out, EvalOptions(settings=(setting,)))
                b["rerun"] = min(b.get("rerun", float("inf")), time.perf_counter() - t)
                assert again.stats.called == 0
                with Store(out / "store.sqlite") as st:
                    c = st.setting_costs()["stub"][setting]
                b["tokens"] = (c["prompt_tokens"] + c["completion_tokens"]) / c["items"]
        for label, _ in settings:
            b = best[label]
            rows.append({"delay": delay, "setting": label, "items": items, **b, "per_item_ms": 1000 * b["eval"] / items})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--delay", type=float, default=0.05, help="seconds the slow stub adds to every reply")
    ap.add_argument("--concurrency", type=int, default=16)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for delay in (0.0, args.delay):
            rows += bench(Path(tmp), args.repeat, delay, args.concurrency)
    print("| stub reply delay (s) | setting | units | calls | evaluate (s) | per item (ms) | vs none per item (ms) | tokens per item | settled rerun (s) |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        none = next(x for x in rows if x["delay"] == r["delay"] and x["setting"] == "none")
        diff = r["per_item_ms"] - none["per_item_ms"]
        print(
            f"| {r['delay']:g} | {r['setting']} | {r['units']} | {r['calls']} | {r['eval']:.2f} | {r['per_item_ms']:.1f} | "
            f"{'' if r is none else f'{diff:+.1f}'} | {r['tokens']:.0f} | {r['rerun']:.2f} |"
        )


if __name__ == "__main__":
    main()
