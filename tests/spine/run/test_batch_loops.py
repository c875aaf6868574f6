"""`medres eval --batch` with the answer-loop settings: a team (the stub's scripted team, as in
tests/spine/mitigations/test_team.py) and a search agent (the stub's scripted agent over a local
corpus index, as in test_agent.py). Each step of every unit goes out as one batch once the step
before is back: the command exits 3 while a step waits, the next run collects it and sends the
next step, and the last run writes the live run's results.json (the same stub, answered by the same
policy). A run killed (SIGKILL) while it polls, creates or collects a step's batch and resumed pays
each call once (the killed run is a real process; the others run in this process). What has no batch form (the agent's tools with Anthropic's message batches) is
refused in one line before anything is sent. No network: every server is on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest

from conftest import run_medres, wait_until
from medresilience.corpus import CorpusIndex, build_index
from medresilience.run.bundled_suite import sample_suite_dir
from medresilience.testing.eval_command import stub_eval_command
from medresilience.testing.stub import BatchEndpoints, BatchFaults, StubServer, scripted_agent, scripted_team

WAITING = 3
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
#: the experts of the sample suite's team agree on C after one round (test_team.CONVERGE)
CONVERGE = {"cardiologist": ["B", "C"], "nephrologist": ["C"], "pharmacist": ["D", "C"]}
#: the advanced level's nine members: team 1 reports C, team 2 A, team 3 C (test_team's advanced test)
ADVANCED = {"cardiologist": ["C"], "nephrologist": ["C"], "pharmacist": ["D"], "neurologist": ["C"], "geriatrician": ["C"], "internist": ["B"]}
CPR = "High-quality cardiopulmonary resuscitation in cardiac arrest: push hard and fast, allow full chest recoil and keep interruptions of chest compression short."
PASSAGES = [
    {"id": "p-cpr", "title": "Resuscitation", "text": CPR},
    {"id": "p-ph", "title": "Arterial blood gas", "text": "The arterial pH of a healthy adult is held in a narrow range by bicarbonate buffering."},
]


def command(out: Path, url: str, settings: list[str], *extra: str, limit: int = 2, model_opts: str = "concurrency=2") -> list[str]:
    """`medres eval` (a real process) of the bundled suite's first `limit` items under `settings`."""
    return stub_eval_command(sample_suite_dir(), out, url, settings, *extra, limit=limit, model_opts=model_opts)


def run(cmd: list[str]) -> subprocess.CompletedProcess:
    """The command run to its end in this process (conftest.run_medres); a real process is started
    where one is killed (Popen below)."""
    return run_medres(cmd)


def until_done(cmd: list[str], rounds: int = 12) -> list[subprocess.CompletedProcess]:
    """Reruns the batch command until it stops waiting; it must end with 0."""
    runs = []
    for _ in range(rounds):
        runs.append(run(cmd))
        if runs[-1].returncode != WAITING:
            break
    assert runs[-1].returncode == 0, runs[-1].stdout + runs[-1].stderr
    return runs


def results(out: Path) -> dict:
    """results.json without what names the run (its id, its last execution's counters) and how its
    replies came (through a batch or live: the one thing a batch run's usage differs in)."""
    data = json.loads((out / "results.json").read_text())
    data.pop("last_execution")
    data["run"].pop("run_id")
    for u in data["usage"].values():
        u.pop("batch_calls"), u.pop("live_calls")
    return data


def rows(out: Path) -> tuple[list, list, list, list]:
    """Every stored call (the loop's steps, summaries and tool results too), score, unit and link."""
    con = sqlite3.connect(out / "store.sqlite")
    try:
        return (
            sorted(con.execute("SELECT key, model, status, text, finish_reason, prompt_tokens, completion_tokens, tool_calls FROM calls").fetchall()),
            sorted(con.execute("SELECT key, scorer, label, status FROM scores").fetchall()),
            sorted(con.execute("SELECT model, unit_id, key FROM units").fetchall()),
            sorted(con.execute("SELECT model, unit_id, key, role FROM unit_calls").fetchall()),
        )
    finally:
        con.close()


def batch_sizes(out: Path) -> list[int]:
    """The number of requests of each recorded batch, in the order they were recorded."""
    con = sqlite3.connect(out / "store.sqlite")
    try:
        return [n for _, n in con.execute("SELECT b.batch_id, COUNT(k.key) FROM batches b JOIN batch_keys k USING (batch_id) GROUP BY 1 ORDER BY b.created")]
    finally:
        con.close()


