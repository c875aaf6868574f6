"""The clinical-noise builder's checker model (`medres build noise --verify SPEC`) on real MedQA
cases (../shared/data; skipped when absent) against the stub server, the fake generator playing
both the generator and the checker. Each case's behaviour is fixed by a hash of its text (the
fake's bands), so every expected verdict and count below is computed from the bands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import shared_data
from medresilience.build.stages import Rejected
from medresilience.cli import app
from medresilience.families.noise.construct import checker as chk
from medresilience.families.noise.construct import redherring
from medresilience.families.noise.construct.build import NoiseBuildOptions, build_noise
from medresilience.families.noise.construct.rewrite import missing_numbers
from medresilience.families.noise.construct.split import insertion_points
from medresilience.families.noise.taxonomy import HERRING_VARIANTS
from medresilience.families.noise.testing import FLAG_REASON, FakeGenerator
from medresilience.models.spec import parse_model_spec
from medresilience.records import Item
from medresilience.runtime.errors import ConfigError
from medresilience.suite import Suite
from medresilience.testing.stub import Faults, StubServer

FAKE = FakeGenerator(
    invalid_json=0.2,
    clinical=0.2,
    always_clinical=0.08,
    lose_number=0.08,
    flag_one=0.15,
    flag_always=0.12,
    not_equivalent=0.12,
    checker_unreadable=0.1,
    checker_garbled=0.3,
)
LIMIT = 24
RETRIES = 2
VARIANTS = (*HERRING_VARIANTS, "rewrite")
SUITE_FILES = ("suite.json", "items.jsonl", "probes.jsonl")


def medqa() -> Path:
    return shared_data("medqa", "us_4options_test_even.jsonl")


def spec(url: str, model: str) -> object:
    return parse_model_spec(f"openai:{model},base_url={url},concurrency=8,max_retries=0")


def build(root: Path, url: str, suite: str = "suite", work: str = "work", checker_url: str | None = None, limit: int = LIMIT):
    opts = NoiseBuildOptions(seed=3, limit=limit, variants=VARIANTS, retries=RETRIES, name="noise-checked")
    return build_noise(medqa(), root / suite, spec(url, "fake-gen"), opts, work_dir=root / work, checker=spec(checker_url or url, "fake-check"))


@pytest.fixture(scope="module")
def built(tmp_path_factory, stub_server):
    root = tmp_path_factory.mktemp("noise-checked")
    mp = pytest.MonkeyPatch()
    mp.setenv("SOURCE_DATE_EPOCH", "1700000000")
    srv = stub_server(policy=FAKE)
    res = build(root, srv.base_url)
    yield {"root": root, "res": res}
    mp.undo()


# --------------------------------------------------------------------------- parsing the checker


def _item() -> Item:
    return Item(
        id="c1",
        source="t",
        question="A 30-year-old man has a cough for 2 days. His temperature is 38.5°C.",
        options={"A": "Common cold", "B": "Pneumonia"},
        answer="A",
    )


def test_the_checker_reply_is_read_strictly_and_reasons_come_first():
    assert list(chk.HERRING_SCHEMA["properties"]["verdicts"]["items"]["properties"]) == ["sentence", "reason", "clinical"]
    assert list(chk.REWRITE_SCHEMA["properties"]) == ["reason", "equivalent"]
    sentences = ["He collects stamps.", "He keeps pigeons on the roof."]
    parse = chk.herring_parser(sentences)
    ok = {"verdicts": [{"sentence": 1, "reason": "a hobby", "clinical": False}, {"sentence": "2", "reason": " birds:  an exposure ", "clinical": True}]}
    got = parse(json.dumps(ok))
    assert [(v.sentence, v.clinical, v.reason) for v in got] == [(sentences[0], False, "a hobby"), (sentences[1], True, "birds: an exposure")]
    bad = [
        "All fine.",  # not JSON
        json.dumps({"verdicts": [ok["verdicts"][0]]}),  # a sentence without a verdict
        json.dumps({"verdicts": [ok["verdicts"][0], ok["verdicts"][0], ok["verdicts"][1]]}),  # two verdicts on one
        json.dumps({"verdicts": [ok["verdicts"][0], {**ok["verdicts"][1], "clinical": "false"}]}),  # not a boolean
        json.dumps({"verdicts": [ok["verdicts"][0], {"sentence": 2, "clinical": True}]}),  # no reason
        json.dumps({"verdicts": [ok["verdicts"][0], {**ok["verdicts"][1], "sentence": 3}]}),  # no such sentence
        json.dumps({"reason": "x"}),
    ]
    for text in bad:
        with pytest.raises(Rejected) as e:
            parse(text)
        assert e.value.code == "parse_failed", text
    assert chk.parse_rewrite_verdict('{"reason": "", "equivalent": false}') == chk.RewriteVerdict(False, chk.NO_REASON)
    for text in ('{"equivalent": true}', '{"reason": "ok", "equivalent": "yes"}', "Equivalent."):
        with pytest.raises(Rejected):
            chk.parse_rewrite_verdict(text)
    # the checker sees the case, its answer and the numbered sentences; the replacement prompt the
    # kept and the rejected sentences (with why), and a sentence of either is refused as a duplicate
    user = chk.herring_messages(_item(), sentences)[-1]["content"]
    assert "<answer>\nCommon cold\n</answer>" in user and "1. He collects stamps.\n2. He keeps pigeons" in user
    t = redherring.replace_task(_item(), [sentences[0]], [(sentences[1], "birds: an exposure")], 1)
    assert "- He keeps pigeons on the roof. (rejected: birds: an exposure)" in t.messages[-1]["content"]
    with pytest.raises(Rejected, match="repeats"):
        t.parse(json.dumps({"sentences": ["He keeps pigeons on the roof."]}))
    assert t.parse(json.dumps({"sentences": ["He paints fences"]})) == ["He paints fences."]


# --------------------------------------------------------------------------- the build


def _expected(case: Item) -> dict:
    """What the checker does to one case, from its band."""
    band = FAKE.band(case.question)
    hs = FAKE.herrings(case.question)
    order = FAKE.bank_order(case.question)
    exp: dict = {"band": band, "herrings": None, "record": None, "rh_drop": None, "rw_drop": None}
    if not insertion_points(case.question):
        exp["rh_drop"] = "no_insertion_point"
    elif band == "always_clinical":
        exp["rh_drop"] = "clinical_content"
    elif band == "checker_unreadable":
        exp["rh_drop"] = "checker_failed"
        exp["record"] = {"checked": 0, "flagged": [], "rounds": 0, "replaced": 0}
    elif band == "flag_one":
        exp["herrings"] = [h for h in hs if h != hs[2]] + [order[10]]
        exp["record"] = {"checked": 11, "flagged": [{"sentence": hs[2], "reason": FLAG_REASON, "round": 0}], "rounds": 1, "replaced": 1}
    elif band == "flag_always":  # the first of each list: the first red herring, then each replacement
        exp["rh_drop"] = "checker_clinical"
        flagged = [hs[0], order[10], order[11]]
        exp["record"] = {
            "checked": 12,
            "flagged": [{"sentence": s, "reason": FLAG_REASON, "round": r} for r, s in enumerate(flagged)],
            "rounds": 2,
            "replaced": 2,
        }
    else:
        exp["herrings"] = hs
        exp["record"] = {"checked": 10, "flagged": [], "rounds": 0, "replaced": 0}
    if missing_numbers(case.question, FAKE.restyle(case.question, band)):
        exp["rw_drop"] = "numbers_lost"
    elif band == "checker_unreadable":
        exp["rw_drop"] = "checker_failed"
    elif band == "not_equivalent":
        exp["rw_drop"] = "checker_not_equivalent"
    return exp


def test_the_checker_drops_clinical_red_herrings_and_unequal_rewrites_with_reasons(built):
    res = built["res"]
    suite = Suite.load(res.out)
    decisions = [d for d in res.decisions if d.status != "skipped"]
    assert len(decisions) == LIMIT
    cases = {d.item_id: suite.items.get(d.item_id) for d in decisions}
    from medresilience.families.noise.construct.cases import diagnosis_cases, load_items_file

    every = {c.id: c for c in diagnosis_cases(load_items_file(medqa()), ("diagnosis", "cause")) if isinstance(c, Item)}
    exps = {iid: _expected(every[iid]) for iid in cases}
    bands = [e["band"] for e in exps.values()]
    for band in ("flag_one", "flag_always", "not_equivalent", "checker_unreadable", None):
        assert band in bands, band  # every behaviour is exercised on these cases
    for d in decisions:
        e, case = exps[d.item_id], cases[d.item_id]
        want = [*(HERRING_VARIANTS if e["rh_drop"] is None else ()), *(("rewrite",) if e["rw_drop"] is None else ())]
        assert d.variants == want, (d.item_id, e["band"])
        assert (d.status == "kept") == bool(want)
        if e["rh_drop"]:
            assert d.dropped["redherring"].startswith(e["rh_drop"] + ":"), d.dropped
        if e["rw_drop"]:
            assert d.dropped["rewrite"].startswith(e["rw_drop"] + ":"), d.dropped
        assert d.checker.get("redherring") == e["record"], d.item_id
        if e["herrings"] is not None:
            assert case.meta["red_herrings"] == e["herrings"]
            assert all(p.meta == {"generator": "fake-gen", "checker": "fake-check"} for p in suite.probes_for(d.item_id) if p.condition != "rewrite")
        elif case is not None:
            assert "red_herrings" not in case.meta
        if e["band"] == "flag_always":
            assert (
                "the checker found clinical information in 3 sentence(s); 9 of 10 clean ones left after 2 replacement round(s)" in d.dropped["redherring"]
                and FLAG_REASON in d.dropped["redherring"]
            )
        if e["band"] == "checker_unreadable":  # never a silent pass: the reply that could not be read is named
            assert f"{RETRIES + 1} replies could not be used; last: not valid JSON" in d.dropped["redherring"]
            assert d.dropped["rewrite"].startswith("checker_failed: checking the rewrite: 3 replies could not be used")
        if e["band"] == "not_equivalent":
            assert d.dropped["rewrite"] == "checker_not_equivalent: The note leaves out a finding of the case."
        if e["rw_drop"] is None:
            p = next(p for p in suite.probes_for(d.item_id) if p.condition == "rewrite")
            assert p.meta["checker"] == "fake-check" and p.meta["checker_reason"].startswith("Every finding")
            assert d.checker["rewrite"] == {"equivalent": True, "reason": p.meta["checker_reason"]}

    # the counts, in the report and on disk
    reached = [e for e in exps.values() if e["record"] is not None]
    rh = res.report["checker"]["redherring"]
    assert rh == {
        "cases": len(reached),
        "passed": sum(e["rh_drop"] is None for e in reached),
        "dropped": {
            k: v for k, v in (("checker_clinical", bands.count("flag_always")), ("checker_failed", sum(e["rh_drop"] == "checker_failed" for e in reached))) if v
        },
        "sentences_checked": sum(e["record"]["checked"] for e in reached),
        "sentences_flagged": sum(len(e["record"]["flagged"]) for e in reached),
        "sentences_replaced": sum(e["record"]["replaced"] for e in reached),
        "max_rounds": 2,
    }
    judged = [e for e in exps.values() if e["rw_drop"] != "numbers_lost"]
    assert res.report["checker"]["rewrite"] == {
        "checked": len(judged),
        "equivalent": sum(e["rw_drop"] is None for e in judged),
        "not_equivalent": sum(e["rw_drop"] == "checker_not_equivalent" for e in judged),
        "failed": sum(e["rw_drop"] == "checker_failed" for e in judged),
        "call_errors": 0,
    }
    on_disk = json.loads((res.out / "build_report.json").read_text())
    assert on_disk["checker"] == res.report["checker"] and on_disk["checker"]["model"] == "fake-check"
    assert on_disk["variant_drops"]["rewrite"]["checker_not_equivalent"] == res.report["checker"]["rewrite"]["not_equivalent"]
    assert on_disk["variant_drops"]["redherring"]["checker_clinical"] == bands.count("flag_always")
    st = on_disk["stages"]
    assert st["redherring-check"]["failures"] == st["rewrite-check"]["failures"] == bands.count("checker_unreadable")
    assert st["redherring-check"]["retries"] > 0  # the garbled first replies were asked again
    assert st["redherring-replace"]["units"] == sum(e["record"]["rounds"] for e in reached)
    md = (res.out / "build_report.md").read_text()
    assert "Checker `fake-check`" in md and f"| red herrings: sentences flagged as clinical (dropped) | {rh['sentences_flagged']} |" in md
    assert any("checker model fake-check" in n for n in res.report["notes"])
    lines = [json.loads(x) for x in (res.out / "decisions.jsonl").read_text().splitlines()]
    assert [x.get("checker", {}).get("redherring") for x in lines if x["status"] != "skipped"] == [e["record"] for e in exps.values()]
    m = suite.manifest
    assert m.build["checker"]["label"] == "fake-check" and set(m.prompt_hashes) == {"redherring", "rewrite", "redherring_replace", "check"}


def test_a_rerun_with_the_checker_costs_nothing_and_writes_the_same_suite(built, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    root, first = built["root"], built["res"]
    with StubServer(policy=FAKE) as srv:
        again = build(root, srv.base_url)
    assert again.report["totals"]["calls_made"] == 0 and again.report["totals"]["reused"] == first.report["totals"]["requests"]
    assert all(s["calls_made"] == 0 for s in again.report["stages"].values())
    assert again.report["checker"] == first.report["checker"]
    assert {f: (root / "suite" / f).read_bytes() for f in SUITE_FILES} == {f: (first.out / f).read_bytes() for f in SUITE_FILES}


def test_checker_call_errors_are_not_passes_and_a_rerun_retries_them(tmp_path):
    with StubServer(policy=FAKE) as gen, StubServer(policy=FAKE, faults=Faults(rate_permanent=0.4, seed=2)) as bad:
        first = build(tmp_path, gen.base_url, checker_url=bad.base_url, limit=10)
    errs = [d for d in first.decisions if any(w.startswith("call_error: checking") for w in d.dropped.values())]
    assert errs and first.report["incomplete"]
    for d in errs:  # a group the checker could not judge is left out, never kept unchecked
        if d.dropped.get("redherring", "").startswith("call_error: checking red herrings"):
            assert not set(d.variants) & set(HERRING_VARIANTS)
        if d.dropped.get("rewrite", "").startswith("call_error: checking the rewrite"):
            assert "rewrite" not in d.variants
    assert first.report["checker"]["rewrite"]["call_errors"] == sum(d.dropped.get("rewrite", "").startswith("call_error: checking") for d in first.decisions)
    with StubServer(policy=FAKE) as srv:
        second = build(tmp_path, srv.base_url, limit=10)
    assert not second.report["incomplete"] and second.report["totals"]["call_errors"] == 0
    assert second.report["totals"]["calls_made"] >= first.report["totals"]["call_errors"] > 0
    assert len(second.suite.probes) > len(first.suite.probes)


def test_verify_on_the_command_line(tmp_path):
    with StubServer(policy=FakeGenerator(flag_one=0.5)) as srv:
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
                "4",
                "--generator",
                f"openai:fake-gen,base_url={srv.base_url}",
                "--verify",
                f"openai:fake-check,base_url={srv.base_url}",
                "--variants",
                "redherring-10,rewrite",
            ],
        )
    assert r.exit_code == 0, r.output
    assert "checker fake-check: red herrings of 4 of 4 cases passed" in r.output and "rewrites 4 of 4 equivalent" in r.output
    rep = json.loads((tmp_path / "s" / "build_report.json").read_text())
    assert rep["checker"]["redherring"]["sentences_flagged"] == rep["checker"]["redherring"]["sentences_replaced"] > 0


def test_a_checker_and_generator_of_one_label_must_be_one_model(tmp_path):
    opts = NoiseBuildOptions(limit=1, variants=("rewrite",))
    with pytest.raises(ConfigError, match="share the label"):
        build_noise(
            medqa(),
            tmp_path / "s",
            parse_model_spec("openai:a,label=x,base_url=http://127.0.0.1:9"),
            opts,
            checker=parse_model_spec("openai:b,label=x,base_url=http://127.0.0.1:9"),
        )
