"""The embedded server's start, first-token latency, decode speed and stop, as `embedded.serve`
hosts it (run it once with each version of the code on PYTHONPATH to compare two ways of hosting).
Prints one Markdown table row.

    PYTHONPATH=src .venv/bin/python bench/bench_embedded_host.py [--model qwen] [--calls 4] [--label child]

Each call streams one chat completion (temperature 0, max_tokens 64) of a fixed MCQ prompt: the
first-token latency is the time to the first content chunk, the decode speed the content chunks
after it over the time after it (llama.cpp streams one token per chunk). The medians over the
calls are printed, after one warm-up call that is not counted."""

from __future__ import annotations

import argparse
import statistics
import time

PROMPT = (
    "A 54-year-old man has crushing chest pain for 40 minutes, radiating to the left arm, with ST "
    "elevation in leads II, III and aVF. Which coronary artery is most likely occluded?\n"
    "A. Left anterior descending\nB. Left circumflex\nC. Right coronary artery\nD. Left main\n"
    "Explain briefly, then give the letter."
)


def _one(client, model: str) -> tuple[float, float, int]:
    """(seconds to the first content chunk, decode tokens per second after it, content chunks)."""
    t0 = time.perf_counter()
    first = None
    chunks = 0
    stream = client.chat.completions.create(model=model, messages=[{"role": "user", "content": PROMPT}], max_tokens=64, temperature=0, seed=0, stream=True)
    for ev in stream:
        if ev.choices and ev.choices[0].delta.content:
            chunks += 1
            if first is None:
                first = time.perf_counter()
    end = time.perf_counter()
    assert first is not None, "no content streamed"
    return first - t0, (chunks - 1) / (end - first) if end > first else 0.0, chunks


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen")
    ap.add_argument("--calls", type=int, default=4)
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    from openai import OpenAI

    import medresilience
    from medresilience.models import embedded

    t = time.perf_counter()
    with embedded.serve(args.model, n_parallel=1) as url:
        started = time.perf_counter() - t
        client = OpenAI(base_url=url, api_key="none", timeout=600)
        _one(client, args.model)
        runs = [_one(client, args.model) for _ in range(args.calls)]
        client.close()
        t = time.perf_counter()
    stopped = time.perf_counter() - t
    ttft = statistics.median(r[0] for r in runs)
    tps = statistics.median(r[1] for r in runs)
    label = args.label or medresilience.__file__
    print(f"| {label} | {args.model} | {args.calls} | {started:.2f} | {ttft * 1000:.0f} | {tps:.1f} | {stopped:.2f} |", flush=True)


if __name__ == "__main__":
    main()
