"""One model label in several runs (model_names: the one rule). A report over two misleading-context
runs of model `m` (8 questions and 1) and a clinical-noise run of `m` names each run's model
`m [run]` in every view, and every view shows that run's own numbers (its results.json, written by
the evaluation): the cross-family profile's table, plot rows and profile_all.csv, the key numbers'
table and sentence (a mean over two entries of one model, said so), the Markdown, the terminal
summary, and each linked number's units in the evidence viewer (of the right run). A comparison of
a run holding `none` with one holding `none` and `caution` pairs the settings both hold, names
what it compared and what it left out, and `--pair` compares the rest. The stub server answers
with the first option (the boundary we do not own), so every number follows from the suites."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from typer.testing import CliRunner

from conftest import FIXTURES
from medresilience import EvalOptions, build_report, evaluate
from medresilience.cli import app
from medresilience.families.noise.construct.build import NoiseBuildOptions, build_noise
from medresilience.families.noise.testing import FakeGenerator
from medresilience.models.names import RunModels, model_names
from medresilience.models.spec import parse_model_spec
from medresilience.report.build import summary_rows
from medresilience.report.compare import compare_runs, match_models
from medresilience.run.bundled_suite import sample_suite
from medresilience.suite import Suite
from medresilience.view.pages import Links, environment
from medresilience.view.query import close_all, open_runs, parse_query
from medresilience.view.render import Renderer
from test_report_counts import Cells, expected, viewer_total

RUNS = ("mis-big", "mis-small", "noise")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, stub_server):
    root = tmp_path_factory.mktemp("shared")
    srv = stub_server(policy=FakeGenerator())
    built = build_noise(
        FIXTURES / "noise_items.jsonl",
        root / "noise-suite",
        parse_model_spec(f"openai:gen,base_url={srv.base_url}"),
        NoiseBuildOptions(seed=1, variants=("redherring-10", "rewrite")),
    )
    srv = stub_server(policy="first")
    spec = parse_model_spec(f"openai:m,base_url={srv.base_url},label=m")
    evaluate(sample_suite(), [spec], root / "mis-big", EvalOptions(limit=8))
    evaluate(sample_suite(), [spec], root / "mis-small", EvalOptions(limit=1))
    evaluate(Suite.load(built.out), [spec], root / "noise", EvalOptions())
    evaluate(sample_suite(), [spec], root / "mis-both", EvalOptions(limit=1, settings=("none", "caution")))
    return root


def overall(run_dir, setting="none"):
    return json.loads((run_dir / "results.json").read_text())["models"]["m"][setting]["overall"]


def pct(p: float) -> str:
    return f"{100 * p:.1f}%"


@pytest.fixture(scope="module")
def report(runs):
    rep = build_report([runs / n for n in RUNS], out_dir=runs / "report")
    parser = Cells()
    parser.feed(rep.html.read_text(encoding="utf-8"))
    return rep, parser.cells


def rows_of(cells, section):
    out: dict[int, dict[str, dict]] = {}
    for c in cells:
        if c["section"] == section:
            out.setdefault(c["row"], {})[c["head"]] = c
    return list(out.values())


def test_each_run_of_a_shared_label_is_its_own_entry_everywhere_with_its_own_numbers(runs, report):
    rep, cells = report
    big, small, noise = (overall(runs / n) for n in RUNS)
    assert big["clean_acc"]["n"] == 8 and small["clean_acc"]["n"] == 1 and big["clean_acc"]["p"] != small["clean_acc"]["p"]
    want = {
        ("m [mis-big]", "misleading:clean_acc"): big["clean_acc"],
        ("m [mis-small]", "misleading:clean_acc"): small["clean_acc"],
        ("m [noise]", "noise:clean_acc"): noise["clean_acc"],
    }
    # profile_all.csv: one row per run's model and dimension, never two for one name
    prof = pd.read_csv(rep.tables["profile_all"]["csv"])
    assert not prof.duplicated(["model", "setting", "dimension"]).any()
    assert set(prof["model"]) == {"m [mis-big]", "m [mis-small]", "m [noise]"}
    got = {(r.model, r.dimension): r for r in prof.itertuples()}
    for key, rate in want.items():
        assert got[key].value == pytest.approx(rate["p"]) and got[key].n == rate["n"], key
    assert got[("m [mis-big]", "misleading:type1_asr")].value == pytest.approx(1 - big["type1"]["asr"]["p"])
    # the profile's table: the same numbers, each row under its run's name
    table = {r["Model"]["text"]: r for r in rows_of(cells, "profile-all")}
    assert set(table) == {"m [mis-big]", "m [mis-small]", "m [noise]"}
    assert table["m [mis-big]"]["Misleading context: clean accuracy"]["text"].startswith(pct(big["clean_acc"]["p"]))
    assert table["m [mis-small]"]["Misleading context: clean accuracy"]["text"].startswith(pct(small["clean_acc"]["p"]))
    assert table["m [noise]"]["Clinical noise: original accuracy"]["text"].startswith(pct(noise["clean_acc"]["p"]))
    assert table["m [noise]"]["Misleading context: clean accuracy"]["text"] == "—"  # no run mixes into another's row
    # the profile's plot draws one row per table row (its y labels, kept in the SVG as text), each
    # from the one cell the table shows
    html = rep.html.read_text(encoding="utf-8")
    svg = html.split('id="fig-profile-all"')[1].split("</svg>")[0]
    assert re.findall(r"<text[^>]*>(m \[[\w-]+\])<", svg) == ["m [mis-big]", "m [mis-small]", "m [noise]"]
    # the misleading key numbers: each run's row, and a mean over two entries of one model, said so
    key = {r["Model"]["text"]: r for r in rows_of(cells, "key") if "Model" in r and r["Model"]["text"].startswith("m [mis")}
    assert key["m [mis-big]"]["Clean acc"]["text"].startswith(pct(big["clean_acc"]["p"]))
    assert key["m [mis-small]"]["Clean acc"]["text"].startswith(pct(small["clean_acc"]["p"]))
    text = re.sub(r"<[^>]+>", "", html)
    mean = (big["clean_acc"]["p"] + small["clean_acc"]["p"]) / 2
    assert f"Across 2 entries of 1 model (m: one entry per run, mis-big and mis-small) clean accuracy averages {100 * mean:.1f}%" in text
    assert "2 models" not in text
    # the report says why the runs are named so
    assert any("model label 'm' is in runs mis-big, mis-small, noise (2 runs of misleading)" in n for n in rep.notes)
    # the Markdown and the terminal summary
    md = rep.markdown.read_text(encoding="utf-8")
    assert re.search(rf"\| m \[mis-big\] \| no mitigation \| \d+ \| {re.escape(pct(big['clean_acc']['p']))}", md)  # model, setting, items, clean acc
    assert re.search(rf"\| m \[mis-small\] \| no mitigation \| \d+ \| {re.escape(pct(small['clean_acc']['p']))}", md)  # model, setting, items, clean acc
    summary = {r[0]: r for _title, _h, rows in summary_rows(rep) for r in rows}
    assert summary["m [mis-big]"][2].startswith(pct(big["clean_acc"]["p"])) and summary["m [mis-small]"][2].startswith(pct(small["clean_acc"]["p"]))


def test_a_shared_labels_links_open_its_own_runs_units(runs, report):
    """Each linked number of a row named `m [run]` opens that run's units of label `m` in the viewer
    (`medres view` over the same runs), and the viewer counts the number the cell shows; the
    viewer's run list and filter name the models as the report does."""
    _rep, cells = report
    opened = open_runs([runs / n for n in RUNS])
    try:
        checked = 0
        for section in ("profile-all", "key", "misleading", "noise", "reading"):
            for row in rows_of(cells, section):
                name = next((c["text"] for c in row.values() if re.fullmatch(r"m \[[\w-]+\]", c["text"])), None)
                if name is None:
                    continue
                run = RUNS.index(name[3:-1])
                for c in row.values():
                    for href, shown in c["links"]:
                        filters, total = viewer_total(opened, href)
                        assert (filters["run"], filters["model"]) == (str(run), "m"), (name, filters)
                        want = expected(c, shown.strip(), filters, None)
                        if want is not None:
                            assert total == want, (name, c, filters)
                            checked += 1
        assert checked > 15, checked
        page = Renderer(environment(), opened, Links()).index()
        assert re.findall(r'class="models">([^<]*)<', page) == ["m [mis-big]", "m [mis-small]", "m [noise]"]
        units = Renderer(environment(), opened, Links()).units(parse_query([("run", "1"), ("model", "m")], opened))
        assert '<option value="m" selected>m [mis-small]</option>' in units and "shown as m [mis-small] over these runs" in units
    finally:
        close_all(opened)


