"""`medres export`: runs of the three families, made against the stub server (the boundary we do
not own), written as an inspect_ai eval log (read back with inspect_ai itself, a test-only
dependency), as JSON Lines and as Parquet (read back with pandas); every unit of the store is in
each, with the store's fields, and the log's results hold the run's headline metrics.

The runs: misleading context on the tiny suite (two models, `none` and `caution`; the stub fails a
share of request bodies permanently, so some units are errors), false presuppositions judged by a
stub judge that gives no verdict for one question (an unscored unit), clinical noise built by the
fake generator."""

from __future__ import annotations

import json
import math
import re

import pandas as pd
import pytest
from inspect_ai.log import read_eval_log, read_eval_log_sample_summaries
from typer.testing import CliRunner

from conftest import FIXTURES, make_tiny_suite, oracle_policy
from medresilience.cli import app
from medresilience.export import open_run
from medresilience.families.noise.construct.build import NoiseBuildOptions, build_noise
from medresilience.families.noise.testing import FakeGenerator
from medresilience.families.presupposition.probe import PresuppositionProbe, probe_id
from medresilience.family import get
from medresilience.models.spec import parse_model_spec
from medresilience.records import Item, SuiteManifest
from medresilience.run.evaluation import evaluate
from medresilience.run.frame import results_frame
from medresilience.run.runner import EvalOptions
from medresilience.store import Store
from medresilience.suite import Suite
from medresilience.testing.stub import Faults

runner = CliRunner()
FAMILIES = ("misleading", "presupposition", "noise")
UNSCORED_QID = "p02"


def presupposition_suite(path) -> Suite:
    items, probes = [], []
    for i in range(4):
        pid = f"p{i:02d}"
        items.append(
            Item(
                id=pid,
                source="cancer-myth",
                question=f"Question {pid}: since it is advanced nothing helps, so what now (case {i})?",
                reference=f"Correction {pid}.",
            )
        )
        probes.append(
            PresuppositionProbe(
                id=probe_id(pid, "presupposition"), item_id=pid, condition="presupposition", facets={"category": "no_treatment", "generator": "g"}
            )
        )
    items.append(Item(id="n00", source="cancer-myth-nfp", question="Question n00: which side effects should we watch for?"))
    probes.append(PresuppositionProbe(id=probe_id("n00", "nfp"), item_id="n00", condition="nfp", facets={"generator": "g"}))
    Suite(SuiteManifest(name="presup-export", family="presupposition"), items, probes).save(path)
    return Suite.load(path)


def presupposition_policy(messages, request):
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    user = messages[-1]["content"]
    if not system.startswith("You are a judge."):
        qid = re.search(r"Question (\S+):", user).group(1)
        return f"[answers {qid}] <script>alert(1)</script> Some advice."
    qid = re.search(r"\[answers (\S+?)\]", user).group(1)
    if qid == UNSCORED_QID:
        return "I cannot decide."
    if "<correction>" in user:
        return json.dumps({"reason": f"reason for {qid}", "verdict": ("1", "0", "-1")[int(qid[1:]) % 3]})
    return json.dumps({"reason": "control", "verdict": "answers"})


