"""Adaptive attacks through a batch (`medres eval --batch openai|anthropic|files`) against the local
batch server (the stub's OpenAI files + batches and Anthropic message batches, answered by the same
scripted policy as its live chat endpoint: families.adaptive.testing.ScriptedAttack, whose traces
test_adaptive knows). Every round of the attack loop (each unfinished attack's next call: the clean
answer, the attacker's candidate, the checker's verdict, the target's answer) goes out as one batch
per model once the round before is back, and each flip's resampled draws once its attack has
flipped; the command exits 3 while a batch waits, and the last run writes the live run's
results.json and every stored row. A run killed (SIGKILL) while a turn's batch is polled or created
and resumed pays each call once. `--dry-run` counts the clean answers and names the units answered
through the family's loop. No network: every server is on 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from test_adaptive import scripted_suite
from typer.testing import CliRunner

from conftest import wait_until
from medresilience.cli import app
from medresilience.families.adaptive.testing import ScriptedAttack
from medresilience.testing.stub import BatchEndpoints, BatchFaults, StubServer
from test_batch_loops import ENV, WAITING, batch_sizes, results, rows

runner = CliRunner()
#: draws per side of each flip (few: the stage is there; its counts are test_adaptive_resample's)
R = 2
#: with a budget of 2 (test_adaptive.SCRIPT): q1 flips at turn 1; q2 and q4 (its first candidate a
#: leak the rules reject, no checker call) at turn 2; q3 and q5 hold; q6 is wrong at clean (not
#: attacked); the checker refuses q7's two candidates. Per round of the loop, the calls of each
#: model: (target, attacker and checker: one model, the checker defaults to the attacker)
ROUNDS = [
    (7, 0),  # the clean answers
    (0, 6),  # the attackers' first candidates
    (0, 6),  # five checkers' verdicts; q4's second candidate
    (4, 2),  # q1, q2, q3, q5 answer (q1 flips); q4's checker, q7's second candidate
    (1, 4),  # q4 answers (and flips); q2, q3, q5's second candidates, q7's checker
    (0, 3),  # q2, q3, q5's checkers
    (3, 0),  # q2, q3, q5 answer (q2 flips)
]
#: item -> the round its attack flipped in: its draws (R per side) go out in the next run
FLIPS = {"q1": 4, "q4": 5, "q2": 7}
#: the loop's calls (test_adaptive.CALLS with a budget of 2) and the draws: what the live run makes
CALLS = sum(t + a for t, a in ROUNDS) + 2 * R * len(FLIPS)


def args(suite: Path, out: Path, url: str, *extra: str) -> list[str]:
    """`medres eval`'s arguments: the scripted suite, a budget of two turns of noise, R draws per flip."""
    return [
        "eval",
        "--suite",
        str(suite),
        "--out",
        str(out),
        "--model",
        f"openai:stub-model,base_url={url},concurrency=4,max_retries=0",
        "--attacker",
        f"openai:stub-attacker,base_url={url},concurrency=4,max_retries=0",
        "-O",
        "budget=2",
        "-O",
        "kind=noise",
        "-O",
        f"resample={R}",
        *extra,
    ]


def until_done(argv: list[str], rounds: int = len(ROUNDS) + 4) -> list:
    """Reruns the command (in this process) until it stops waiting; it must end with 0."""
    runs = []
    for _ in range(rounds):
        runs.append(runner.invoke(app, argv))
        if runs[-1].exit_code != WAITING:
            break
    assert runs[-1].exit_code == 0, runs[-1].output
    return runs


def live_reference(srv: StubServer, suite: Path, out: Path) -> int:
    """The same run made live against `srv`; the number of model calls it made."""
    before = srv.stats.by_outcome.get("ok", 0)
    done = runner.invoke(app, args(suite, out, srv.base_url))
    assert done.exit_code == 0, done.output
    return srv.stats.by_outcome.get("ok", 0) - before


@pytest.fixture(autouse=True)
def _in_process(monkeypatch):
    """The results are computed in this process (the command's worker, forked per run, only saves an import the tests have made)."""
    monkeypatch.setenv("MEDRES_RESULTS_WORKER", "0")


