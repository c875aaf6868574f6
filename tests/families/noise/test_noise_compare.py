"""`medres compare` on two clinical-noise runs, end to end: a suite built from the handwritten cases
(copied under new ids, no shared data needed) with the fake generator, two stub models that answer
by known rules, evaluated in two runs (and in one), compared; every number is recomputed from the
rules."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from conftest import FIXTURES
from medresilience import EvalOptions, compare_runs, evaluate
from medresilience.cli import app
from medresilience.families.noise.construct.build import NoiseBuildOptions, build_noise
from medresilience.families.noise.delivery import NoiseOptions, render
from medresilience.families.noise.testing import FakeGenerator
from medresilience.models.spec import parse_model_spec
from medresilience.stats import cluster_mcnemar, holm, mcnemar_exact, paired_cluster_diff, sign_flip_test, wilson
from medresilience.suite import Suite
from medresilience.testing.stub import StubServer

COPIES = 5


def rule_a(idx: int, cond: str) -> bool:
    """Model A: right on the original except every 5th case, loses 10 spread red herrings on every
    other case, the block on every 3rd."""
    if cond == "clean":
        return idx % 5 != 4
    if cond == "redherring-10":
        return idx % 2 == 1
    if cond == "together-10":
        return idx % 3 != 0
    return idx % 5 != 4


def rule_b(idx: int, cond: str) -> bool:
    """Model B: right on the original except every 7th, loses the spread red herrings on every 4th."""
    if cond == "clean":
        return idx % 7 != 6
    if cond == "redherring-10":
        return idx % 4 != 0
    return idx % 7 != 6


@pytest.fixture(scope="module")
def suite(tmp_path_factory, stub_server):
    root = tmp_path_factory.mktemp("noise-compare")
    rows = [json.loads(x) for x in (FIXTURES / "noise_items.jsonl").read_text().splitlines()]
    items = root / "items.jsonl"
    # each copy a year older, so no two cases render the same prompt (one prompt is one call)
    items.write_text(
        "".join(
            json.dumps(
                {**r, "id": f"{r['id']}-{k}", "question": re.sub(r"(\d+)-year-old", lambda m, k=k: f"{int(m.group(1)) + k}-year-old", r["question"], count=1)}
            )
            + "\n"
            for k in range(COPIES)
            for r in rows
        )
    )
    srv = stub_server(policy=FakeGenerator())
    res = build_noise(
        items,
        root / "suite",
        parse_model_spec(f"openai:fake-gen,base_url={srv.base_url}"),
        NoiseBuildOptions(seed=2, variants=("redherring-1", "redherring-10", "together-10", "whitespace", "rewrite")),
    )
    return Suite.load(res.out)


def policy(suite: Suite, rules: dict):
    """A stub policy answering as rules[model](case index, condition) says."""
    table = {}
    for idx, item in enumerate(suite.items.values()):
        for probe in [None, *suite.probes_for(item.id)]:
            table[render(item, probe, "letter", NoiseOptions())[-1]["content"]] = (idx, "clean" if probe is None else probe.condition, item)

    def answer(messages, request):
        idx, cond, item = table[messages[-1]["content"]]
        right = rules[request["model"]](idx, cond)
        return "Answer: " + (item.answer if right else next(k for k in item.options if k != item.answer))

    return answer


def expected_rows(suite: Suite, conds: list[str]) -> dict[tuple[str, str], dict]:
    """(condition, metric) -> the numbers of B - A, from the rules."""
    n_items = len(suite.items)
    ra = {c: np.array([rule_a(i, c) for i in range(n_items)]) for c in ["clean", *conds]}
    rb = {c: np.array([rule_b(i, c) for i in range(n_items)]) for c in ["clean", *conds]}
    out: dict[tuple[str, str], dict] = {}
    for c in ["clean", *conds]:
        xa, xb = ra[c], rb[c]
        b, cc = int((xa & ~xb).sum()), int((~xa & xb).sum())
        boot = paired_cluster_diff(xb.astype(float) - xa.astype(float), np.ones(n_items))
        out[(c, "accuracy")] = {
            "a_k": int(xa.sum()),
            "b_k": int(xb.sum()),
            "n": n_items,
            "diff": (xb.sum() - xa.sum()) / n_items,
            "lo": boot["lo"],
            "hi": boot["hi"],
            "test": "mcnemar_exact",
            "test_b": b,
            "test_c": cc,
            "p_test": mcnemar_exact(b, cc),
            "a_lo": wilson(int(xa.sum()), n_items).lo,
        }
        if c != "clean":
            da = ra["clean"].astype(float) - xa
            db = rb["clean"].astype(float) - xb
            boot = paired_cluster_diff(db - da, np.ones(n_items))
            # a difference of two drops (-2..2 per item): the exact paired permutation test
            out[(c, "drop")] = {
                "a_p": da.mean(),
                "b_p": db.mean(),
                "n": n_items,
                "diff": (db - da).mean(),
                "lo": boot["lo"],
                "hi": boot["hi"],
                "test": "permutation_exact",
                "p_test": sign_flip_test(db - da)["p"],
            }
    xa = np.concatenate([ra[c] for c in conds])
    xb = np.concatenate([rb[c] for c in conds])
    items = np.concatenate([np.arange(n_items) for _ in conds])
    t = cluster_mcnemar(xa, xb, items)
    d = np.bincount(items, weights=xb.astype(float) - xa.astype(float))
    boot = paired_cluster_diff(d, np.bincount(items))
    out[("perturbed", "accuracy")] = {
        "a_k": int(xa.sum()),
        "b_k": int(xb.sum()),
        "n": len(xa),
        "items": n_items,
        "diff": (xb.sum() - xa.sum()) / len(xa),
        "lo": boot["lo"],
        "hi": boot["hi"],
        "test": "cluster_mcnemar",
        "test_b": t["b"],
        "test_c": t["c"],
        "p_test": t["p"],
    }
    return out


def check(table: pd.DataFrame, exp: dict[tuple[str, str], dict]) -> None:
    got = {(r["condition"], r["metric"]): r for r in table.to_dict("records")}
    assert set(got) == set(exp)
    for k, e in exp.items():
        for f, v in e.items():
            if isinstance(v, str):
                assert got[k][f] == v, (k, f)
            else:
                assert got[k][f] == pytest.approx(v), (k, f, got[k][f], v)
    assert "p_boot" not in table  # the bootstrap gives intervals; Holm adjusts the exact and clustered tests
    assert table["p_holm"].tolist() == pytest.approx(holm(table["p_test"].tolist()))


def test_two_runs_of_two_models_pair_unit_by_unit(suite, tmp_path):
    assert len(suite.items) == 5 * COPIES
    conds = ["redherring-1", "redherring-10", "together-10", "whitespace", "rewrite"]
    assert {p.condition for p in suite.probes} == set(conds) and len(suite.probes) == len(conds) * len(suite.items)
    rules = {"model-a": rule_a, "model-b": rule_b}
    with StubServer(policy=policy(suite, rules)) as srv:
        evaluate(suite, [parse_model_spec(f"openai:model-a,base_url={srv.base_url}")], tmp_path / "a", EvalOptions())
        evaluate(suite, [parse_model_spec(f"openai:model-b,base_url={srv.base_url}")], tmp_path / "b", EvalOptions())
        # B again, asked only about two variants: only the shared conditions pair
        evaluate(
            suite, [parse_model_spec(f"openai:model-b,base_url={srv.base_url}")], tmp_path / "b2", EvalOptions(family={"variants": "redherring-10,whitespace"})
        )
        # both models in one run
        evaluate(
            suite,
            [parse_model_spec(f"openai:model-a,base_url={srv.base_url}"), parse_model_spec(f"openai:model-b,base_url={srv.base_url}")],
            tmp_path / "ab",
            EvalOptions(),
        )

    cmp = compare_runs(tmp_path / "a", tmp_path / "b", tmp_path / "cmp")
    exp = expected_rows(suite, conds)
    check(cmp.table, exp)
    assert cmp.table["pair"].unique().tolist() == ["model-b vs model-a"]  # labels in one run each: no run needed (model_names)
    assert cmp.comparisons[0].counts == {"units_a": 150, "units_b": 150, "answered_a": 150, "answered_b": 150, "shared": 150}
    rh = cmp.table[(cmp.table["condition"] == "redherring-10") & (cmp.table["metric"] == "drop")].iloc[0]
    assert rh["diff"] < 0  # B loses less to the red herrings than A
    html = cmp.html.read_text()
    assert 'id="fig-noise-compare"' in html and "Red herrings, 10" in html and "All variants pooled" in html and "mcnemar_exact" in html
    assert "model-b vs model-a" in cmp.markdown.read_text() and cmp.csv.exists() and cmp.parquet.exists()
    assert pd.read_parquet(cmp.parquet)["diff"].tolist() == pytest.approx(cmp.table["diff"].tolist())

    part = compare_runs(tmp_path / "a", tmp_path / "b2", tmp_path / "cmp2")
    check(part.table, expected_rows(suite, ["redherring-10", "whitespace"]))
    assert part.comparisons[0].counts["shared"] == 3 * len(suite.items)

    one = compare_runs(tmp_path / "ab", tmp_path / "ab", tmp_path / "cmp3", pairs=["model-a=model-b"])
    check(one.table, exp)
    assert one.table["pair"].unique().tolist() == ["model-b vs model-a"]  # one run on both sides: its labels
    with pytest.raises(ValueError, match="not in run A"):
        compare_runs(tmp_path / "ab", tmp_path / "ab", tmp_path / "bad", pairs=["nope=model-b"])

    r = CliRunner().invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "cli")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "cli" / "compare.html").exists()
    assert pd.read_csv(tmp_path / "cli" / "tables" / "compare.csv")["diff"].tolist() == pytest.approx(cmp.table["diff"].tolist())


def test_the_compare_page_escapes_what_the_runs_are_called(suite, tmp_path):
    """The page is written through an autoescaping template: a run's name (its directory's) is
    shown as text wherever it appears, never read as markup."""
    a, b = tmp_path / "<i>a", tmp_path / "b&\"'"
    with StubServer(policy=policy(suite, {"model-a": rule_a})) as srv:
        spec = parse_model_spec(f"openai:model-a,base_url={srv.base_url}")
        evaluate(suite, [spec], a, EvalOptions(family={"variants": "whitespace"}))
        evaluate(suite, [spec], b, EvalOptions(family={"variants": "whitespace"}))
    cmp = compare_runs(a, b, tmp_path / "cmp")
    body = cmp.html.read_text().split('<section id="facts">')[0]
    assert "<i>a" not in body and "against run A <code>&lt;i&gt;a</code>" in body
    assert "Run B <code>b&amp;&quot;&#x27;</code>" in body and "<li>model-a [b&amp;&quot;&#x27;] vs model-a [&lt;i&gt;a]:" in body
