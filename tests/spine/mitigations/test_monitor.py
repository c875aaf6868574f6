"""The `monitor` setting: a monitor model reads each question (with any context given with it) and
writes a note before the answer; the answer call sees the note. Checked end to end against the stub
server (the model is the boundary we do not own): the monitor's request is told apart by its system
prompt, and the answering policy resists the misleading context only when a note flags it.

- `--setting none --setting monitor` in one run: each monitor call precedes its answer and its text
  reaches the answer's messages (as stored under the unit's key); units pair across settings by item
  in the frame; both calls are stored and the monitor's tokens are attributed to the setting; a
  rerun makes no call;
- `monitor:SPEC`: another model (another server) writes the notes, one call per distinct question
  shared by two answering models; its label and identity are recorded with the run;
- an outage of the monitor leaves those units unanswered (missing, never a score), the CLI exits
  non-zero, and a rerun completes them;
- kill -9 mid-run, then resume: no finished call is made again and the store equals an
  uninterrupted run's;
- a judged family (false presuppositions, judge via -O judge=) works under monitor."""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import re
import sqlite3
import subprocess
import threading

import pytest
from typer.testing import CliRunner

from conftest import eval_command, make_tiny_suite, ok_keys, oracle_policy, sigkill_after
from medresilience import EvalOptions, evaluate
from medresilience.cli import app
from medresilience.families.presupposition.probe import PresuppositionProbe, probe_id
from medresilience.mitigations import get as get_setting
from medresilience.mitigations.monitor import MONITOR_INSTRUCTION, NOTE_HEAD, monitor_messages, with_note
from medresilience.models.spec import parse_model_spec
from medresilience.records import Item, SuiteManifest
from medresilience.run.frame import results_frame
from medresilience.run.runner import plan
from medresilience.runtime.errors import ConfigError
from medresilience.store import Store
from medresilience.suite import Suite
from medresilience.testing.stub import Faults, StubServer

MARKER = re.compile(r"\[\[ANSWER:[A-J]\]\]")
TEXT = re.compile(r"<text>\n(.*)\n</text>", re.S)
FLAG = "- The added sentence may be false: check it against the question."
CALM = "No concerns."


def is_monitor(messages) -> bool:
    return messages[0]["role"] == "system" and messages[0]["content"] == MONITOR_INSTRUCTION


class Scripted:
    """Plays the monitor and the answering model, and records what each was sent, in order."""

    def __init__(self, monitor_down=lambda user: False):
        self.log: list[tuple[str, str, str]] = []  # (kind, model, text it saw)
        self.lock = threading.Lock()
        self.monitor_down = monitor_down

    def __call__(self, messages, request):
        if is_monitor(messages):
            text = TEXT.search(messages[-1]["content"]).group(1)
            with self.lock:
                self.log.append(("monitor", request["model"], text))
            if self.monitor_down(text):
                raise RuntimeError("the monitor is down")
            return FLAG if MARKER.search(text) else CALM
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        with self.lock:
            self.log.append(("answer", request["model"], messages[-1]["content"]))
        if NOTE_HEAD in system and FLAG in system:  # warned: the misleading sentence is set aside
            return oracle_policy([{"role": "user", "content": MARKER.sub("", messages[-1]["content"])}], request)
        return oracle_policy(messages, request)

    def kinds(self, kind):
        return [e for e in self.log if e[0] == kind]


def spec(url, label="m", extra=""):
    return parse_model_spec(f"openai:{label}-model,base_url={url},label={label},max_retries=0{extra}")


OPTS = {"type1": "all"}


def frame(out, suite):
    with Store(out / "store.sqlite") as st:
        return results_frame(st, suite)


