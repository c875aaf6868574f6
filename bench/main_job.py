"""The main job (`medres eval` of the bundled sample suite: 48 items, clean + Type 1 + Type 2 =
144 calls) timed with each order of the calls, each run in a fresh directory with a freshly
started server (so no prompt cache carries over between runs):

  rounds     the planner's order (call_order.in_rounds): the items taken `concurrency` at a time,
             their clean, Type 1 and Type 2 prompts queued in rounds, so each in-flight call is of
             another item and an item's next prompt finds its prefix in the slot that served it;
  item       each item's three prompts one after the other (the order before in_rounds): with two
             calls in flight, an item's clean and Type 1 prompts run at once on two slots, both
             computing the shared prefix;
  condition  every clean prompt, then every Type 1, then every Type 2 (no prefix is ever reused).

Prints, per order and repeat: seconds for the whole run, seconds to the first answer, calls made.

    flock /tmp/medres-heavy.lock python bench/main_job.py --out /tmp/mainjob            # embedded default
    python bench/main_job.py --stub --out /tmp/mainjob-stub                              # the harness only

Run it under the shared heavy-work lock with the embedded model, on a quiet machine; `--stub`
runs the same job on the stub server (a fixed delay per call: it checks the bench, not the cache)."""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import time
from pathlib import Path

from medresilience import EvalOptions, evaluate, parse_model_spec
from medresilience.run import runner as runner_module
from medresilience.run.bundled_suite import sample_suite
from medresilience.run.call_order import in_rounds


def _item_order(units, width, item_of):
    return list(units)


def _condition_order(units, width, item_of):
    return in_rounds(units, len(units) + 1, item_of)  # one round over every item


ORDERS = {"rounds": in_rounds, "item": _item_order, "condition": _condition_order}


def run_once(spec_text: str, order: str, out: Path, limit: int | None) -> dict:
    runner_module.in_rounds = ORDERS[order]  # the one place the planner orders the calls
    shutil.rmtree(out, ignore_errors=True)
    first: list[float] = []
    t0 = time.perf_counter()

    def progress(done: int, total: int, waits: int = 0) -> None:
        if done and not first:
            first.append(time.perf_counter() - t0)

    try:
        res = evaluate(sample_suite(), [parse_model_spec(spec_text)], out, EvalOptions(limit=limit), progress=progress)
    finally:
        runner_module.in_rounds = in_rounds
    secs = time.perf_counter() - t0
    return {"order": order, "seconds": round(secs, 2), "first_answer_s": round(first[0], 2) if first else None, "calls": res.stats.called}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="embedded", help="model spec (default: the embedded default model)")
    ap.add_argument("--stub", action="store_true", help="run on the stub server instead (a delay per call), to check the bench")
    ap.add_argument("--delay", type=float, default=0.02, help="the stub's seconds per call")
    ap.add_argument("--orders", default="item,rounds", help="comma separated: rounds, item, condition")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--limit", type=int, default=None, help="first N items only (default: all 48)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    orders = [o.strip() for o in args.orders.split(",") if o.strip()]
    with contextlib.ExitStack() as stack:
        spec = args.model
        if args.stub:
            from medresilience.testing.stub import Faults, StubServer

            srv = stack.enter_context(StubServer(faults=Faults(delay=args.delay)))
            spec = f"openai:stub-model,base_url={srv.base_url},concurrency=2"
        rows = [run_once(spec, o, args.out / f"{o}-{r}", args.limit) for r in range(args.repeat) for o in orders]
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
