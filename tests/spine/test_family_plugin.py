"""The proof that a family plugs in: a toy second family (tests/toy_family.py), declared in a few dozen lines and
registered at run time, runs end to end through evaluate, the store, the frame and the report
without any change to a spine module. It asks each MCQ clean and "shouted" (the question in
capitals), scores by letter or by an LLM judge, and reports accuracy per condition.
The stub server stands in for the answering model and for the judge (the boundary we do not own)."""

from __future__ import annotations

import re

import pytest

from medresilience import EvalOptions, Suite, build_report, evaluate, parse_model_spec
from medresilience.records import GenericProbe
from medresilience.run.frame import results_frame
from medresilience.store import Store
from medresilience.testing.stub import StubServer
from toy_family import answerer, make_toy_suite


@pytest.fixture
def toy(tmp_path, toy_family):
    make_toy_suite().save(tmp_path / "suite")
    return Suite.load(tmp_path / "suite")


def test_a_toy_family_runs_end_to_end(tmp_path, toy):
    assert isinstance(toy.probes[0], GenericProbe) and toy.probes[0].facet_values() == {"style": "caps"}
    with StubServer(policy=answerer) as srv:
        spec = parse_model_spec(f"openai:toy-model,base_url={srv.base_url}")
        res = evaluate(toy, [spec], tmp_path / "run", EvalOptions(settings=("none", "caution")))
    h = res.results.headline("toy-model")
    assert (h["clean"].k, h["clean"].n) == (6, 6) and (h["shouted"].k, h["shouted"].n) == (3, 6)
    assert set(res.results.models["toy-model"]) == {"none", "caution"}
    with Store(tmp_path / "run" / "store.sqlite") as st:
        df = results_frame(st, toy)
    assert set(df["condition"]) == {"clean", "shouted"} and "style" in df.columns and set(df["style"].dropna()) == {"caps"}
    assert len(df) == 24 and (df["value"].notna()).all()
    rep = build_report([tmp_path / "run"])
    html = rep.html.read_text()
    assert rep.families == ["toy"] and 'id="toy"' in html and "Shouting" in html and 'id="misleading"' not in html
    assert (rep.out_dir / "tables" / "toy_headline.csv").exists()


def test_a_toy_family_scored_by_a_judge(tmp_path, toy):
    calls = {"judge": 0}

    def judge(messages, request):
        calls["judge"] += 1
        user = messages[-1]["content"]
        gold = re.search(r"gold[^A-D]*([A-D])", user).group(1)
        given = re.search(r"Answer: ([A-D])", user).group(1)
        return f"The answer says {given}.\nVERDICT: {'right' if given == gold else 'wrong'}"

    with StubServer(policy=answerer) as srv, StubServer(policy=judge) as jsrv:
        spec = parse_model_spec(f"openai:toy-model,base_url={srv.base_url}")
        opts = EvalOptions(scoring="judge", family={"judge": f"openai:judge-model,base_url={jsrv.base_url}"})
        res = evaluate(toy, [spec], tmp_path / "run", opts)
        assert calls["judge"] == 12
        again = evaluate(toy, [spec], tmp_path / "run", opts)
    assert calls["judge"] == 12 and again.stats.called == 0  # judged answers are cached like every call
    h = res.results.headline("toy-model")
    assert (h["clean"].k, h["shouted"].k) == (6, 3)
    with Store(tmp_path / "run" / "store.sqlite") as st:
        df = results_frame(st, toy)
        scorers = {r[0] for r in st.conn.execute("SELECT DISTINCT scorer FROM scores")}
    assert len(scorers) == 1 and next(iter(scorers)).startswith("judge:toy-correct@") and set(df["scoring"]) == scorers
    assert set(df["label"].dropna()) == {"right", "wrong"} and set(df["value"]) == {0.0, 1.0}


def test_a_family_is_a_name_a_title_and_its_typed_sub_specs():
    """`Family` holds its hooks grouped by job: each field but the name and title is a frozen sub-spec
    of the type `SUB_SPECS` names (no flat hook comes back), and every registered family, the toy's
    included, is built from them."""
    from dataclasses import fields, is_dataclass

    from medresilience.family import SUB_SPECS, Family, families

    declared = {f.name: f.type for f in fields(Family)}
    assert list(declared) == ["name", "title", *SUB_SPECS], "Family has a name, a title and its sub-specs, nothing flat"
    for name, spec in SUB_SPECS.items():
        assert is_dataclass(spec) and spec.__dataclass_params__.frozen, name
        assert str(declared[name]).startswith(spec.__name__), (name, declared[name])
    from toy_family import TOY

    for fam in [*families(), TOY]:
        for name, spec in SUB_SPECS.items():
            assert isinstance(getattr(fam, name), spec), (fam.name, name)