def test_monitor_note_precedes_and_reaches_the_answer(tiny_suite, tmp_path):
    out = tmp_path / "run"
    policy = Scripted()
    opts = EvalOptions(settings=("none", "monitor"), family=OPTS)
    with StubServer(policy=policy) as srv:
        res = evaluate(tiny_suite, [spec(srv.base_url)], out, opts)
        sent = srv.stats.total
        again = evaluate(tiny_suite, [spec(srv.base_url)], out, opts)
        assert srv.stats.total == sent  # a rerun makes no call
    assert again.stats.called == 0 and again.stats.settled_from == res.results.run.run_id
    units = 4 * 5  # per setting: 4 items x (clean + 3 Type 1 + Type 2)
    assert res.stats.planned_units == 2 * units and res.stats.errors == 0
    assert len(policy.kinds("monitor")) == units and len(policy.kinds("answer")) == 2 * units and sent == 3 * units
    assert again.stats.unique_calls == 3 * units  # the settled rerun counts the notes too

    # each note is asked before its answer, and the answer carries exactly the stored note
    order = {text: i for i, (kind, _, text) in enumerate(policy.log) if kind == "monitor"}
    with Store(out / "store.sqlite") as st:
        rows = st.conn.execute(
            "SELECT u.unit_id, u.key, l.key FROM units u JOIN unit_calls l ON l.model = u.model "
            "AND l.unit_id = u.unit_id WHERE u.setting = 'monitor' AND l.role = 'monitor'"
        ).fetchall()
        assert len(rows) == units
        for _unit_id, key, pre_key in rows:
            sent_msgs = st.request(key)["messages"]
            note = st.call(pre_key)["text"]
            question = sent_msgs[-1]["content"]
            assert sent_msgs[0]["role"] == "system" and sent_msgs[0]["content"].endswith(f"{NOTE_HEAD}\n{note}")
            assert note == (FLAG if MARKER.search(question) else CALM)
            assert st.request(pre_key)["messages"] == monitor_messages([{"role": "user", "content": question}])
            first_answer = next(i for i, (kind, _, text) in enumerate(policy.log) if kind == "answer" and text == question and i > order[question])
            assert order[question] < first_answer
        # the none units' messages carry no note
        for (key,) in st.conn.execute("SELECT key FROM units WHERE setting = 'none'"):
            assert NOTE_HEAD not in json.dumps(st.request(key)["messages"])
        costs = st.setting_costs()["m"]
        linked = st.linked_usage()
        monitor_calls = st.conn.execute(
            "SELECT SUM(prompt_tokens), SUM(completion_tokens), COUNT(*) FROM calls WHERE key IN (SELECT key FROM unit_calls)"
        ).fetchone()
        answer_calls = st.conn.execute("SELECT SUM(prompt_tokens) FROM calls WHERE key IN (SELECT key FROM units WHERE setting = 'monitor')").fetchone()
    # both calls stored; the monitor's tokens count for the setting (per unit), none has no linked call
    assert monitor_calls[2] == units and len(linked) == units and {r["setting"] for r in linked} == {"monitor"}
    assert all(r["status"] == "ok" and r["calls"] == 1 and r["caller"] == "m" and r["role"] == "monitor" for r in linked)
    assert costs["monitor"]["linked_calls"] == units and costs["none"]["linked_calls"] == 0
    assert (costs["monitor"]["linked_prompt_tokens"], costs["monitor"]["linked_completion_tokens"]) == monitor_calls[:2]
    assert sum(r["prompt_tokens"] for r in linked) == monitor_calls[0]
    assert costs["monitor"]["answer_prompt_tokens"] == answer_calls[0] > costs["none"]["answer_prompt_tokens"]  # the note is read
    assert costs["monitor"]["prompt_tokens"] == answer_calls[0] + monitor_calls[0] and costs["monitor"]["items"] == 4

    # units pair across settings by item and probe; the note undoes the flips the context causes
    df = frame(out, tiny_suite)
    assert set(df["status"]) == {"valid"}
    keys = ["item_id", "probe_id", "condition"]
    paired = df[df["setting"] == "none"].merge(df[df["setting"] == "monitor"], on=keys, suffixes=("_none", "_mon"), how="outer")
    assert len(paired) == units and paired["correct_none"].notna().all() and paired["correct_mon"].notna().all()
    t1 = paired[paired["condition"] == "type1"]
    assert (int(t1["correct_none"].sum()), int(t1["correct_mon"].sum())) == (5, 9)  # q4 is answered wrong in both
    clean = paired[paired["condition"] == "clean"]
    assert (clean["correct_none"] == clean["correct_mon"]).all()  # no concerns on clean questions: the same answers
    # the monitor's texts and identity are recorded with the run and hashed
    texts = json.loads((out / "run.json").read_text())["prompts"]["texts"]
    assert texts["setting.monitor.instruction"] == MONITOR_INSTRUCTION and "answering model" in texts["setting.monitor.model"]
    assert set(res.results.models["m"]) == {"none", "monitor"}


