"""Thinking time per model (`medres thinking RUN`): a stub model that answers 0.3 s late and one
that answers at once; the seconds per answer, the completion tokens per answer (the stub counts
the reply's words) and the share right come back per model, setting and condition (a run with
two settings gives a row for each, never one pooling both, as Cancer-Myth's Table 4). Two thinking models
beside them: one whose usage reports reasoning tokens (with its reasoning text), one that sends
its reasoning text but reports a count only for some replies (a null for the others): the
reported counts are stored with every call and averaged over the answers that reported one,
never estimated from the text; a store from before the column migrates and shows them as not
reported."""

from __future__ import annotations

import hashlib
import sqlite3

import httpx
import pytest
from typer.testing import CliRunner

from conftest import make_tiny_suite
from medresilience.analyses.thinking import thinking_time
from medresilience.cli import app
from medresilience.store import Store

KEY = "MEDRES_TEST_THINKING_KEY"
THOUGHT = 40  # the reasoning tokens the thinker's usage reports with every reply
SOMETIMES = 60  # the reasoning tokens the shy thinker reports, for some replies only


def thinker(messages, request):
    return {"content": "Answer: A", "reasoning_content": "The premise is false, so the answer is A.", "reasoning_tokens": THOUGHT}


def reports_some(messages):
    return hashlib.sha256(messages[-1]["content"].encode()).digest()[0] % 2 == 0


def shy_thinker(messages, request):
    # a long reasoning text, its count reported (or null) whatever the text's length
    return {"content": "Answer: A", "reasoning_content": "thinking " * 500, "reasoning_tokens": SOMETIMES if reports_some(messages) else None}


@pytest.fixture(scope="module")
def run(tmp_path_factory, stub_server):
    from medresilience.models.spec import parse_model_spec
    from medresilience.run.evaluation import evaluate
    from medresilience.run.runner import EvalOptions
    from medresilience.testing.stub import Faults

    root = tmp_path_factory.mktemp("thinking")
    suite = make_tiny_suite()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(KEY, "sk-test")
        fast = stub_server(policy=lambda m, r: "Let me think. Answer: A")
        slow = stub_server(policy=lambda m, r: "Answer: A", faults=Faults(delay=0.3))
        think = stub_server(policy=thinker)
        shy = stub_server(policy=shy_thinker)
        specs = [
            parse_model_spec(f"openai:{name},label={name},base_url={srv.base_url},api_key_env={KEY},concurrency=8")
            for name, srv in (("fast", fast), ("slow", slow), ("thinker", think), ("shy", shy))
        ]
        evaluate(suite, specs, root / "run", EvalOptions(family={"type1": "all"}))
    return suite, root / "run"


def test_seconds_tokens_and_share_right_per_model(run):
    suite, run_dir = run
    rows = {(r["model"], r["condition"]): r for r in thinking_time(run_dir, n_resamples=200)}
    conditions = {c for _, c in rows}
    assert {m for m, _ in rows} == {"fast", "slow", "thinker", "shy"} and "clean" in conditions
    for c in conditions:
        slow, fast = rows[("slow", c)], rows[("fast", c)]
        # the slow stub sleeps 0.3 s before each answer (a lower bound no load can break); each
        # model's seconds are the mean of its stored latencies
        assert slow["seconds_per_answer"] >= 0.3
        for name, row in (("slow", slow), ("fast", fast)):
            assert row["seconds_per_answer"] == pytest.approx(_mean_latency(run_dir, name, c))
        assert slow["seconds_lo"] <= slow["seconds_per_answer"] <= slow["seconds_hi"]
        assert (fast["completion_tokens_per_answer"], slow["completion_tokens_per_answer"]) == (5, 2)  # words of the reply
        assert fast["right"] == slow["right"]  # the same answers
    gold_a = sum(1 for it in suite.items.values() if it.answer == "A")
    assert rows[("fast", "clean")]["right"] == pytest.approx(gold_a / len(suite.items))
    assert rows[("fast", "clean")]["items"] == len(suite.items)


def test_reasoning_tokens_as_reported(run):
    _, run_dir = run
    rows = {(r["model"], r["condition"]): r for r in thinking_time(run_dir, n_resamples=200)}
    shy_reported = shy_answers = 0
    for (model, _), r in rows.items():
        if model in ("fast", "slow"):  # no usage details: not reported, not zero
            assert (r["reasoning_tokens_per_answer"], r["reasoning_reported"]) == (None, 0)
        elif model == "thinker":
            assert (r["reasoning_tokens_per_answer"], r["reasoning_reported"]) == (THOUGHT, r["answers"])
            assert r["completion_tokens_per_answer"] == THOUGHT + 2  # the reasoning counts among the completion tokens
        else:  # the mean of the reported counts, nothing estimated from the 500-word reasoning text
            assert r["reasoning_tokens_per_answer"] in (None, SOMETIMES)
            shy_reported += r["reasoning_reported"]
            shy_answers += r["answers"]
    assert 0 < shy_reported < shy_answers
    # the count is stored with every call, as reported
    with Store(run_dir / "store.sqlite") as store:
        stored = dict(store.conn.execute("SELECT model, GROUP_CONCAT(DISTINCT COALESCE(reasoning_tokens, 'null')) FROM calls GROUP BY model").fetchall())
        (shy_nulls,) = store.conn.execute("SELECT COUNT(*) FROM calls WHERE model = 'shy' AND reasoning_tokens IS NULL").fetchone()
    assert stored["thinker"] == str(THOUGHT) and stored["fast"] == stored["slow"] == "null"
    assert shy_nulls == shy_answers - shy_reported


