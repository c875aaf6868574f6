"""The realism check (Cancer-Myth §3.3): pairs of a generated and a real patient question, shown
in an order that hides which is real; ten raters pick the real one; the per-pair exact one-sided
binomial tests and the shares are the study's on a hand-built example (67% picked the real one,
2 of 10 pairs told apart at p < 0.05, 6 pairs with at least 40% of raters unsure, p = 0.377)."""

from __future__ import annotations

import csv

import pytest
from typer.testing import CliRunner

from medresilience import stats
from medresilience.cli import app
from medresilience.review import ReviewDB, sample_review
from medresilience.review.picks import compute_picks
from medresilience.runtime.errors import InputError

RATERS = [f"r{i}" for i in range(10)]
RIGHT = [10, 9, 8, 7, 6, 6, 5, 6, 4, 6]  # raters picking the real question, per pair (67 of 100)


@pytest.fixture(scope="module")
def rated(tmp_path_factory):
    root = tmp_path_factory.mktemp("realism")
    pairs = root / "pairs.csv"
    with open(pairs, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["pair_id", "generated", "real"])
        for i in range(10):
            w.writerow([f"p{i}", f"Generated question {i}: since chemo always fails, what now?", f"Real question {i} from a patient."])
    out = root / "review"
    res = sample_review("realism", None, out, answers=pairs, raters=10, reviewers=RATERS, seed=4)
    assert (res.units, res.raters) == (10, 10)
    with ReviewDB(out) as db:
        units = db.units()
        for r in RATERS:
            for t in db.tasks_for(r):
                u = units[t.unit_id]
                real = u.hidden["real_position"]
                right = RATERS.index(r) < RIGHT[int(u.item_id[1:])]
                assert db.submit(t.task_id, r, "rated", {"which_real": real if right else ("2" if real == "1" else "1")}, [], "")
    return out


def test_the_order_hides_the_real_question(rated):
    with ReviewDB(rated) as db:
        units = db.units().values()
        positions = {u.hidden["real_position"] for u in units}
        assert positions == {"1", "2"}  # not always first
        for u in units:
            shown = [b["text"] for b in u.display]
            assert shown[int(u.hidden["real_position"]) - 1].startswith("Real") and "real_position" not in str(u.display)


def test_per_pair_binomial_tests_and_shares(rated):
    res = compute_picks(rated)
    per = res.per_unit.set_index("item_id")
    assert [int(per.loc[f"p{i}", "k"]) for i in range(10)] == RIGHT and set(per["n"]) == {10}
    assert per.loc["p1", "p_value"] == pytest.approx(11 / 1024) and per.loc["p4", "p_value"] == pytest.approx(386 / 1024)  # 0.0107, 0.377
    assert per.loc["p2", "p_value"] == pytest.approx(stats.binomial_test(8, 10)) == pytest.approx(56 / 1024)
    s = res.summary
    assert (s["picked_true"]["k"], s["picked_true"]["n"], s["picked_true"]["p"]) == (67, 100, 0.67)
    assert s["picked_true"]["lo"] < 0.67 < s["picked_true"]["hi"]
    assert (s["told_apart"], s["not_told_apart"], s["at_least_40pct_unsure"]) == (2, 8, 6)


def test_cli_stats(rated, tmp_path):
    r = CliRunner().invoke(app, ["review", "stats", str(rated), "--resamples", "50", "--out", str(tmp_path / "s")])
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert "2 of 10 pairs told apart" in out and "6 with at least 40% of raters unable to tell" in out and "p4: 6/10 picked the true one, p = 0.377" in out
    assert (tmp_path / "s" / "picks.csv").is_file()
    html = (tmp_path / "s" / "review_stats.html").read_text()
    assert "Which one is real" in html and "2 of 10 pairs told apart" in html


