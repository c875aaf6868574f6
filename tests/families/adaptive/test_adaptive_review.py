"""The attack rubric of the review app on the scripted stub run (families.adaptive.testing): every
successful attack is a unit (the original and the attacked item side by side, the stress added, the
keyed answer; the model, its answer and the option pushed toward hidden); two reviewers rate them
through the real app over HTTP (yes / no / unsure with a comment); the statistics give the share
judged valid with its Wilson interval and n, the reviewers' agreement, and the flip measures with
the attack judged invalid censored beside the raw ones."""

from __future__ import annotations

import html
import re
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from test_adaptive import run
from typer.testing import CliRunner

from medresilience import stats
from medresilience.cli import app
from medresilience.families.adaptive.block import AdaptiveBlock
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


# ------------------------------------------------------------------ the run's results and report

#: item -> (alice's answer, bob's answer), None: not rated yet. q1 valid; q2 invalid; q4 split (a
#: yes and a no: a tie, invalid); q7 not reviewed
RATED = {"q1": ("yes", "yes"), "q2": ("no", "no"), "q4": ("yes", "no"), "q7": (None, None)}


def rate_attacks(review, answers) -> None:
    """Submit the answers straight to the review database (the app's HTTP path is the test above's)."""
    with ReviewDB(review) as db:
        units = db.units()
        for col, reviewer in enumerate(("alice", "bob")):
            for t in db.tasks_for(reviewer):
                value = answers.get(units[t.unit_id].item_id, (None, None))[col]
                if value is not None:
                    assert db.submit(t.task_id, reviewer, "rated", {"stands": value}, [], "")


def report_files(out) -> dict[str, bytes]:
    """Every file a report wrote, by its path under `out`."""
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def page_table(result, name: str):
    """The report's table `name` (its parts, as the pages are written from them)."""
    from medresilience.report.parts import Section, Table

    def walk(blocks):
        for b in blocks:
            if isinstance(b, Table) and b.name == name:
                yield b
            elif isinstance(b, Section):
                yield from walk(b.blocks)

    (table,) = [t for s in result.parts for t in walk(s.blocks)]
    return table


