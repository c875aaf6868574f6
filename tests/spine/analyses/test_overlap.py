"""Cross-model overlap (`medres overlap RUN`): three stub models on the tiny suite, the oracle
(the gold letter unless a question is marked wrong), one always A, one never readable; the units
no model, every model and only one model gets right follow from the suite."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from conftest import make_tiny_suite, oracle_policy
from medresilience.analyses.overlap import overlap
from medresilience.cli import app

KEY = "MEDRES_TEST_OVERLAP_KEY"


def policy(messages, request):
    model = request.get("model")
    if model == "stub-oracle":
        return oracle_policy(messages, request)
    if model == "stub-a":
        return "Answer: A"
    return "I would rather not say."  # never readable: not right


@pytest.fixture(scope="module")
def run(tmp_path_factory, stub_server):
    from medresilience.models.spec import parse_model_spec
    from medresilience.run.evaluation import evaluate
    from medresilience.run.runner import EvalOptions

    root = tmp_path_factory.mktemp("overlap")
    suite = make_tiny_suite()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(KEY, "sk-test")
        srv = stub_server(policy=policy)
        specs = [parse_model_spec(f"openai:{m},label={m},base_url={srv.base_url},api_key_env={KEY}") for m in ("stub-oracle", "stub-a", "stub-mute")]
        evaluate(suite, specs, root / "run", EvalOptions(family={"type1": "all"}))
    return suite, root / "run"


def test_overlap_follows_the_gold_letters(run):
    suite, run_dir = run
    res = overlap(run_dir)
    assert res.models == ["stub-a", "stub-mute", "stub-oracle"]
    rows = {(r["condition"], r["setting"]): r for r in res.rows}
    clean = next(r for (c, _), r in rows.items() if c == "clean")
    # on a clean question the oracle is right unless the question is marked [[CLEAN-WRONG]], stub-a when the gold is A
    oracle = {i: "[[CLEAN-WRONG]]" not in it.question for i, it in suite.items.items()}
    always_a = {i: it.answer == "A" for i, it in suite.items.items()}
    n = len(suite.items)
    assert clean["compared"] == n and clean["left_out"] == 0
    assert clean["all_right"]["k"] == 0  # the mute model is never right
    assert clean["none_right"]["k"] == sum(not oracle[i] and not always_a[i] for i in oracle) >= 1
    only_oracle = sum(oracle[i] and not always_a[i] for i in oracle)
    only_a = sum(always_a[i] and not oracle[i] for i in oracle)
    assert clean["only_one_right"]["k"] == only_oracle + only_a
    assert clean["only_this_model"] == {"stub-a": only_a, "stub-mute": 0, "stub-oracle": only_oracle}
    for r in res.rows:
        assert r["only_this_model"]["stub-mute"] == 0 and r["all_right"]["k"] == 0
        assert sum(r["only_this_model"].values()) == r["only_one_right"]["k"]
        assert r["none_right"]["lo"] is None or r["none_right"]["lo"] <= r["none_right"]["p"] <= r["none_right"]["hi"]


def test_cli(run, tmp_path):
    _, run_dir = run
    r = CliRunner().invoke(app, ["overlap", str(run_dir)])
    assert r.exit_code == 0, r.output
    assert "models: stub-a, stub-mute, stub-oracle" in r.output and "only one model right" in " ".join(r.output.split())
    r = CliRunner().invoke(app, ["overlap", str(tmp_path)])
    assert r.exit_code == 2 and "not a run directory" in r.output