@pytest.fixture(scope="module")
def runs(tmp_path_factory, stub_server):
    root = tmp_path_factory.mktemp("export")
    mis = make_tiny_suite(n_copies=2)
    mis.save(root / "mis-suite")
    mis = Suite.load(root / "mis-suite")
    srv = stub_server(policy=oracle_policy, faults=Faults(seed=3, rate_permanent=0.15))
    specs = [parse_model_spec(f"openai:{n},label={n},base_url={srv.base_url},max_retries=0") for n in ("m-a", "m-b")]
    evaluate(mis, specs, root / "misleading", EvalOptions(settings=("none", "caution")))
    presup = presupposition_suite(root / "presup-suite")
    srv = stub_server(policy=presupposition_policy)
    spec = parse_model_spec(f"openai:m,label=m,base_url={srv.base_url}")
    evaluate(presup, [spec], root / "presupposition", EvalOptions(scoring="judge", family={"judge": f"openai:judge,base_url={srv.base_url}"}))
    srv = stub_server(policy=FakeGenerator())
    res = build_noise(
        FIXTURES / "noise_items.jsonl",
        root / "noise-suite",
        parse_model_spec(f"openai:gen,base_url={srv.base_url}"),
        NoiseBuildOptions(seed=1, variants=("redherring-10", "rewrite")),
    )
    noise = Suite.load(res.out)
    srv = stub_server(policy="first")
    evaluate(noise, [parse_model_spec(f"openai:m,label=m,base_url={srv.base_url}")], root / "noise", EvalOptions())
    return root


def store_units(run_dir) -> dict[tuple[str, str], object]:
    with Store(run_dir / "store.sqlite") as store:
        return {(u.model, u.unit_id): u for u in store.unit_results(store.latest_run(), text=True, messages=True)}


def frame_statuses(run_dir) -> pd.Series:
    with open_run(run_dir) as run, Store(run_dir / "store.sqlite") as store:
        df = results_frame(store, run.suite)
    return df.groupby(["model", "setting", "condition", "status"], observed=True).size()


def export(run_dir, fmt, out):
    res = runner.invoke(app, ["export", str(run_dir), "--format", fmt, "--out", str(out)])
    assert res.exit_code == 0, res.output
    return res


@pytest.mark.parametrize("family", FAMILIES)
def test_inspect_reads_every_unit_and_the_headline_metrics(runs, family, tmp_path):
    run_dir = runs / family
    units = store_units(run_dir)
    results = json.loads((run_dir / "results.json").read_text())
    fam = get(family)
    for suffix in (".eval", ".json"):
        out = tmp_path / f"log{suffix}"
        assert f"{len(units)} units written" in export(run_dir, "inspect", out).output
        log = read_eval_log(str(out))
        assert log.eval.task == f"medresilience/{family}" and log.results.total_samples == len(units)
        seen = {}
        for s in log.samples:
            key = (s.metadata["model"], s.metadata["unit_id"])
            u = units[key]
            seen[key] = s
            assert s.metadata["family"] == family and s.metadata["condition"] == u.condition and s.metadata["setting"] == u.setting
            assert set(s.metadata["facets"]) == set(fam.probes.facets)
            assert [m.role for m in s.input] == [m["role"] for m in json.loads(u.messages)]
            assert s.input[-1].text == json.loads(u.messages)[-1]["content"]
            if u.call_status == "error":
                assert s.error is not None and not s.scores
                continue
            assert s.output.completion == u.text
            score = s.scores[u.scoring]
            assert score.answer == u.label
            if u.status == "valid":
                assert score.value == u.value
            else:
                assert math.isnan(score.value) and score.reason
        assert set(seen) == set(units)  # every unit, once
        if suffix == ".eval":  # what `inspect view` lists before it opens a sample
            assert len(read_eval_log_sample_summaries(str(out))) == len(units)
            assert read_eval_log(str(out), header_only=True).results.total_samples == len(units)
        got = {sc.name: sc.metrics for sc in log.results.scores}
        for model, settings in results["models"].items():
            for setting, block in settings.items():
                head = fam.measures.headline(block["overall"])
                metrics = got[f"{model}/{setting}"]
                want = {k: v for k, v in head.items() if v and k in dict(fam.measures.columns)}
                assert set(metrics) == set(want)
                for k, rate in want.items():
                    if rate.get("p") is None:
                        assert math.isnan(metrics[k].value)
                    else:
                        assert metrics[k].value == pytest.approx(rate["p"]) and metrics[k].metadata["n"] == rate["n"]


