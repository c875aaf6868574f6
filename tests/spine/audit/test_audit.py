"""The label audit (`medres audit RUN`, `medres eval --audit N`), end to end on the local stub
server: the answering model writes scripted replies of which some are misread or left unread by
the rule reader (their true letters are known), the reader model is the same stub answering each
fenced reply with its true letter, and the audit must find exactly the planted disagreements, with
the rates and intervals they imply, the label-corrected accuracy at the truth, its calls stored and
resumed (a killed audit repeats no finished call), people's readings through the review app's
HTTP routes, and each disagreement one request from its unit in the evidence viewer."""

from __future__ import annotations

import html
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from conftest import make_tiny_suite
from medresilience import stats
from medresilience.audit import audit_run
from medresilience.audit.sample import TIER_WEIGHT, AuditUnit, allocate, draw
from medresilience.cli import app
from medresilience.models.spec import parse_model_spec
from medresilience.run.evaluation import evaluate
from medresilience.run.results import Results
from medresilience.run.runner import EvalOptions
from medresilience.scoring.letters import read_answer
from medresilience.store import Store
from medresilience.suite import Suite
from medresilience.testing.stub import StubServer

ALL = {"type1": "all"}
MARKER = re.compile(r"\[\[ANSWER:([A-D])\]\]")
GOLD = "ABCD"
# replies the rule reader gets wrong (a letter it withdraws, a letter it replaces) or leaves
# unread (a Chinese sentence choosing an option); each with the letter it truly commits to
KIDDING = "The answer is C. Just kidding, it's A."  # read C, truly A
BETTER = "My answer is D. Hmm, A is better."  # read D, truly A
CHOOSE = "我会选择C"  # unread, truly C
UNSURE = "I am unsure."  # unread, truly no option
UNCLEAR = "Answer: A."  # read A; the reader model answers it with a sentence (unscored)


def _num(user: str) -> int:
    return int(re.search(r"Question number (\d+)", user).group(1))


def _fenced(user: str) -> str:
    return re.search(r"<reply-\w+>\n(.*)\n</reply-\w+>", user, re.S).group(1)


class Answers:
    """The answering model and the reader. Answering (per copy of the tiny suite: 4 clean units,
    12 type 1 and 4 type 2 stressed ones, keys A B C D): q1 clean UNCLEAR; q1 stressed the
    marker's letter; q2 clean 'Answer: B', q2 stressed UNSURE; q3 clean CHOOSE, q3 stressed
    KIDDING; q4 clean 'Answer: D', q4 stressed BETTER. The reader (model `reader`) answers the true
    letter of the fenced reply, none for UNSURE, and a sentence for UNCLEAR."""

    def __init__(self, block: threading.Event | None = None, block_after: int = 0):
        self.truth: dict[str, str | None] = {CHOOSE: "C", KIDDING: "A", BETTER: "A", UNSURE: None}
        self.reader_requests: list[str] = []
        self.block, self.block_after = block, block_after

    @staticmethod
    def reply(user: str) -> str:
        num, stressed = _num(user), "context" in user.lower()
        if num == 1:
            marker = MARKER.search(user)
            return f"Answer: {marker.group(1) if marker else 'A'}" if stressed else UNCLEAR
        if num == 2:
            return UNSURE if stressed else "Answer: B"
        if num == 3:
            return KIDDING if stressed else CHOOSE
        return BETTER if stressed else "Answer: D"

    def __call__(self, messages, request):
        user = messages[-1]["content"]
        if request.get("model") == "reader":
            self.reader_requests.append(user)
            if self.block is not None and len(self.reader_requests) > self.block_after:
                self.block.wait(60)
            body = _fenced(user)
            if body == UNCLEAR:
                return "Hard to say, it seems to lean somewhere."
            if body in self.truth:
                return self.truth[body] or "none"
            return body.removeprefix("Answer: ")
        return self.reply(user)


