"""`medres eval --batch`: a run's calls go through a provider batch API (the stub's OpenAI files +
batches and Anthropic message batches, answered by the same policy as its chat completions), and
end with the results a live run of the same stub gets. Each `medres eval` submits or looks once
and exits 3 while a batch is in progress; the next one collects. A run killed (SIGKILL) at each
stage of a batch and resumed pays each call once (a killed run is a real process; the others run in
this process). Expired, failed and cancelled requests are sent again, never scored as errors. No
network: every server is on 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest

from conftest import eval_command, make_tiny_suite, oracle_policy, run_medres, wait_until
from medresilience.testing.stub import BatchEndpoints, BatchFaults, StubServer

WAITING = 3
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


def _eval(suite: Path, out: Path, url: str, *extra: str) -> subprocess.CompletedProcess:
    """The command run to its end in this process (conftest.run_medres); a run that is killed is a real process."""
    return run_medres(eval_command(suite, out, url, *extra))


def _until_done(suite: Path, out: Path, url: str, *extra: str, rounds: int = 12, code: int = 0) -> list[subprocess.CompletedProcess]:
    """Reruns the batch command until it stops waiting (with exit `code`); every run before the last exits 3."""
    runs = []
    for _ in range(rounds):
        runs.append(_eval(suite, out, url, *extra))
        if runs[-1].returncode != WAITING:
            break
    assert runs[-1].returncode == code, runs[-1].stdout + runs[-1].stderr
    return runs


def _results(out: Path) -> dict:
    """results.json without what names the run (its id, its last execution's counters) and how
    its replies came (through a batch or live: the one thing a batch run's usage differs in)."""
    data = json.loads((out / "results.json").read_text())
    data.pop("last_execution")
    data["run"].pop("run_id")
    for u in data["usage"].values():
        u.pop("batch_calls"), u.pop("live_calls")
    return data


def _calls(out: Path) -> list[tuple]:
    con = sqlite3.connect(out / "store.sqlite")
    try:
        return sorted(con.execute("SELECT key, status, text, finish_reason, prompt_tokens, completion_tokens FROM calls").fetchall())
    finally:
        con.close()


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("batch-suite")
    make_tiny_suite(n_copies=3).save(root / "suite")  # 12 items -> 60 calls
    return root / "suite"


@pytest.fixture(scope="module")
def live(tmp_path_factory, suite) -> Path:
    """The same run made live against the stub (the reference every batch run must equal)."""
    out = tmp_path_factory.mktemp("live") / "run"
    with StubServer(policy=oracle_policy) as srv:
        done = _eval(suite, out, srv.base_url)
    assert done.returncode == 0, done.stderr
    return out


def test_a_batch_run_waits_then_ends_with_the_live_runs_results(tmp_path, suite, live):
    eps = BatchEndpoints(BatchFaults(polls=2))
    with StubServer(policy=oracle_policy, batches=eps) as srv:
        runs = _until_done(suite, tmp_path / "run", srv.base_url, "--batch", "openai")
        chat = srv.stats.by_outcome
    assert [r.returncode for r in runs] == [WAITING, WAITING, WAITING, 0]  # submitted, in progress twice, collected
    assert "submitted, 60 calls" in runs[0].stdout and "in_progress" in runs[1].stdout
    assert set(chat) == {"batch"}, "no call was made live"
    assert len(eps.paid) == 60 and not eps.paid_twice() and not eps.duplicates
    assert _results(tmp_path / "run") == _results(live)
    assert _calls(tmp_path / "run") == _calls(live)


def test_no_results_are_written_while_a_batch_waits(tmp_path, suite):
    eps = BatchEndpoints(BatchFaults(polls=5))
    with StubServer(policy=oracle_policy, batches=eps) as srv:
        first = _eval(suite, tmp_path / "run", srv.base_url, "--batch", "openai")
    assert first.returncode == WAITING, first.stderr
    assert "waiting for a batch: 60 calls" in first.stdout
    assert not (tmp_path / "run" / "results.json").exists()
    con = sqlite3.connect(tmp_path / "run" / "store.sqlite")
    rows = con.execute("SELECT provider, status, remote_id FROM batches").fetchall()
    keys = con.execute("SELECT COUNT(*) FROM batch_keys").fetchone()[0]
    con.close()
    assert rows == [("openai", "submitted", "batch_stub000002")] and keys == 60


def test_expired_failed_and_cancelled_requests_are_sent_again_never_scored(tmp_path, suite, live):
    eps = BatchEndpoints(BatchFaults(seed=3, polls=0, rate_failed=0.2, rate_expired=0.15, rate_cancelled=0.1, fail_batches=0))
    with StubServer(policy=oracle_policy, batches=eps) as srv:
        runs = _until_done(suite, tmp_path / "run", srv.base_url, "--batch", "openai")
    told = "".join(r.stdout for r in runs)
    assert "to send again" in told and "status 500" in told and "batch_expired" in told
    resent = [k for k, batches in eps.sent.items() if len(batches) > 1]
    assert resent, "some requests had to be sent twice"
    assert not eps.paid_twice() and len(eps.paid) == 60
    assert all(status == "ok" for _, status, *_ in _calls(tmp_path / "run")), "a batch fault became an error row"
    assert _results(tmp_path / "run") == _results(live)


def test_a_batch_that_fails_validation_is_sent_again(tmp_path, suite, live):
    eps = BatchEndpoints(BatchFaults(polls=0, fail_batches=1))
    with StubServer(policy=oracle_policy, batches=eps) as srv:
        runs = _until_done(suite, tmp_path / "run", srv.base_url, "--batch", "openai")
    assert "no result line (batch failed)" in "".join(r.stdout for r in runs)
    assert not eps.paid_twice() and len(eps.paid) == 60
    assert _results(tmp_path / "run") == _results(live)


def test_fallback_live_makes_the_unanswered_requests_live_at_once(tmp_path, suite, live):
    eps = BatchEndpoints(BatchFaults(seed=1, polls=0, rate_expired=0.3))
    with StubServer(policy=oracle_policy, batches=eps) as srv:
        runs = _until_done(suite, tmp_path / "run", srv.base_url, "--batch", "openai", "--batch-fallback", "live")
        live_calls = srv.stats.by_outcome.get("ok", 0)
    assert [r.returncode for r in runs] == [WAITING, 0]
    expired = [k for k in eps.sent if k not in eps.paid]
    assert expired and live_calls == len(expired), "each expired request was made live once"
    assert _results(tmp_path / "run") == _results(live)


@pytest.mark.parametrize(
    ("provider", "stage"),
    [("openai", "upload"), ("openai", "create"), ("openai", "poll"), ("openai", "content"), ("anthropic", "create"), ("anthropic", "results")],
)
def test_killed_at_each_stage_and_resumed_pays_each_call_once(tmp_path, suite, live, provider, stage):
    """upload: recorded, not sent; create: sent, the provider's id never stored (found again: by
    the batch's metadata, Anthropic: by its size); poll: sent and recorded, killed while looking;
    content / results: killed while collecting the results."""
    eps = BatchEndpoints(BatchFaults(polls=0))
    out = tmp_path / "run"
    with StubServer(policy=oracle_policy, batches=eps) as srv:
        cmd = eval_command(suite, out, srv.base_url, "--batch", provider)
        if stage in ("poll", "content", "results"):  # the first run submits; the second looks (and collects)
            assert _eval(suite, out, srv.base_url, "--batch", provider).returncode == WAITING
        eps.hold = stage
        proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(eps.held.is_set, timeout=120, proc=proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        eps.hold = None
        _until_done(suite, out, srv.base_url, "--batch", provider)
    assert not eps.duplicates, "a key was sent while a batch holding it was open"
    assert all(len(b) == 1 for b in eps.sent.values()), "a call went out in two batches"
    assert len(eps.paid) == 60 and not eps.paid_twice()
    assert _results(out) == _results(live)


def _failing_policy(messages, request):
    """The oracle, except that the five requests of one item fail (its policy raises: a 500 line)."""
    if "Question number 2: which option is right? (copy 1)" in messages[-1]["content"]:
        raise RuntimeError("this item always fails")
    return oracle_policy(messages, request)


def test_a_request_that_fails_in_every_batch_is_stored_as_an_error_after_three(tmp_path, suite):
    eps = BatchEndpoints(BatchFaults(polls=0))
    with StubServer(policy=_failing_policy, batches=eps) as srv:
        # the last run made only those five calls and each failed: exit 1, as a live rerun of them would
        runs = _until_done(suite, tmp_path / "run", srv.base_url, "--batch", "openai", code=1)
    assert [r.returncode for r in runs] == [WAITING, WAITING, WAITING, 1]
    errors = [c for c in _calls(tmp_path / "run") if c[1] == "error"]
    assert len(errors) == 5
    assert sorted(len(eps.sent[k]) for k, *_ in errors) == [3] * 5
    assert "5 errors" in runs[-1].stdout and "batch request failed in 3 batches" in runs[-1].stderr


def test_anthropic_message_batches_end_with_the_live_runs_results(tmp_path, suite, live):
    eps = BatchEndpoints(BatchFaults(seed=2, polls=1, rate_expired=0.1, rate_failed=0.1))
    with StubServer(policy=oracle_policy, batches=eps) as srv:
        runs = _until_done(suite, tmp_path / "run", srv.base_url, "--batch", "anthropic")
    assert runs[0].returncode == WAITING and "(anthropic msgbatch_stub" in runs[0].stdout
    assert not eps.paid_twice() and len(eps.paid) == 60
    assert _results(tmp_path / "run") == _results(live)


def _engine_output(request_file: Path, out_file: Path, url: str) -> None:
    """What an engine's batch runner (vLLM's run_batch) writes for a request file: one output line
    per request, its chat completion made here against the stub's live endpoint."""
    import httpx

    lines = []
    for n, raw in enumerate(request_file.read_text().splitlines()):
        req = json.loads(raw)
        body = httpx.post(url[: -len("/v1")] + req["url"], json=req["body"], timeout=30).json()
        lines.append(
            {"id": f"vllm-{n}", "custom_id": req["custom_id"], "response": {"status_code": 200, "request_id": f"vllm-batch-{n}", "body": body}, "error": None}
        )
    out_file.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_files_round_trip_through_your_own_engine(tmp_path, suite, live):
    out = tmp_path / "run"
    with StubServer(policy=oracle_policy) as srv:
        first = _eval(suite, out, srv.base_url, "--batch", "files")
        assert first.returncode == WAITING, first.stderr
        assert "vllm.entrypoints.openai.run_batch" in first.stderr
        (request_file,) = (out / "batches").glob("*.jsonl")
        again = _eval(suite, out, srv.base_url, "--batch", "files")
        assert again.returncode == WAITING and "--batch-results" in again.stdout
        _engine_output(request_file, tmp_path / "output.jsonl", srv.base_url)
        done = _eval(suite, out, srv.base_url, "--batch", "files", "--batch-results", str(tmp_path / "output.jsonl"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert _results(out) == _results(live)


def test_a_bad_output_line_is_named_and_nothing_is_stored(tmp_path, suite):
    out = tmp_path / "run"
    with StubServer(policy=oracle_policy) as srv:
        assert _eval(suite, out, srv.base_url, "--batch", "files").returncode == WAITING
        (request_file,) = (out / "batches").glob("*.jsonl")
        _engine_output(request_file, tmp_path / "output.jsonl", srv.base_url)
        lines = (tmp_path / "output.jsonl").read_text().splitlines()
        bad = json.loads(lines[2])
        del bad["custom_id"]
        lines[2] = json.dumps(bad)
        (tmp_path / "output.jsonl").write_text("\n".join(lines) + "\n")
        done = _eval(suite, out, srv.base_url, "--batch", "files", "--batch-results", str(tmp_path / "output.jsonl"))
    assert done.returncode == 2
    assert f"{tmp_path / 'output.jsonl'}:3: field 'custom_id'" in done.stderr
    con = sqlite3.connect(out / "store.sqlite")
    assert con.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 0
    con.close()


def test_dry_run_prints_calls_tokens_and_cost_live_and_batch_and_sends_nothing(tmp_path, suite):
    with StubServer(policy=oracle_policy, batches=BatchEndpoints()) as srv:
        done = run_medres(
            eval_command(suite, tmp_path / "run", srv.base_url, "--batch", "openai", "--dry-run", model_opts="price_input=1000,price_output=4000")
        )
        assert srv.stats.total == 0
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("stub-model:"))
    assert "60 calls" in line
    live_cost, batch_cost = (float(x.replace(",", "")) for x in re.search(r"live \$([\d.,]+), batch \$([\d.,]+)", line).groups())
    assert live_cost > 1
    assert batch_cost == pytest.approx(live_cost / 2, abs=0.01)
    assert not (tmp_path / "run" / "store.sqlite").exists()


def test_a_2000_unit_suite_through_the_batch_server_equals_the_live_run(tmp_path):
    make_tiny_suite(n_copies=100).save(tmp_path / "suite")  # 400 items -> 2,000 calls
    eps = BatchEndpoints(BatchFaults(seed=5, polls=1, rate_expired=0.05, rate_failed=0.05))
    opts = "concurrency=16"
    with StubServer(policy=oracle_policy, batches=eps) as srv:
        live = run_medres(eval_command(tmp_path / "suite", tmp_path / "live", srv.base_url, model_opts=opts))
        assert live.returncode == 0, live.stderr
        runs = []
        for _ in range(8):
            runs.append(run_medres(eval_command(tmp_path / "suite", tmp_path / "batch", srv.base_url, "--batch", "openai", model_opts=opts)))
            if runs[-1].returncode != WAITING:
                break
    assert runs[-1].returncode == 0, runs[-1].stderr
    assert len(eps.paid) == 2000 and not eps.paid_twice() and not eps.duplicates
    assert _results(tmp_path / "batch") == _results(tmp_path / "live")
    assert _calls(tmp_path / "batch") == _calls(tmp_path / "live")


def test_a_run_partly_in_batch_shows_its_cost_as_made_all_live_and_all_as_a_batch(tmp_path, suite):
    """Some requests expire and are made live (--batch-fallback live): results.json's usage, the
    report's run facts and the summary line give the replies of each kind, what they cost at the
    price each was made at (batch at half the list price), and what every reply would have cost
    live and as a batch, each checked against the stored tokens at the listed prices."""
    eps = BatchEndpoints(BatchFaults(seed=1, polls=0, rate_expired=0.3))
    prices = "price_input=1000,price_output=4000"
    out = tmp_path / "run"
    with StubServer(policy=oracle_policy, batches=eps) as srv:
        runs = []
        for _ in range(4):
            runs.append(run_medres(eval_command(suite, out, srv.base_url, "--batch", "openai", "--batch-fallback", "live", model_opts=prices)))
            if runs[-1].returncode != WAITING:
                break
    assert runs[-1].returncode == 0, runs[-1].stdout + runs[-1].stderr
    con = sqlite3.connect(out / "store.sqlite")
    rows = con.execute("SELECT c.key, c.prompt_tokens, c.completion_tokens, c.cost, b.rate FROM calls c LEFT JOIN batch_answers b ON b.key = c.key").fetchall()
    con.close()
    listed = {k: (pt * 1000 + ct * 4000) / 1e6 for k, pt, ct, _, _ in rows}
    batched = {k for k, *_, rate in rows if rate is not None}
    assert batched == set(eps.paid) and 0 < len(batched) < 60, "some replies came through the batch, the rest live"
    assert all(cost == pytest.approx(listed[k] * (0.5 if k in batched else 1.0)) for k, _, _, cost, _ in rows)
    u = json.loads((out / "results.json").read_text())["usage"]["stub-model"]
    assert (u["batch_calls"], u["live_calls"], u["errors"]) == (len(batched), 60 - len(batched), 0)
    assert u["cost"] == pytest.approx(sum(v * (0.5 if k in batched else 1.0) for k, v in listed.items()))
    assert u["cost_live"] == pytest.approx(sum(listed.values()))
    assert u["cost_batch"] == pytest.approx(sum(listed.values()) / 2)
    assert u["cost_batch"] < u["cost"] < u["cost_live"]
    line = next(x for x in runs[-1].stdout.splitlines() if x.startswith("cost: "))
    assert line == (
        f"cost: ${u['cost']:.4f} as made ({len(batched)} replies through a batch at the batch rate, {60 - len(batched)} live); "
        f"all live ${u['cost_live']:.4f}, all as a batch ${u['cost_batch']:.4f}"
    )
    md = (out / "results.md").read_text()
    assert f"| stub-model | 60 | 0 | {len(batched)} | {60 - len(batched)} |" in md and f"${u['cost_live']:.4f} | ${u['cost_batch']:.4f} |" in md
    html = next((out / "report").glob("*.html")).read_text()
    assert "Cost all live" in html and f"${u['cost_live']:.4f}" in html and f"${u['cost_batch']:.4f}" in html


# The run is paused where it has written a batch's request file and not yet recorded the batch:
# the child process replaces Store.record_batch by a wait (a breakpoint to kill at; nothing it
# does is faked), so SIGKILL lands exactly between the two.
_PAUSE_BEFORE_RECORD = """
import pathlib, sys, time
import medresilience.store.batches as b
mark = pathlib.Path(sys.argv.pop(1))
def pause(self, *args, **kwargs):
    mark.touch()
    time.sleep(600)
b.BatchRecords.record_batch = pause
from medresilience.launch import main
main()
"""


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_killed_between_writing_the_request_file_and_recording_the_batch_sends_nothing_twice(tmp_path, suite, live, provider):
    eps = BatchEndpoints(BatchFaults(polls=0))
    out, mark = tmp_path / "run", tmp_path / "paused"
    with StubServer(policy=oracle_policy, batches=eps) as srv:
        cmd = eval_command(suite, out, srv.base_url, "--batch", provider)
        proc = subprocess.Popen([cmd[0], "-c", _PAUSE_BEFORE_RECORD, str(mark), *cmd[3:]], env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(mark.exists, timeout=120, proc=proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert len(list((out / "batches").glob("medres-*.jsonl"))) == 1  # written, never recorded, never sent
        con = sqlite3.connect(out / "store.sqlite")
        assert con.execute("SELECT COUNT(*) FROM batches").fetchone()[0] == 0
        con.close()
        assert not eps.batches and not eps.files
        runs = _until_done(suite, out, srv.base_url, "--batch", provider)
    assert [r.returncode for r in runs] == [WAITING, 0]
    assert len(eps.batches) == 1, "one batch was created after the kill, none before"
    assert all(len(b) == 1 for b in eps.sent.values()) and len(eps.paid) == 60 and not eps.paid_twice()
    assert _results(out) == _results(live)