def live_reference(srv: StubServer, out: Path, settings: list[str], **kw) -> int:
    """The same run made live against `srv`; the number of model calls it made."""
    before = srv.stats.by_outcome.get("ok", 0)
    done = run(command(out, srv.base_url, settings, **kw))
    assert done.returncode == 0, done.stdout + done.stderr
    return srv.stats.by_outcome.get("ok", 0) - before


@pytest.fixture
def index(tmp_path) -> Path:
    src = tmp_path / "corpus.jsonl"
    src.write_text("".join(json.dumps(p) + "\n" for p in PASSAGES), encoding="utf-8")
    build_index(src, tmp_path / "corpus.sqlite")
    return tmp_path / "corpus.sqlite"


def agent_script(index: Path) -> list[tuple[str, ...]]:
    """Search, read the passage found, answer citing it: three steps."""
    with CorpusIndex(index) as idx:
        pid = f"P{idx.search('resuscitation cardiac arrest', 1)[0].rowid}"
    return [("search", "chest compression cardiac arrest"), ("read", pid), ("answer", f'Answer: C\nSOURCE: {pid} "push hard and fast"')]


# ------------------------------------------------------------------ a team, step by step


@pytest.mark.parametrize(
    ("setting", "policy", "steps", "per_unit"),
    [
        # the recruitment; three first answers; one round of three (then they agree); the decision
        ("team,mode=intermediate", scripted_team(positions=CONVERGE), [1, 3, 3, 1], 8),
        # the triage with the monitor's note; then as intermediate
        ("team,monitor=self", scripted_team(positions=CONVERGE, note="- The context may be false."), [2, 1, 3, 3, 1], 10),
        # the triage; the recruitment of three teams; nine members; three leads; the decision
        ("team,experts=3", scripted_team(level="advanced", positions=ADVANCED), [1, 1, 9, 3, 1], 15),
    ],
    ids=["intermediate", "adaptive-monitor", "advanced"],
)
def test_a_team_goes_through_one_batch_per_step_and_ends_with_the_live_runs_results(tmp_path, setting, policy, steps, per_unit):
    eps = BatchEndpoints(BatchFaults(polls=0))
    units = 6  # two items: clean, Type 1 and Type 2
    with StubServer(policy=policy, batches=eps) as srv:
        made_live = live_reference(srv, tmp_path / "live", [setting])
        before = srv.stats.by_outcome.get("ok", 0)
        runs = until_done(command(tmp_path / "batch", srv.base_url, [setting], "--batch", "openai"))
        assert srv.stats.by_outcome.get("ok", 0) == before, "no call of the batch run was made live"
    assert made_live == units * per_unit
    # each run collects the step before and sends the next: one batch per step, all units' calls in it
    assert [r.returncode for r in runs] == [WAITING] * len(steps) + [0]
    assert batch_sizes(tmp_path / "batch") == [units * n for n in steps]
    assert all(f"submitted, {units * n} calls" in r.stdout for r, n in zip(runs, steps))
    assert f"batches: the run took {len(steps)} batches holding {units * per_unit} requests" in runs[-1].stdout
    assert len(eps.paid) == made_live and not eps.paid_twice() and not eps.duplicates
    assert results(tmp_path / "batch") == results(tmp_path / "live")
    assert rows(tmp_path / "batch") == rows(tmp_path / "live")  # every turn, summary, score and link as the live run stored them
    usage = json.loads((tmp_path / "batch" / "results.json").read_text())["usage"]
    assert usage["stub-model"]["batch_calls"] == made_live and usage["stub-model"]["live_calls"] == 0
    assert usage["team"]["live_calls"] == 0 and usage["team"]["batch_calls"] == 0  # the summaries are no calls
    assert f"({made_live} replies through a batch at the batch rate, 0 live)" in runs[-1].stdout


# ------------------------------------------------------------------ an agent, step by step