def test_cli(run):
    _, run_dir = run
    r = CliRunner().invoke(app, ["thinking", str(run_dir)])
    assert r.exit_code == 0, r.output
    assert "slow / none / clean:" in r.output and "per answer" in r.output
    lines = {line.split(":")[0]: line for line in r.output.splitlines() if " / " in line}
    assert f"{THOUGHT} reasoning tokens per answer," in lines["thinker / none / clean"]
    assert "reasoning tokens not reported" in lines["fast / none / clean"]
    shy = [line for name, line in lines.items() if name.startswith("shy /") and "reported by" in line]
    assert shy and all(f"{SOMETIMES} reasoning tokens per answer, reported by " in line for line in shy)


def test_older_store_migrates_and_reports_none(run, tmp_path):
    """A store written before reasoning tokens were stored (no such column) gains the column when
    opened; its calls report none, so the thinker shows as not reported, not as zero."""
    _, run_dir = run
    old = tmp_path / "old"
    old.mkdir()
    with sqlite3.connect(run_dir / "store.sqlite") as src, sqlite3.connect(old / "store.sqlite") as dst:
        src.backup(dst)
        dst.execute("ALTER TABLE calls DROP COLUMN reasoning_tokens")
    r = CliRunner().invoke(app, ["thinking", str(old)])
    assert r.exit_code == 0, r.output
    thinker_lines = [line for line in r.output.splitlines() if line.startswith("thinker / ")]
    assert thinker_lines and all("reasoning tokens not reported" in line for line in thinker_lines)
    assert f"{THOUGHT + 2} completion tokens per answer" in thinker_lines[0]  # the rest as stored
    with Store(old / "store.sqlite") as store:
        assert "reasoning_tokens" in {row[1] for row in store.conn.execute("PRAGMA table_info(calls)")}
        assert store.count("calls", "WHERE reasoning_tokens IS NOT NULL") == 0


def test_stub_reports_what_the_policy_gives():
    """The stub sends a thinking reply's count in usage.completion_tokens_details and its text in
    message.reasoning_content, each only when the policy gives it; a malformed reply dict is a 500."""
    from medresilience.testing.stub import StubServer

    replies = {
        "both": {"content": "Answer: B", "reasoning_content": "why", "reasoning_tokens": 7},
        "count": {"content": "Answer: B", "reasoning_tokens": 7},
        "text": {"content": "Answer: B", "reasoning_content": "why not"},
        "bad": {"content": "Answer: B", "reasoning_tokens": "seven"},
    }
    with StubServer(policy=lambda m, r: replies[m[-1]["content"]]) as srv:

        def ask(name):
            return httpx.post(f"{srv.base_url}/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": name}]}, timeout=10)

        both, count, text = (ask(n).json() for n in ("both", "count", "text"))
        assert both["choices"][0]["message"]["reasoning_content"] == "why"
        assert both["usage"]["completion_tokens_details"] == {"reasoning_tokens": 7} and both["usage"]["completion_tokens"] == 2 + 7
        assert "reasoning_content" not in count["choices"][0]["message"] and count["usage"]["completion_tokens_details"]["reasoning_tokens"] == 7
        assert "completion_tokens_details" not in text["usage"] and text["usage"]["completion_tokens"] == 2
        assert ask("bad").status_code == 500


def _mean_latency(run_dir, model: str, condition: str) -> float:
    """The mean latency of a model's answer calls under a condition, read from the store."""
    from medresilience.store import Store

    with Store(run_dir / "store.sqlite") as st:
        (mean,) = st.conn.execute(
            "SELECT AVG(c.latency_s) FROM units u JOIN calls c ON c.key = u.key WHERE u.model = ? AND u.condition = ? AND c.status = 'ok'",
            (model, condition),
        ).fetchone()
    return mean


def cautious_only(suite):
    """Right (the gold letter) under the caution setting's system prompt, wrong without it."""
    gold = {it.question: it.answer for it in suite.items.values()}

    def policy(messages, request):
        right = next(g for q, g in gold.items() if q in messages[-1]["content"])
        if any(m["role"] == "system" and "Caution:" in m["content"] for m in messages):
            return f"Answer: {right}"
        return "Answer: " + ("B" if right == "A" else "A")

    return policy


def test_one_row_per_setting_never_pooled(tmp_path):
    from medresilience.models.spec import parse_model_spec
    from medresilience.run.evaluation import evaluate
    from medresilience.run.runner import EvalOptions
    from medresilience.testing.stub import StubServer

    suite = make_tiny_suite()
    with StubServer(policy=cautious_only(suite)) as srv:
        spec = parse_model_spec(f"openai:m,base_url={srv.base_url}")
        evaluate(suite, [spec], tmp_path / "run", EvalOptions(settings=("none", "caution")))
    rows = {(r["model"], r["setting"], r["condition"]): r for r in thinking_time(tmp_path / "run", n_resamples=50)}
    n = len(suite.items)
    assert (rows[("m", "none", "clean")]["right"], rows[("m", "none", "clean")]["right_n"]) == (0.0, n)
    assert (rows[("m", "caution", "clean")]["right"], rows[("m", "caution", "clean")]["right_n"]) == (1.0, n)  # not 50% of 2n
    out = CliRunner().invoke(app, ["thinking", str(tmp_path / "run")])
    assert out.exit_code == 0, out.output
    lines = {line.split(":")[0]: line for line in out.output.splitlines() if " / " in line}
    assert f"right 100.0% (n={n})" in lines["m / caution / clean"] and f"right 0.0% (n={n})" in lines["m / none / clean"]
