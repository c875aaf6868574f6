"""`medres build noise` end to end on real MedQA cases (../shared/data; skipped when absent) against
a local stub generator, then `evaluate` in MCQ mode (letters) and in diagnosis mode (a scripted
stub judge), and the report. The stub server stands in for the models (the boundary we do not
own). The fake generator decides each case's behaviour by a hash of its text, so every expected
count below is computed from the same bands, not guessed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import output_lines, shared_data
from medresilience import EvalOptions, build_report, evaluate
from medresilience.cli import app
from medresilience.families.noise.construct import abbreviations as ab
from medresilience.families.noise.construct import redherring
from medresilience.families.noise.construct.build import NoiseBuildOptions, build_noise
from medresilience.families.noise.construct.rewrite import missing_numbers
from medresilience.families.noise.construct.split import insertion_points
from medresilience.families.noise.delivery import NoiseOptions, final_diagnosis, render
from medresilience.families.noise.taxonomy import HERRING_VARIANTS
from medresilience.families.noise.testing import FakeGenerator
from medresilience.models.spec import parse_model_spec
from medresilience.run.frame import results_frame
from medresilience.runtime.errors import ConfigError
from medresilience.stats import fisher_one_sided, mcnemar_exact
from medresilience.store import Store
from medresilience.suite import Suite
from medresilience.testing.stub import Faults, StubServer

FAKE = FakeGenerator(invalid_json=0.3, clinical=0.3, always_clinical=0.15, lose_number=0.2)
LIMIT = 14
SUITE_FILES = ("suite.json", "items.jsonl", "probes.jsonl")


def medqa() -> Path:
    return shared_data("medqa", "us_4options_test_even.jsonl")


def inventories() -> Path:
    return shared_data("abbreviations")


def gen_spec(url: str) -> object:
    return parse_model_spec(f"openai:fake-gen,base_url={url},concurrency=8,max_retries=0")


@pytest.fixture(scope="module")
def built(tmp_path_factory, stub_server):
    """One build (seed 5); later builds share its work dir (its stored calls)."""
    root = tmp_path_factory.mktemp("noise")
    mp = pytest.MonkeyPatch()
    mp.setenv("SOURCE_DATE_EPOCH", "1700000000")
    opts = NoiseBuildOptions(seed=5, limit=LIMIT, abbreviations=(str(inventories()),), name="noise-test")
    srv = stub_server(policy=FAKE)
    res = build_noise(medqa(), root / "suite", gen_spec(srv.base_url), opts, work_dir=root / "work")
    yield {"root": root, "res": res, "opts": opts}
    mp.undo()


def test_the_build_keeps_every_buildable_variant_and_says_why_for_the_rest(built):
    res = built["res"]
    suite = Suite.load(res.out)
    assert suite.manifest.family == "noise" and suite.manifest.seed == 5 and suite.manifest.created == "2023-11-14T22:13:20+00:00"
    considered = [d for d in res.decisions if d.status != "skipped"]
    assert len(considered) == LIMIT and all(d.reason == "not_a_diagnosis_question" for d in res.decisions if d.status == "skipped")
    expected_probes = 0
    for d in considered:
        case = suite.items.get(d.item_id)
        assert d.status == "kept" and case is not None  # every case keeps its abbreviations at least
        band = FAKE.band(case.question)
        points = insertion_points(case.question)
        rh_ok = band != "always_clinical" and bool(points)
        want = [*(HERRING_VARIANTS if rh_ok else ()), "abbreviations"]
        lost = bool(missing_numbers(case.question, FAKE.restyle(case.question, band)))
        assert lost == (band == "lose_number")
        if not lost:
            want.append("rewrite")
        assert d.variants == want, d.item_id
        if not points:
            assert d.dropped["redherring"].startswith("no_insertion_point")
        elif band == "always_clinical":
            assert d.dropped["redherring"].startswith("clinical_content: 3 replies could not be used")
        if lost:
            assert d.dropped["rewrite"].startswith("numbers_lost")
        assert ("red_herrings" in case.meta) == rh_ok
        expected_probes += len(want)
    assert len(suite.probes) == expected_probes == res.report["items"]["probes"]
    assert res.report["variant_drops"].get("redherring", {}).get("clinical_content", 0) >= 1
    assert res.report["variant_drops"].get("rewrite", {}).get("numbers_lost", 0) >= 1
    # the build report and the decisions on disk
    lines = [json.loads(x) for x in (res.out / "decisions.jsonl").read_text().splitlines()]
    assert [x["item_id"] for x in lines] == [d.item_id for d in res.decisions]
    md = (res.out / "build_report.md").read_text()
    assert "clinical_content" in md and "numbers_lost" in md and "with -> w/" in md
    # the abbreviation frequency table is in the manifest
    counts = suite.manifest.counts
    assert counts["abbreviation_replacements"] == sum(counts["abbreviation_table"].values()) > 0
    assert counts["abbreviations"] == sum(1 for p in suite.probes if p.condition == "abbreviations")


def test_probes_rebuild_from_the_case(built):
    suite = Suite.load(built["res"].out)
    table = ab.load_table([inventories()])
    for p in suite.probes:
        case = suite.items[p.item_id]
        if p.facets["perturbation"] in ("redherring", "whitespace"):
            hs = case.meta["red_herrings"]
            assert len(hs) == 10
            assert redherring.rebuild(case.question, hs, p.parts["insertions"], blank=p.condition == "whitespace") == p.parts["text"]
            assert {i["at"] for i in p.parts["insertions"]} <= set(insertion_points(case.question))
        elif p.condition == "abbreviations":
            assert ab.apply(case.question, p.parts["replacements"]) == p.parts["text"]
            assert ab.Abbreviator(table).substitute(case.question)[0] == p.parts["text"]
        else:
            assert p.condition == "rewrite" and missing_numbers(case.question, p.parts["text"]) == []


def test_a_rerun_costs_nothing_and_the_same_seed_gives_the_same_suite_byte_for_byte(built, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    root, opts = built["root"], built["opts"]
    first = {f: (built["res"].out / f).read_bytes() for f in SUITE_FILES}
    with StubServer(policy=FAKE) as srv:
        again = build_noise(medqa(), root / "suite", gen_spec(srv.base_url), opts, work_dir=root / "work")
        assert again.report["totals"]["calls_made"] == 0 and again.report["totals"]["reused"] > 0
        assert {f: (root / "suite" / f).read_bytes() for f in SUITE_FILES} == first
        # a fresh work dir: every call made again, the same suite
        fresh = build_noise(medqa(), root / "suite2", gen_spec(srv.base_url), opts, work_dir=root / "work2")
        assert fresh.report["totals"]["calls_made"] > 0
        assert {f: (root / "suite2" / f).read_bytes() for f in SUITE_FILES} == first
        # another seed: other positions, the same red herrings (reused from the store)
        other = build_noise(
            medqa(),
            root / "suite3",
            gen_spec(srv.base_url),
            NoiseBuildOptions(seed=6, limit=LIMIT, abbreviations=opts.abbreviations, name="noise-test"),
            work_dir=root / "work",
        )
        assert other.report["totals"]["calls_made"] == 0
    a, b = Suite.load(root / "suite"), Suite.load(root / "suite3")
    assert [it.meta.get("red_herrings") for it in a.items.values()] == [it.meta.get("red_herrings") for it in b.items.values()]
    pos_a = {p.id: p.parts.get("insertions") for p in a.probes}
    pos_b = {p.id: p.parts.get("insertions") for p in b.probes}
    assert pos_a.keys() == pos_b.keys() and pos_a != pos_b
    assert all(pos_a[k] == pos_b[k] for k in pos_a if k.endswith((":abbreviations", ":rewrite")))


def test_a_second_build_on_a_busy_work_directory_stops_naming_the_holder(built):
    """One build per work directory: while one holds it, another stops at once with the holder's pid
    (the lock is flock-held, so holding it in this process stands for a running build)."""
    import os

    from medresilience.runtime.lock import LockHeld, RunLock

    root, opts = built["root"], built["opts"]
    with RunLock(root / "work", what="build work directory"), StubServer(policy=FAKE) as srv:
        with pytest.raises(LockHeld, match=rf"pid {os.getpid()}"):
            build_noise(medqa(), root / "suite-busy", gen_spec(srv.base_url), opts, work_dir=root / "work")
        assert srv.stats.total == 0
    assert not (root / "suite-busy").exists()


def test_variants_can_be_chosen_and_abbreviations_need_no_model(tmp_path):
    res = build_noise(medqa(), tmp_path / "s", None, NoiseBuildOptions(variants=("abbreviations",), limit=5, abbreviations=(str(inventories()),)))
    assert {p.condition for p in res.suite.probes} == {"abbreviations"} and res.report["stages"] == {}
    with pytest.raises(ConfigError, match="need a generator"):
        build_noise(medqa(), tmp_path / "t", None, NoiseBuildOptions(variants=("rewrite",), limit=2))
    with pytest.raises(ConfigError, match="inventory"):
        build_noise(medqa(), tmp_path / "u", None, NoiseBuildOptions(variants=("abbreviations",), limit=2))


def test_the_build_command(tmp_path):
    with StubServer(policy=FakeGenerator()) as srv:
        r = CliRunner().invoke(
            app,
            [
                "build",
                "noise",
                "--items",
                str(medqa()),
                "--out",
                str(tmp_path / "s"),
                "--limit",
                "3",
                "--generator",
                f"openai:fake-gen,base_url={srv.base_url}",
                "--seed",
                "2",
                "--variants",
                "redherring-10,whitespace",
                "--variants",
                "rewrite",
            ],
        )
    assert r.exit_code == 0, r.output
    assert "kept 3 of 3 cases" in r.output
    s = Suite.load(tmp_path / "s")
    assert {p.condition for p in s.probes} <= {"redherring-10", "whitespace", "rewrite"} and s.manifest.build["variants"] == [
        "redherring-10",
        "whitespace",
        "rewrite",
    ]


# --------------------------------------------------------------------------- evaluation


def _right(idx: int, cond: str) -> bool:
    """The scripted answerer's behaviour: right on the original except every 7th case; wrong on
    10 red herrings (spread or as a block) for every third case, on 5 for every sixth."""
    if cond == "clean":
        return idx % 7 != 6
    if cond in ("redherring-10", "together-10"):
        return idx % 3 != 0
    if cond == "redherring-5":
        return idx % 6 != 0
    return True


def _lookup(suite: Suite, options: NoiseOptions, scoring: str = "letter") -> dict[str, tuple[int, str, object]]:
    out = {}
    for idx, item in enumerate(suite.items.values()):
        for probe in [None, *suite.probes_for(item.id)]:
            msgs = render(item, probe, scoring, options)
            out[msgs[-1]["content"]] = (idx, "clean" if probe is None else probe.condition, item)
    return out


def _expected(suite: Suite, rule) -> dict[str, tuple[int, int]]:
    """(correct, answered) per condition under a rule (idx, cond) -> True / False / None (not answered)."""
    exp: dict[str, list[int]] = {}
    for idx, item in enumerate(suite.items.values()):
        for cond in ["clean", *[p.condition for p in suite.probes_for(item.id)]]:
            r = rule(idx, cond)
            k, n = exp.setdefault(cond, [0, 0])
            exp[cond] = [k + (r is True), n + (r is not None)]
    return {c: (k, n) for c, (k, n) in exp.items()}


def test_mcq_mode_scores_letters_with_the_paired_tests(built, tmp_path):
    suite = Suite.load(built["res"].out)
    table = _lookup(suite, NoiseOptions())

    def answerer(messages, request):
        idx, cond, item = table[messages[-1]["content"]]
        letter = item.answer if _right(idx, cond) else next(k for k in item.options if k != item.answer)
        return f"Answer: {letter}"

    with StubServer(policy=answerer) as srv:
        spec = parse_model_spec(f"openai:answerer,base_url={srv.base_url},concurrency=8")
        res = evaluate(suite, [spec], tmp_path / "run", EvalOptions())
    block = res.results.models["answerer"]["none"]
    exp = _expected(suite, _right)
    ck, cn = exp["clean"]
    assert (block["overall"]["clean_acc"]["k"], block["overall"]["clean_acc"]["n"]) == (ck, cn)
    for cond, (k, n) in exp.items():
        if cond == "clean":
            continue
        v = block["by_variant"][cond]
        assert (v["acc"]["k"], v["acc"]["n"]) == (k, n), cond
        idxs = [i for i, it in enumerate(suite.items.values()) if any(p.condition == cond for p in suite.probes_for(it.id))]
        b = sum(_right(i, "clean") and not _right(i, cond) for i in idxs)
        c = sum(not _right(i, "clean") and _right(i, cond) for i in idxs)
        assert (v["paired"]["b"], v["paired"]["c"], v["paired"]["n"]) == (b, c, len(idxs)), cond
        assert v["paired"]["p_mcnemar"] == pytest.approx(mcnemar_exact(b, c))
        assert v["paired"]["drop"] == pytest.approx((b - c) / len(idxs))
        assert v["paired"]["lo"] <= v["paired"]["drop"] <= v["paired"]["hi"]
        # the study's Fisher: the variant against the originals of the same cases (a variant may cover fewer)
        ok_same = sum(_right(i, "clean") for i in idxs)
        assert (v["drop"]["original"]["k"], v["drop"]["original"]["n"], v["drop"]["cases"]) == (ok_same, len(idxs), len(idxs))
        assert v["drop"]["p_fisher"] == pytest.approx(fisher_one_sided(ok_same, len(idxs), k, n)["p"])
        assert v["drop"]["diff"] == pytest.approx(ok_same / len(idxs) - k / n)
        assert (v["flip"]["k"], v["flip"]["n"]) == (b, sum(_right(i, "clean") for i in idxs))
    h = res.results.headline("answerer")
    assert h["redherring-10_acc"].p < h["whitespace_acc"].p and h["redherring-10_flip"].k > 0
    rep = build_report([tmp_path / "run"])
    html = rep.html.read_text()
    assert rep.families == ["noise"] and 'id="noise"' in html and 'id="fig-noise-dose"' in html and 'id="fig-noise-drop"' in html
    assert "Whitespace control" in html and (rep.out_dir / "tables" / "variants.csv").exists()
    assert "Red herrings (10) acc" in rep.markdown.read_text()


def test_diagnosis_mode_is_judged_and_unreadable_verdicts_are_unscored(built, tmp_path):
    suite = Suite.load(built["res"].out)
    options = NoiseOptions(mode="diagnosis", judge="openai:x")
    table = _lookup(suite, options)

    def rule(idx: int, cond: str):
        if cond == "abbreviations" and idx % 4 == 0:
            return False  # no marked line: invalid, counted as not correct
        if cond == "rewrite" and idx % 5 == 0:
            return None  # the judge gives no verdict: unscored, left out
        return _right(idx, cond)

    def answerer(messages, request):
        assert request.get("max_tokens") == 2048
        idx, cond, item = table[messages[-1]["content"]]
        if cond == "abbreviations" and idx % 4 == 0:
            return "It is probably whatever the labs suggest."
        if cond == "rewrite" and idx % 5 == 0:
            return f"Reasoning.\nFINAL DIAGNOSIS: UNSURE {item.reference}"
        said = item.reference if _right(idx, cond) else "Something else entirely"
        return f"Step 1: the findings.\n**FINAL DIAGNOSIS:** {said}"

    judged = {"n": 0}

    def judge(messages, request):
        judged["n"] += 1
        user = messages[-1]["content"]
        ref = re.search(r"<reference>\n(.*?)\n</reference>", user, re.S).group(1)
        answer = re.search(r"<answer-\w+>\n(.*?)\n</answer-\w+>", user, re.S).group(1)
        assert "Step 1" not in answer  # only the final diagnosis is judged
        if answer.startswith("UNSURE"):
            return "I cannot decide between them."
        return json.dumps({"reason": "compared", "verdict": "match" if answer == ref else "no_match"})

    with StubServer(policy=answerer) as srv, StubServer(policy=judge) as jsrv:
        spec = parse_model_spec(f"openai:answerer,base_url={srv.base_url},concurrency=8")
        opts = EvalOptions(family={"mode": "diagnosis", "judge": f"openai:judge,base_url={jsrv.base_url}"})
        res = evaluate(suite, [spec], tmp_path / "run", opts)
        n_judged = judged["n"]
        again = evaluate(suite, [spec], tmp_path / "run", opts)
        assert again.stats.called == 0 and judged["n"] == n_judged  # cached like every call
    block = res.results.models["answerer"]["none"]
    exp = _expected(suite, rule)
    for cond, (k, n) in exp.items():
        acc = block["overall"]["clean_acc"] if cond == "clean" else block["by_variant"][cond]["acc"]
        assert (acc["k"], acc["n"]) == (k, n), cond
    n_invalid = sum(1 for i, it in enumerate(suite.items.values()) if i % 4 == 0 and any(p.condition == "abbreviations" for p in suite.probes_for(it.id)))
    n_unscored = sum(1 for i, it in enumerate(suite.items.values()) if i % 5 == 0 and any(p.condition == "rewrite" for p in suite.probes_for(it.id)))
    assert n_unscored > 0 and n_invalid > 0
    assert block["counts"]["unscored"] == n_unscored and block["counts"]["invalid"] == n_invalid
    assert block["by_variant"]["rewrite"]["acc"]["unscored"] == n_unscored
    units = sum(1 for _ in suite.items) + len(suite.probes)
    assert n_judged == units - n_invalid  # no judge call for a reply without the marked line
    with Store(tmp_path / "run" / "store.sqlite") as st:
        df = results_frame(st, suite)
    assert set(df["scoring"]) == {next(iter(set(df["scoring"])))} and str(df["scoring"].iloc[0]).startswith("judge:noise-diagnosis-match@")
    assert (df["status"] == "unscored").sum() == n_unscored
    rep = build_report([tmp_path / "run"])
    assert 'id="noise"' in rep.html.read_text() and "Unscored" in rep.html.read_text()


def test_mode_and_scoring_errors(built, tmp_path):
    suite = Suite.load(built["res"].out)
    with pytest.raises(ConfigError, match="judge"):
        evaluate(suite, [parse_model_spec("openai:m,base_url=http://127.0.0.1:9")], tmp_path / "r", EvalOptions(family={"mode": "diagnosis"}))
    item = next(iter(suite.items.values()))
    with pytest.raises(ConfigError, match="mode=diagnosis"):
        render(item, None, "judge", NoiseOptions())
    with pytest.raises(ConfigError, match="letter or judge"):
        render(item, None, "logprob", NoiseOptions(mode="diagnosis", judge="openai:j"))
    assert final_diagnosis("x\nFINAL DIAGNOSIS: A\nmore\nFinal diagnosis: **B**") == "B"
    assert final_diagnosis("FINAL DIAGNOSIS: <your answer>") is None and final_diagnosis(None) is None


def test_eval_command_in_diagnosis_mode(built, tmp_path):
    suite_dir = built["res"].out

    def answerer(messages, request):
        return "The findings fit.\nFINAL DIAGNOSIS: Something"

    def judge(messages, request):
        return 'The answer is vague.\n{"reason": "vague", "verdict": "no_match"}'

    with StubServer(policy=answerer) as srv, StubServer(policy=judge) as jsrv:
        r = CliRunner().invoke(
            app,
            [
                "eval",
                "--suite",
                str(suite_dir),
                "--model",
                f"openai:answerer,base_url={srv.base_url}",
                "--out",
                str(tmp_path / "run"),
                "-O",
                "mode=diagnosis",
                "-O",
                f"judge=openai:judge,base_url={jsrv.base_url}",
                "-O",
                "variants=redherring-10,whitespace",
                "-O",
                "max_tokens=900",
            ],
        )
    assert r.exit_code == 0, r.output
    res = json.loads((tmp_path / "run" / "results.json").read_text())
    block = res["models"]["answerer"]["none"]
    assert set(block["by_variant"]) == {"redherring-10", "whitespace"} and block["overall"]["clean_acc"]["k"] == 0
    cfg = json.loads((tmp_path / "run" / "run.json").read_text())
    assert cfg["options"]["family"]["variants"] == ["redherring-10", "whitespace"] and "rubric" in cfg["prompts"]["texts"]
    assert (tmp_path / "run" / "report" / "report.html").exists()


def test_failed_calls_leave_the_build_incomplete_and_a_rerun_retries_only_them(tmp_path):

    opts = NoiseBuildOptions(seed=1, limit=8, variants=("redherring-10", "rewrite"))
    with StubServer(policy=FakeGenerator(), faults=Faults(rate_permanent=0.3, seed=3)) as srv:
        first = build_noise(medqa(), tmp_path / "s", gen_spec(srv.base_url), opts)
    failed = [d for d in first.decisions for why in d.dropped.values() if why.startswith("call_error")]
    assert failed and first.report["incomplete"] and any("run the same command again" in n for n in first.report["notes"])
    with StubServer(policy=FakeGenerator()) as srv:
        second = build_noise(medqa(), tmp_path / "s", gen_spec(srv.base_url), opts)
    assert not second.report["incomplete"]
    assert second.report["totals"]["calls_made"] == first.report["totals"]["call_errors"]
    assert len(second.suite.probes) > len(first.suite.probes)


class _Recorder:
    """The fake generator, recording every message list it is sent."""

    def __init__(self):
        self.fake, self.seen = FakeGenerator(), []

    def __call__(self, messages, request):
        self.seen.append(json.dumps(messages, sort_keys=True))
        return self.fake(messages, request)


def test_a_build_killed_with_sigkill_resumes_without_repeating_a_finished_call(tmp_path):
    import os
    import sqlite3
    import subprocess
    import sys

    from conftest import ok_keys, sigkill_after

    env = {**os.environ, "PYTHONUNBUFFERED": "1", "SOURCE_DATE_EPOCH": "1700000000"}

    def cmd(out: Path, url: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "medresilience.cli",
            "build",
            "noise",
            "--items",
            str(medqa()),
            "--out",
            str(out),
            "--limit",
            "12",
            "--seed",
            "4",
            "--name",
            "k",
            "--abbreviations",
            str(inventories()),
            "--generator",
            f"openai:fake-gen,base_url={url},concurrency=2,max_retries=0",
        ]

    rec = _Recorder()
    with StubServer(policy=rec, faults=Faults(delay=0.05)) as srv:
        db = tmp_path / "killed.build" / "store.sqlite"
        proc = subprocess.Popen(cmd(tmp_path / "killed", srv.base_url), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finished = sigkill_after(proc, lambda: ok_keys(db), 6)
        assert not (tmp_path / "killed" / "suite.json").exists(), "the kill must land mid-build"
        con = sqlite3.connect(db)
        done = {json.dumps(json.loads(m), sort_keys=True) for k, m in con.execute("SELECT key, messages FROM requests") if k in finished}
        con.close()
        before = len(rec.seen)
        r = subprocess.run(cmd(tmp_path / "killed", srv.base_url), env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert rec.seen[before:] and not set(rec.seen[before:]) & done, "a finished call was made again"
        ref = subprocess.run(cmd(tmp_path / "clean", srv.base_url), env=env, capture_output=True, text=True, timeout=120)
        assert ref.returncode == 0, ref.stderr
    assert {f: (tmp_path / "killed" / f).read_bytes() for f in SUITE_FILES} == {f: (tmp_path / "clean" / f).read_bytes() for f in SUITE_FILES}


runner = CliRunner()


def test_a_build_that_kept_nothing_exits_1_with_one_line(tmp_path):
    from medresilience.records import Item
    from medresilience.runtime.fileio import write_jsonl

    items = tmp_path / "items.jsonl"  # no question asks for a diagnosis: no case to perturb
    write_jsonl(
        items,
        [
            Item(
                id=f"q{i}",
                source="t",
                question=f"Which drug is first-line for hypertension in case {i}?",
                options={"A": "x", "B": "y", "C": "z", "D": "w"},
                answer="A",
            )
            for i in range(3)
        ],
    )
    inv = tmp_path / "abbr.tsv"
    inv.write_text("abbreviation\tsense\tvariation\tCUI\tfrequency\nBP\tblood pressure\tBP\tC0005823\t100\n")
    r = runner.invoke(app, ["build", "noise", "--items", str(items), "--out", str(tmp_path / "s"), "--variants", "abbreviations", "--abbreviations", str(inv)])
    assert r.exit_code == 1, r.output
    last = output_lines(r)[-1]
    assert "nothing was built" in last and "build_report.md" in last and "rerun" in last, r.output