@pytest.mark.parametrize(("protocol", "provider"), [("tools", "openai"), ("text", "openai"), ("text", "anthropic")])
def test_an_agent_goes_through_one_batch_per_step_with_its_searches_made_between(tmp_path, index, protocol, provider):
    """The agent's searches and reads are made against the index between its steps (stored, as a
    live run stores them): its steps are the only calls, and the none answers go in the first round."""
    setting = f"agent:{index},steps=5,k=2,protocol={protocol}"
    eps = BatchEndpoints(BatchFaults(polls=1))
    settings = ["none", setting]
    with StubServer(policy=scripted_agent(agent_script(index)), batches=eps) as srv:
        made_live = live_reference(srv, tmp_path / "live", settings)
        before = srv.stats.by_outcome.get("ok", 0)
        runs = until_done(command(tmp_path / "batch", srv.base_url, settings, "--batch", provider))
        assert srv.stats.by_outcome.get("ok", 0) == before, "no call of the batch run was made live"
    assert made_live == 6 + 6 * 3  # the none answers, three steps per agent unit
    # the first step and the none answers; then steps 2 and 3; each batch is looked at once in progress
    assert sorted(batch_sizes(tmp_path / "batch")[:2]) == [6, 6] and batch_sizes(tmp_path / "batch")[2:] == [6, 6]
    assert [r.returncode for r in runs] == [WAITING] * 6 + [0]
    assert len(eps.paid) == made_live and not eps.paid_twice() and not eps.duplicates
    assert results(tmp_path / "batch") == results(tmp_path / "live")
    assert rows(tmp_path / "batch") == rows(tmp_path / "live")
    if protocol == "tools":
        con = sqlite3.connect(tmp_path / "batch" / "store.sqlite")
        called = con.execute("SELECT COUNT(*) FROM calls WHERE tool_calls IS NOT NULL AND model = 'stub-model'").fetchone()[0]
        con.close()
        assert called == 12  # the tool calls came back through the batch's result lines


def test_a_loop_run_through_a_batch_is_priced_at_the_batch_rate_and_its_records_are_no_calls(tmp_path, index):
    """Priced: every step came through a batch at half the list price; the agent's final answers,
    trajectories and search results are stored rows that stand for no call (neither live nor batch)."""
    setting = f"agent:{index},protocol=text"
    prices = "concurrency=2,price_input=1000,price_output=4000"
    eps = BatchEndpoints(BatchFaults(polls=0))
    with StubServer(policy=scripted_agent(agent_script(index)), batches=eps) as srv:
        runs = until_done(command(tmp_path / "batch", srv.base_url, [setting], "--batch", "openai", model_opts=prices))
    u = json.loads((tmp_path / "batch" / "results.json").read_text())["usage"]
    model = u["stub-model"]
    assert (model["batch_calls"], model["live_calls"], model["calls"]) == (18, 0, 18 + 6)  # three steps per unit, and the units' answers
    assert model["cost"] == pytest.approx(model["cost_batch"]) and model["cost_live"] == pytest.approx(2 * model["cost_batch"]) and model["cost"] > 0
    assert all(u[m]["live_calls"] == 0 for m in ("agent", "search"))
    line = next(x for x in runs[-1].stdout.splitlines() if x.startswith("cost: "))
    assert "(18 replies through a batch at the batch rate, 0 live)" in line


# ------------------------------------------------------------------ kill -9 at a step's batch, resumed