def test_compare_pairs_each_setting_and_says_what_it_left_out(runs, tmp_path):
    small, both = runs / "mis-small", runs / "mis-both"
    cmp = compare_runs(small, both, tmp_path / "cmp")
    # the setting both runs hold is compared; B's caution has no partner and is named, with the --pair
    assert cmp.compared == ["B's m [mis-both] under none against A's m [mis-small] under none"]
    assert cmp.left_out == [
        "B's m [mis-both] under caution (run A has no caution to pair it with; to compare it with A's m under none: --pair m:none=m:caution)"
    ]
    assert set(cmp.table["a"]) == {"m [mis-small]"} and set(cmp.table["b"]) == {"m [mis-both]"}
    clean = cmp.table[cmp.table["condition"] == "clean"].iloc[0]
    assert clean["a_p"] == pytest.approx(overall(small)["clean_acc"]["p"]) and clean["b_p"] == pytest.approx(overall(both)["clean_acc"]["p"])
    page = cmp.html.read_text(encoding="utf-8")
    assert "Not compared: B&#x27;s m [mis-both] under caution" in page and "<li>m [mis-both] vs m [mis-small]:" in page
    assert "> Not compared: B's m [mis-both] under caution" in cmp.markdown.read_text(encoding="utf-8")
    # the setting left out, compared as the note says: B's caution against A's none
    named = compare_runs(small, both, tmp_path / "named", pairs=["m:none=m:caution"])
    assert named.compared == ["B's m [mis-both] under caution against A's m [mis-small] under none"]
    assert named.left_out == ["B's m [mis-both] under none (not named by --pair)"]
    clean = named.table[named.table["condition"] == "clean"].iloc[0]
    assert clean["b"] == "m [mis-both] (caution)" and clean["b_p"] == pytest.approx(overall(both, "caution")["clean_acc"]["p"])
    # the command says the same before its table
    r = CliRunner().invoke(app, ["compare", str(small), str(both), "--out", str(tmp_path / "cli"), "--viewer-url", "none"])
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert "compared: B's m [mis-both] under none against A's m [mis-small] under none" in out
    assert "not compared: B's m [mis-both] under caution" in out and "--pair m:none=m:caution" in out
    # each side's counts link to its own run's units (A: run 0, B: run 1), read against A's
    opened = open_runs([small, both])
    try:
        hrefs = re.findall(r'<a class="units" href="([^"]+)"[^>]*>(\d+)</a>', page)
        assert hrefs
        for href, shown in hrefs:
            filters, total = viewer_total(opened, href.replace("&amp;", "&"))
            assert total == int(shown) and filters["model"] == "m", filters
            assert filters.get("setting", "none") == "none", filters
    finally:
        close_all(opened)


