"""Epochs (`medres eval --epochs N`): every unit answered N times, epoch e decoding with seed + e;
the clinical-noise metrics pool the epochs, pair each variant with the original of the same epoch,
resample whole cases, and give each epoch's accuracy with the mean and spread across epochs."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import FIXTURES
from medresilience import EvalOptions, build_report, evaluate
from medresilience.families.noise.construct.build import NoiseBuildOptions, build_noise
from medresilience.families.noise.delivery import NoiseOptions, render
from medresilience.families.noise.metrics import noise_metrics
from medresilience.families.noise.testing import FakeGenerator
from medresilience.models.spec import parse_model_spec
from medresilience.run.runner import plan
from medresilience.runtime.errors import ConfigError
from medresilience.stats import cluster_interval, cluster_mcnemar, mcnemar_exact, paired_cluster_diff, sign_flip_test, wilson
from medresilience.suite import Suite
from medresilience.testing.stub import StubServer


def test_epochs_pool_accuracy_pair_within_an_epoch_and_resample_cases():
    # 10 cases, 2 epochs. Epoch 0: original right on all, variant right on 6 (4 flips).
    # Epoch 1: original right on the first 5 only, variant right on the last 5 (5 flips, 5 reverse).
    rows = []
    for n in range(10):
        rows += [(f"i{n}", "clean", 0, True), (f"i{n}", "redherring-10", 0, n >= 4), (f"i{n}", "clean", 1, n < 5), (f"i{n}", "redherring-10", 1, n >= 5)]
    df = pd.DataFrame(
        [{"model": "m", "setting": "none", "item_id": i, "condition": c, "epoch": e, "source": "s", "status": "valid", "correct": ok} for i, c, e, ok in rows]
    )
    block = noise_metrics(df)["models"]["m"]["none"]
    o, v = block["overall"], block["by_variant"]["redherring-10"]
    assert o["n_epochs"] == 2 and o["n_items"] == 10
    assert (o["clean_acc"]["k"], o["clean_acc"]["n"]) == (15, 20)  # pooled over the epochs
    assert (v["acc"]["k"], v["acc"]["n"]) == (11, 20) and v["acc"]["wilson_lo"] == pytest.approx(wilson(11, 20).lo)
    # pairs are (case, epoch): b = 4 + 5 flips, c = 0 + 5 reverse; across epochs it would not be so
    assert (v["paired"]["n"], v["paired"]["b"], v["paired"]["c"]) == (20, 9, 5)
    assert (v["flip"]["k"], v["flip"]["n"]) == (9, 15)
    # the bootstrap resamples the 10 cases, each with both of its epochs
    d0 = [1 if n < 4 else 0 for n in range(10)]
    d1 = [1 if n < 5 else -1 for n in range(10)]
    boot = paired_cluster_diff([a + b for a, b in zip(d0, d1)], [2] * 10)
    assert v["paired"]["clusters"] == 10
    assert (v["paired"]["drop"], v["paired"]["lo"], v["paired"]["hi"]) == pytest.approx((boot["diff"], boot["lo"], boot["hi"]))
    ep = v["epochs"]
    assert [(e["epoch"], e["k"], e["n"]) for e in ep["per_epoch"]] == [(0, 6, 10), (1, 5, 10)]
    # repeats of a case are not independent cases: the test and the intervals cluster by case
    before = [True] * 10 + [n < 5 for n in range(10)]
    after = [n >= 4 for n in range(10)] + [n >= 5 for n in range(10)]
    cases = [f"i{n}" for n in range(10)] * 2
    assert v["paired"]["test"] == "cluster_mcnemar"
    assert v["paired"]["p_mcnemar"] == pytest.approx(cluster_mcnemar(before, after, cases)["p"])
    assert v["paired"]["p_mcnemar"] != pytest.approx(mcnemar_exact(9, 5))
    right = [n >= 4 for n in range(10)]  # the variant's answers per case: epoch 0 plus epoch 1
    succ = np.array([int(r) + int(n >= 5) for n, r in enumerate(right)])
    assert (v["acc"]["lo"], v["acc"]["hi"]) == pytest.approx(cluster_interval(succ, np.full(10, 2)))
    assert v["acc"]["interval"] == "case-clustered bootstrap" and o["clean_acc"]["interval"] == "case-clustered bootstrap"
    # flips per case among its clean-correct pairs: epoch 0 (all clean-correct) and epoch 1 (cases 0-4)
    flips = np.array([int(n < 4) + int(n < 5) for n in range(10)])
    base = np.array([1 + int(n < 5) for n in range(10)])
    assert (v["flip"]["lo"], v["flip"]["hi"]) == pytest.approx(cluster_interval(flips, base))
    assert v["flip"]["interval"] == "case-clustered bootstrap" and v["flip"]["wilson_lo"] == pytest.approx(wilson(9, 15).lo)
    assert ep["mean"] == pytest.approx(0.55) and ep["sd"] == pytest.approx(np.std([0.6, 0.5], ddof=1))
    assert [e["p"] for e in o["clean_epochs"]["per_epoch"]] == [1.0, 0.5]
    # one epoch: no spread, and the numbers are those of a frame without the column
    one = df[df["epoch"] == 0]
    a = noise_metrics(one)["models"]["m"]["none"]
    b = noise_metrics(one.drop(columns="epoch"))["models"]["m"]["none"]
    assert a["by_variant"]["redherring-10"]["epochs"]["sd"] is None
    assert a["by_variant"]["redherring-10"]["paired"] == b["by_variant"]["redherring-10"]["paired"]
    one_v = a["by_variant"]["redherring-10"]
    assert one_v["paired"]["test"] == "mcnemar_exact" and one_v["paired"]["p_mcnemar"] == pytest.approx(mcnemar_exact(4, 0))
    assert one_v["acc"]["interval"] == "wilson" and one_v["acc"]["lo"] == pytest.approx(wilson(6, 10).lo)


@pytest.fixture(scope="module")
def suite(tmp_path_factory, stub_server) -> Suite:
    out = tmp_path_factory.mktemp("noise") / "suite"
    opts = NoiseBuildOptions(seed=1, abbreviations=(str(FIXTURES / "noise_abbreviations.tsv"),))
    srv = stub_server(policy=FakeGenerator())
    build_noise(FIXTURES / "noise_items.jsonl", out, parse_model_spec(f"openai:fake-gen,base_url={srv.base_url}"), opts)
    return Suite.load(out)


class SeededAnswerer:
    """A model whose answer depends on the decoding seed it is sent: at seed 1 the 10 red herrings
    mislead it; otherwise it answers right. Records the seeds and temperatures it saw."""

    def __init__(self, suite: Suite):
        self.texts = {}
        for item in suite.items.values():
            for probe in [None, *suite.probes_for(item.id)]:
                self.texts[render(item, probe, "letter", NoiseOptions())[-1]["content"]] = (item, probe)
        self.seen: list[tuple[int, float]] = []

    def __call__(self, messages, request):
        item, probe = self.texts[messages[-1]["content"]]
        self.seen.append((request.get("seed"), request.get("temperature")))
        misled = request.get("seed") == 1 and probe is not None and probe.condition == "redherring-10"
        return "Answer: " + (next(k for k in item.options if k != item.answer) if misled else item.answer)


def _epochs_in_store(db: Path) -> list[tuple[int, int]]:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT epoch, COUNT(*) FROM units GROUP BY epoch ORDER BY epoch").fetchall()
    finally:
        con.close()


def test_a_run_with_three_epochs_end_to_end(suite, tmp_path):
    conds = {"variants": "redherring-10,whitespace"}
    policy = SeededAnswerer(suite)
    with StubServer(policy=policy) as srv:
        spec = parse_model_spec(f"openai:m,base_url={srv.base_url},temperature=0.7")
        one = evaluate(suite, [spec], tmp_path / "run", EvalOptions(family=conds))
        assert one.stats.called == 15  # 5 cases x (original + 2 variants)
        three = evaluate(suite, [spec], tmp_path / "run", EvalOptions(family=conds, epochs=3))
    # epoch 0 is the one-epoch run's units: its calls are reused, epochs 1 and 2 are new calls
    assert (three.stats.cached, three.stats.called) == (15, 30)
    assert sorted(set(policy.seen)) == [(0, 0.7), (1, 0.7), (2, 0.7)]
    assert _epochs_in_store(tmp_path / "run" / "store.sqlite") == [(0, 15), (1, 15), (2, 15)]
    cfg = json.loads((tmp_path / "run" / "run.json").read_text())
    assert cfg["options"]["epochs"] == 3
    assert cfg["decoding"] == {"m": [{"epoch": e, "seed": e, "temperature": 0.7} for e in range(3)]}
    block = three.results.models["m"]["none"]
    rh = block["by_variant"]["redherring-10"]
    assert [e["p"] for e in rh["epochs"]["per_epoch"]] == [1.0, 0.0, 1.0]
    assert rh["acc"]["k"] == 10 and rh["acc"]["n"] == 15 and rh["paired"]["b"] == 5 and rh["paired"]["clusters"] == 5
    assert rh["epochs"]["mean"] == pytest.approx(2 / 3) and rh["epochs"]["sd"] == pytest.approx(np.std([1, 0, 1], ddof=1))
    assert block["by_variant"]["whitespace"]["epochs"]["sd"] == 0.0
    rep = build_report([tmp_path / "run"])
    html = rep.html.read_text()
    assert "<h3>Per epoch</h3>" in html and "Epoch 2" in html
    e = pd.read_csv(rep.out_dir / "tables" / "epochs.csv")
    assert len(e) == 3 * 3 and set(e["epoch"]) == {0, 1, 2}
    assert "### Per epoch" in (rep.out_dir / "report.md").read_text()


def test_epochs_are_refused_where_they_would_repeat_one_answer(suite):
    greedy = parse_model_spec("openai:m,base_url=http://127.0.0.1:9")  # temperature 0 by default
    with pytest.raises(ConfigError, match="temperature 0"):
        plan(suite, [greedy], EvalOptions(epochs=2))
    sampled = parse_model_spec("openai:m,base_url=http://127.0.0.1:9,temperature=0.7")
    assert len(plan(suite, [sampled], EvalOptions(epochs=2))) == 2 * len(plan(suite, [sampled], EvalOptions()))
    with pytest.raises(ConfigError, match="at least one epoch"):
        EvalOptions(epochs=0)
    from conftest import make_tiny_suite

    with pytest.raises(ConfigError, match="reads no repeats"):
        plan(make_tiny_suite(), [sampled], EvalOptions(epochs=2))


def test_a_model_without_a_seed_gets_one_call_per_epoch(suite):
    spec = parse_model_spec("anthropic/claude-x,temperature=0.7")
    planned = [p for p in plan(suite, [spec], EvalOptions(epochs=3)) if p.unit.unit_id.startswith("h1|")]
    assert "seed" not in planned[0].params and all(p.params == planned[0].params for p in planned)
    assert len({p.unit.key for p in planned}) == len(planned) == 3  # the same request, three keys
    assert [p.unit.epoch for p in planned] == [0, 1, 2]


def test_the_eval_command_takes_epochs(suite, tmp_path):
    from typer.testing import CliRunner

    from medresilience.cli import app

    with StubServer(policy=SeededAnswerer(suite)) as srv:
        base = ["eval", "--suite", str(suite.path), "-O", "variants=whitespace", "--out", str(tmp_path / "run")]
        r = CliRunner().invoke(app, [*base, "--model", f"openai:m,base_url={srv.base_url},temperature=0.5", "--epochs", "2"])
        assert r.exit_code == 0, r.output
        greedy = CliRunner().invoke(app, [*base, "--model", f"openai:m,base_url={srv.base_url}", "--epochs", "2"])
    assert greedy.exit_code == 2 and "temperature 0" in " ".join(greedy.output.split())
    assert _epochs_in_store(tmp_path / "run" / "store.sqlite") == [(0, 10), (1, 10)]


def test_two_runs_with_epochs_pair_within_an_epoch(suite, tmp_path):
    from medresilience import compare_runs

    conds = {"variants": "redherring-10"}
    with StubServer(policy=SeededAnswerer(suite)) as srv:
        for name, seed in (("a", 0), ("b", 10)):  # B's epochs are seeds 10 and 11: never misled
            spec = parse_model_spec(f"openai:m,base_url={srv.base_url},temperature=0.7,seed={seed}")
            evaluate(suite, [spec], tmp_path / name, EvalOptions(family=conds, epochs=2))
    cmp = compare_runs(tmp_path / "a", tmp_path / "b", tmp_path / "cmp")
    assert cmp.comparisons[0].counts["shared"] == 2 * 2 * 5  # (original + variant) x 2 epochs x 5 cases
    t = cmp.table.set_index(["condition", "metric"])
    rh = t.loc[("redherring-10", "accuracy")]
    # A is misled in its epoch 1 only: 5 of 10 pairs differ, all in B's favour; pairs are clustered by case
    assert (rh["n"], rh["items"], rh["diff"], rh["test"], rh["test_c"]) == (10, 5, 0.5, "cluster_mcnemar", 5)
    # each side's accuracy: 5 of 10 for A, one right and one wrong answer per case: its interval resamples cases
    assert (rh["a_k"], rh["a_n"]) == (5, 10)
    assert (rh["a_lo"], rh["a_hi"]) == pytest.approx(cluster_interval(np.ones(5, int), np.full(5, 2)))
    assert (rh["a_lo"], rh["a_hi"]) != pytest.approx((wilson(5, 10).lo, wilson(5, 10).hi))
    drop = t.loc[("redherring-10", "drop")]
    assert drop["n"] == 10 and drop["diff"] == pytest.approx(-0.5)  # B loses 0, A loses half (its epoch 1)
    # a difference of drops: the exact permutation test, flipping whole cases
    assert drop["test"] == "cluster_permutation_exact" and drop["p_test"] == pytest.approx(sign_flip_test([-1] * 5)["p"])
