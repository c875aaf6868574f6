"""scripts/ray_batch.py end to end on a local single-node Ray: `medres eval --batch files` writes the
request file, the script runs it through Ray Data's HTTP request processor against the project's
stub server (an OpenAI-compatible endpoint on 127.0.0.1; no GPU), and `--batch-results` reads its
output back to the results of the same run made live. Ray is not in the project's test install:
the test runs the script with the interpreter in MEDRES_RAY_PYTHON (a venv with `medresilience[ray]`'s
`ray[data]` and aiohttp) and skips with the reason when that interpreter cannot import ray."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, eval_command, make_tiny_suite, oracle_policy
from medresilience.testing.stub import StubServer

WAITING = 3
RAY_PYTHON = os.environ.get("MEDRES_RAY_PYTHON", "python3")
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


def _ray_missing() -> str | None:
    try:
        got = subprocess.run([RAY_PYTHON, "-c", "import ray, ray.data.llm"], capture_output=True, text=True, timeout=120)
    except OSError as e:
        return f"no interpreter {RAY_PYTHON}: {e}"
    if got.returncode != 0:
        return (
            f"{RAY_PYTHON} cannot import ray and ray.data.llm (set MEDRES_RAY_PYTHON to a venv with medresilience[ray]): {got.stderr.strip().splitlines()[-1:]}"
        )
    return None


def _results(out: Path) -> dict:
    data = json.loads((out / "results.json").read_text())
    data.pop("last_execution")
    data["run"].pop("run_id")
    for u in data["usage"].values():
        u.pop("batch_calls"), u.pop("live_calls")
    return data


def test_a_batch_file_through_ray_data_ends_with_the_live_runs_results(tmp_path):
    why = _ray_missing()
    if why:
        pytest.skip(why)
    make_tiny_suite(n_copies=2).save(tmp_path / "suite")
    suite = tmp_path / "suite"
    with StubServer(policy=oracle_policy) as srv:
        live = subprocess.run(eval_command(suite, tmp_path / "live", srv.base_url), env=ENV, capture_output=True, text=True, timeout=180)
        assert live.returncode == 0, live.stderr
        first = subprocess.run(eval_command(suite, tmp_path / "run", srv.base_url, "--batch", "files"), env=ENV, capture_output=True, text=True, timeout=180)
        assert first.returncode == WAITING, first.stderr
        (request_file,) = (tmp_path / "run" / "batches").glob("medres-*.jsonl")
        ray_env = {k: v for k, v in ENV.items() if k != "PYTHONPATH"} | {"RAY_DISABLE_USAGE_STATS": "1"}
        ran = subprocess.run(
            [
                RAY_PYTHON,
                str(ROOT / "scripts" / "ray_batch.py"),
                str(request_file),
                str(tmp_path / "out.jsonl"),
                "--endpoint",
                srv.base_url,
                "--concurrency",
                "2",
            ],
            env=ray_env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert ran.returncode == 0, ran.stderr[-3000:]
        lines = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
        assert len(lines) == 40 and all(x["response"]["status_code"] == 200 for x in lines)
        done = subprocess.run(
            eval_command(suite, tmp_path / "run", srv.base_url, "--batch", "files", "--batch-results", str(tmp_path / "out.jsonl")),
            env=ENV,
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert _results(tmp_path / "run") == _results(tmp_path / "live")
