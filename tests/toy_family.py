"""A toy family for spine tests, declared in a few dozen lines and registered only while a test
uses it: each MCQ asked clean and "shouted" (the question in capitals), scored by letter or by an
LLM judge, reported as accuracy per condition. Spine tests run on it so that they test the spine,
not a real family; tests/spine/test_family_plugin.py shows it plugs in end to end."""

from __future__ import annotations

import re

import pandas as pd
from pydantic import BaseModel

from medresilience import parse_model_spec
from medresilience.family import EvaluationSpec, Family, MeasureSpec, ProbeSpec, ReportSpec
from medresilience.records import GenericProbe, Item, SuiteManifest
from medresilience.report.parts import Cell, Column, Paragraph, Section, Table, rate, text
from medresilience.report.section import FamilySection
from medresilience.scoring import mcq_scorer
from medresilience.scoring.judge import Judge, Rubric
from medresilience.stats import wilson
from medresilience.suite import Suite

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
        (text(m), Cell(s, s), rate(**{k: b["overall"][f"{c}_acc"][k] for k in ("p", "lo", "hi", "n")}))
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
    table = Table("toy", (Column("model", "Model"), Column("setting", "Setting"), Column("acc", "Accuracy", numeric=True)), tuple(rows))
    return FamilySection(
        "toy",
        "Shouting",
        tables={"toy_headline": head},
        headline=head,
        summary_columns=[("clean", "Clean"), ("shouted", "Shouted")],
        key_parts=(Paragraph("toy key numbers"),),
        parts=[Section("toy", "Shouting", (table,))],
    )


TOY = Family(
    name="toy",
    title="Shouting",
    probes=ProbeSpec(conditions=("shouted",), facets=("style",)),
    evaluation=EvaluationSpec(render=render, scorer=scorer, scorings=("letter", "judge"), options=ToyOptions),
    measures=MeasureSpec(
        metrics=metrics, headline=lambda b: {k: b.get(f"{k}_acc") for k in ("clean", "shouted")}, columns=(("clean", "Clean acc"), ("shouted", "Shouted acc"))
    ),
    report=ReportSpec(section=report),
)


def make_toy_suite(n_items: int = 6) -> Suite:
    """n items with four options (gold cycles A-D), each asked clean and shouted."""
    items = [
        Item(id=f"t{i}", source="toy", question=f"Toy question {i}: which is right?", options={k: f"option {k} of {i}" for k in "ABCD"}, answer="ABCD"[i % 4])
        for i in range(n_items)
    ]
    probes = [
        GenericProbe(
            id=f"t{i}:shout", item_id=f"t{i}", family="toy", condition="shouted", parts={"text": f"TOY QUESTION {i}: WHICH IS RIGHT?"}, facets={"style": "caps"}
        )
        for i in range(n_items)
    ]
    return Suite(SuiteManifest(name="toy", family="toy"), items, probes)


def answerer(messages, request):
    """Right on clean questions; on shouted ones right only for even items."""
    user = messages[-1]["content"]
    i = int(re.search(r"(\d+):", user).group(1))
    gold = "ABCD"[i % 4]
    return f"Answer: {gold if (user.startswith('Toy') or i % 2 == 0) else 'ABCD'[(i + 1) % 4]}"


AGAIN_TURN = "Think again and answer once more."


def render_again(item, probe, scoring, options):
    """Clean: the toy question; the `again` probe: only its own second turn (the spine sends the clean
    turn and its reply before it)."""
    if probe is None:
        return render(item, None, scoring, options)
    return [{"role": "user", "content": AGAIN_TURN}]


AGAIN = Family(
    name="toy-again",
    title="Asked again",
    probes=ProbeSpec(conditions=("again",)),
    evaluation=EvaluationSpec(
        render=render_again,
        scorer=lambda item, probe, scoring, options: mcq_scorer(item, scoring),
        scorings=("letter",),
        follows=lambda probe: "clean" if probe.condition == "again" else None,
    ),
    measures=MeasureSpec(
        metrics=metrics, headline=lambda b: {k: b.get(f"{k}_acc") for k in ("clean", "again")}, columns=(("clean", "Clean acc"), ("again", "Again acc"))
    ),
)


def make_again_suite(n_items: int = 6) -> Suite:
    """n toy items (gold cycles A-D), each asked clean and then, in a second turn, asked again."""
    items = make_toy_suite(n_items).items.values()
    probes = [GenericProbe(id=f"{it.id}:again", item_id=it.id, family="toy-again", condition="again", parts={}) for it in items]
    return Suite(SuiteManifest(name="toy-again", family="toy-again"), list(items), probes)


def again_answerer(messages, request):
    """Clean: right except on items 3, 7, 11, ...; asked again: items 0, 3, 6, ... move one letter on
    from their first answer, the others repeat it."""
    i = int(re.search(r"Toy question (\d+):", messages[-1]["content"] if len(messages) < 3 else messages[-3]["content"]).group(1))
    gold = "ABCD"[i % 4]
    if messages[-1]["content"] != AGAIN_TURN:
        return f"Answer: {gold if i % 4 != 3 else 'ABCD'[(i + 1) % 4]}"
    first = messages[-2]["content"][-1]
    return f"Answer: {'ABCD'[('ABCD'.index(first) + 1) % 4] if i % 3 == 0 else first}"