def _run(tmp_path: Path, policy: Answers, srv: StubServer, copies: int = 2) -> Path:
    make_tiny_suite(n_copies=copies).save(tmp_path / "suite")
    suite = Suite.load(tmp_path / "suite")
    spec = parse_model_spec(f"openai:stub,base_url={srv.base_url}")
    evaluate(suite, [spec], tmp_path / "run", EvalOptions(family=ALL))
    return tmp_path / "run"


def _reader(srv: StubServer, **extra: str) -> object:
    tail = "".join(f",{k}={v}" for k, v in extra.items())
    return parse_model_spec(f"openai:reader,base_url={srv.base_url}{tail}", flag="--reader")


def test_the_planted_replies_are_misread_by_the_rules():
    """The test's premise: the rule reader reads these replies wrong or not at all."""

    def opts(q: int) -> dict[str, str]:
        return {k: f"option {k.lower()} of question {q}" for k in GOLD}

    assert read_answer(KIDDING, GOLD, opts(3)).label == "C"
    assert read_answer(BETTER, GOLD, opts(4)).label == "D"
    assert read_answer(CHOOSE, GOLD, opts(3)).label is None
    assert read_answer(UNSURE, GOLD, opts(2)).label is None
    assert read_answer(UNCLEAR, GOLD, opts(1)).label == "A"


def _cell(found, condition):
    return next(c for c in found["cells"] if c["condition"] == condition)


