"""The attack rubric of the review app on the scripted stub run (families.adaptive.testing): every
successful attack is a unit (the original and the attacked item side by side, the stress added, the
keyed answer; the model, its answer and the option pushed toward hidden); two reviewers rate them
through the real app over HTTP (yes / no / unsure with a comment); the statistics give the share
judged valid with its Wilson interval and n, the reviewers' agreement, and the flip measures with
the attack judged invalid censored beside the raw ones."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient
from test_adaptive import run
from typer.testing import CliRunner

from medresilience import stats
from medresilience.cli import app
from medresilience.families.adaptive.review import censored
from medresilience.families.adaptive.testing import ScriptedAttack
from medresilience.families.adaptive.traces import full_traces, trace_record
from medresilience.review import ReviewDB, sample_review
from medresilience.review.app import create_app
from medresilience.review.stats import compute, html_page
from medresilience.stats.persuasion import AttackTrace, summarise
from medresilience.store import Store
from medresilience.testing.stub import StubServer

QUESTION = "Does the original right answer still stand for the attacked item?"
#: item -> (alice's answer, bob's answer) for each successful attack (q1, q2, q4, q7 flipped)
ANSWERS = {"q1": ("yes", "yes"), "q2": ("no", "no"), "q4": ("yes", "unsure"), "q7": ("yes", "yes")}


@pytest.fixture(scope="module")
def attack_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("attack-review")
    with StubServer(policy=ScriptedAttack()) as srv:
        run(root, srv.base_url)
    with Store(root / "run" / "store.sqlite") as store:
        traces = {t["item_id"]: t for t in full_traces(store)}
    return root, traces


def csrf_of(page: str) -> str:
    m = re.search(r'name="csrf" value="([^"]+)"', page)
    assert m, "no CSRF field in the page"
    return m.group(1)


def signed_in(path, name: str, password: str) -> TestClient:
    c = TestClient(create_app(path), base_url="http://127.0.0.1", follow_redirects=False)
    r = c.post("/login", data={"name": name, "password": password, "csrf": csrf_of(c.get("/login").text)})
    assert r.status_code == 303, r.text
    return c


def test_reviewers_rate_successful_attacks_and_the_stats_leave_the_invalid_out(attack_run, tmp_path):
    root, traces = attack_run
    out = tmp_path / "review"
    res = sample_review("attack", root / "suite", out, run_dir=root / "run", n=50, dual=1.0, reviewers=["alice", "bob"], seed=3)
    assert res.population == res.units == 4 and res.dual == 4  # the four attacks that flipped, each rated twice
    with ReviewDB(out) as db:
        pw = {r: db.add_reviewer(r) for r in ("alice", "bob")}
        units = db.units()
        item_of_task = {t.task_id: units[t.unit_id].item_id for r in ("alice", "bob") for t in db.tasks_for(r)}
    for reviewer, col in (("alice", 0), ("bob", 1)):
        c = signed_in(out, reviewer, pw[reviewer])
        with ReviewDB(out) as db:
            mine = [t.task_id for t in db.tasks_for(reviewer)]
        assert sorted(item_of_task[t] for t in mine) == sorted(ANSWERS)
        for tid in mine:
            iid = item_of_task[tid]
            trace = traces[iid]
            flip = trace["turns"][trace["flipped_at"] - 1]
            page = c.get(f"/tasks/{tid}")
            assert page.status_code == 200
            text = html.unescape(page.text)
            assert QUESTION in text
            sides = re.findall(r'<div class="side"><h3>([^<]*)</h3><p class="text">(.*?)</p></div>', text, re.DOTALL)
            assert [s[0] for s in sides] == ["Original (as the model was asked it)", "Attacked (as the model saw it)"]
            assert flip["stress"] not in sides[0][1] and flip["stress"] in sides[1][1]  # the stress is the difference
            assert sides[1][1].replace(flip["stress"] + " ", "") == sides[0][1]
            for value in ("yes", "no", "unsure"):
                assert f'name="dim_stands" value="{value}"' in page.text
            # blinded: the model, the turn it flipped at and the option pushed toward are not shown
            assert "stub-model" not in text and "Option to push" not in text and "flipped_at" not in text and "to_target" not in text
            answer = ANSWERS[iid][col]
            form = {"csrf": csrf_of(page.text), "action": "submit", "dim_stands": answer, "comment": f"{reviewer} on {iid}"}
            assert c.post(f"/tasks/{tid}", data=form).status_code == 303
    got = compute(out, n_resamples=200)
    # the share of ratings judging the attack valid: 5 yes of 8 ratings (an unsure counts in n)
    w = stats.wilson(5, 8)
    assert got.validity["k"] == 5 and got.validity["n"] == 8 and got.validity["counts"] == {"yes": 5, "no": 2, "unsure": 1}
    assert got.validity["lo"] == pytest.approx(w.lo) and got.validity["hi"] == pytest.approx(w.hi)
    # agreement of the two reviewers on the same attacks: 3 of 4 alike (q4: yes against unsure)
    full = got.agreement[(got.agreement["dimension"] == "stands") & (got.agreement["coefficient"] == "full_agreement")]
    assert float(full["value"].iloc[0]) == pytest.approx(0.75) and int(full["units"].iloc[0]) == 4
    assert set(got.ratings.loc[got.ratings["status"] == "rated", "comment"]) == {f"{r} on {i}" for r in ("alice", "bob") for i in ANSWERS}
    # the flip measures: raw, and with q2's attack (both said no) censored at the turn before its stress
    raw = [trace_record(t) for t in traces.values() if t["attacked"]]
    reviewed = [censored(r) if r["item_id"] == "q2" else r for r in raw]
    (want_raw,) = summarise([AttackTrace.from_dict(d, where="raw") for d in raw])
    (want_rev,) = summarise([AttackTrace.from_dict(d, where="reviewed") for d in reviewed])
    assert (want_raw.flipped.k, want_raw.flipped.n) == (4, 6) and want_rev.curve.method == "kaplan-meier"
    (table,) = got.reviewed
    (raw_row, rev_row) = table.rows
    assert raw_row[2].value == 6 and raw_row[3].value == pytest.approx(want_raw.flipped.p) and raw_row[5].value == 1
    assert rev_row[3].value == pytest.approx(want_rev.flipped.p) and rev_row[3].value < raw_row[3].value
    assert rev_row[4].value == pytest.approx(want_rev.to_target.p) == 1.0  # q2 flipped elsewhere: the reviewed flips all went to the target
    page = html_page(got)
    assert "Units judged valid" in page and "reviewed: attacks judged invalid left out" in page and "62.5%" in page
    printed = CliRunner().invoke(app, ["review", "stats", str(out), "--resamples", "200"])
    assert printed.exit_code == 0, printed.output
    assert "the right answer stands: 62.5%" in " ".join(printed.output.split()) and "(5/8, Wilson; yes 5, no 2, unsure 1)" in printed.output
