"""`medres eval --until-decided` / `--until WIDTH` on the stub OpenAI-compatible server: the run goes
in the sample seed's order, stops before the suite ends once the anytime-valid interval meets the
rule, says so (results.json, results.md, the report, the command's output) and exits 0; the same
command again without the rule continues the run and makes no call it made before (counted on the
stub's request log)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import make_tiny_suite, oracle_policy, store_key_by_stub_key
from medresilience.models.spec import parse_model_spec
from medresilience.run.evaluation import evaluate
from medresilience.run.resolved import EvalOptions
from medresilience.run.stopping import StopRule
from medresilience.suite import Suite
from medresilience.testing.stub import StubServer

ITEMS = 160  # 40 copies of the four tiny items: q1 and q3 flip under Type 2, q2 does not, q4 is wrong clean


def _eval(suite_dir, out, url, *extra):
    cmd = [sys.executable, "-m", "medresilience.cli", "eval", "--suite", str(suite_dir), "--out", str(out)]
    cmd += ["--model", f"openai:stub-model,base_url={url},concurrency=4", "--sample-seed", "3", *extra]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def _logged(log) -> list[str]:
    return [json.loads(line)["key"] for line in log.read_text().splitlines()] if log.exists() else []


def test_until_decided_stops_early_says_why_and_resumes_without_repeating_a_call(tmp_path):
    suite_dir = tmp_path / "suite"
    make_tiny_suite(n_copies=ITEMS // 4).save(suite_dir)
    log = tmp_path / "stub.jsonl"
    out = tmp_path / "run"
    with StubServer(policy=oracle_policy, log_path=log) as srv:
        first = _eval(suite_dir, out, srv.base_url, "--until-decided")
        assert first.returncode == 0, first.stderr
        made_first = _logged(log)
        res = json.loads((out / "results.json").read_text())
        stop = res["stopping"]
        # clean minus Type 2 accuracy: 0.5 per item on average, decided long before 160 items
        assert stop["stopped_early"] is True
        assert 0 < stop["items_run"] < ITEMS and stop["items_planned"] == ITEMS
        assert stop["rule"]["decided"] is True and "excludes 0" in stop["reason"]
        (shown,) = stop["intervals"]
        assert shown["anytime"]["lo"] > 0  # the paired difference, decided
        assert shown["fixed"]["lo"] > shown["anytime"]["lo"]  # the fixed-sample interval is narrower, shown beside it
        assert res["run"]["options"]["until"]["decided"] is True
        assert json.loads((out / "run.json").read_text())["stopping"]["items_run"] == stop["items_run"]
        # every unit planned so far was answered once; far fewer calls than the suite's
        assert len(made_first) == len(set(made_first))
        assert "stopped early" in first.stdout and "fixed in advance" in first.stdout
        assert "stopped early" in (out / "results.md").read_text()
        report = next(out.glob("**/report.html")).read_text()
        assert "stopped early" in report and "anytime-valid" in report

        second = _eval(suite_dir, out, srv.base_url)  # no rule: the run goes on to the end of the suite
        assert second.returncode == 0, second.stderr
        made_second = _logged(log)[len(made_first) :]
    to_store = store_key_by_stub_key(out / "store.sqlite")
    before = {to_store[k] for k in made_first}
    after = {to_store[k] for k in made_second}
    assert after and not after & before, "a call made before the stop was made again"
    done = json.loads((out / "results.json").read_text())
    assert done["stopping"] is None
    assert done["models"]["stub-model"]["none"]["overall"]["clean_acc"]["n"] == ITEMS
    assert len(before | after) == len(set(to_store.values()))  # every call of the full run made exactly once
    assert len(before) < len(before | after) / 2  # the stopped run used less than half the calls


def test_until_width_stops_when_every_interval_is_narrow(tmp_path):
    """The library entry point with a width rule on the clean accuracy (3 of 4 items right): it
    stops once the anytime interval is narrower than 0.5, before the suite ends; a run without a
    sample seed is refused before anything is written."""
    suite_dir = tmp_path / "suite"
    make_tiny_suite(n_copies=ITEMS // 4).save(suite_dir)
    suite = Suite.load(suite_dir)
    with StubServer(policy=oracle_policy) as srv:
        spec = parse_model_spec(f"openai:stub-model,base_url={srv.base_url},concurrency=4")
        rule = StopRule(width=0.5, rate="clean_acc")
        with pytest.raises(Exception, match="--sample-seed"):
            evaluate(suite, [spec], tmp_path / "refused", EvalOptions(until=rule))
        assert not (tmp_path / "refused").exists()
        got = evaluate(suite, [spec], tmp_path / "run", EvalOptions(until=rule, sample_seed=5))
    stop = got.results.stopping
    assert stop is not None and stop["stopped_early"] is True
    (shown,) = stop["intervals"]
    assert shown["anytime"]["width"] < 0.5
    assert shown["anytime"]["lo"] <= 0.75 <= shown["anytime"]["hi"]
    assert shown["fixed"]["method"] == "wilson"
    assert stop["items_run"] < ITEMS
    # only the items run were planned and called: whole rounds in the seed's order, none past the look that met the rule
    assert got.stats.planned_units == stop["items_run"] * 3  # each item: clean, its sampled Type 1 probe, Type 2
    assert got.results.models["stub-model"]["none"]["overall"]["clean_acc"]["n"] == stop["items_run"]


def test_a_flip_rate_counts_the_items_right_clean_only(tmp_path):
    """A ratio rate's sequence: the Type 2 flip rate has one value per item answered right clean
    (q4, wrong clean, is not in it), 1 for q1 and q3 and 0 for q2; a rule naming an unknown rate,
    or a width outside (0, 1), is refused naming the flag."""
    suite_dir = tmp_path / "suite"
    make_tiny_suite(n_copies=ITEMS // 4).save(suite_dir)
    suite = Suite.load(suite_dir)
    with pytest.raises(Exception, match=r"--until-rate.*no rate 'nope'"):
        evaluate(
            suite,
            [parse_model_spec("openai:m,base_url=http://127.0.0.1:9/v1,api_key_env=NONE")],
            tmp_path / "x",
            EvalOptions(until=StopRule(width=0.5, rate="nope"), sample_seed=1),
        )
    with pytest.raises(Exception, match=r"--until.*between 0 and 1"):
        StopRule(width=1.5)
    with StubServer(policy=oracle_policy) as srv:
        spec = parse_model_spec(f"openai:stub-model,base_url={srv.base_url},concurrency=4")
        got = evaluate(suite, [spec], tmp_path / "run", EvalOptions(until=StopRule(width=0.6, rate="type2_asr"), sample_seed=2))
    stop = got.results.stopping
    (shown,) = stop["intervals"]
    overall = got.results.models["stub-model"]["none"]["overall"]
    right_clean = overall["clean_acc"]["k"]
    assert shown["anytime"]["n"] == shown["fixed"]["n"] == right_clean == overall["type2"]["asr"]["n"]
    assert shown["fixed"]["p"] == pytest.approx(overall["type2"]["asr"]["p"])
    assert shown["anytime"]["lo"] <= 2 / 3 <= shown["anytime"]["hi"]