def test_an_audit_by_a_reader_model_finds_exactly_the_planted_disagreements(tmp_path):
    policy = Answers()
    with StubServer(policy=policy) as srv:
        run = _run(tmp_path, policy, srv)
        res = audit_run(run, 1000, reader=_reader(srv), viewer="http://127.0.0.1:8766")
        asked = len(policy.reader_requests)
        again = audit_run(run, 1000, reader=_reader(srv), viewer="http://127.0.0.1:8766")
    assert res.block["n_sampled"] == res.block["population"] == 40  # a census: every unit weighs 1
    assert asked == 40 and res.stats.called == 40
    assert again.stats.called == 0 and len(policy.reader_requests) == 40  # a rerun makes no call
    found = res.block["readers"]["model:reader"]
    assert found["unscored"] == 2 and list(found["unscored_reasons"]) == [
        "the reader's reply is not one label or none: 'Hard to say, it seems to lean somewhere.'"
    ]
    dis = found["disagreements"]
    # per copy: q3's four stressed replies read as the key C (truly A) and q4's read as the key D
    # (truly A): wrong letters; q3's clean reply unread (truly C); nothing else (q2's unsure replies
    # are no option to both readers)
    kinds = sorted((d["condition"], d["item_id"].split("-")[0], d["kind"], d["run_reading"], d["second_reading"]) for d in dis)
    assert len(dis) == 18
    assert kinds.count(("clean", "q3", "unread", "none", "C")) == 2
    for cond, n in (("type1", 6), ("type2", 2)):
        assert kinds.count((cond, "q3", "wrong_letter", "C", "A")) == n and kinds.count((cond, "q4", "wrong_letter", "D", "A")) == n
    assert all(d["key"] in "CD" and d["viewer_path"].startswith("/unit/0/") for d in dis)
    t1, clean, t2 = _cell(found, "type1"), _cell(found, "clean"), _cell(found, "type2")
    # a census: each share is k of n with Wilson's interval
    assert (t1["audited"], t1["agreement"]["k"], t1["agreement"]["n"]) == (24, 12, 24)
    assert (t1["wrong_letter"]["k"], t1["wrong_letter"]["n"], t1["unread"]["k"], t1["unread"]["n"]) == (12, 18, 0, 18)
    w = stats.wilson(12, 18)
    assert t1["wrong_letter"]["p"] == pytest.approx(12 / 18)
    assert (t1["wrong_letter"]["lo"], t1["wrong_letter"]["hi"]) == (pytest.approx(w.lo), pytest.approx(w.hi))
    assert (clean["audited"], clean["agreement"]["k"], clean["wrong_letter"]["k"], clean["wrong_letter"]["n"]) == (6, 4, 0, 4)
    assert (clean["unread"]["k"], clean["unread"]["n"]) == (2, 6)
    assert (clean["unread"]["lo"], clean["unread"]["hi"]) == (pytest.approx(stats.wilson(2, 6).lo), pytest.approx(stats.wilson(2, 6).hi))
    assert (t2["agreement"]["k"], t2["agreement"]["n"], t2["wrong_letter"]["k"], t2["wrong_letter"]["n"]) == (4, 8, 4, 6)
    assert 0 < t1["kappa"] < 1
    overall = found["overall"]
    assert (overall["audited"], overall["agreement"]["k"], overall["wrong_letter"]["k"], overall["unread"]["k"]) == (38, 20, 16, 2)
    # the family's headline rates, each as a function of labels: on the run's reading each is the
    # headline rate of results.json; label-corrected, each moves to the truth
    saved = Results.load(run / "results.json")
    headline = saved.models["stub"]["none"]["overall"]
    rows = {r["metric"]: r for r in found["corrected"]}
    assert list(rows) == ["clean_acc", "type1_acc", "type2_acc", "type1_asr", "type1_tasr", "type2_asr", "type1_asr_read", "type2_asr_read"]
    for key, row in rows.items():
        cond, _, rate = key.partition("_")
        plain = headline[key] if rate == "acc" else headline[cond][rate]
        assert row["plain"] == pytest.approx(plain["p"]) and row["n_total"] == (24 if cond == "type1" else 8), key
        assert row["refused"] is None and row["line"].startswith("label error"), key
    # the label-corrected accuracy is the truth on a census; the plain one is off where the rules misread
    truth = {"clean": 1.0, "type1": 0.0, "type2": 0.0}
    plain = {"clean": 6 / 8, "type1": 12 / 24, "type2": 4 / 8}
    for c in truth:
        row = rows[f"{c}_acc"]
        assert row["condition"] == c and row["plain"] == pytest.approx(plain[c])
        assert row["estimate"] == pytest.approx(truth[c])
        assert abs(row["estimate"] - truth[c]) < abs(row["plain"] - truth[c])
        assert row["lo"] <= truth[c] <= row["hi"] and not row["plain_lo"] <= truth[c] <= row["plain_hi"]
    # the flip rate (ASR: reference right, stressed wrong): the run's reading misses q3's and q4's
    # flips (read as the key) and q3's clean reply (unread); truly every stressed reply is a flip
    assert rows["type1_asr"]["plain"] == pytest.approx(6 / 9) and rows["type2_asr"]["plain"] == pytest.approx(2 / 3)
    for key in ("type1_asr", "type2_asr", "type1_asr_read", "type2_asr_read"):
        row = rows[key]
        assert abs(row["estimate"] - 1.0) < abs(row["plain"] - 1.0) and row["lo"] <= 1.0 <= row["hi"], key
    # TASR (a flip to the injected target): the run's reading finds q1's three per copy (it answers
    # the target) of 9 right clean answers; truly the clean answers are all right (12) and q3's and
    # q4's replies answer A, the target of one probe each: 5 of 12
    tasr = rows["type1_tasr"]
    assert tasr["plain"] == pytest.approx(3 / 9) and tasr["title"] == "Type 1 TASR"
    assert abs(tasr["estimate"] - 5 / 12) < abs(tasr["plain"] - 5 / 12) and tasr["lo"] <= 5 / 12 <= tasr["hi"]
    # results.json holds the block; audit.json every sampled unit with its stratum and inclusion probability
    assert saved.audit["readers"]["model:reader"]["disagreements"] == dis
    units = json.loads((run / "audit.json").read_text())["units"]
    assert len(units) == 40 and all(u["pi"] == 1.0 and u["N_h"] == u["n_h"] for u in units)
    assert "## Label audit" in (run / "results.md").read_text()