def test_settings_with_no_partner_on_either_side_are_refused_with_the_settings_listed():
    a = {"m": {"none": {}}}
    b = {"m": {"caution": {}, "monitor": {}}}
    with pytest.raises(
        ValueError, match=r"model 'm' has none in run A and 'm' has caution, monitor in run B, none in common; .*--pair m:SETTING_A=m:SETTING_B"
    ):
        match_models(a, b)
    assert match_models(a, b, ["m=m:monitor"]) == [("m", "none", "m", "monitor")]
    # the same settings on both sides pair by name, none first
    both = {"m": {"caution": {}, "none": {}}}
    assert match_models(both, both) == [("m", "none", "m", "none"), ("m", "caution", "m", "caution")]


def test_the_rule():
    """A label stands alone unless two runs of one family hold it or its runs record different
    models; then every run's is `label [run]`, and a name reads back to its label and run."""
    names = model_names(
        [
            RunModels("a", "misleading", {"m": "openai:m", "x": "openai:x"}),
            RunModels("b", "misleading", {"m": "openai:m"}),
            RunModels("c", "noise", {"m": "openai:m", "x": "openai:other"}),
            RunModels("d", "noise", {"y": "openai:y"}),
            RunModels("e", "presupposition", {"y": "openai:y"}),
        ]
    )
    assert names.name("a", "m") == "m [a]" and names.name("c", "m") == "m [c]"
    assert names.name("a", "x") == "x [a]" and names.name("c", "x") == "x [c]"  # different models under one label
    assert names.name("d", "y") == names.name("e", "y") == "y"  # one model across families: one row of the profile
    assert names.label_of("m [b]") == "m" and names.run_of("m [b]") == "b" and names.run_of("y") is None
    assert names.qualified == {"m", "x"}


def test_compare_of_one_run_with_itself_keeps_its_labels(runs, tmp_path):
    both = runs / "mis-both"
    cmp = compare_runs(both, both, tmp_path / "self", pairs=["m:none=m:caution"])
    assert set(cmp.table["a"]) == {"m"} and set(cmp.table["b"]) == {"m (caution)"}
    assert cmp.left_out == ["A's m under caution (not named by --pair)", "B's m under none (not named by --pair)"]
