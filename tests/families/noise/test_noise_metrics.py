"""Clinical-noise metrics on a frame with known counts, and the whole family on handwritten cases
(tests/fixtures/noise_items.jsonl, no shared data needed): build with the fake generator, evaluate
by letter against the stub server, report."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from conftest import FIXTURES
from medresilience import EvalOptions, build_report, evaluate
from medresilience.families.noise.construct.build import NoiseBuildOptions, build_noise
from medresilience.families.noise.delivery import NoiseOptions, render
from medresilience.families.noise.headline import headline
from medresilience.families.noise.metrics import noise_metrics
from medresilience.families.noise.testing import FakeGenerator
from medresilience.family import get
from medresilience.models.spec import parse_model_spec
from medresilience.runtime.errors import InputError
from medresilience.stats import fisher_one_sided, mcnemar_exact, paired_cluster_diff, wilson
from medresilience.suite import Suite
from medresilience.testing.stub import StubServer


def frame(rows: list[tuple[str, str, str, bool]]) -> pd.DataFrame:
    """rows: (item, condition, status, correct) of one model and setting."""
    return pd.DataFrame(
        [
            {
                "model": "m",
                "setting": "none",
                "scoring": "letter",
                "item_id": i,
                "probe_id": None if c == "clean" else f"{i}:{c}",
                "condition": c,
                "source": "s1" if int(i[1:]) % 2 else "s2",
                "status": st,
                "correct": ok,
            }
            for i, c, st, ok in rows
        ]
    )


def test_accuracy_drop_tests_and_flips_from_known_counts():
    rows = []
    # 20 cases: the original right on 16; the variant right on 10 (7 right -> wrong, 1 wrong -> right)
    for n in range(20):
        clean_ok = n < 16
        var_ok = (n >= 7 and n < 16) or n == 16
        rows.append((f"i{n}", "clean", "valid", clean_ok))
        rows.append((f"i{n}", "redherring-10", "valid", var_ok))
    rows.append(("i0", "whitespace", "invalid", False))  # an unreadable reply: answered, not correct
    rows.append(("i1", "whitespace", "unscored", False))  # no verdict: left out, counted
    rows.append(("i2", "whitespace", "error", False))
    block = noise_metrics(frame(rows))["models"]["m"]["none"]
    o, v = block["overall"], block["by_variant"]["redherring-10"]
    assert (o["clean_acc"]["k"], o["clean_acc"]["n"]) == (16, 20) and o["n_items"] == 20
    assert (v["acc"]["k"], v["acc"]["n"]) == (10, 20)
    assert v["acc"]["lo"] == pytest.approx(wilson(10, 20).lo)
    assert v["drop"]["diff"] == pytest.approx(0.3) and v["drop"]["p_fisher"] == pytest.approx(fisher_one_sided(16, 20, 10, 20)["p"])
    assert (v["paired"]["b"], v["paired"]["c"], v["paired"]["n"]) == (7, 1, 20)
    assert v["paired"]["p_mcnemar"] == pytest.approx(mcnemar_exact(7, 1))
    boot = paired_cluster_diff([1] * 7 + [-1] + [0] * 12, [1] * 20)
    assert (v["paired"]["drop"], v["paired"]["lo"], v["paired"]["hi"]) == pytest.approx((boot["diff"], boot["lo"], boot["hi"]))
    assert v["paired"]["lo"] <= 0.3 <= v["paired"]["hi"]
    assert (v["flip"]["k"], v["flip"]["n"]) == (7, 16)
    assert v["facets"] == {"perturbation": "redherring", "dose": "10", "placement": "distributed"}
    w = block["by_variant"]["whitespace"]["acc"]
    assert (w["k"], w["n"], w["invalid"], w["unscored"], w["errors"]) == (0, 1, 1, 1, 1)
    assert block["counts"] == {"units": 43, "errors": 1, "invalid": 1, "truncated": 0, "unscored": 1, "missing": 0}
    assert set(block["by_source"]) == {"s1", "s2"}
    h = headline(o)
    assert h["redherring-10_acc"]["p"] == 0.5 and h["rewrite_acc"] is None and h["redherring-10_flip"]["k"] == 7
    assert [k for k, _ in get("noise").measures.columns] == list(h)


def test_truncated_replies_count_as_wrong_apart_from_invalid_and_the_flip_rate_without_unread_ones():
    rows = []
    # 10 cases right on the original; on the variant 4 stay right, 2 flip to a wrong letter, 2 are unread, 2 cut at the budget
    for n in range(10):
        rows.append((f"i{n}", "clean", "valid", True))
        status = "valid" if n < 6 else "invalid" if n < 8 else "truncated"
        rows.append((f"i{n}", "redherring-10", status, n < 4))
    block = noise_metrics(frame(rows))["models"]["m"]["none"]
    v = block["by_variant"]["redherring-10"]
    assert (v["acc"]["k"], v["acc"]["n"], v["acc"]["invalid"], v["acc"]["truncated"]) == (4, 10, 2, 2)  # the study's rule: unread = wrong
    assert (v["flip"]["k"], v["flip"]["n"]) == (6, 10)
    assert (v["flip_read"]["k"], v["flip_read"]["n"]) == (2, 6)  # the four unread replies left out
    assert v["flip_read"]["lo"] == pytest.approx(wilson(2, 6).lo)
    assert block["overall"]["redherring-10_flip_read"] == v["flip_read"]
    assert (block["counts"]["invalid"], block["counts"]["truncated"]) == (2, 2)
    assert headline(block["overall"])["redherring-10_flip_read"]["n"] == 6


def test_the_drop_compares_a_variant_with_the_originals_of_the_same_cases():
    # 20 originals, right on the first 10 only; the red herrings were kept for 8 cases (i12..i19), all
    # wrong on the original: the variant, right on 2 of them, is no worse than its own originals.
    rows = [(f"i{n}", "clean", "valid", n < 10) for n in range(20)]
    rows += [(f"i{n}", "redherring-10", "valid", n < 14) for n in range(12, 20)]
    rows += [(f"i{n}", "abbreviations", "valid", n < 10) for n in range(20)]
    v = noise_metrics(frame(rows))["models"]["m"]["none"]["by_variant"]
    d = v["redherring-10"]["drop"]
    assert (d["original"]["k"], d["original"]["n"], d["cases"]) == (0, 8, 8)
    assert d["diff"] == pytest.approx(0 / 8 - 2 / 8)  # not 10/20 - 2/8 against every original
    assert d["p_fisher"] == pytest.approx(fisher_one_sided(0, 8, 2, 8)["p"]) and d["test"] == "fisher_one_sided"
    assert "unpaired" in d["design"]
    # a variant that covers every case is compared with every original
    a = v["abbreviations"]["drop"]
    assert (a["original"]["k"], a["original"]["n"], a["diff"]) == (10, 20, 0.0)


def test_an_empty_frame():
    assert noise_metrics(pd.DataFrame())["models"] == {}


def test_the_family_on_handwritten_cases(tmp_path):
    opts = NoiseBuildOptions(seed=1, abbreviations=(str(FIXTURES / "noise_abbreviations.tsv"),))
    with StubServer(policy=FakeGenerator()) as srv:
        gen = parse_model_spec(f"openai:fake-gen,base_url={srv.base_url}")
        res = build_noise(FIXTURES / "noise_items.jsonl", tmp_path / "suite", gen, opts)
    assert res.report["skipped"] == {"not_a_diagnosis_question": 1}  # h5 asks for a next step
    suite = Suite.load(tmp_path / "suite")
    assert list(suite.items) == ["h1", "h2", "h3", "h4", "h6"]
    assert {p.condition for p in suite.probes} == {"redherring-1", "redherring-5", "redherring-10", "together-10", "whitespace", "abbreviations", "rewrite"}
    # "Dr. Lee" and "b.i.d." are not sentence ends: no red herring lands inside them
    for p in suite.probes:
        assert "Dr. The" not in p.parts["text"] and "b.i.d. The" not in p.parts["text"]
    h4 = suite.items["h4"]
    assert "K+ 2.9 mEq/L" in h4.question  # the inline lab list is whole in the case and in every variant
    assert all(
        "Na+ 138 mEq/L, K+ 2.9 mEq/L, and Cl- 96 mEq/L" in p.parts["text"]
        for p in suite.probes_for("h4")
        if p.condition != "abbreviations" and p.condition != "rewrite"
    )

    from medresilience.families.noise.probe import NoiseProbe

    assert all(isinstance(p, NoiseProbe) for p in suite.probes)
    # a probe whose text does not follow from its case is refused at load (the checksums aside)
    lines = (tmp_path / "suite" / "probes.jsonl").read_text().splitlines()
    i = next(n for n, line in enumerate(lines) if '"condition": "redherring-5"' in line)
    bad = tmp_path / "bad"
    shutil.copytree(tmp_path / "suite", bad)
    (bad / "probes.jsonl").write_text("\n".join([*lines[:i], lines[i].replace("The patient", "The woman", 1), *lines[i + 1 :]]) + "\n")
    with pytest.raises(InputError, match=rf"probes.jsonl:{i + 1}: field 'parts'"):
        Suite.load(bad, verify=False)

    # -O variants=... plans only those conditions (and the original)
    from medresilience.run.runner import plan

    spec = parse_model_spec("openai:m,base_url=http://127.0.0.1:9")
    planned = plan(suite, [spec], EvalOptions(family={"variants": "redherring-10,whitespace"}))
    assert {p.unit.condition for p in planned} == {"clean", "redherring-10", "whitespace"} and len(planned) == 5 * 3

    texts = {}
    for item in suite.items.values():
        for probe in [None, *suite.probes_for(item.id)]:
            texts[render(item, probe, "letter", NoiseOptions())[-1]["content"]] = (item, probe)

    def answerer(messages, request):
        item, probe = texts[messages[-1]["content"]]
        distracted = probe is not None and probe.condition in ("redherring-10", "together-10")
        return "Answer: " + (next(k for k in item.options if k != item.answer) if distracted else item.answer)

    with StubServer(policy=answerer) as srv:
        run = evaluate(suite, [parse_model_spec(f"openai:m,base_url={srv.base_url}")], tmp_path / "run", EvalOptions(settings=("none", "caution")))
    h = run.results.headline("m")
    assert h["clean_acc"].p == 1.0 and h["redherring-10_acc"].p == 0.0 and h["whitespace_acc"].p == 1.0
    assert h["redherring-10_flip"].k == h["redherring-10_flip"].n == 5
    assert set(run.results.models["m"]) == {"none", "caution"}
    assert run.results.mean_across_models["none"]["redherring-10_drop"]["mean"] == 1.0
    rep = build_report([tmp_path / "run"])
    html = rep.html.read_text()
    assert 'id="fig-noise-dose"' in html and "Red herrings, 10 as one block" in html and 'id="misleading"' not in html
    assert (rep.out_dir / "tables" / "headline.csv").exists()


def test_an_extraction_model_reads_the_noise_family_s_unread_replies(tmp_path):
    """-O extract is the run's, not one family's: the clinical-noise MCQ mode takes it too."""
    import re

    from medresilience.models.spec import parse_model_spec as spec_of

    opts = NoiseBuildOptions(seed=1, abbreviations=(str(FIXTURES / "noise_abbreviations.tsv"),))
    with StubServer(policy=FakeGenerator()) as srv:
        build_noise(FIXTURES / "noise_items.jsonl", tmp_path / "suite", spec_of(f"openai:fake-gen,base_url={srv.base_url}"), opts)
    suite = Suite.load(tmp_path / "suite")
    texts = {
        render(item, probe, "letter", NoiseOptions())[-1]["content"]: "clean" if probe is None else probe.condition
        for item in suite.items.values()
        for probe in [None, *suite.probes_for(item.id)]
    }
    asked = []

    def policy(messages, request):
        user = messages[-1]["content"]
        if request.get("model") == "extractor":
            asked.append(user)
            return "B" if re.search(r">\nHmm, the second one\.\n<", user) else "none"
        return "Hmm, the second one." if texts[user] == "whitespace" else "Answer: A"

    with StubServer(policy=policy) as srv:
        run = evaluate(
            suite,
            [spec_of(f"openai:m,base_url={srv.base_url}")],
            tmp_path / "run",
            EvalOptions(family={"variants": "whitespace"}, extract=spec_of(f"openai:extractor,base_url={srv.base_url}")),
        )
    reading = run.results.reading["m"]["none"]
    # the whitespace variant's replies are read by the extraction model only
    assert reading["extracted"] == len(asked) == len([p for p in suite.probes if p.condition == "whitespace"]) > 0
    assert reading["read"] == reading["replies"] and run.results.models["m"]["none"]["counts"]["invalid"] == 0
    # the run facts tell the extraction calls and their parameters from the answers'
    from medresilience.report.rundir import load_run

    kinds = {(r["kind"], r["model"]): r["calls"] for r in load_run(tmp_path / "run").sent}
    assert set(kinds) == {("answer", "m"), ("extraction", "extractor")} and kinds[("extraction", "extractor")] == len(asked), kinds