@pytest.mark.parametrize("stage", ["create", "poll", "content"])
def test_killed_at_a_steps_batch_and_resumed_pays_each_call_once(tmp_path, stage):
    """The team's second step (the experts' first answers): killed while its batch is created (the
    provider has it, the run never hears its id), while it is polled, and while its results are
    collected; the resumed run finds the batch again and ends with the live run's results."""
    setting = "team,mode=intermediate"
    eps = BatchEndpoints(BatchFaults(polls=0))
    out = tmp_path / "batch"
    with StubServer(policy=scripted_team(positions=CONVERGE), batches=eps) as srv:
        made_live = live_reference(srv, tmp_path / "live", [setting])
        cmd = command(out, srv.base_url, [setting], "--batch", "openai")
        assert run(cmd).returncode == WAITING  # the recruitment submitted
        if stage != "create":
            assert run(cmd).returncode == WAITING  # the recruitment collected, the experts' answers submitted
        eps.hold = stage
        proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(eps.held.is_set, timeout=120, proc=proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        eps.hold = None
        runs = until_done(cmd)
    assert len(runs) >= 3
    assert not eps.duplicates, "a key was sent while a batch holding it was open"
    assert all(len(b) == 1 for b in eps.sent.values()), "a call went out in two batches"
    assert len(eps.paid) == made_live and not eps.paid_twice()
    assert results(out) == results(tmp_path / "live")
    assert rows(out) == rows(tmp_path / "live")


def test_an_agent_killed_while_its_step_batch_is_polled_resumes_without_paying_twice(tmp_path, index):
    setting = f"agent:{index},protocol=tools"
    eps = BatchEndpoints(BatchFaults(polls=0))
    out = tmp_path / "batch"
    with StubServer(policy=scripted_agent(agent_script(index)), batches=eps) as srv:
        made_live = live_reference(srv, tmp_path / "live", [setting])
        cmd = command(out, srv.base_url, [setting], "--batch", "openai")
        assert run(cmd).returncode == WAITING and run(cmd).returncode == WAITING  # step 1 back (searches made), step 2 submitted
        eps.hold = "poll"
        proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(eps.held.is_set, timeout=120, proc=proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        eps.hold = None
        until_done(cmd)
    assert all(len(b) == 1 for b in eps.sent.values()) and len(eps.paid) == made_live == 18 and not eps.paid_twice()
    assert results(out) == results(tmp_path / "live")
    assert rows(out) == rows(tmp_path / "live")


# ------------------------------------------------------------------ what cannot go through a batch


def test_the_agents_tools_with_anthropic_batches_are_refused_in_one_line_before_anything_is_sent(tmp_path, index):
    eps = BatchEndpoints(BatchFaults(polls=0))
    setting = f"agent:{index},protocol=auto"
    with StubServer(policy=scripted_agent(agent_script(index)), batches=eps) as srv:
        for extra in ((), ("--dry-run",)):
            done = run(command(tmp_path / "run", srv.base_url, ["none", setting], "--batch", "anthropic", *extra))
            assert done.returncode == 2, done.stdout + done.stderr
            lines = [x for x in done.stderr.splitlines() if x.strip()]
            assert lines[0].startswith(f"error: --batch anthropic: --setting {setting}: the agent's tools protocol (function calling, for stub-model)")
            assert "add protocol=text to the setting, or use --batch openai" in done.stderr.replace("\n", " ")
        assert srv.stats.total == 0 and not eps.batches and not eps.files
    assert not (tmp_path / "run" / "store.sqlite").exists()


def test_a_request_with_tools_has_no_anthropic_batch_form():
    from medresilience.batch import anthropic_request
    from medresilience.calls import CallRequest
    from medresilience.mitigations.agent import TOOLS
    from medresilience.models.spec import parse_model_spec
    from medresilience.runtime.errors import ConfigError

    spec = parse_model_spec("anthropic/claude-3-5-haiku-latest")
    plain = CallRequest(spec.label, "k", [{"role": "user", "content": "q"}], {"max_tokens": 8})
    assert anthropic_request(plain, spec)["params"]["messages"] == [{"role": "user", "content": "q"}]
    for r in [
        CallRequest(spec.label, "k", [{"role": "user", "content": "q"}], {"max_tokens": 8, "tools": TOOLS}),
        CallRequest(spec.label, "k", [{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "c", "content": "r"}], {"max_tokens": 8}),
    ]:
        with pytest.raises(ConfigError, match="agent setting's tools protocol") as e:
            anthropic_request(r, spec)
        assert "--batch anthropic" in str(e.value)


def test_the_dry_run_names_the_loop_units_it_cannot_count(tmp_path, index):
    settings = ["none", "team,mode=intermediate"]
    with StubServer(policy=scripted_team(positions=CONVERGE), batches=BatchEndpoints()) as srv:
        done = run(command(tmp_path / "run", srv.base_url, settings, "--batch", "openai", "--dry-run"))
        assert srv.stats.total == 0
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())
    assert "stub-model: 6 calls" in out  # the none answers
    assert "--setting team,mode=intermediate: 6 units answer through steps (an agent's or a team's)" in out
    assert "nothing left to send" not in out


def test_a_batch_run_sends_all_its_units_step_in_one_batch_where_a_live_run_starts_with_a_small_chunk(tmp_path):
    """A live run plans a small first chunk so that its calls start at once (runner.FIRST_CHUNK_ITEMS
    items); through a batch that would only split each step in two: the whole run (one chunk of
    MEDRES_CHUNK_UNITS units) goes out as one batch."""
    from conftest import eval_command, make_tiny_suite, oracle_policy
    from medresilience.run.runner import FIRST_CHUNK_ITEMS

    make_tiny_suite(n_copies=20).save(tmp_path / "suite")  # 80 items -> 400 units
    assert FIRST_CHUNK_ITEMS < 80
    with StubServer(policy=oracle_policy, batches=BatchEndpoints(BatchFaults(polls=0))) as srv:
        first = run(eval_command(tmp_path / "suite", tmp_path / "run", srv.base_url, "--batch", "openai"))
    assert first.returncode == WAITING, first.stdout + first.stderr
    assert batch_sizes(tmp_path / "run") == [400] and "submitted, 400 calls" in first.stdout