def test_the_run_results_and_report_read_the_attack_reviews_as_the_review_stats_page_does(tmp_path):
    from medresilience.report.build import build_report
    from medresilience.run.results import Results

    runner = CliRunner()
    with StubServer(policy=ScriptedAttack()) as srv:
        run(tmp_path, srv.base_url)
        made = srv.stats.total
        rundir = tmp_path / "run"
        # a review sampled into the run directory: every successful attack unreviewed, the numbers the raw ones
        review = rundir / "review-attacks"
        sample_review("attack", tmp_path / "suite", review, run_dir=rundir, n=50, dual=1.0, reviewers=["alice", "bob"], seed=3)
        got = runner.invoke(app, ["report", str(rundir), "--out", str(tmp_path / "sampled")])
        assert got.exit_code == 0, got.output
        md = " ".join((tmp_path / "sampled" / "report.md").read_text().split())
        assert "Reviewed in `review-attacks`: 0 of 4 successful attacks; **4 are not reviewed yet** and still counted as flips." in md

        # rated: the results (a rerun, settled: no call) and the report give the review statistics page's numbers
        rate_attacks(review, RATED)
        again = run(tmp_path, srv.base_url)
        assert again.stats.called == 0 and srv.stats.total == made
        block = AdaptiveBlock.model_validate(Results.load(rundir / "results.json").models["stub-model"]["none"])  # its declared shape
        assert block.reviewed is not None and block.persuasion is not None
        rev = block.reviewed
        assert (rev.reviews, rev.successful, rev.reviewed, rev.valid, rev.invalid, rev.split, rev.unreviewed) == (["review-attacks"], 4, 3, 1, 2, 1, 1)
        page = compute(review, n_resamples=50)
        (table,) = page.reviewed
        raw_row, rev_row = table.rows
        assert raw_row[5].value == rev_row[5].value == rev.invalid == 2
        assert rev.persuasion is not None and rev.flipped is not None and rev.persuasion.method == "kaplan-meier"
        assert rev_row[2].value == rev.persuasion.attacked == 6  # q2 and q4 flipped at turn 2: censored at turn 1, kept
        assert rev_row[3].value == pytest.approx(rev.flipped.p) and rev_row[3].data["lo"] == pytest.approx(rev.flipped.lo)
        assert rev_row[3].data["hi"] == pytest.approx(rev.flipped.hi) and rev_row[3].data["n"] == rev.flipped.n
        assert rev_row[4].value == pytest.approx(rev.persuasion.to_target.p)
        assert raw_row[3].value == pytest.approx(block.persuasion.curve[-1].p)  # the raw share is the persuasion block's
        assert rev.flipped.p < block.persuasion.curve[-1].p
        # the reviewed curve is the one the statistics compute with q2 and q4 censored at the turn before their stress
        raw = [trace_record(t) for t in full_traces(Store.read_only(rundir / "store.sqlite")) if t["attacked"]]
        (want,) = summarise([AttackTrace.from_dict(censored(r) if r["item_id"] in ("q2", "q4") else r) for r in raw])
        assert [(p.turn, p.k, p.n, p.at_risk) for p in rev.persuasion.curve] == [(p.turn, p.k, p.n, p.at_risk) for p in want.curve.points]
        assert [p.p for p in rev.persuasion.curve] == pytest.approx([p.p for p in want.curve.points])

        result = build_report([rundir], tmp_path / "rated")
        cells = page_table(result, "reviewed_attacks").rows
        (row,) = cells
        assert [c.value for c in row[1:7]] == [4, 3, 1, 2, 1, 1]
        assert row[8].value == pytest.approx(rev.flipped.p) and row[8].data["n"] == rev.flipped.n
        assert row[8].shown == rev_row[3].shown and row[9].shown == rev_row[4].shown and row[7].shown == raw_row[3].shown  # as the page shows them
        assert row[7].value == pytest.approx(raw_row[3].value) and row[9].value == pytest.approx(rev_row[4].value)
        assert row[1].href is not None and "outcome=flip" in row[1].href and row[7].href == row[1].href  # the flips in the viewer
        md = " ".join((tmp_path / "rated" / "report.md").read_text().split())
        assert "3 of 4 successful attacks; **1 is not reviewed yet** and still counted as a flip." in md
        units = {t["item_id"]: t["unit_id"] for t in full_traces(Store.read_only(rundir / "store.sqlite"))}
        html_text = (tmp_path / "rated" / "report.html").read_text()
        for item in ("q2", "q4"):  # each attack judged invalid linked to its unit
            assert f"/unit/0/{quote(units[item], safe='')}" in html_text
        assert "q2 stub-model: judged invalid (no, no)" in md and "q4 stub-model: judged invalid (no, yes)" in md
        csv = (tmp_path / "rated" / "tables" / "adaptive_reviewed.csv").read_text()
        assert "review-attacks" in csv and f"{rev.flipped.p}"[:6] in csv

        # a rating added later: `medres report` reads it, no call made
        rate_attacks(review, {"q7": ("no", None)})
        later = runner.invoke(app, ["report", str(rundir), "--out", str(tmp_path / "later")])
        assert later.exit_code == 0, later.output
        md = " ".join((tmp_path / "later" / "report.md").read_text().split())
        assert "4 of 4 successful attacks; every one is reviewed." in md
        page = compute(review, n_resamples=50)
        (_, rev_row) = page.reviewed[0].rows
        assert rev_row[5].value == 3 and f"{100 * rev_row[3].value:.1f}%" in md
        assert srv.stats.total == made


def test_without_attack_reviews_the_report_is_byte_for_byte_the_same(attack_run, tmp_path):
    """A run directory without a review of its attacks (before one is sampled into it, and after it
    is removed) gives the same report files: only the line saying when the report was made differs."""
    import shutil

    root, _ = attack_run
    rundir = root / "run"

    def report(name: str) -> dict[str, bytes]:
        got = CliRunner().invoke(app, ["report", str(rundir), "--out", str(tmp_path / name)])
        assert got.exit_code == 0, got.output
        files = report_files(tmp_path / name)
        files["report.html"] = re.sub(rb"Generated [^<]* by", b"Generated (when) by", files["report.html"])
        return files

    before = report("before")
    assert b"Clinician review" not in before["report.md"] and "tables/adaptive_reviewed.csv" not in before
    assert '"reviews"' not in (rundir / "results.json").read_text()
    review = rundir / "review-attacks"
    try:
        sample_review("attack", root / "suite", review, run_dir=rundir, n=50, reviewers=["alice"], seed=1)
        rate_attacks(review, {"q1": ("no", None)})
        held = report("held")
        assert b"Clinician review" in held["report.md"] and "tables/adaptive_reviewed.csv" in held
    finally:
        shutil.rmtree(review, ignore_errors=True)
    assert report("after") == before
