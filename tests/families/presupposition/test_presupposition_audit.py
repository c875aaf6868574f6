"""The label audit of a judged run, end to end on the local stub server: the false-presupposition
suite of test_presupposition_eval answered by one model and judged by the stub's judge; the audit's
reader model is asked as a second judge with the family's own rubric (its verdicts follow a known
table that differs from the run's judge on five answers and gives no verdict on one), and people
give their verdicts in the review app's `verdict` task. The audit must find exactly those
disagreements (wrong verdicts, unscored), give PCS, PCR and over-caution plain (the headline's) and
label-corrected, store and resume the second judge's calls, and show it all in the CLI, results.json
and the report."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from fastapi.testclient import TestClient
from markupsafe import escape
from typer.testing import CliRunner

from medresilience.audit import audit_run
from medresilience.cli import app
from medresilience.models.spec import parse_model_spec
from medresilience.run.results import Results
from test_presupposition_eval import ANSWER_RE, CONTROL, FENCE_RE, FLAGS, PRESUP, UNSCORED, make_suite, premise_score
from test_presupposition_eval import policy as run_policy

MODEL = "gpt-4o"
#: the reader judge's verdicts where they differ from the run's judge, and the answer it cannot judge
READER_VERDICT = {"p00": "0", "p03": "0", "p01": "1", "n02": "flags_premise", "n03": "flags_premise"}
READER_UNSCORED = {"p05"}


def run_verdict(qid: str) -> str:
    if qid in PRESUP:
        return str(premise_score(MODEL, PRESUP.index(qid)))
    return "flags_premise" if qid in FLAGS[MODEL] else "answers"


def truth(qid: str) -> str:
    """The verdict the reader (and the people) give."""
    return READER_VERDICT.get(qid, run_verdict(qid))


class Policy:
    """The run's answering model and judge (test_presupposition_eval's), and the reader judge."""

    def __init__(self) -> None:
        self.reader_calls: list[str] = []

    def __call__(self, messages, request):
        if request.get("model") != "reader":
            return run_policy(messages, request)
        user = messages[-1]["content"]
        assert messages[0]["content"].startswith("You are a judge.")  # the family's rubric, as the run's judge got it
        self.reader_calls.append(user)
        _, answer = FENCE_RE.search(user).groups()
        _, qid = ANSWER_RE.search(answer).groups()
        if qid in READER_UNSCORED:
            return "I cannot judge this one."
        return json.dumps({"reason": "by the reader's table", "verdict": truth(qid)})


def _judged() -> list[str]:
    """The answers the run's judge gave a verdict (the audit's population)."""
    return [q for q in [*PRESUP, *CONTROL] if (MODEL, q) not in UNSCORED]


@pytest.fixture(scope="module")
def audited(tmp_path_factory, stub_server):
    root = tmp_path_factory.mktemp("presup-audit")
    make_suite(root / "suite")
    policy = Policy()
    srv = stub_server(policy=policy)
    args = ["--suite", str(root / "suite"), "--model", f"openai:{MODEL},base_url={srv.base_url}", "--out", str(root / "run")]
    judge = ["--scoring", "judge", "-O", f"judge=openai:judge-4,base_url={srv.base_url}"]
    reader = ["--audit", "1000", "--reader", f"openai:reader,base_url={srv.base_url}"]
    r = CliRunner().invoke(app, ["eval", *args, *judge, *reader])
    first = len(policy.reader_calls)
    again = audit_run(root / "run", 1000, reader=parse_model_spec(f"openai:reader,base_url={srv.base_url}", flag="--reader"))
    yield {"root": root, "out": r.output, "code": r.exit_code, "first": first, "calls": policy.reader_calls, "again": again}


def test_the_reader_judges_each_judged_answer_once_and_a_rerun_makes_no_call(audited):
    assert audited["code"] == 0, audited["out"]
    assert audited["first"] == len(_judged()) == 25
    assert len(audited["calls"]) == 25 and audited["again"].stats.called == 0


def test_the_audit_finds_the_wrong_verdicts_and_the_unscored_one(audited):
    found = audited["again"].block["readers"]["model:reader"]
    assert found["sampled"] == 25 and found["read"] == 24 and found["unscored"] == 1
    assert list(found["unscored_reasons"])[0].startswith("no verdict in the judge reply")
    dis = {d["item_id"]: d for d in found["disagreements"]}
    assert set(dis) == set(READER_VERDICT)
    for q, d in dis.items():
        assert (d["kind"], d["run_reading"], d["second_reading"]) == ("wrong_verdict", run_verdict(q), truth(q))
    cells = {c["condition"]: c for c in found["cells"]}
    p, n = cells["presupposition"], cells["nfp"]
    assert p["reading"] == n["reading"] == "verdict" and "unread" not in p
    # a census: each share is k of n (Wilson)
    assert (p["audited"], p["agreement"]["k"], p["wrong_verdict"]["k"], p["wrong_verdict"]["n"]) == (18, 15, 3, 18)
    assert (p["unscored"]["k"], p["unscored"]["n"]) == (1, 19)
    assert (n["audited"], n["agreement"]["k"], n["wrong_verdict"]["k"], n["unscored"]["k"]) == (6, 4, 2, 0)


def test_pcs_pcr_and_overcaution_plain_and_label_corrected(audited):
    root = audited["root"]
    found = audited["again"].block["readers"]["model:reader"]
    rows = {r["metric"]: r for r in found["corrected"]}
    assert list(rows) == ["pcs", "pcr", "overcaution"]
    headline = Results.load(root / "run" / "results.json").models[MODEL]["none"]["overall"]
    for key, row in rows.items():
        assert row["plain"] == pytest.approx(headline[key]["p"]) and row["n_total"] == headline[key]["n"], key
        assert row["refused"] is None and row["lo"] <= row["estimate"] <= row["hi"]
    scored = [q for q in PRESUP if (MODEL, q) not in UNSCORED]
    # the truth: the reader's verdicts (the answer it could not judge at the run's own verdict)
    value = {q: float(run_verdict(q) if q in READER_UNSCORED else truth(q)) for q in scored}
    true = {
        "pcs": float(np.mean(list(value.values()))),
        "pcr": float(np.mean([v == 1 for v in value.values()])),
        "overcaution": float(np.mean([truth(q) == "flags_premise" for q in CONTROL])),
    }
    for key, row in rows.items():
        assert row["plain"] != pytest.approx(true[key]), key  # the run's judge is off on each
        assert abs(row["estimate"] - true[key]) < abs(row["plain"] - true[key]) and row["lo"] <= true[key] <= row["hi"], key
    assert rows["overcaution"]["estimate"] == pytest.approx(true["overcaution"])  # every control answer audited


def test_the_cli_results_md_and_report_show_the_verdict_audit(audited):
    out = audited["out"]
    assert "label audit: 25 of 25" in out and "Wrong verdict" in out and "5 disagreements" in out
    assert "label-corrected rates" in out and "PCS" in out and "NFP over-caution" in out
    md = (audited["root"] / "run" / "results.md").read_text()
    assert "Wrong verdict" in md and "PCR" in md
    page = (audited["root"] / "run" / "report" / "report.html").read_text()
    section = page.split('id="audit"', 1)[1]
    assert "Wrong verdict" in section and "Label-corrected" in section and ">PCS<" in section and ">PCR<" in section


def test_people_give_verdicts_in_the_review_app_by_the_family_rubric(audited, tmp_path):
    from medresilience.review import ReviewDB
    from medresilience.review.app import create_app

    run = audited["root"] / "run"
    made = audit_run(run, 1000, review_out=tmp_path / "review", reviewers=("alice",))
    assert made.review_tasks == 25
    with ReviewDB(tmp_path / "review") as db:
        pw = db.add_reviewer("alice")
        units = db.units()
        tasks = db.tasks_for("alice")
    c = TestClient(create_app(tmp_path / "review"), base_url="http://127.0.0.1", follow_redirects=False)
    token = re.search(r'name="csrf" value="([^"]+)"', c.get("/login").text).group(1)
    assert c.post("/login", data={"name": "alice", "password": pw, "csrf": token}).status_code == 303
    for t in tasks:
        page = c.get(f"/tasks/{t.task_id}")
        assert page.status_code == 200
        main = page.text.split("<main", 1)[1]
        # the family's rubric and its verdicts are shown; the run's verdict, the model and the condition are not
        assert "medically false" in main or "no false medical assumption" in main
        reply = next(b["text"] for b in units[t.unit_id].display if b["kind"] == "response")
        rest = main.replace(str(escape(reply)), "")  # the answer names its model (the stub's doing); nothing else does
        assert MODEL not in rest and "judge-4" not in rest and "auto_label" not in rest and 'value="cannot_tell"' in main
        qid = ANSWER_RE.search(reply).group(2)
        value = "cannot_tell" if qid in READER_UNSCORED else truth(qid)
        assert f'value="{value}"' in main
        form = {"csrf": re.search(r'name="csrf" value="([^"]+)"', page.text).group(1), "action": "submit", "dim_verdict": value}
        assert c.post(f"/tasks/{t.task_id}", data=form).status_code == 303
    res = audit_run(run, 1000, people=tmp_path / "review")
    people = res.block["readers"]["people"]
    reader = audited["again"].block["readers"]["model:reader"]
    assert people["unscored_reasons"] == {"the reviewers could not tell": 1}
    assert people["cells"] == reader["cells"] and people["corrected"] == reader["corrected"]