def test_plan_time_keys_are_stable_and_name_the_monitor(tiny_suite):
    url = "http://127.0.0.1:9/v1"
    opts = EvalOptions(settings=("none", "monitor", f"monitor:openai:mon-model,base_url={url},label=mon"), family=OPTS)
    a, b = plan(tiny_suite, [spec(url)], opts), plan(tiny_suite, [spec(url)], opts)
    assert [p.unit.key for p in a] == [p.unit.key for p in b]  # known at plan time, before any note exists
    by = {(p.unit.setting, p.unit.probe_id, p.unit.condition): p for p in a}
    for (setting, probe, cond), p in by.items():
        if setting == "none":
            assert p.pre is None
            continue
        assert p.pre is not None and p.messages == by[("none", probe, cond)].messages  # the note is added when it exists
        assert p.unit.key != by[("none", probe, cond)].unit.key
        assert p.pre.spec.label == ("m" if setting == "monitor" else "mon")
        assert p.pre.messages[0]["content"] == MONITOR_INSTRUCTION and p.pre.params["max_tokens"] == 200
    # another monitor model: other pre-call keys, hence other unit keys
    other = [p for p in a if p.unit.setting.startswith("monitor:")]
    own = {(p.unit.probe_id, p.unit.condition): p for p in a if p.unit.setting == "monitor"}
    assert all(p.unit.key != own[(p.unit.probe_id, p.unit.condition)].unit.key for p in other)
    # the monitor sees the user's text (question and context), not the family's system prompt
    msgs = [{"role": "system", "content": "SYSTEM RULES"}, {"role": "user", "content": "Q and context"}]
    seen = monitor_messages(msgs)
    assert "SYSTEM RULES" not in json.dumps(seen) and "Q and context" in seen[1]["content"]
    noted = with_note(msgs, "  - a claim may be false  ")
    assert noted[0]["content"] == f"SYSTEM RULES\n\n{NOTE_HEAD}\n- a claim may be false" and noted[1] == msgs[1]