@pytest.fixture
def suite(tmp_path) -> Path:
    scripted_suite(tmp_path / "suite")
    return tmp_path / "suite"


def expected_batches() -> list[list[int]]:
    """The sizes of the batches each run sends: the round it can write (one batch per model), and
    the draws of the flips found in the round it collected."""
    sends = [[t for t in round_ if t] for round_ in [*ROUNDS, (0, 0)]]
    for _, flipped in FLIPS.items():
        sends[flipped] += [2 * R]
    return [sorted(x) for x in [*sends, []]]


def submitted(run) -> list[int]:
    """The sizes of the batches a run sent (its lines `... submitted, N calls; request file ...`)."""
    return sorted(int(n) for n in re.findall(r"submitted, (\d+) calls", run.output))


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_attack_goes_through_one_batch_per_round_and_ends_with_the_live_runs_results(tmp_path, suite, provider):
    eps = BatchEndpoints(BatchFaults(polls=0))
    with StubServer(policy=ScriptedAttack(), batches=eps) as srv:
        made_live = live_reference(srv, suite, tmp_path / "live")
        before = srv.stats.by_outcome.get("ok", 0)
        runs = until_done(args(suite, tmp_path / "batch", srv.base_url, "--batch", provider))
        assert srv.stats.by_outcome.get("ok", 0) == before, "no call of the batch run was made live"
    assert made_live == CALLS
    # each run collects the round before and sends the next, with the draws of the flips it found;
    # the draws of the last round's flip go out after it: one run more than the rounds
    assert [r.exit_code for r in runs] == [WAITING] * (len(ROUNDS) + 1) + [0]
    assert [submitted(r) for r in runs] == expected_batches()
    assert sorted(batch_sizes(tmp_path / "batch")) == sorted(n for sizes in expected_batches() for n in sizes)
    assert len(eps.paid) == made_live and not eps.paid_twice() and not eps.duplicates
    assert f"batches: the run took {sum(map(len, expected_batches()))} batches holding {CALLS} requests" in runs[-1].output
    assert results(tmp_path / "batch") == results(tmp_path / "live")
    assert rows(tmp_path / "batch") == rows(tmp_path / "live")  # every call, trace, resample record, score and link
    usage = json.loads((tmp_path / "batch" / "results.json").read_text())["usage"]
    assert usage["stub-model"]["batch_calls"] + usage["stub-attacker"]["batch_calls"] == CALLS
    assert usage["stub-model"]["live_calls"] == usage["stub-attacker"]["live_calls"] == 0


def _engine_output(request_files: list[Path], out_file: Path, url: str) -> None:
    """What an engine's batch runner (vLLM's run_batch) writes for request files: one output line per
    request, its chat completion made here against the stub's live endpoint; added to `out_file`
    (one output file holds the lines of every batch)."""
    lines = []
    for f in request_files:
        for raw in f.read_text().splitlines():
            req = json.loads(raw)
            body = httpx.post(url[: -len("/v1")] + req["url"], json=req["body"], timeout=30).json()
            lines.append(
                {
                    "id": f"vllm-{len(lines)}",
                    "custom_id": req["custom_id"],
                    "response": {"status_code": 200, "request_id": f"r-{len(lines)}", "body": body},
                    "error": None,
                }
            )
    with out_file.open("a") as fh:
        fh.write("".join(json.dumps(x) + "\n" for x in lines))


def test_an_attack_goes_through_batch_files_and_your_engines_output_round_by_round(tmp_path, suite):
    """Each run writes the request files of the round it can write; the engine answers them; the next
    run reads its output file (`--batch-results`) and writes the next round's."""
    with StubServer(policy=ScriptedAttack()) as srv:
        made_live = live_reference(srv, suite, tmp_path / "live")
        out, output = tmp_path / "batch", tmp_path / "output.jsonl"
        argv = args(suite, out, srv.base_url, "--batch", "files")
        first = runner.invoke(app, argv)
        assert first.exit_code == WAITING and "vllm.entrypoints.openai.run_batch" in first.output, first.output
        answered: set[Path] = set()
        runs = [first]
        while runs[-1].exit_code == WAITING and len(runs) <= len(ROUNDS) + 2:
            new = sorted(set((out / "batches").glob("medres-*.jsonl")) - answered)  # the request files the last run wrote
            _engine_output(new, output, srv.base_url)
            answered |= set(new)
            runs.append(runner.invoke(app, [*argv, "--batch-results", str(output)]))
        made = srv.stats.by_outcome.get("ok", 0) - made_live
    assert runs[-1].exit_code == 0, runs[-1].output
    assert [submitted(r) for r in runs] == expected_batches()
    assert made == CALLS  # the engine answered each request once
    assert results(out) == results(tmp_path / "live")
    assert rows(out) == rows(tmp_path / "live")


