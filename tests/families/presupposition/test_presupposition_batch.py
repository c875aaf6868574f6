"""A judged run through `--batch openai`: the answers go out as one batch, and the judge's calls,
which need the stored answers, as the next batch once they are collected; the run ends with the
results the same run gets live (the same stub answers both ways)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from medresilience.cli import app
from medresilience.testing.stub import BatchEndpoints, BatchFaults, StubServer
from test_presupposition_eval import make_suite, policy


def _results(out):
    """results.json without its run id, its last execution's counters and how its replies came
    (through a batch or live)."""
    data = json.loads((out / "results.json").read_text())
    data.pop("last_execution")
    data["run"].pop("run_id")
    for u in data["usage"].values():
        u.pop("batch_calls"), u.pop("live_calls")
    return data


def test_the_judge_goes_out_as_the_next_batch_and_the_results_equal_the_live_runs(tmp_path):
    suite = make_suite(tmp_path / "suite")
    eps = BatchEndpoints(BatchFaults(polls=0))
    cli = CliRunner()
    with StubServer(policy=policy, batches=eps) as srv:
        args = [
            "eval",
            "--suite",
            str(suite.path),
            "-m",
            f"openai:gpt-4o,base_url={srv.base_url},max_retries=0",
            "--judge",
            f"openai:judge-4,base_url={srv.base_url}",
        ]
        live = cli.invoke(app, [*args, "--out", str(tmp_path / "live")])
        assert live.exit_code == 0, live.output
        codes, outputs = [], []
        for _ in range(5):
            r = cli.invoke(app, [*args, "--out", str(tmp_path / "batch"), "--batch", "openai"])
            codes.append(r.exit_code)
            outputs.append(r.output)
            if r.exit_code != 3:
                break
    assert codes == [3, 3, 0], outputs
    assert "submitted, 27 calls" in outputs[0]  # the answers
    assert "27 stored" in outputs[1] and "submitted, 27 calls" in outputs[1]  # answers collected, the judge's calls sent
    batches = [b for b in eps.batches.values()]
    assert [b.lines[0]["body"]["model"] for b in batches] == ["gpt-4o", "judge-4"]
    assert not eps.paid_twice()
    assert _results(tmp_path / "batch") == _results(tmp_path / "live")