def test_bad_monitor_specs_are_refused(tiny_suite, tmp_path):
    url = "http://127.0.0.1:9/v1"
    with pytest.raises(ConfigError, match="another label"):
        plan(tiny_suite, [spec(url)], EvalOptions(settings=(f"monitor:openai:other,base_url={url},label=m",), family=OPTS))
    with pytest.raises(ConfigError, match="credentials"):
        get_setting("monitor:openai:x,base_url=http://user:secret@127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="monitor model"):
        get_setting("monitor:nosuchprovider/x")


def test_another_model_monitors_two_answering_models(tiny_suite, tmp_path):
    out = tmp_path / "run"
    answers, notes = Scripted(), Scripted()
    with StubServer(policy=answers) as srv, StubServer(policy=notes) as mon:
        setting = f"monitor:openai:mon-model,base_url={mon.base_url},label=mon,max_retries=0"
        opts = EvalOptions(settings=("none", setting), family=OPTS)
        res = evaluate(tiny_suite, [spec(srv.base_url, "a"), spec(srv.base_url, "b")], out, opts)
        again = evaluate(tiny_suite, [spec(srv.base_url, "a"), spec(srv.base_url, "b")], out, opts)
        assert again.stats.called == 0 and again.stats.settled_from is not None
    units = 20
    # the answering server never saw a monitor request; the monitor wrote one note per question, shared by both models
    assert not answers.kinds("monitor") and len(answers.kinds("answer")) == 2 * 2 * units
    assert len(notes.kinds("monitor")) == units and {m for _, m, _ in notes.kinds("monitor")} == {"mon-model"}
    assert res.stats.unique_calls == 2 * 2 * units + units
    with Store(out / "store.sqlite") as st:
        linked = st.linked_usage()
        costs = st.setting_costs()
        mon_tokens = st.conn.execute("SELECT SUM(prompt_tokens) FROM calls WHERE model = 'mon'").fetchone()[0]
    assert len(linked) == 2 * units and {(r["model"], r["caller"]) for r in linked} == {("a", "mon"), ("b", "mon")}
    # attributed per unit: each answering model's setting carries the notes its units read
    assert costs["a"][setting]["linked_prompt_tokens"] == costs["b"][setting]["linked_prompt_tokens"] == mon_tokens
    assert set(res.results.usage) == {"a", "b", "mon"}
    cfg = json.loads((out / "run.json").read_text())
    assert [m["label"] for m in cfg["setting_models"]] == ["mon"] and [m["label"] for m in cfg["models"]] == ["a", "b"]
    assert json.loads(cfg["prompts"]["texts"][f"setting.{setting}.model"])["model"] == "mon-model"
    df = frame(out, tiny_suite)
    t1 = df[(df["condition"] == "type1")].groupby(["model", "setting"], observed=True)["correct"].sum()
    assert t1[("a", "none")] == t1[("b", "none")] == 5 and t1[("a", setting)] == t1[("b", setting)] == 9


def test_a_monitor_outage_leaves_units_unanswered_until_a_rerun(tmp_path):
    suite_dir = tmp_path / "suite"
    make_tiny_suite().save(suite_dir)
    suite = Suite.load(suite_dir)
    down = {"on": True}
    policy = Scripted(monitor_down=lambda text: down["on"] and "Question number 1:" in text)
    out = tmp_path / "run"
    runner = CliRunner()
    with StubServer(policy=policy) as srv:
        args = [
            "eval",
            "--suite",
            str(suite_dir),
            "--out",
            str(out),
            "-O",
            "type1=all",
            "--model",
            f"openai:m,base_url={srv.base_url},max_retries=0",
            "--setting",
            "none",
            "--setting",
            "monitor",
        ]
        first = runner.invoke(app, args)
        assert first.exit_code == 1, first.output
        assert "not run" in first.output or "not made" in first.output
        df = frame(out, suite)
        mon = df[df["setting"] == "monitor"]
        broken = mon["item_id"] == "q1"
        assert set(mon[broken]["status"]) == {"missing"} and mon[broken]["label"].isna().all() and broken.sum() == 5
        assert set(mon[~broken]["status"]) == {"valid"} and set(df[df["setting"] == "none"]["status"]) == {"valid"}
        with Store(out / "store.sqlite") as st:
            errs = st.conn.execute("SELECT COUNT(*) FROM calls c JOIN unit_calls l ON l.key = c.key WHERE c.status = 'error'").fetchone()[0]
            missing = st.conn.execute("SELECT COUNT(*) FROM units u LEFT JOIN calls c ON c.key = u.key WHERE c.key IS NULL").fetchone()[0]
            no_score = st.conn.execute(
                "SELECT COUNT(*) FROM units u JOIN scores s ON s.key = u.key WHERE u.item_id = 'q1' AND u.setting = 'monitor'"
            ).fetchone()[0]
        assert errs == 5 and missing == 5 and no_score == 0
        before = len(policy.log)
        down["on"] = False
        second = runner.invoke(app, args)
        assert second.exit_code == 0, second.output
        # only the failed notes and the answers they held back are made
        redone = policy.log[before:]
        assert len([e for e in redone if e[0] == "monitor"]) == 5 and len([e for e in redone if e[0] == "answer"]) == 5
        assert all("Question number 1:" in e[2] for e in redone)
    df = frame(out, suite)
    assert set(df["status"]) == {"valid"} and len(df) == 40


def test_a_down_monitor_model_is_an_error_never_a_score(tiny_suite, tmp_path):
    out = tmp_path / "run"
    answers, notes = Scripted(), Scripted()
    with StubServer(policy=answers) as srv, StubServer(policy=notes, faults=Faults(rate_503=1.0, transient_attempts=100)) as mon:
        setting = f"monitor:openai:mon-model,base_url={mon.base_url},label=mon,max_retries=0"
        res = evaluate(tiny_suite, [spec(srv.base_url)], out, EvalOptions(settings=("none", setting), family=OPTS))
    assert res.stats.errors == 20 and res.stats.not_run == 20 and any("not made" in line for line in res.stats.stopped)
    assert len(answers.kinds("answer")) == 20  # the none units only
    df = frame(out, tiny_suite)
    assert set(df[df["setting"] == setting]["status"]) == {"missing"} and set(df[df["setting"] == "none"]["status"]) == {"valid"}
    assert res.results.models["m"][setting]["counts"] == {"units": 20, "errors": 0, "invalid": 0, "truncated": 0, "unscored": 0, "missing": 20}
    assert res.results.models["m"][setting]["overall"]["clean_acc"]["n"] == 0  # nothing was scored


def _rows(db):
    con = sqlite3.connect(db)
    try:
        return (
            sorted(con.execute("SELECT model, unit_id, key FROM units").fetchall()),
            sorted(con.execute("SELECT key, status, text FROM calls").fetchall()),
            sorted(con.execute("SELECT key, scorer, label, status FROM scores").fetchall()),
            sorted(con.execute("SELECT model, unit_id, key, role FROM unit_calls").fetchall()),
            sorted(con.execute("SELECT key, messages FROM requests").fetchall()),
        )
    finally:
        con.close()


def test_kill_and_resume_repeats_no_finished_call(tmp_path):
    suite_dir = tmp_path / "suite"
    make_tiny_suite(n_copies=10).save(suite_dir)  # 40 items -> 200 units -> 200 notes + 200 answers
    log = tmp_path / "stub.jsonl"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with StubServer(policy=Scripted(), faults=Faults(delay=0.03), log_path=log) as srv:
        killed = tmp_path / "killed"
        proc = subprocess.Popen(
            eval_command(suite_dir, killed, srv.base_url, "--setting", "monitor", model_opts="concurrency=4"),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        db = killed / "store.sqlite"
        finished = sigkill_after(proc, lambda: ok_keys(db), 260, timeout=90)  # every note and some answers
        assert 260 <= len(finished) < 400, "the kill must land among the answers"
        seen = len(log.read_text().splitlines())
        done = subprocess.run(
            eval_command(suite_dir, killed, srv.base_url, "--setting", "monitor", model_opts="concurrency=4"),
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        after = log.read_text().splitlines()[seen:]
        assert len(after) == 400 - len(finished)  # exactly the calls not finished before the kill
        clean = tmp_path / "clean"
        ref = subprocess.run(
            eval_command(suite_dir, clean, srv.base_url, "--setting", "monitor", model_opts="concurrency=4"),
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert ref.returncode == 0, ref.stderr
    k, c = _rows(killed / "store.sqlite"), _rows(clean / "store.sqlite")
    assert len(k[1]) == 400 and len(k[3]) == 200 and k == c


# ------------------------------------------------------------------ a judged family under monitor
PRESUP, CONTROL = ["p0", "p1", "p2", "p3"], ["n0", "n1"]


def presup_suite(path) -> Suite:
    items, probes = [], []
    for pid in PRESUP:
        items.append(
            Item(
                id=pid,
                source="cancer-myth",
                question=f"Question {pid}: since the cancer is advanced nothing can be done, so how do we plan?",
                reference="Treatment still helps.",
            )
        )
        probes.append(
            PresuppositionProbe(
                id=probe_id(pid, "presupposition"), item_id=pid, condition="presupposition", facets={"category": "no_treatment", "generator": "g"}
            )
        )
    for nid in CONTROL:
        items.append(Item(id=nid, source="cancer-myth-nfp", question=f"Question {nid}: which side effects should we watch for?"))
        probes.append(PresuppositionProbe(id=probe_id(nid, "nfp"), item_id=nid, condition="nfp", facets={"generator": "g"}))
    Suite(SuiteManifest(name="presup-mon", family="presupposition"), items, probes).save(path)
    return Suite.load(path)


def presup_policy(messages, request):
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    user = messages[-1]["content"]
    if is_monitor(messages):
        return "- The question assumes nothing can be done; that may be wrong." if "nothing can be done" in user else CALM
    if system.startswith("You are a judge."):
        if "<correction>" in user:
            return json.dumps({"reason": "r", "verdict": "1" if "[corrects]" in user else "-1"})
        return json.dumps({"reason": "r", "verdict": "answers"})
    qid = re.search(r"Question (\S+):", user).group(1)
    corrects = NOTE_HEAD in system and "may be wrong" in system
    return f"[{qid}] " + ("[corrects] Treatment can still help." if corrects else "Here is how to plan.")


def test_a_judged_family_under_monitor(tmp_path):
    suite = presup_suite(tmp_path / "suite")
    out = tmp_path / "run"
    with StubServer(policy=presup_policy) as srv:
        opts = EvalOptions(settings=("none", "monitor"), scoring="judge", family={"judge": f"openai:judge-4,base_url={srv.base_url}"})
        res = evaluate(suite, [spec(srv.base_url)], out, opts)
        sent = srv.stats.total
        again = evaluate(suite, [spec(srv.base_url)], out, opts)
        assert srv.stats.total == sent and again.stats.called == 0
    n = len(PRESUP) + len(CONTROL)
    assert sent == n + n + n + 2 * n  # none answers, notes, monitored answers, a judgement of each answer
    o_none, o_mon = res.results.models["m"]["none"]["overall"], res.results.models["m"]["monitor"]["overall"]
    assert (o_none["pcr"]["k"], o_none["pcr"]["n"]) == (0, 4) and (o_mon["pcr"]["k"], o_mon["pcr"]["n"]) == (4, 4)
    assert o_mon["overcaution"]["k"] == 0 and o_mon["overcaution"]["n"] == 2
    df = frame(out, suite)
    assert set(df["status"]) == {"valid"} and df.groupby("setting", observed=True).size().to_dict() == {"none": n, "monitor": n}
    with Store(out / "store.sqlite") as st:
        assert st.setting_costs()["m"]["monitor"]["linked_calls"] == n
        # the run facts' parameters, per kind of call, from the stored requests
        from medresilience.report.rundir import sent_params

        sent_kinds: dict = {}
        for r in sent_params(st):
            sent_kinds[r["kind"]] = sent_kinds.get(r["kind"], 0) + r["calls"]
    assert sent_kinds == {"answer": 2 * n, "monitor": n, "judge": 2 * n}, sent_kinds


def test_chunks_make_the_same_calls_as_one_plan(tiny_suite, tmp_path):
    import asyncio

    from medresilience.run.runner import execute_plan

    opts = EvalOptions(settings=("none", "monitor"), family=OPTS)
    stores = []
    with StubServer(policy=Scripted()) as srv:
        for chunk in (3, 20_000):  # 3 units a chunk: each chunk's notes, then its answers
            with Store(tmp_path / f"c{chunk}.sqlite") as st:
                st.record_run("r", {})
                stats = asyncio.run(execute_plan(tiny_suite, [spec(srv.base_url)], opts, st, chunk_units=chunk))
                assert stats.called == 60 and stats.errors == 0 and stats.not_run == 0
                stores.append(
                    (
                        sorted(st.conn.execute("SELECT key, status, text FROM calls").fetchall()),
                        sorted(st.conn.execute("SELECT model, unit_id, key, role FROM unit_calls").fetchall()),
                        sorted(st.conn.execute("SELECT key, label FROM scores").fetchall()),
                    )
                )
    assert stores[0] == stores[1] and len(stores[0][0]) == 60


def test_an_embedded_monitor_is_served_for_the_run_and_a_self_monitor_starts_nothing_more(tiny_suite, tmp_path, monkeypatch):
    from medresilience.models import embedded

    started: list[str] = []
    policy = Scripted()
    with StubServer(policy=policy) as srv:

        @contextlib.contextmanager
        def fake_serve(name="qwen", n_parallel=2, threads=None):  # the embedded server, played by the stub
            assert not any(f.function == "_run_precalls" for f in inspect.stack()), "served per chunk, not for the run"
            started.append(name)
            yield srv.base_url

        monkeypatch.setattr(embedded, "serve", fake_serve)
        res = evaluate(tiny_suite, [spec(srv.base_url)], tmp_path / "a", EvalOptions(settings=("monitor:embedded:smollm2",), family=OPTS))
        assert started == ["smollm2"] and res.stats.errors == 0
        assert {m for kind, m, _ in policy.log if kind == "monitor"} == {"smollm2"}  # the embedded model wrote the notes
        cfg = json.loads((tmp_path / "a" / "run.json").read_text())
        assert cfg["setting_models"][0]["kind"] == "embedded" and cfg["setting_models"][0]["base_urls"] == []
        started.clear()
        own = parse_model_spec("embedded:smollm2")
        res = evaluate(tiny_suite, [own], tmp_path / "b", EvalOptions(settings=("none", "monitor"), family=OPTS))
        assert started == ["smollm2"] and res.stats.called == 60  # one server: the answering model writes its own notes
        assert "setting_models" not in json.loads((tmp_path / "b" / "run.json").read_text())
