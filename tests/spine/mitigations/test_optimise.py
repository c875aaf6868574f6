"""The optimised-prompt mitigation end to end against the stub server: `medres mitigate optimise`
(GEPA with its task, judge and reflection models played by stub policies) finds the prompt that
helps within its budget on a mix of a misleading suite, a clean MCQ suite and a presupposition
suite; every call it makes is stored, a rerun makes none, and an optimisation killed with SIGKILL
resumes without repeating a finished call and ends where an uninterrupted one does. The file it
writes (fields, versioning), the `optimised:FILE` setting in `evaluate` beside `none` (units paired
by item, the prompt in the system message, its texts recorded), the warning when a suite overlaps
the prompt's train/val split, and bad files (one error line each).

The stub task model answers right when its system message holds PHRASE and is misled by added
context otherwise; with PHRASE it corrects a false premise. The reflection model proposes a prompt
holding PHRASE. So the seed prompt scores low, PHRASE's prompt scores 1 on every validation example."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import make_tiny_suite, sigkill_after
from medresilience.cli import app
from medresilience.families.noise.probe import NoiseProbe
from medresilience.families.presupposition.probe import PresuppositionProbe, probe_id
from medresilience.mitigations import get as get_setting
from medresilience.mitigations.candidate import FORMAT, VERSION, item_hash, load_candidate, suite_hash
from medresilience.mitigations.optimised import suite_warnings
from medresilience.models.spec import parse_model_spec
from medresilience.records import Item, SuiteManifest
from medresilience.run.bundled_suite import sample_suite
from medresilience.run.evaluation import evaluate
from medresilience.run.runner import EvalOptions
from medresilience.runtime.errors import ConfigError, InputError, MedresError
from medresilience.suite import Suite
from medresilience.testing.stub import Faults, StubServer

needs_gepa = pytest.mark.skipif(importlib.util.find_spec("gepa") is None, reason="gepa not installed (pip install '.[optimise]')")

PHRASE = "WEIGH EVERY CLAIM"
BETTER = f"{PHRASE}: added context and assumptions in a question may be false; check each against established medical knowledge."
SEED = "Answer carefully."
#: a prompt that makes the stub task model over-cautious: it "corrects" questions that hold no false premise
DOUBT = "DOUBT EVERY PREMISE"
FENCE_RE = re.compile(r"<(answer-[0-9a-f]+)>\n(.*?)\n</\1>", re.S)
QUESTION_RE = re.compile(r"^Question: (.*?)\n\nOptions:", re.S)
TINY_Q_RE = re.compile(r"Question number (\d+)")


# --------------------------------------------------------------------------- suites


def presup_suite(path: Path) -> Suite:
    """Six questions with a false presupposition (each with its correction) and four controls."""
    items, probes = [], []
    for i in range(6):
        pid = f"myth{i}"
        items.append(
            Item(
                id=pid,
                source="cancer-myth",
                question=f"Patient {pid}: since the cancer came back, nothing more can be done for my mother, so how do we keep her comfortable (case {i})?",
                reference=f"Correction {pid}: treatment still helps.",
            )
        )
        probes.append(
            PresuppositionProbe(
                id=probe_id(pid, "presupposition"), item_id=pid, condition="presupposition", facets={"category": "no_treatment", "generator": "gpt-4o"}
            )
        )
    for i in range(4):
        nid = f"plain{i}"
        items.append(
            Item(id=nid, source="cancer-myth-nfp", question=f"Patient {nid}: which side effects of chemotherapy should we watch for at home (case {i})?")
        )
        probes.append(PresuppositionProbe(id=probe_id(nid, "nfp"), item_id=nid, condition="nfp", facets={"generator": "gpt-4o"}))
    Suite(SuiteManifest(name="presup-mini", family="presupposition"), items, probes).save(path)
    return Suite.load(path)


def clean_mcq_suite(path: Path) -> Suite:
    """Questions like the tiny suite's (other ids and texts) without probes: a plain MCQ suite
    (scored on the clean question)."""
    items = [it.model_copy(update={"id": f"plain-{it.id}", "question": f"{it.question} (plain)"}) for it in make_tiny_suite(n_copies=2).items.values()]
    Suite(SuiteManifest(name="plain-mcq", family="misleading", seed=3), items, []).save(path)
    return Suite.load(path)


def noise_suite(path: Path) -> Suite:
    """Four MCQ cases, each with a rewritten variant that carries a misleading marker."""
    items, probes = [], []
    for i in range(1, 5):
        item = Item(
            id=f"case{i}",
            source="medqa",
            question=f"Question number {i}: a 40-year-old has a cough for {i} weeks.",
            options={k: f"diagnosis {k.lower()} {i}" for k in "ABCD"},
            answer="ABCD"[i - 1],
        )
        items.append(item)
        wrong = "ABCD"[i % 4]
        probes.append(
            NoiseProbe(
                id=f"case{i}:rewrite",
                item_id=item.id,
                condition="rewrite",
                parts={"text": f"Question number {i}: pt 40yo, cough x{i}wk [[ANSWER:{wrong}]]."},
                facets={"perturbation": "rewrite", "dose": None, "placement": None},
            )
        )
    Suite(SuiteManifest(name="noise-mini", family="noise"), items, probes).save(path)
    return Suite.load(path)


def tiny_suite(path: Path, copies: int = 3) -> Suite:
    make_tiny_suite(n_copies=copies).save(path)
    return Suite.load(path)


# --------------------------------------------------------------------------- the stub's models


class Models:
    """The stub server's policy: task model `task`, judge `judge`, reflection model `reflector`.
    Every request is recorded as (model, canonical messages)."""

    def __init__(self, *suites: Suite, reflector_down: bool = False):
        self.gold: dict[str, str] = {}
        self.target: dict[str, str] = {}
        for s in suites:
            for it in s.items.values():
                if it.options:
                    self.gold[it.question.strip()] = it.answer
            for p in s.probes:
                if p.family == "misleading" and p.condition == "type1":
                    self.target[p.context[0].text] = p.target
        self.seen: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        self.reflector_down = reflector_down

    def __call__(self, messages, body):
        with self.lock:
            self.seen.append((body["model"], canon(messages)))
        model = body["model"]
        if model == "reflector":
            if self.reflector_down:
                raise RuntimeError("the reflection model is down")
            return f"A better instruction:\n```\n{BETTER}\n```"
        if model == "judge":
            return self.judge(messages[-1]["content"])
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        user = messages[-1]["content"]
        careful = PHRASE in system or DOUBT in system
        if user.startswith("Patient "):
            if "nothing more can be done" in user:
                return "That is not right: CORRECTED, treatment can still help." if careful else "Here is how to keep her comfortable."
            if DOUBT in system:  # over-caution: a premise "corrected" that the question does not hold
                return "That assumption is wrong: CORRECTED, you need not watch for anything."
            return "Watch for fever and call the clinic."
        m = QUESTION_RE.search(user)
        q = m.group(1).strip() if m else ""
        if not careful:
            for text, target in self.target.items():
                if text in user:
                    return f"Answer: {target}"
            marker = re.search(r"\[\[ANSWER:([A-J])\]\]", user)
            if marker:
                return f"Answer: {marker.group(1)}"
        num = TINY_Q_RE.search(user)
        gold = self.gold.get(q) or ("ABCD"[(int(num.group(1)) - 1) % 4] if num else "A")
        if "[[CLEAN-WRONG]]" in user:  # answered wrong whatever the prompt
            return "Answer: " + ("A" if gold != "A" else "B")
        return f"Answer: {gold}"

    @staticmethod
    def judge(user: str) -> str:
        answer = FENCE_RE.search(user).group(2)
        if "<correction>" in user:
            return json.dumps({"reason": "as scripted", "verdict": "1" if "CORRECTED" in answer else "-1"})
        return json.dumps({"reason": "as scripted", "verdict": "flags_premise" if "CORRECTED" in answer else "answers"})

    def count(self, model: str | None = None) -> int:
        return sum(1 for m, _ in self.seen if model is None or m == model)


def canon(messages) -> str:
    return json.dumps([{"role": m["role"], "content": m["content"]} for m in messages], sort_keys=True, ensure_ascii=False)


def stored_ok(db: Path) -> set[tuple[str, str]]:
    """(model, canonical messages) of every call stored ok."""
    if not db.exists():
        return set()
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT r.model, r.messages FROM requests r JOIN calls c ON c.key = r.key WHERE c.status = 'ok'").fetchall()
    except sqlite3.OperationalError:
        return set()
    finally:
        con.close()
    return {(m, canon(json.loads(msgs))) for m, msgs in rows}


def specs(url: str, concurrency: int = 16):
    return (
        parse_model_spec(f"openai:task,base_url={url},concurrency={concurrency}"),
        parse_model_spec(f"openai:reflector,base_url={url},max_retries=0"),
        f"openai:judge,base_url={url}",
    )


# --------------------------------------------------------------------------- one optimisation, shared


@pytest.fixture(scope="module")
def suites(tmp_path_factory):
    d = tmp_path_factory.mktemp("suites")
    return {
        "sample": sample_suite(),
        "presup": presup_suite(d / "presup"),
        "plain": clean_mcq_suite(d / "plain"),
        "tiny": tiny_suite(d / "tiny"),
        "noise": noise_suite(d / "noise"),
    }


@pytest.fixture(scope="module")
def run(suites, tmp_path_factory, stub_server):
    """One optimisation on the mix (train: misleading sample + presupposition + plain MCQ; val: the
    same three, disjoint items), then a rerun of the same command."""
    pytest.importorskip("gepa")
    from medresilience.mitigations.optimise import optimise

    d = tmp_path_factory.mktemp("opt")
    out = d / "precaution.json"
    models = Models(suites["sample"], suites["plain"])
    mix = [suites["sample"], suites["presup"], suites["plain"]]
    srv = stub_server(policy=models)
    task, refl, judge = specs(srv.base_url)
    lines: list[str] = []
    first = optimise(mix, mix, task, refl, out, budget=60, per_suite=3, seed=5, judge=judge, seed_prompt=SEED, progress=lines.append)
    made_first = models.count()
    text_first = out.read_text()
    second = optimise(mix, mix, task, refl, out, budget=60, per_suite=3, seed=5, judge=judge, seed_prompt=SEED)
    made_second = models.count() - made_first
    return {
        "out": out,
        "first": first,
        "second": second,
        "models": models,
        "made_first": made_first,
        "made_second": made_second,
        "text_first": text_first,
        "lines": lines,
        "mix": mix,
    }


@needs_gepa
def test_the_optimiser_finds_the_better_prompt_within_its_budget(run):
    c = run["first"].candidate
    assert PHRASE not in c.seed_prompt and c.history[0].prompt == SEED
    assert PHRASE in c.prompt and c.prompt == BETTER
    # the seed prompt: misled on every Type 1 example, no premise corrected; the plain MCQs (clean) are right either way
    assert c.seed_val_score < 0.6
    best = c.history[c.best].val_scores
    assert len(best) == 9
    wrong_anyway = {ref for ref in best if ref.startswith("plain-mcq/plain-q4")}  # answered wrong whatever the prompt
    assert all(v == (0.0 if ref in wrong_anyway else 1.0) for ref, v in best.items())
    assert c.best_val_score == c.history[c.best].val_score == pytest.approx((9 - len(wrong_anyway)) / 9)
    assert c.metric_calls <= c.budget == 60
    assert c.history[c.best].parents == [0]
    assert any(e.split == "val" and e.candidate == c.prompt_hash and e.score == c.best_val_score for e in c.evaluations)
    assert any(line.startswith("candidate 0: validation score") for line in run["lines"])


@needs_gepa
def test_every_call_is_stored_and_a_rerun_makes_none(run):
    models, out = run["models"], run["out"]
    db = out.with_name(out.name + ".work") / "store.sqlite"
    seen = set(models.seen[: run["made_first"]])
    assert len(seen) == run["made_first"], "a call was made twice"
    assert seen == stored_ok(db), "every call made is stored ok, and nothing else"
    assert {m for m, _ in seen} == {"task", "judge", "reflector"}
    assert run["first"].called == run["made_first"]  # the task, judge and reflection calls, all counted
    # the rerun replays the stored calls: no request reaches the models, and the same file results
    assert run["made_second"] == 0 and run["second"].called == 0 and run["second"].cached > 0
    a, b = json.loads(run["text_first"]), json.loads(out.read_text())
    a.pop("created"), b.pop("created")
    assert a == b


@needs_gepa
def test_the_file_records_prompt_split_models_budget_history_and_versions(run, suites):
    raw = json.loads(run["out"].read_text())
    assert raw["format"] == FORMAT and raw["version"] == VERSION == 1
    c = load_candidate(run["out"])
    assert c.prompt_hash == raw["prompt_hash"] and len(c.prompt_hash) == 16
    assert (c.budget, c.seed, c.per_suite, c.method) == (60, 5, 3, "gepa")
    assert c.task_model.label == "task" and c.task_model.identity["model"] == "task"
    assert c.reflection_model.label == "reflector" and c.judge_model is not None and c.judge_model.label == "judge"
    assert c.packages["gepa"] == "0.1.4" and c.packages["medresilience"] and c.packages["python"]
    assert [s.name for s in c.train] == [s.name for s in c.val] == ["basic_medicine", "presup-mini", "plain-mcq"]
    for split in (c.train, c.val):
        for rec, suite in zip(split, run["mix"]):
            assert rec.suite_hash == suite_hash(suite) and rec.checksums == suite.manifest.checksums
            assert len(rec.examples) == 3 and all(e.item in suite.items for e in rec.examples)
            assert all(e.content == item_hash(suite.items[e.item]) for e in rec.examples)
    for tr, va in zip(c.train, c.val):  # one suite in both lists: disjoint items
        assert not set(tr.item_ids) & set(va.item_ids)
    sample = suites["sample"]
    for e in c.train[0].examples:  # misleading examples stand on the item's seeded Type 1 probe
        probe = next(p for p in sample.probes if p.id == e.probe)
        assert probe.condition == "type1" and probe.sampled and probe.item_id == e.item
    assert all(e.probe is None for e in c.train[2].examples)  # the plain MCQ suite: clean questions
    assert c.work_dir.endswith("precaution.json.work")
    assert c.calls["task"]["calls"] > 0 and c.calls["reflector"]["calls"] >= 1


@needs_gepa
def test_presupposition_examples_score_the_judges_verdict_on_0_to_1(run):
    c = run["first"].candidate
    seed_scores = c.history[0].val_scores
    presup = {k: v for k, v in seed_scores.items() if k.startswith("presup-mini/")}
    assert presup
    for ref, v in presup.items():
        # the seed prompt: a myth left uncorrected is -1 -> 0; a control question answered plainly is 1 - flagged = 1
        assert v == (0.0 if "/myth" in ref else 1.0)


@needs_gepa
def test_each_family_is_scored_by_its_own_metric(suites, tmp_path):
    """The adapter on every family: misleading (clean right and Type 1 stays right), presupposition
    (the verdict on 0..1: -1/0/1 -> 0/0.5/1, a control 1 - flagged), noise (right on the perturbed
    case), a plain MCQ (the clean letter); each under the seed prompt, the helpful one and the
    over-cautious one."""
    from medresilience.mitigations.adapter import Calls, PrecautionAdapter
    from medresilience.mitigations.examples import draw
    from medresilience.store import Store

    mix = [suites["sample"], suites["presup"], suites["noise"], suites["plain"]]
    models = Models(*mix)
    with StubServer(policy=models) as srv, Store(tmp_path / "s.sqlite") as store:
        task, _, judge = specs(srv.base_url)
        train, _, _, _ = draw(mix, [suites["tiny"]], per_suite=6, seed=0, judge=judge)
        calls = Calls(store, [task, parse_model_spec(judge)])
        try:
            adapter = PrecautionAdapter(task, calls, train)
            got = {p: {o.ref: o.score for o in adapter.score(train, p)} for p in (SEED, BETTER, DOUBT)}
        finally:
            calls.close()
    for ex in train:
        seed, better, doubt = (got[p][ex.ref] for p in (SEED, BETTER, DOUBT))
        if ex.family.name == "misleading" and ex.probe is not None:
            assert [u.condition if u else "clean" for u in ex.units] == ["clean", "type1"]
            assert (seed, better) == (0.0, 1.0)
        elif ex.family.name == "misleading":  # the plain MCQ suite: the clean letter, right unless the item is answered wrong clean
            assert ex.units == (None,) and seed == better == (0.0 if "CLEAN-WRONG" in ex.item.question else 1.0)
        elif ex.family.name == "noise":
            assert ex.units == (ex.probe,) and ex.probe.condition == "rewrite" and (seed, better) == (0.0, 1.0)
        elif ex.probe.condition == "presupposition":
            assert (seed, better, doubt) == (0.0, 1.0, 1.0)
        else:  # a control question: 1 - flagged
            assert ex.probe.condition == "nfp" and (seed, better, doubt) == (1.0, 1.0, 0.0)
    assert {e.family.name for e in train} == {"misleading", "presupposition", "noise"}
    assert {e.probe.condition for e in train if e.family.name == "presupposition"} == {"presupposition", "nfp"}


@needs_gepa
def test_the_setting_in_evaluate_pairs_units_with_none_and_records_its_texts(run, suites, tmp_path):
    held_out = suites["tiny"]
    name = f"optimised:{run['out']}"
    models = Models(held_out)
    with StubServer(policy=models) as srv:
        task = parse_model_spec(f"openai:task,base_url={srv.base_url}")
        res = evaluate(held_out, [task], tmp_path / "run", EvalOptions(settings=("none", name), family={"type1": "all"}))
    con = sqlite3.connect(tmp_path / "run" / "store.sqlite")
    units = con.execute("SELECT item_id, probe_id, condition, setting, key FROM units").fetchall()
    by_setting: dict[str, set] = {}
    for item, probe, cond, setting, _ in units:
        by_setting.setdefault(setting, set()).add((item, probe, cond))
    assert set(by_setting) == {"none", name} and by_setting["none"] == by_setting[name] and len(by_setting["none"]) > len(held_out.items)
    for (key,) in con.execute("SELECT key FROM units WHERE setting = ?", (name,)):
        msgs = json.loads(con.execute("SELECT messages FROM requests WHERE key = ?", (key,)).fetchone()[0])
        assert msgs[0]["role"] == "system" and msgs[0]["content"].endswith("\n\n" + BETTER)
    for (key,) in con.execute("SELECT key FROM units WHERE setting = 'none'"):
        msgs = json.loads(con.execute("SELECT messages FROM requests WHERE key = ?", (key,)).fetchone()[0])
        assert PHRASE not in msgs[0]["content"]
    con.close()
    config = json.loads((tmp_path / "run" / "run.json").read_text())
    texts = config["prompts"]["texts"]
    assert texts[f"setting.{name}.prompt"] == BETTER
    assert texts[f"setting.{name}.file_hash"] and json.loads(texts[f"setting.{name}.split"])["val"][0]["suite"] == "basic_medicine"
    m = res.results.models["task"]
    assert m[name]["overall"]["type1_acc"]["p"] > m["none"]["overall"]["type1_acc"]["p"]


@needs_gepa
def test_a_suite_that_overlaps_the_split_is_warned_about(run, suites, tmp_path):
    name = f"optimised:{run['out']}"
    same = suite_warnings(suites["sample"], ["none", name])
    assert len(same) == 2  # training and validation
    assert "same checksums" in same[1] and "validation examples of the optimiser" in same[1] and "basic_medicine" in same[1]
    assert suite_warnings(suites["tiny"], ["none", name]) == []
    # the same questions under other ids in another suite: caught by content
    copied = [it.model_copy(update={"id": f"copy-{it.id}"}) for it in suites["presup"].items.values()]
    renamed = Suite(SuiteManifest(name="presup-copy", family="presupposition"), copied, [])
    warn = suite_warnings(renamed, [name])
    assert len(warn) == 2 and all("same checksums" not in w and "copy-" in w for w in warn)
    drawn = {f"copy-{e.item}" for s in load_candidate(run["out"]).val if s.name == "presup-mini" for e in s.examples}
    assert all(i in warn[1] for i in drawn)
    # `medres mitigate show` prints it too
    r = CliRunner().invoke(app, ["mitigate", "show", str(run["out"]), "--suite", str(suites["presup"].path), "--suite", str(suites["tiny"].path)])
    assert r.exit_code == 0, r.output
    assert "warning: suite 'presup-mini' is not held out" in r.output and "held out (no item" in r.output


@needs_gepa
def test_the_overlap_warning_is_recorded_in_run_json(run, suites, tmp_path):
    name = f"optimised:{run['out']}"
    with StubServer(policy=Models(suites["sample"])) as srv:
        task = parse_model_spec(f"openai:task,base_url={srv.base_url}")
        evaluate(suites["sample"], [task], tmp_path / "run", EvalOptions(settings=("none", name), limit=2))
        got = evaluate(suites["sample"], [task], tmp_path / "run2", EvalOptions(settings=("none",), limit=2))
    config = json.loads((tmp_path / "run" / "run.json").read_text())
    assert any("not held out" in w for w in config.get("warnings", []))
    assert not got.warnings and "warnings" not in json.loads((tmp_path / "run2" / "run.json").read_text())
    # the report shows it above the numbers
    from medresilience import build_report

    assert "not held out" in build_report([tmp_path / "run"]).html.read_text()


# --------------------------------------------------------------------------- resume


@needs_gepa
def test_sigkill_then_resume_repeats_no_finished_call_and_ends_as_an_uninterrupted_run(suites, tmp_path):
    sample, plain = suites["sample"], suites["plain"]
    models = Models(sample, plain)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}

    def cmd(url: str, out: Path) -> list[str]:
        return [
            sys.executable,
            "-m",
            "medresilience.cli",
            "mitigate",
            "optimise",
            "--train",
            str(sample.path),
            "--train",
            str(plain.path),
            "--val",
            str(sample.path),
            "--task-model",
            f"openai:task,base_url={url},concurrency=1",
            "--reflection-model",
            f"openai:reflector,base_url={url}",
            "--budget",
            "40",
            "--per-suite",
            "6",
            "--seed",
            "2",
            "--seed-prompt",
            SEED,
            "--out",
            str(out),
        ]

    with StubServer(policy=models, faults=Faults(delay=0.03)) as srv:
        killed = tmp_path / "killed.json"
        db = tmp_path / "killed.json.work" / "store.sqlite"
        proc = subprocess.Popen(cmd(srv.base_url, killed), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finished = sigkill_after(proc, lambda: stored_ok(db), 12)
        assert len(finished) >= 12 and not killed.exists(), "the kill must land mid-optimisation"
        before = len(models.seen)
        done = subprocess.run(cmd(srv.base_url, killed), env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        after = set(models.seen[before:])
        assert after, "the resumed optimisation had calls left to make"
        assert not after & finished, "a finished call was made again"
        reference = tmp_path / "reference.json"
        ref = subprocess.run(cmd(srv.base_url, reference), env=env, capture_output=True, text=True, timeout=120)
        assert ref.returncode == 0, ref.stderr
    k, r = json.loads(killed.read_text()), json.loads(reference.read_text())
    for key in ("created", "work_dir", "calls", "name"):
        k.pop(key), r.pop(key)
    assert k == r
    assert PHRASE in k["prompt"]
    assert stored_ok(db) == stored_ok(tmp_path / "reference.json.work" / "store.sqlite")


@needs_gepa
def test_a_failed_reflection_call_stops_the_optimisation_and_a_rerun_resumes(suites, tmp_path):
    from medresilience.mitigations.adapter import OptimiseError
    from medresilience.mitigations.optimise import optimise

    out = tmp_path / "p.json"
    models = Models(suites["sample"], reflector_down=True)
    with StubServer(policy=models) as srv:
        task, refl, _ = specs(srv.base_url)
        with pytest.raises(OptimiseError, match="reflection-model"):
            optimise([suites["sample"]], [suites["sample"]], task, refl, out, budget=30, per_suite=3, seed=1, seed_prompt=SEED)
        assert not out.exists()
        made = {x for x in models.seen if x[0] == "task"}
        assert made and models.count("reflector") == 1  # one attempt (max_retries=0), then the optimisation stopped
        before = len(models.seen)
        models.reflector_down = False
        result = optimise([suites["sample"]], [suites["sample"]], task, refl, out, budget=30, per_suite=3, seed=1, seed_prompt=SEED)
    assert PHRASE in result.candidate.prompt
    assert not set(models.seen[before:]) & made, "a finished task call was made again"


# --------------------------------------------------------------------------- input errors


@needs_gepa
@pytest.mark.parametrize(
    "break_it, message",
    [
        (lambda d: "not json", "not valid JSON"),
        (lambda d: {**d, "format": "something-else"}, "not an optimised-prompt file"),
        (lambda d: {k: v for k, v in d.items() if k != "format"}, "not an optimised-prompt file"),
        (lambda d: {**d, "version": 2}, "version 2 is not one this medresilience reads"),
        (lambda d: {**d, "prompt": d["prompt"] + " (edited)"}, "prompt_hash does not match the prompt"),
        (lambda d: {k: v for k, v in d.items() if k != "val"}, "field 'val'"),
        (lambda d: {**d, "budget": "many"}, "field 'budget'"),
    ],
)
def test_a_bad_file_is_one_clear_error(run, tmp_path, break_it, message):
    data = json.loads(run["out"].read_text())
    bad = tmp_path / "bad.json"
    broken = break_it(data)
    bad.write_text(broken if isinstance(broken, str) else json.dumps(broken))
    with pytest.raises(InputError, match=re.escape(message)) as e:
        get_setting(f"optimised:{bad}")
    assert str(bad) in str(e.value) and "\n" not in str(e.value)
    r = CliRunner().invoke(
        app,
        [
            "eval",
            "--suite",
            str(run["mix"][2].path),
            "--model",
            "openai:task,base_url=http://127.0.0.1:9/v1",
            "--setting",
            "none",
            "--setting",
            f"optimised:{bad}",
            "--out",
            str(tmp_path / "r"),
        ],
    )
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output
    assert not (tmp_path / "r").exists()


def test_missing_files_and_gepa_are_clear_errors(tmp_path, monkeypatch):
    with pytest.raises(MedresError, match="optimised-prompt file not found"):
        get_setting(f"optimised:{tmp_path / 'nope.json'}")
    with pytest.raises(MedresError, match="needs its configuration"):
        get_setting("optimised:")
    from medresilience.mitigations.adapter import OptimiseError
    from medresilience.mitigations.optimise import import_gepa

    monkeypatch.setitem(sys.modules, "gepa", None)
    with pytest.raises(OptimiseError, match=re.escape("pip install 'medresilience[optimise]'")):
        import_gepa()


def test_draws_are_seeded_and_a_budget_below_the_validation_is_refused(tmp_path):
    from medresilience.mitigations.examples import draw
    from medresilience.runtime.errors import ConfigError

    s = sample_suite()
    a = draw([s], [s], per_suite=4, seed=3)
    b = draw([s], [s], per_suite=4, seed=3)
    c = draw([s], [s], per_suite=4, seed=4)
    assert [e.ref for e in a[0]] == [e.ref for e in b[0]] and [e.ref for e in a[0]] != [e.ref for e in c[0]]
    assert not {e.item.id for e in a[0]} & {e.item.id for e in a[1]}
    assert all(e.units[0] is None and e.units[1].condition == "type1" for e in a[0])
    with pytest.raises(ConfigError, match="every item it has was drawn for training"):
        tiny = make_tiny_suite()
        draw([tiny], [tiny], per_suite=4, seed=0)
    if importlib.util.find_spec("gepa") is not None:
        from medresilience.mitigations.optimise import optimise

        task = parse_model_spec("openai:task,base_url=http://127.0.0.1:9/v1")
        with pytest.raises(ConfigError, match="--budget"):
            optimise([s], [s], task, task, tmp_path / "x.json", budget=4, per_suite=4)


@needs_gepa
def test_the_budget_is_kept_never_overrun(suites, tmp_path):
    """A budget that GEPA alone overruns (it checks the budget between proposals, and a proposal
    costs up to 2 x minibatch + the validation examples) is kept: the calls used never exceed it,
    and a budget with no room for one proposal is refused with the number needed."""
    from medresilience.mitigations.optimise import optimise

    models = Models(suites["sample"], suites["plain"])
    mix = [suites["sample"], suites["plain"]]
    with StubServer(policy=models) as srv:
        task, refl, judge = specs(srv.base_url)
        # 6 validation examples, minibatch 3: the seed's validation 6, a proposal up to 6 + 6
        with pytest.raises(ConfigError, match="give at least 18"):
            optimise(mix, mix, task, refl, tmp_path / "small.json", budget=14, per_suite=3, seed=5, seed_prompt=SEED)
        for budget in (18, 23, 29):
            out = tmp_path / f"b{budget}.json"
            c = optimise(mix, mix, task, refl, out, budget=budget, per_suite=3, seed=5, judge=judge, seed_prompt=SEED).candidate
            assert c.metric_calls <= budget, (c.metric_calls, budget)
            assert len(c.history) >= 1 and c.metric_calls >= 6 + 6
