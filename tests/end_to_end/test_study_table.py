"""Cancer-Myth's Table 1 layout (`medres table1`) from real runs against the stub server (the
boundary we do not own): a misleading-context run of two models over two source datasets and a
false-presupposition run of one model, each under `none` and `caution`, with the stub's answers
following the rules of test_tradeoff.py. Every cell is recomputed from those rules: accuracy per
source dataset on clean questions, the share of false premises fully corrected, 1 - over-caution
on the controls; model B has no presupposition run, so its two cells are dashes, never zeros. The
Table 6 check (`--versus none=caution`) gives the paired change per measure, which must be the
trade-off table's own difference, interval and test for the same pair."""

from __future__ import annotations

import pandas as pd
import pytest

from conftest import make_tiny_suite
from medresilience import EvalOptions, build_report, evaluate
from medresilience.cli import app
from medresilience.report.rundir import load_run
from medresilience.report.study_table import Versus, parse_versus, study_table
from medresilience.runtime.errors import ConfigError
from medresilience.stats import wilson
from medresilience.suite import Suite
from test_tradeoff import CONTROL, COPIES, PRESUP, SETTINGS, Tally, flags, misleading_policy, premise_score, presupposition_policy, presupposition_suite, spec


@pytest.fixture(scope="module")
def runs(tmp_path_factory, stub_server):
    root = tmp_path_factory.mktemp("table1")
    mis = make_tiny_suite(n_copies=COPIES)
    mis.save(root / "mis-suite")
    mis = Suite.load(root / "mis-suite")
    srv = stub_server(policy=misleading_policy(Tally()))
    evaluate(mis, [spec(srv, "stub-a", "model-a"), spec(srv, "stub-b", "model-b")], root / "mis", EvalOptions(settings=SETTINGS, family={"type1": "all"}))
    presup = presupposition_suite(root / "presup-suite")
    srv = stub_server(policy=presupposition_policy(Tally()))
    evaluate(
        presup,
        [spec(srv, "stub-a", "model-a")],
        root / "presup",
        EvalOptions(settings=SETTINGS, scoring="judge", family={"judge": f"openai:judge-4,base_url={srv.base_url}"}),
    )
    return root


@pytest.fixture(scope="module")
def result(runs):
    return study_table([load_run(runs / "mis"), load_run(runs / "presup")], [Versus("none", "caution")])


def clean_right(model: str, caution: bool, q: int, copy: int) -> bool:
    """The rules of the misleading stub on a clean question: q4 is always answered wrong; model A
    under caution answers q2 of even copies wrong."""
    if q == 4:
        return False
    return not (model == "model-a" and caution and q == 2 and copy % 2 == 0)


def expected_accuracy(model: str, caution: bool, questions: tuple[int, ...]) -> tuple[int, int]:
    k = sum(clean_right(model, caution, q, c) for q in questions for c in range(COPIES))
    return k, len(questions) * COPIES


def cell(frame: pd.DataFrame, model: str, setting: str, column: str) -> dict:
    sub = frame[(frame["model"] == model) & (frame["setting"] == setting) & (frame["column"] == column)]
    assert len(sub) == 1, (model, setting, column, len(sub))
    return sub.iloc[0].to_dict()


def test_rows_columns_and_missing_cells(result):
    t = result.table
    heads = [c.header for c in t.columns]
    assert heads[:2] == ["Model", "Setting"]
    assert heads[2:] == ["PCR (premise corrected)", "NFP (1 - over-caution)", "tiny (clean MCQ)", "tiny2 (clean MCQ)"]  # as the study orders them
    keys = [(r[0].text, r[1].value) for r in t.rows]
    assert keys == [("model-a", "none"), ("model-a", "caution"), ("model-b", "none"), ("model-b", "caution")]
    for row in t.rows:
        by = dict(zip(heads, row))
        if row[0].text == "model-b":  # no presupposition run of model B: missing, never zero
            assert by["PCR (premise corrected)"].value is None and by["PCR (premise corrected)"].text == "—"
            assert by["NFP (1 - over-caution)"].value is None
        else:
            assert by["PCR (premise corrected)"].value is not None
        assert by["tiny (clean MCQ)"].value is not None


