"""results.md's "Mean across models": each headline rate's mean and range over the models of a
setting, named as the headline table names it; a run of one model has no mean to show. The stub
server stands in for the models (the boundary we do not own)."""

from __future__ import annotations

from conftest import oracle_policy
from medresilience.models.spec import parse_model_spec
from medresilience.run.evaluation import evaluate
from medresilience.run.runner import EvalOptions
from medresilience.testing.stub import StubServer


def _results_md(tmp_path, suite, labels: list[str]) -> str:
    with StubServer(policy=oracle_policy) as srv:
        specs = [parse_model_spec(f"openai:stub-model,label={label},base_url={srv.base_url},concurrency=8") for label in labels]
        evaluate(suite, specs, tmp_path / "run", EvalOptions())
    return (tmp_path / "run" / "results.md").read_text(encoding="utf-8")


def test_one_model_has_no_mean_across_models(tmp_path, tiny_suite):
    md = _results_md(tmp_path, tiny_suite, ["only"])
    assert "| only | none |" in md  # the headline table is there
    assert "Mean across models" not in md and "1 models" not in md


def test_the_mean_across_models_names_rates_as_the_headline_table_does(tmp_path, tiny_suite):
    md = _results_md(tmp_path, tiny_suite, ["a", "b"])
    means = md.split("## Mean across models", 1)[1].split("\n## ", 1)[0]
    assert "Clean acc: 75.0% (range 75.0–75.0, 2 models)" in means, means
    assert "clean_acc" not in means and "type1_asr" not in means
