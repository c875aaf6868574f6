"""Thinking time per model (`medres thinking RUN`): a stub model that answers 0.3 s late and one
that answers at once; the seconds per answer, the completion tokens per answer (the stub counts
the reply's words) and the share right come back per model and condition."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from conftest import make_tiny_suite
from medresilience.cli import app
from medresilience.thinking import thinking_time

KEY = "MEDRES_TEST_THINKING_KEY"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from medresilience.evaluation import evaluate
    from medresilience.models.spec import parse_model_spec
    from medresilience.runner import EvalOptions
    from medresilience.testing.stub import Faults, StubServer

    root = tmp_path_factory.mktemp("thinking")
    suite = make_tiny_suite()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(KEY, "sk-test")
        with StubServer(policy=lambda m, r: "Let me think. Answer: A") as fast, StubServer(policy=lambda m, r: "Answer: A", faults=Faults(delay=0.3)) as slow:
            specs = [
                parse_model_spec(f"openai:fast,label=fast,base_url={fast.base_url},api_key_env={KEY},concurrency=8"),
                parse_model_spec(f"openai:slow,label=slow,base_url={slow.base_url},api_key_env={KEY},concurrency=8"),
            ]
            evaluate(suite, specs, root / "run", EvalOptions(family={"type1": "all"}))
    return suite, root / "run"


def test_seconds_tokens_and_share_right_per_model(run):
    suite, run_dir = run
    rows = {(r["model"], r["condition"]): r for r in thinking_time(run_dir, n_resamples=200)}
    conditions = {c for _, c in rows}
    assert {m for m, _ in rows} == {"fast", "slow"} and "clean" in conditions
    for c in conditions:
        slow, fast = rows[("slow", c)], rows[("fast", c)]
        assert slow["seconds_per_answer"] >= 0.3 > fast["seconds_per_answer"]
        assert slow["seconds_lo"] <= slow["seconds_per_answer"] <= slow["seconds_hi"]
        assert (fast["completion_tokens_per_answer"], slow["completion_tokens_per_answer"]) == (5, 2)  # words of the reply
        assert fast["right"] == slow["right"]  # the same answers
    gold_a = sum(1 for it in suite.items.values() if it.answer == "A")
    assert rows[("fast", "clean")]["right"] == pytest.approx(gold_a / len(suite.items))
    assert rows[("fast", "clean")]["items"] == len(suite.items)


def test_cli(run):
    _, run_dir = run
    r = CliRunner().invoke(app, ["thinking", str(run_dir)])
    assert r.exit_code == 0, r.output
    assert "slow / clean:" in r.output and "per answer" in r.output