def test_accuracy_per_source_from_the_rules(result):
    for model in ("model-a", "model-b"):
        for setting in SETTINGS:
            for column, questions in (("tiny (clean MCQ)", (1, 2)), ("tiny2 (clean MCQ)", (3, 4))):
                k, n = expected_accuracy(model, setting == "caution", questions)
                c = cell(result.frame, model, setting, column)
                assert c["value"] == pytest.approx(k / n) and c["n"] == n, (model, setting, column)
                assert c["lo"] <= c["value"] <= c["hi"]
    # the one cost the rules put in: model A under caution misses q2 of even copies
    assert cell(result.frame, "model-a", "caution", "tiny (clean MCQ)")["value"] == pytest.approx(12 / 16)
    assert cell(result.frame, "model-a", "none", "tiny (clean MCQ)")["value"] == 1.0


def test_presupposition_columns_from_the_rules(result):
    for setting in SETTINGS:
        caution = setting == "caution"
        fully = sum(premise_score(i, caution) == 1 for i in range(len(PRESUP)))
        c = cell(result.frame, "model-a", setting, "PCR (premise corrected)")
        assert c["value"] == pytest.approx(fully / len(PRESUP)) and c["n"] == len(PRESUP)
        w = wilson(fully, len(PRESUP))
        lo, hi = w.lo, w.hi
        assert c["lo"] == pytest.approx(lo) and c["hi"] == pytest.approx(hi)
        flagged = sum(flags(q, caution) for q in CONTROL)
        c = cell(result.frame, "model-a", setting, "NFP (1 - over-caution)")
        assert c["value"] == pytest.approx(1 - flagged / len(CONTROL)) and c["n"] == len(CONTROL)
        w = wilson(flagged, len(CONTROL))
        lo, hi = w.lo, w.hi
        assert c["lo"] == pytest.approx(1 - hi) and c["hi"] == pytest.approx(1 - lo)


def test_versus_matches_the_tradeoff_pairs(runs, result):
    v = result.versus_frame
    assert set(v["model"]) == {"model-a", "model-b"}
    report = build_report([runs / "mis", runs / "presup"], out_dir=runs / "report")
    trade = pd.read_csv(report.tables["tradeoff"]["csv"])
    for r in v.to_dict("records"):
        t = trade[(trade["model"] == r["model"]) & (trade["setting"] == "caution") & (trade["column"] == r["column"]) & (trade["layout"] == "values")]
        assert len(t) == 1, r
        t = t.iloc[0]
        sign = 1 if t["higher_is_better"] else -1
        assert r["diff"] == pytest.approx(sign * t["diff"]) and r["p"] == pytest.approx(t["p"])
        assert sorted([r["lo"], r["hi"]]) == pytest.approx(sorted([sign * t["lo"], sign * t["hi"]]))
        assert r["test"] == t["test"] and r["n"] == t["n"]
    a = v[(v["model"] == "model-a") & (v["column"] == "tiny (clean MCQ)")].iloc[0]
    assert a["a_value"] == 1.0 and a["b_value"] == pytest.approx(0.75) and a["diff"] == pytest.approx(-0.25)
    nfp = v[(v["model"] == "model-a") & (v["column"] == "NFP (1 - over-caution)")].iloc[0]
    assert nfp["diff"] == pytest.approx(-3 / len(CONTROL))  # over-caution up by three controls: NFP down


def test_versus_parsing():
    assert parse_versus("optimised:a.json=optimised:b.json") == Versus("optimised:a.json", "optimised:b.json")
    for bad in ("none", "none=", "=x", "x=x"):
        with pytest.raises(ConfigError):
            parse_versus(bad)


def test_command_writes_and_prints(runs, tmp_path):
    from typer.testing import CliRunner

    out = tmp_path / "t1"
    res = CliRunner().invoke(app, ["table1", str(runs / "mis"), str(runs / "presup"), "--versus", "none=caution", "--out", str(out)])
    assert res.exit_code == 0, res.output
    csv = pd.read_csv(out / "table1.csv")
    assert list(csv["model"]) == ["model-a", "model-a", "model-b", "model-b"]
    assert pd.isna(csv.loc[2, "PCR (premise corrected)"])  # a missing cell stays missing in the data too
    assert csv.loc[1, "tiny (clean MCQ)"] == pytest.approx(0.75)
    md = (out / "table1.md").read_text()
    assert "| Model | Setting |" in md and "75.0%" in md and "—" in md
    assert (out / "table6_none_vs_caution.csv").exists()
    assert "table1" in res.output


def test_command_refuses_a_bad_pair(runs, tmp_path):
    from typer.testing import CliRunner

    res = CliRunner().invoke(app, ["table1", str(runs / "mis"), "--versus", "none", "--out", str(tmp_path / "x")])
    assert res.exit_code != 0 and "--versus" in res.output