def test_killed_while_a_turns_batch_is_polled_and_resumed_pays_each_call_once(tmp_path, suite):
    """Killed (SIGKILL) while the run looks at the checkers' batch (the third round), then run again
    until done: every call is paid once and the run ends with the live run's results and rows."""
    eps = BatchEndpoints(BatchFaults(polls=0))
    out = tmp_path / "batch"
    with StubServer(policy=ScriptedAttack(), batches=eps) as srv:
        made_live = live_reference(srv, suite, tmp_path / "live")
        argv = args(suite, out, srv.base_url, "--batch", "openai")
        assert [runner.invoke(app, argv).exit_code for _ in range(3)] == [WAITING] * 3  # the checkers' round submitted
        eps.hold = "poll"
        proc = subprocess.Popen([sys.executable, "-m", "medresilience.cli", *argv], env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(eps.held.is_set, timeout=120, proc=proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        eps.hold = None
        runs = until_done(argv)
    assert [submitted(r) for r in runs] == expected_batches()[3:]  # the killed run sent nothing: the resumed one collects the round
    assert not eps.duplicates, "a key was sent while a batch holding it was open"
    assert all(len(b) == 1 for b in eps.sent.values()), "a call went out in two batches"
    assert len(eps.paid) == made_live == CALLS and not eps.paid_twice()
    assert results(out) == results(tmp_path / "live")
    assert rows(out) == rows(tmp_path / "live")


def test_the_dry_run_counts_the_clean_answers_and_names_the_units_the_loop_answers(tmp_path, suite):
    with StubServer(policy=ScriptedAttack(), batches=BatchEndpoints()) as srv:
        done = runner.invoke(app, args(suite, tmp_path / "run", srv.base_url, "--batch", "openai", "--dry-run"))
        assert srv.stats.total == 0 and not (tmp_path / "run" / "store.sqlite").exists()
    assert done.exit_code == 0, done.output
    out = " ".join(done.output.split())
    assert "stub-model: 7 calls" in out  # the clean answers: the loop's first round, the clean units' too
    assert "--setting none: 7 units answer through the suite family's own loop, each of its rounds a batch once the one before is back" in out
    assert "an agent's or a team's" not in out and "stub-attacker" not in out  # the attacker's calls all depend on replies
    assert "the rounds of the family's loop) are not counted" in out


def test_a_checker_of_another_provider_is_refused_in_one_line_before_anything_is_sent(tmp_path, suite, monkeypatch):
    """An Anthropic checker's calls have no OpenAI batch: refused before anything is sent or written
    (the key is a placeholder: nothing reaches Anthropic). Your own engine (`files`) takes it."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-placeholder")
    with StubServer(policy=ScriptedAttack(), batches=BatchEndpoints()) as srv:
        argv = args(suite, tmp_path / "run", srv.base_url, "-O", "checker=anthropic/claude-sonnet-4-5")
        for extra in ((), ("--dry-run",)):
            done = runner.invoke(app, [*argv, "--batch", "openai", *extra])
            assert done.exit_code == 2, done.output
            lines = [x for x in done.output.splitlines() if x.strip()]
            assert lines[0].startswith("error: --batch openai: the model claude-sonnet-4-5 is Anthropic's (anthropic/claude-sonnet-4-5)"), lines
            assert "run it live (without --batch)" in " ".join(done.output.split())
        assert srv.stats.total == 0
        assert not (tmp_path / "run" / "store.sqlite").exists()
        files = runner.invoke(app, [*argv, "--batch", "files", "--dry-run"])
        assert files.exit_code == 0, files.output