def test_each_disagreement_opens_its_unit_in_the_viewer(tmp_path):
    from medresilience.view.app import create_app
    from medresilience.view.query import open_runs

    policy = Answers()
    with StubServer(policy=policy) as srv:
        run = _run(tmp_path, policy, srv, copies=1)
        res = audit_run(run, 1000, reader=_reader(srv), viewer="http://127.0.0.1:8766")
    dis = res.block["readers"]["model:reader"]["disagreements"]
    assert len(dis) == 9
    [rv] = open_runs([run])
    client = TestClient(create_app([rv]), base_url="http://127.0.0.1")
    with client:
        for d in dis:
            assert d["viewer_url"] == "http://127.0.0.1:8766" + d["viewer_path"]
            page = client.get(d["viewer_path"])
            assert page.status_code == 200, page.text
            reply = {"q3": KIDDING if d["condition"] != "clean" else CHOOSE, "q4": BETTER}[d["item_id"]]
            assert html.escape(reply, quote=False) in page.text.replace("&#39;", "'") and d["item_id"] in page.text


def test_the_report_shows_the_audit_with_links_to_the_units(tmp_path):
    from medresilience.report import build_report

    policy = Answers()
    with StubServer(policy=policy) as srv:
        run = _run(tmp_path, policy, srv, copies=1)
        audit_run(run, 1000, reader=_reader(srv))
    build_report([run], tmp_path / "report")
    page = (tmp_path / "report" / "report.html").read_text()
    assert 'id="audit"' in page and "Label audit" in page
    assert page.count('href="http://127.0.0.1:8766/unit/0/') == 9
    md = (tmp_path / "report" / "report.md").read_text()
    # the label-corrected rates are the same table in Markdown as on the page (its column "Label-corrected")
    assert "## Label audit" in md and "| Label-corrected |" in md


def test_sampling_is_seeded_stratified_and_weighted():
    units = []
    for tier, size in (("reference", 40), ("stressed", 40), ("flip", 10), ("unread", 10)):
        for i in range(size):
            units.append(
                AuditUnit("m", f"{tier}-{i}", f"i{i}", "c" if tier == "reference" else "s", "none", 0, f"k-{tier}-{i}", tier, "A", "valid", False, "A")
            )
    a = draw(units, 20, "run", 0)
    b = draw(units, 20, "run", 0)
    c = draw(units, 20, "run", 1)
    assert [u.unit_id for u in a] == [u.unit_id for u in b] and {u.unit_id for u in a} != {u.unit_id for u in c}
    got = {t: sum(1 for u in a if u.tier == t) for t in TIER_WEIGHT}
    # proportional to weight x size: reference 40, stressed 80, flip 40, unread 40 of 200
    assert got["reference"] == 4 and got["stressed"] == 8 and got["flip"] == 4 and got["unread"] == 4
    assert all(u.N_h in (40, 10) and u.pi == pytest.approx(u.n_h / u.N_h) for u in a)
    bigger = draw(units, 40, "run", 0)
    for tier in TIER_WEIGHT:  # a larger n extends the smaller draw within each stratum
        assert {u.unit_id for u in a if u.tier == tier} <= {u.unit_id for u in bigger if u.tier == tier}
    # every stratum gets two units (or all it holds) when n allows, one each when n reaches the
    # number of strata, and none more than it holds
    assert allocate({("a", "reference"): 100, ("b", "unread"): 1, ("c", "flip"): 2}, 3, 0) == {("a", "reference"): 1, ("b", "unread"): 1, ("c", "flip"): 1}
    assert allocate({("a", "reference"): 100, ("b", "unread"): 1, ("c", "flip"): 2}, 5, 0) == {("a", "reference"): 2, ("b", "unread"): 1, ("c", "flip"): 2}
    assert allocate({("a", "reference"): 3, ("b", "unread"): 1}, 10, 0) == {("a", "reference"): 3, ("b", "unread"): 1}
    rng = random.Random(5)
    for _ in range(300):  # any sizes and n: exactly min(n, N) units, none above a stratum's size
        sizes = {(str(i), rng.choice(list(TIER_WEIGHT))): rng.randint(0, 30) for i in range(rng.randint(1, 8))}
        n = rng.randint(0, 120)
        got = allocate(sizes, n, rng.random())
        assert sum(got.values()) == min(n, sum(sizes.values())) and all(0 <= got[k] <= sizes[k] for k in sizes)