def test_the_runs_hold_errors_and_unscored_units(runs):
    """The fixture's runs cover what the exports must carry: failed calls and a judge without a verdict."""
    assert any(u.call_status == "error" for u in store_units(runs / "misleading").values())
    presup = store_units(runs / "presupposition")
    assert [u.item_id for u in presup.values() if u.status == "unscored"] == [UNSCORED_QID]


@pytest.mark.parametrize("family", FAMILIES)
def test_flat_rows_equal_the_store(runs, family, tmp_path):
    run_dir = runs / family
    units = store_units(run_dir)
    export(run_dir, "jsonl", tmp_path / "units.jsonl")
    export(run_dir, "parquet", tmp_path / "units.parquet")
    rows = [json.loads(line) for line in (tmp_path / "units.jsonl").read_text(encoding="utf-8").splitlines()]
    df = pd.read_parquet(tmp_path / "units.parquet")
    with open_run(run_dir) as run:
        columns = list(run.columns)
    assert len(rows) == len(df) == len(units)
    assert list(df.columns) == columns and all(list(r) == columns for r in rows)
    assert set(get(family).probes.facets) <= set(columns)
    for r, (_, p) in zip(rows, df.iterrows()):
        u = units[r["model"], r["unit_id"]]
        assert (r["item_id"], r["probe_id"], r["condition"], r["setting"], r["scoring"], r["key"]) == (
            u.item_id,
            u.probe_id,
            u.condition,
            u.setting,
            u.scoring,
            u.key,
        )
        assert r["messages"] == u.messages and r["reply"] == u.text and r["label"] == u.label and r["value"] == u.value
        assert r["call_status"] == u.call_status
        for c in columns:  # the Parquet row is the JSON row (facets as text)
            want = r[c] if r[c] is None or c not in get(family).probes.facets else str(r[c])
            assert pd.isna(p[c]) if want is None else p[c] == want, c
        if u.scoring.startswith("judge:") and u.status == "valid":
            assert r["verdict"] == u.label and r["reason"]
        if r["status"] == "valid":
            assert r["read"]
    # the status of each unit is the results frame's: the same counts per model, setting and condition
    got = (
        pd.Series([1] * len(rows), index=pd.MultiIndex.from_tuples([(r["model"], r["setting"], r["condition"], r["status"]) for r in rows]))
        .groupby(level=[0, 1, 2, 3])
        .sum()
    )
    want = frame_statuses(run_dir)
    assert {k: int(v) for k, v in got.items()} == {tuple(str(x) for x in k): int(v) for k, v in want.items()}


def test_bad_requests_exit_2_and_write_nothing(runs, tmp_path):
    out = tmp_path / "log.txt"
    res = runner.invoke(app, ["export", str(runs / "noise"), "--format", "inspect", "--out", str(out)])
    assert res.exit_code == 2 and ".eval or .json" in res.output and not out.exists()
    res = runner.invoke(app, ["export", str(runs / "noise"), "--format", "csv", "--out", str(tmp_path / "x.csv")])
    assert res.exit_code == 2 and "inspect, jsonl, parquet" in res.output
    res = runner.invoke(app, ["export", str(tmp_path), "--format", "jsonl", "--out", str(tmp_path / "x.jsonl")])
    assert res.exit_code == 2 and "store.sqlite" in res.output and not (tmp_path / "x.jsonl").exists()
    assert [p.name for p in tmp_path.iterdir()] == []  # no temporary left behind either


def test_a_run_or_a_suite_not_both_and_a_run_names_its_format(runs, tmp_path):
    res = runner.invoke(app, ["export", str(runs / "noise"), "--suite", str(runs / "noise-suite"), "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "not both" in res.output
    res = runner.invoke(app, ["export", str(runs / "noise"), "--out", str(tmp_path / "x.jsonl")])
    assert res.exit_code == 2 and "inspect, jsonl, parquet" in res.output
    assert [p.name for p in tmp_path.iterdir()] == []
