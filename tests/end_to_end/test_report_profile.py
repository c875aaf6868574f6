"""The resilience profile across families: a report over a misleading-context run and a
clinical-noise run of the same model shows one row per model with each family's declared rates,
oriented so that higher is better (Type 1 ASR shown as 1 - ASR). The stub server answers with the
first option (the boundary we do not own), so every number follows from the suites."""

from __future__ import annotations

import re

import pytest

from conftest import FIXTURES
from medresilience import EvalOptions, build_report, evaluate
from medresilience.families.noise.construct.build import NoiseBuildOptions, build_noise
from medresilience.families.noise.testing import FakeGenerator
from medresilience.models.spec import parse_model_spec
from medresilience.report.profile import profile_frame, profile_section
from medresilience.run.bundled_suite import sample_suite
from medresilience.suite import Suite


@pytest.fixture(scope="module")
def runs(tmp_path_factory, stub_server):
    root = tmp_path_factory.mktemp("profile")
    srv = stub_server(policy=FakeGenerator())
    res = build_noise(
        FIXTURES / "noise_items.jsonl",
        root / "noise-suite",
        parse_model_spec(f"openai:gen,base_url={srv.base_url}"),
        NoiseBuildOptions(seed=1, variants=("redherring-10", "rewrite")),
    )
    noise = Suite.load(res.out)
    srv = stub_server(policy="first")
    spec = parse_model_spec(f"openai:m,base_url={srv.base_url},label=m")
    mis = evaluate(sample_suite(), [spec], root / "mis", EvalOptions(limit=8)).results
    noi = evaluate(noise, [spec], root / "noise", EvalOptions()).results
    return root, mis, noi, noise


def test_profile_rows_follow_each_family_declaration(runs):
    root, mis, _noi, noise = runs
    rep = build_report([root / "mis", root / "noise"])
    df = profile_frame([_run(root / "mis"), _run(root / "noise")])
    got = {(r.family, r.dimension): r for r in df.itertuples()}
    # misleading: clean accuracy as is, ASR turned round
    t1 = mis.models["m"]["none"]["overall"]["type1"]["asr"]
    assert got[("misleading", "misleading:type1_asr")].value == pytest.approx(1 - t1["p"])
    assert got[("misleading", "misleading:type1_asr")].lo == pytest.approx(1 - t1["hi"])
    # noise: the first option is right exactly where the gold answer is A (the variants keep the options)
    gold_a = sum(it.answer == "A" for it in noise.items.values()) / len(noise.items)
    assert got[("noise", "noise:clean_acc")].value == pytest.approx(gold_a)
    assert got[("noise", "noise:redherring-10_acc")].value == pytest.approx(gold_a)
    assert set(df["model"]) == {"m"}
    html = rep.html.read_text()
    assert "Resilience profile (all families)" in html and 'id="fig-profile-all"' in html
    assert "Resilience profile (all families)" in rep.markdown.read_text()
    assert "profile_all" in rep.tables


def test_one_family_alone_gets_no_cross_family_section(runs):
    root = runs[0]
    assert profile_section(profile_frame([_run(root / "mis")])) is None
    assert "Resilience profile (all families)" not in build_report([root / "mis"], out_dir=root / "r1").html.read_text()


def _run(path):
    from medresilience.report.rundir import load_run

    return load_run(path)


def test_the_radar_draws_the_profile_and_writes_its_data(runs):
    """MedMisBench's Fig. 14: one spoke per dimension, one polygon per model, from the profile table;
    its data as tables/profile_radar.csv, the same numbers the profile holds."""
    import csv

    from medresilience.report.profile import profile_radar

    root = runs[0]
    df = profile_frame([_run(root / "mis"), _run(root / "noise")])
    rep = build_report([root / "mis", root / "noise"], out_dir=root / "r-radar")
    html = rep.html.read_text()
    assert 'id="fig-profile-radar"' in html and "Resilience profile (radar)" in html
    with open(root / "r-radar" / "tables" / "profile_radar.csv", newline="", encoding="utf-8") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["model"] == "m" and row["setting"] == "none"
    for r in df.itertuples():
        assert float(row[f"{r.dimension}:value"]) == pytest.approx(r.value) and int(row[f"{r.dimension}:n"]) == r.n
    svg = profile_radar(df)
    assert svg.count("<title>") == 1 and all(lbl.split(":")[0].split()[0] in svg for lbl in df["label"])
    # one family of three dimensions (clean accuracy, Type 1 and Type 2 as 1 - ASR): the radar alone
    alone = build_report([root / "mis"], out_dir=root / "r-alone")
    page = alone.html.read_text()
    assert 'id="fig-profile-radar"' in page and "Resilience profile (all families)" not in page
    nav = re.search(r'<nav class="toc">(.*?)</nav>', page, re.S).group(1)
    titles = re.findall(r"<a [^>]*>([^<]*)</a>", nav)
    assert "Resilience radar" in titles and len(titles) == len(set(titles)), titles  # no two links of one name
    assert (root / "r-alone" / "tables" / "profile_radar.csv").is_file()
    assert profile_radar(df[df["family"] == "pressure"]) is None  # fewer than three spokes: no radar
