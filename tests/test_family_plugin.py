"""The proof that a family plugs in: a toy second family, declared here in a few dozen lines and
registered at run time, runs end to end through evaluate, the store, the frame and the report
without any change to a spine module. It asks each MCQ clean and "shouted" (the question in
capitals), scores by letter or by an LLM judge, and reports accuracy per condition.
The stub server stands in for the answering model and for the judge (the boundary we do not own)."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from pydantic import BaseModel

from medresilience import EvalOptions, Suite, build_report, evaluate, parse_model_spec, register_family
from medresilience.family import Family, unregister
from medresilience.frame import results_frame
from medresilience.records import GenericProbe, Item, SuiteManifest
from medresilience.report import html as H
from medresilience.report.section import FamilySection
from medresilience.scoring import mcq_scorer
from medresilience.scoring.judge import Judge, Rubric
from medresilience.stats import wilson
from medresilience.store import Store
from medresilience.testing.stub import StubServer

# ------------------------------------------------------------------ the toy family (all of it)
RUBRIC = Rubric(
    name="toy-correct",
    instructions="Say whether the answer picks the right option.",
    inputs=["question", "gold"],
    verdicts={"right": {"value": 1, "description": "the gold option"}, "wrong": {"value": 0, "description": "another"}},
)


class ToyOptions(BaseModel):
    judge: str | None = None  # a model spec: score by judge instead of by letter


def render(item, probe, scoring, options):
    q = item.question if probe is None else probe.parts["text"]
    opts = "\n".join(f"{k}. {v}" for k, v in item.options.items())
    return [{"role": "system", "content": "Answer with a letter."}, {"role": "user", "content": f"{q}\n{opts}\nAnswer:"}]


def scorer(item, probe, scoring, options):
    if scoring == "judge":
        return Judge(parse_model_spec(options.judge), RUBRIC, structured=False).scorer({"question": item.question, "gold": item.answer})
    return mcq_scorer(item, scoring)


def metrics(df):
    models: dict = {}
    for (model, setting), g in df.groupby(["model", "setting"], observed=True, sort=False):
        answered = g[g["status"].isin(["valid", "invalid"])]
        block = {f"{c}_acc": wilson(int(a["correct"].sum()), len(a)).as_dict() for c, a in answered.groupby("condition", observed=True)}
        block["counts"] = {"units": len(g), "errors": int((g["status"] == "error").sum()), "invalid": int((g["status"] == "invalid").sum())}
        models.setdefault(str(model), {})[str(setting)] = {"overall": block, "counts": block["counts"]}
    return {"models": models, "mean_across_models": {}}


def report(runs):
    rows = [
        [H.esc(m), H.esc(s), H.rate_cell(**{k: b["overall"][f"{c}_acc"][k] for k in ("p", "lo", "hi", "n")})]
        for r in runs
        for m, ss in r.results["models"].items()
        for s, b in ss.items()
        for c in ("clean", "shouted")
    ]
    head = pd.DataFrame(
        [
            {
                "model": m,
                "setting": s,
                **{f"{c}_{k}": b["overall"][f"{c}_acc"][k] for c in ("clean", "shouted") for k in "plohin" if k in ("p", "lo", "hi", "n")},
            }
            for r in runs
            for m, ss in r.results["models"].items()
            for s, b in ss.items()
        ]
    )
    return FamilySection(
        "toy",
        "Shouting",
        "<p>toy key numbers</p>",
        [("toy", "Shouting", H.table(rows, ["Model", "Setting", "Accuracy"]))],
        "## Shouting\n",
        {"toy_headline": head},
        head,
        [("clean", "Clean"), ("shouted", "Shouted")],
    )


TOY = Family(
    name="toy",
    title="Shouting",
    render=render,
    scorer=scorer,
    metrics=metrics,
    headline=lambda b: {k: b.get(f"{k}_acc") for k in ("clean", "shouted")},
    headline_columns=(("clean", "Clean acc"), ("shouted", "Shouted acc")),
    conditions=("shouted",),
    facets=("style",),
    scorings=("letter", "judge"),
    options=ToyOptions,
    report=report,
)
# ------------------------------------------------------------------ end of the toy family


@pytest.fixture
def toy(tmp_path):
    register_family(TOY)
    items = [
        Item(id=f"t{i}", source="toy", question=f"Toy question {i}: which is right?", options={k: f"option {k} of {i}" for k in "ABCD"}, answer="ABCD"[i % 4])
        for i in range(6)
    ]
    probes = [
        GenericProbe(
            id=f"t{i}:shout", item_id=f"t{i}", family="toy", condition="shouted", parts={"text": f"TOY QUESTION {i}: WHICH IS RIGHT?"}, facets={"style": "caps"}
        )
        for i in range(6)
    ]
    Suite(SuiteManifest(name="toy", family="toy"), items, probes).save(tmp_path / "suite")
    yield Suite.load(tmp_path / "suite")
    unregister("toy")


def answerer(messages, request):
    """Right on clean questions; on shouted ones right only for even items."""
    user = messages[-1]["content"]
    i = int(re.search(r"(\d+):", user).group(1))
    gold = "ABCD"[i % 4]
    return f"Answer: {gold if (user.startswith('Toy') or i % 2 == 0) else 'ABCD'[(i + 1) % 4]}"


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
