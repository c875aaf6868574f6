"""Several raters per unit and fixed quotas per stratum (`medres review sample --raters N
--quota KEY=VALUE:N,...`): every unit gets N distinct reviewers, loads and pairs are balanced,
blinding is kept, quotas fix the numbers per cell, bad quotas are one-line errors (exit 2)."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from itertools import combinations
from pathlib import Path

import pytest
from typer.testing import CliRunner

from medresilience.cli import app
from medresilience.review import ReviewDB, ReviewError, sample_review
from medresilience.review.sample import parse_quotas
from test_review_app import hostile_suite

FOUR = ("alice", "bob", "carol", "dave")


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    return hostile_suite(tmp_path_factory.mktemp("raters") / "suite")


def _rows(path: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(path / "review.sqlite")
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_three_distinct_raters_per_unit_with_balanced_loads_and_pairs(suite, tmp_path):
    out = tmp_path / "r3"
    res = sample_review("A", suite, out, n=16, raters=3, reviewers=list(FOUR), seed=3)
    assert res.units == 16 and res.raters == 3
    per_unit = _rows(out, "SELECT unit_id, COUNT(*), COUNT(DISTINCT reviewer), GROUP_CONCAT(slot) FROM tasks GROUP BY unit_id")
    assert len(per_unit) == 16
    assert all(n == 3 and d == 3 and sorted(s.split(",")) == ["0", "1", "2"] for _, n, d, s in per_unit)
    loads = Counter(r for (r,) in _rows(out, "SELECT reviewer FROM tasks"))
    assert sum(loads.values()) == 48 and max(loads.values()) - min(loads.values()) <= 1
    # every pair of reviewers shares units, spread evenly (48 tasks: 3 pairs per unit, 6 pairs)
    pairs: Counter = Counter()
    by_unit: dict[str, list[str]] = {}
    for uid, r in _rows(out, "SELECT unit_id, reviewer FROM tasks"):
        by_unit.setdefault(uid, []).append(r)
    for rs in by_unit.values():
        pairs.update(tuple(sorted(p)) for p in combinations(rs, 2))
    assert len(pairs) == 6 and max(pairs.values()) - min(pairs.values()) <= 2
    # blinding: no reviewer is shown the hidden facts
    with ReviewDB(out) as db:
        hidden = {json.dumps(v) for u in db.units().values() for v in u.hidden.values() if v}
        for r in FOUR:
            for t in db.tasks_for(r):
                shown = json.dumps(db.task(t.task_id, r).display)
                assert not any(h.strip('"') in shown for h in hidden if len(h) > 6)
        assert db.meta("raters") == 3


def test_dual_adds_one_more_rater_and_the_same_seed_gives_the_same_assignment(suite, tmp_path):
    a = sample_review("A", suite, tmp_path / "a", n=10, raters=2, dual=0.5, reviewers=list(FOUR), seed=4)
    sample_review("A", suite, tmp_path / "b", n=10, raters=2, dual=0.5, reviewers=list(FOUR), seed=4)
    q = "SELECT unit_id, reviewer, slot, position FROM tasks ORDER BY task_id"
    assert _rows(tmp_path / "a", q) == _rows(tmp_path / "b", q)
    counts = Counter(n for _, n in _rows(tmp_path / "a", "SELECT unit_id, COUNT(DISTINCT reviewer) FROM tasks GROUP BY unit_id"))
    assert counts == {3: a.dual, 2: 10 - a.dual} and a.dual == 5


def test_one_rater_keeps_the_earlier_assignment(suite, tmp_path):
    """raters=1 with a dual share is the earlier one-or-two assignment, task for task."""
    from medresilience.review.sample import assign
    from medresilience.review.units import Candidate

    units = [Candidate(f"u{i}", None, {}, [], {}) for i in range(9)]
    dual = {"u1", "u4", "u5"}
    got = assign(units, dual, ["x", "y", "z"], seed=2)
    assert Counter(u for u, *_ in got) == {u.unit_id: 2 if u.unit_id in dual else 1 for u in units}
    assert assign(units, dual, ["x", "y", "z"], seed=2, raters=1) == got


def test_quotas_fix_the_numbers_per_cell(suite, tmp_path):
    with ReviewDB(sample_review("A", suite, tmp_path / "all", n=1000, reviewers=["a"]).path) as db:
        population = Counter(u.strata["content_type"] for u in db.units().values())
        some = next(iter(db.units().values())).strata
    kinds = sorted(population)
    assert len(kinds) >= 2
    quota = ",".join(f"content_type={k}:{i + 1}" for i, k in enumerate(kinds))
    out = tmp_path / "q"
    sample_review("A", suite, out, quotas=quota, reviewers=list(FOUR), raters=2, seed=1)
    with ReviewDB(out) as db:
        got = Counter(u.strata["content_type"] for u in db.units().values())
        assert db.meta("quotas")[0] == {"cell": {"content_type": kinds[0]}, "n": 1}
    assert got == {k: i + 1 for i, k in enumerate(kinds)}
    # a cell of two strata
    cell = f"content_type={some['content_type']}+provenance={some['provenance']}"
    res = sample_review("A", suite, tmp_path / "q2", quotas=f"{cell}:1", reviewers=["a"])
    assert res.units == 1


@pytest.mark.parametrize(
    "quota, message",
    [
        ("content_type", "is not KEY=VALUE:N"),
        ("content_type=x:two", "is not KEY=VALUE:N"),
        ("colour=red:2", "colour, which rubric A units do not have"),
        ("content_type=nothing-like-it:2", "no unit of the population has it"),
        ("source=tiny:2,source=tiny+content_type=cue_remapping:1", "overlap"),
    ],
)
def test_bad_quotas_are_one_line_errors(suite, tmp_path, quota, message):
    with pytest.raises(ReviewError, match=message):
        sample_review("A", suite, tmp_path / "x", quotas=quota, reviewers=["a"])
    assert not (tmp_path / "x" / "review.sqlite").exists()


def test_too_few_reviewers_for_the_raters(suite, tmp_path):
    with pytest.raises(ReviewError, match="3 raters per unit needs as many distinct reviewers; --reviewers names 2"):
        sample_review("A", suite, tmp_path / "x", raters=3, reviewers=["a", "b"])
    with pytest.raises(ReviewError, match="at least 1"):
        sample_review("A", suite, tmp_path / "x", raters=0, reviewers=["a", "b"])


def test_cli_raters_and_quota(suite, tmp_path):
    runner = CliRunner()
    out = tmp_path / "cli"
    r = runner.invoke(app, ["review", "sample", "--rubric", "A", "--suite", str(suite), "--out", str(out), "--n", "6", "--raters", "3", "--reviewers", "a,b,c"])
    assert r.exit_code == 0, r.output
    assert "6 of" in r.output and "3 reviewers each" in r.output
    assert _rows(out, "SELECT COUNT(*) FROM tasks") == [(18,)]
    r = runner.invoke(
        app,
        ["review", "sample", "--rubric", "A", "--suite", str(suite), "--out", str(tmp_path / "c2"), "--n", "6", "--quota", "source=x:1", "--reviewers", "a"],
    )
    assert r.exit_code == 2 and "not both" in r.output
    r = runner.invoke(
        app, ["review", "sample", "--rubric", "A", "--suite", str(suite), "--out", str(tmp_path / "c3"), "--quota", "source:1", "--reviewers", "a"]
    )
    assert r.exit_code == 2 and "is not KEY=VALUE:N" in r.output and not (tmp_path / "c3" / "review.sqlite").exists()


def test_parse_quotas():
    qs = parse_quotas(" source=medqa:40, source=pubmedqa+model=m1:5 ")
    assert [(q.where, q.n) for q in qs] == [((("source", "medqa"),), 40), ((("source", "pubmedqa"), ("model", "m1")), 5)]
