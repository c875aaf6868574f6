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
from medresilience.errors import InputError
from medresilience.review import ReviewDB, sample_review
from medresilience.review.picks import compute_picks

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
