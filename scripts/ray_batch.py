"""Run an OpenAI batch request file (what `medres eval --batch files` writes) through Ray Data's LLM
processor (vLLM engines on a Ray cluster) and write the OpenAI batch output file that
`medres eval --batch files --batch-results OUTPUT` reads back.

    pip install 'medresilience[ray]'   # ray[data,llm] and vllm; not part of the test install
    python scripts/ray_batch.py runs/x/batches/medres-....jsonl output.jsonl --model Qwen/Qwen2.5-7B-Instruct

Every request line keeps its `custom_id` (the run's store key); each output line is
`{"id", "custom_id", "response": {"status_code": 200, "body": <chat completion>}, "error": null}`,
or a 500 with the engine's error, which the next `medres eval` sends again. Ray schedules the work;
this script only maps lines to the processor and back. It is not run by the test suite (Ray and
vLLM need GPUs and a large install); the output format is the one tests/spine/run/test_batch.py
reads back."""

from __future__ import annotations

import argparse
import json
import time
import uuid


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("requests", help="the batch request file (OpenAI batch JSONL)")
    ap.add_argument("output", help="the output file to write (OpenAI batch output JSONL)")
    ap.add_argument("--model", required=True, help="the model vLLM serves (a Hugging Face name or a local path)")
    ap.add_argument("--concurrency", type=int, default=1, help="vLLM engine replicas")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--tensor-parallel-size", type=int, default=1)
    args = ap.parse_args()

    import ray
    import ray.data.llm as llm

    build = getattr(llm, "build_processor", None) or llm.build_llm_processor  # the newer name first

    lines = [json.loads(x) for x in open(args.requests, encoding="utf-8") if x.strip()]
    rows = [{"custom_id": x["custom_id"], "body": json.dumps(x["body"])} for x in lines]
    config = llm.vLLMEngineProcessorConfig(
        model_source=args.model,
        engine_kwargs={"tensor_parallel_size": args.tensor_parallel_size},
        concurrency=args.concurrency,
        batch_size=args.batch_size,
    )

    def preprocess(row: dict) -> dict:
        body = json.loads(row["body"])
        sampling = {k: body[k] for k in ("temperature", "top_p", "seed") if body.get(k) is not None}
        sampling["max_tokens"] = body.get("max_tokens") or body.get("max_completion_tokens") or 512
        return {"custom_id": row["custom_id"], "messages": body["messages"], "sampling_params": sampling}

    def postprocess(row: dict) -> dict:
        return {
            "custom_id": row["custom_id"],
            "text": row.get("generated_text"),
            "prompt_tokens": row.get("num_input_tokens") or 0,
            "completion_tokens": row.get("num_generated_tokens") or 0,
        }

    processor = build(config, preprocess=preprocess, postprocess=postprocess)
    ray.init(ignore_reinit_error=True)
    done = processor(ray.data.from_items(rows)).take_all()
    with open(args.output, "w", encoding="utf-8") as fh:
        for row in done:
            rid = f"ray-{uuid.uuid4().hex[:12]}"
            if row.get("text") is None:
                response = {"status_code": 500, "request_id": rid, "body": {"error": {"message": "no text from the engine", "type": "server_error"}}}
            else:
                body = {
                    "id": rid,
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": args.model,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": row["text"]}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": row["prompt_tokens"], "completion_tokens": row["completion_tokens"]},
                }
                response = {"status_code": 200, "request_id": rid, "body": body}
            fh.write(json.dumps({"id": rid, "custom_id": row["custom_id"], "response": response, "error": None}) + "\n")


if __name__ == "__main__":
    main()