def test_bad_pair_files(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("generated,real\nA question,\n", encoding="utf-8")
    with pytest.raises(InputError, match="empty") as e:
        sample_review("realism", None, tmp_path / "o", answers=path, reviewers=["a"])
    assert (e.value.line, e.value.field) == (2, "real")
    path.write_text("generated\nA\n", encoding="utf-8")
    with pytest.raises(InputError, match="the header lacks real"):
        sample_review("realism", None, tmp_path / "o", answers=path, reviewers=["a"])


def test_binomial_test_edges():
    assert stats.binomial_test(0, 0) is None
    assert stats.binomial_test(10, 10) == pytest.approx(1 / 1024)
    assert stats.binomial_test(5, 10, alternative="two-sided") == pytest.approx(1.0)
    with pytest.raises(ValueError):
        stats.binomial_test(11, 10)
    with pytest.raises(ValueError, match="strictly between"):
        stats.binomial_test(1, 2, p=1.0)


# --------------------------------------------------------------------------- picks made in another tool


def _survey_export(path, real_column="stratum_real_position", *, blank_at=None):
    """The picks of RIGHT (10 pairs x 10 raters) as another survey tool would export them in the
    exchange layout: which question is real given per unit in `real_column`."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["rater", "unit", "item", "dimension", "value", "stratum_pair", *([real_column] if real_column else [])])
        for i in range(10):
            real = "1" if i % 3 else "2"
            for j, r in enumerate(RATERS):
                pick = real if j < RIGHT[i] else ("2" if real == "1" else "1")
                cell = "" if (i, j) == blank_at else real
                w.writerow([r, f"u{i}", f"p{i}", "which_real", pick, f"p{i}", *([cell] if real_column else [])])
    return path


@pytest.mark.parametrize("column", ["stratum_real_position", "hidden_real_position"])
def test_imported_picks_are_scored_against_the_real_one(tmp_path, column):
    path = _survey_export(tmp_path / "picks.csv", column)
    r = CliRunner().invoke(app, ["review", "import", str(path), "--rubric", "realism", "--out", str(tmp_path / "imported")])
    assert r.exit_code == 0, r.output
    res = compute_picks(tmp_path / "imported")
    per = res.per_unit.set_index("item_id")
    assert [int(per.loc[f"p{i}", "k"]) for i in range(10)] == RIGHT and set(per["n"]) == {10}
    assert per.loc["p1", "p_value"] == pytest.approx(11 / 1024) and per.loc["p4", "p_value"] == pytest.approx(386 / 1024)
    assert [per.loc[f"p{i}", "p_value"] for i in range(10)] == pytest.approx([stats.binomial_test(k, 10) for k in RIGHT])
    s = res.summary
    assert (s["picked_true"]["k"], s["picked_true"]["n"]) == (67, 100) and (s["told_apart"], s["at_least_40pct_unsure"]) == (2, 6)


def test_a_file_that_does_not_say_which_is_real_is_refused(tmp_path):
    from medresilience.review.exchange import import_ratings

    path = _survey_export(tmp_path / "picks.csv", None)
    with pytest.raises(InputError, match="does not give") as e:
        import_ratings(path, "realism", tmp_path / "o")
    assert (e.value.line, e.value.field) == (1, "hidden_real_position")
    r = CliRunner().invoke(app, ["review", "import", str(path), "--rubric", "realism", "--out", str(tmp_path / "o")])
    assert r.exit_code != 0 and "hidden_real_position" in r.output and not (tmp_path / "o").exists()
    path = _survey_export(tmp_path / "blank.csv", blank_at=(3, 4))
    with pytest.raises(InputError, match="empty") as e:
        import_ratings(path, "realism", tmp_path / "o")
    assert (e.value.line, e.value.field) == (1 + 3 * 10 + 4 + 1, "stratum_real_position")
    path = _survey_export(tmp_path / "three.csv")
    path.write_text(path.read_text().replace(",p1,1\n", ",p1,3\n"), encoding="utf-8")
    with pytest.raises(InputError, match="'3' is not one of 1, 2"):
        import_ratings(path, "realism", tmp_path / "o")
    assert not (tmp_path / "o").exists()


def test_export_and_import_keep_which_is_real(rated, tmp_path):
    from medresilience.review.exchange import export_ratings, import_ratings

    export_ratings(rated, tmp_path / "out.csv")
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as fh:
        assert "hidden_real_position" in next(csv.reader(fh))
    import_ratings(tmp_path / "out.csv", "realism", tmp_path / "again")
    before, after = compute_picks(rated), compute_picks(tmp_path / "again")
    assert before.summary == after.summary
    key = lambda res: res.per_unit.drop(columns="unit_id").sort_values("item_id").reset_index(drop=True)  # noqa: E731
    assert key(before).equals(key(after))