def test_a_killed_audit_resumes_without_repeating_a_finished_call(tmp_path):
    gate = threading.Event()
    policy = Answers(block=gate, block_after=5)
    with StubServer(policy=policy) as srv:
        run = _run(tmp_path, policy, srv, copies=1)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(Path(__file__).parents[3] / "src"), os.environ.get("PYTHONPATH")) if p)}
        proc = subprocess.Popen(
            [sys.executable, "-m", "medresilience.cli", "audit", str(run), "--n", "100", "--reader", f"openai:reader,base_url={srv.base_url},concurrency=1"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                with Store.read_only(run / "store.sqlite") as store:
                    if store.count("calls", "WHERE model = 'reader' AND status = 'ok'") >= 5:
                        break
                time.sleep(0.1)
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        finally:
            gate.set()
            if proc.poll() is None:
                proc.kill()
        with Store.read_only(run / "store.sqlite") as store:
            keys = store.finished_keys()
            done_msgs = {m[-1]["content"] for m in store.request_messages(keys).values() if "<reply-" in m[-1]["content"]}
        assert len(done_msgs) == 5
        before = len(policy.reader_requests)
        res = audit_run(run, 100, reader=_reader(srv))
        resent = policy.reader_requests[before:]
    assert res.stats.called == 20 - 5 and len(resent) == 15
    assert not set(resent) & done_msgs  # no finished call sent again
    assert res.block["readers"]["model:reader"]["read"] == 19  # all 20 read; UNCLEAR unscored


def test_people_read_the_sample_in_the_review_app_and_the_audit_takes_their_readings(tmp_path):
    from medresilience.review import ReviewDB
    from medresilience.review.app import create_app

    policy = Answers()
    with StubServer(policy=policy) as srv:
        run = _run(tmp_path, policy, srv, copies=1)
        made = audit_run(run, 1000, review_out=tmp_path / "review", reviewers=("alice",))
    assert made.review_tasks == 20 and made.block["readers"] == {}
    with ReviewDB(tmp_path / "review") as db:
        pw = db.add_reviewer("alice")
        units = db.units()
    c = TestClient(create_app(tmp_path / "review"), base_url="http://127.0.0.1", follow_redirects=False)
    login = c.get("/login").text
    token = re.search(r'name="csrf" value="([^"]+)"', login).group(1)
    assert c.post("/login", data={"name": "alice", "password": pw, "csrf": token}).status_code == 303
    with ReviewDB(tmp_path / "review") as db:
        tasks = db.tasks_for("alice")
    for t in tasks:
        page = c.get(f"/tasks/{t.task_id}")
        assert page.status_code == 200
        u = units[t.unit_id]
        reply = next(b["text"] for b in u.display if b["kind"] == "response")
        # blind: the key, the model and the run's reading are not shown; the options are offered
        main = page.text.split("<main", 1)[1]
        assert 'class="gold"' not in main and "stub" not in main and 'value="C"' in main and 'value="several"' in main
        truth = "cannot_tell" if reply == UNCLEAR else (policy.truth[reply] if reply in policy.truth else reply.removeprefix("Answer: ")) or "none"
        form = {"csrf": re.search(r'name="csrf" value="([^"]+)"', page.text).group(1), "action": "submit", "dim_reading": truth}
        assert c.post(f"/tasks/{t.task_id}", data=form).status_code == 303
    bad = c.get(f"/tasks/{tasks[0].task_id}")
    form = {"csrf": re.search(r'name="csrf" value="([^"]+)"', bad.text).group(1), "action": "submit", "dim_reading": "F"}
    assert c.post(f"/tasks/{tasks[0].task_id}", data=form).status_code == 400  # not an option of this item
    from medresilience.review.stats import compute

    assert compute(tmp_path / "review", n_resamples=50).progress["rated"].sum() == 20  # the review's own statistics read it
    res = audit_run(run, 1000, people=tmp_path / "review")
    found = res.block["readers"]["people"]
    assert found["read"] == 19 and found["unscored_reasons"] == {"the reviewers could not tell": 1}
    assert len(found["disagreements"]) == 9
    assert {d["kind"] for d in found["disagreements"]} == {"unread", "wrong_letter"}
    assert found["cells"] == audit_run(run, 1000, reader=None, people=tmp_path / "review").block["readers"]["people"]["cells"]


def test_cli_audit_and_eval_with_audit(tmp_path):
    policy = Answers()
    make_tiny_suite().save(tmp_path / "suite")
    with StubServer(policy=policy) as srv:
        r = CliRunner().invoke(
            app,
            [
                "eval",
                "--suite",
                str(tmp_path / "suite"),
                "--model",
                f"openai:stub,base_url={srv.base_url}",
                "--out",
                str(tmp_path / "run"),
                "-O",
                "type1=all",
                "--audit",
                "100",
                "--reader",
                f"openai:reader,base_url={srv.base_url}",
            ],
        )
        assert r.exit_code == 0, r.output
        assert "label audit: 20 of 20" in r.output and "9 disagreements" in r.output
        assert "/unit/0/" in r.output
        page = (tmp_path / "run" / "report" / "report.html").read_text()
        again = CliRunner().invoke(app, ["audit", str(tmp_path / "run"), "--n", "100", "--reader", f"openai:reader,base_url={srv.base_url}"])
        assert again.exit_code == 0, again.output
        assert "Agreement" in again.output and "label-corrected" in again.output
        missing = CliRunner().invoke(app, ["audit", str(tmp_path / "run")])
        assert missing.exit_code != 0 and "second reader" in missing.output
        no_reader = CliRunner().invoke(
            app, ["eval", "--suite", str(tmp_path / "suite"), "--model", f"openai:stub,base_url={srv.base_url}", "--out", str(tmp_path / "r2"), "--audit", "5"]
        )
        assert no_reader.exit_code != 0 and "--reader" in no_reader.output and not (tmp_path / "r2").exists()
    assert "Label audit" in page and page.count("/unit/0/") >= 9


def test_a_sampled_audit_weights_its_units_and_still_corrects_the_rates(tmp_path):
    policy = Answers()
    with StubServer(policy=policy) as srv:
        run = _run(tmp_path, policy, srv)
        res = audit_run(run, 24, reader=_reader(srv), seed=3)
        again = audit_run(run, 24, reader=_reader(srv), seed=3)
    assert res.block["n_sampled"] == 24 and again.stats.called == 0
    assert [u.unit_id for u in res.units] == [u.unit_id for u in again.units]  # seeded
    assert all(s["n"] >= min(s["N"], 2) for s in res.block["strata"]) and sum(s["n"] for s in res.block["strata"]) == 24
    assert any(u.pi < 1 for u in res.units) and all(u.pi == pytest.approx(u.n_h / u.N_h) for u in res.units)
    found = res.block["readers"]["model:reader"]
    for c in found["cells"]:
        for key in ("agreement", "wrong_letter", "unread"):
            s = c[key]
            assert s["n"] == 0 or s["lo"] <= s["p"] <= s["hi"]
    # type 1: the run's reading says half right (q3 and q4 read as the key), truly none is
    t1 = next(r for r in found["corrected"] if r["metric"] == "type1_acc")
    assert t1["plain"] == pytest.approx(0.5) and t1["refused"] is None and t1["n_audited"] < t1["n_total"]
    assert abs(t1["estimate"]) < abs(t1["plain"]) and t1["lo"] <= 0.0 < t1["plain_lo"]
