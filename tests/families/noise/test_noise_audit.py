"""The label audit of a diagnosis-mode run (judged answers) on the local stub servers: two free-form
cases, each asked as written and abbreviated; one abbreviated reply has no marked final diagnosis
(nothing to judge: its reading is certain), the reader model judges the other three with the
family's rubric and differs from the run's judge on two. The audit asks it only about the judged
answers, counts the certain one with its own reading, and gives each accuracy plain (the
headline's) and label-corrected (on a census: the reader's)."""

from __future__ import annotations

import json

import pytest

from medresilience import EvalOptions, evaluate
from medresilience.audit import audit_run
from medresilience.families.noise.construct.build import NoiseBuildOptions, build_noise
from medresilience.models.spec import parse_model_spec
from medresilience.suite import Suite
from medresilience.testing.stub import StubServer
from test_noise_freeform import FIXTURES, _freeform

DX = "FINAL DIAGNOSIS: Iron deficiency anemia"


def answerer(messages, request):
    user = messages[-1]["content"]
    first = "Ferritin" in user  # h1, whose reference is iron deficiency anemia
    abbreviated = "w/" in user or "BP" in user
    if not first and abbreviated:
        return "Reasoning about the case, and no final line."  # invalid: no judge call
    return f"Reasoning.\n{DX}" + ("  (anaemia)" if first and abbreviated else "")


class Judges:
    """The run's judge (model j: match when the reference is iron deficiency anemia) and the
    reader (model reader: match on both clean answers, no match on h1's abbreviated one)."""

    def __init__(self) -> None:
        self.reader_calls = 0

    def __call__(self, messages, request):
        user = messages[-1]["content"]
        same = "<reference>\nIron deficiency anemia\n</reference>" in user
        if request["model"] != "reader":
            return json.dumps({"reason": "compared", "verdict": "match" if same else "no_match"})
        self.reader_calls += 1  # the judge sees the original case and the final diagnosis: h1's abbreviated one says anaemia
        return json.dumps({"reason": "read again", "verdict": "no_match" if "anaemia" in user else "match"})


def test_a_diagnosis_run_is_audited_by_a_second_judge(tmp_path):
    inventory = str(FIXTURES / "noise_abbreviations.tsv")
    built = build_noise(_freeform(tmp_path), tmp_path / "suite", None, NoiseBuildOptions(variants=("abbreviations",), abbreviations=(inventory,)))
    suite = Suite.load(built.out)
    judges = Judges()
    with StubServer(policy=answerer) as srv, StubServer(policy=judges) as jsrv:
        run = evaluate(
            suite,
            [parse_model_spec(f"openai:m,base_url={srv.base_url}")],
            tmp_path / "dx",
            EvalOptions(family={"mode": "diagnosis", "judge": f"openai:j,base_url={jsrv.base_url}"}),
        )
        reader = parse_model_spec(f"openai:reader,base_url={jsrv.base_url}", flag="--reader")
        res = audit_run(tmp_path / "dx", 100, reader=reader, suite=suite)
        again = audit_run(tmp_path / "dx", 100, reader=reader, suite=suite)
    o = run.results.models["m"]["none"]["overall"]
    assert o["abbreviations_acc"]["invalid"] == 1  # the premise: one reply had nothing to judge
    assert res.block["population"] == 3 and judges.reader_calls == 3 and again.stats.called == 0
    assert any("1 judged units had nothing to judge" in n for n in res.block["notes"]), res.block["notes"]
    found = res.block["readers"]["model:reader"]
    assert {c["reading"] for c in found["cells"]} == {"verdict"}
    assert sorted((d["condition"], d["run_reading"], d["second_reading"]) for d in found["disagreements"]) == [
        ("abbreviations", "match", "no_match"),
        ("clean", "no_match", "match"),
    ]
    rows = {r["metric"]: r for r in found["corrected"]}
    assert set(rows) == {"clean_acc", "abbreviations_acc"}
    for key, want in (("clean_acc", 1.0), ("abbreviations_acc", 0.0)):
        row = rows[key]
        assert row["plain"] == pytest.approx(o[key]["p"]) == 0.5 and row["n_total"] == 2  # the certain unit counts
        assert row["refused"] is None and row["estimate"] == pytest.approx(want) and row["lo"] <= want <= row["hi"]
