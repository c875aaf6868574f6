"""Reviewer ratings make a new suite version (never an in-place edit): rubric A's `drop`
disposition drops the item, a premise review's `discarded` drops the question and its `nfp`
outcome moves it to the no-false-presupposition controls; how reviewers of one unit must agree is
the rule (any, all, majority). The reviewed suite is checked by checksum and left untouched."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from conftest import make_tiny_suite
from medresilience.cli import app
from medresilience.families.presupposition.probe import PresuppositionProbe
from medresilience.records import Item, SuiteManifest
from medresilience.review.db import ReviewDB, ReviewError
from medresilience.review.revise import revise_suite
from medresilience.review.rubrics import get_rubric
from medresilience.review.sample import sample_review
from medresilience.runtime.fileio import sha256_file
from medresilience.suite import Suite

REVIEWERS = ("alice", "bob")


def _review(suite_dir, out, rubric, strata):
    sample_review(rubric, suite_dir, out, n=1000, dual=1.0, reviewers=list(REVIEWERS), seed=3, strata=strata)
    return out


def _rate(out, rubric_key, choose):
    """Every task rated: choose(reviewer, item_id) -> {dimension: value} overrides on an all-passing rating."""
    base = {d.key: (d.passing[0] if d.passing else d.values[-1]) for d in get_rubric(rubric_key).dimensions}
    with ReviewDB(out) as db:
        units = db.units()
        for r in REVIEWERS:
            for t in db.tasks_for(r):
                assert db.submit(t.task_id, r, "rated", {**base, **choose(r, units[t.unit_id].item_id)}, [], "")


def test_rubric_a_drops_by_the_rule_into_a_new_version(tmp_path):
    suite_dir = make_tiny_suite().save(tmp_path / "suite")
    before = {f: sha256_file(suite_dir / f) for f in ("suite.json", "items.jsonl", "probes.jsonl")}
    items = list(Suite.load(suite_dir).items)
    both, one = items[0], items[1]  # both reviewers drop `both`; only alice drops `one`
    review = _review(suite_dir, tmp_path / "review", "A", ["source"])
    _rate(review, "A", lambda r, item: {"disposition": "drop"} if item == both or (item == one and r == "alice") else {})

    anyr = revise_suite(review, tmp_path / "v-any", rule="any")
    assert set(anyr.dropped_items) == {both, one}
    assert set(anyr.suite.items) == set(items) - {both, one}
    assert not [p for p in anyr.suite.probes if p.item_id in (both, one)]
    assert "disposition=drop (1 of 2 reviewers, rule any" in anyr.dropped_items[one][0]
    allr = revise_suite(review, tmp_path / "v-all", rule="all")
    assert set(allr.dropped_items) == {both}
    maj = revise_suite(review, tmp_path / "v-maj", rule="majority")
    assert set(maj.dropped_items) == {both}  # 1 of 2 is not more than half

    m = json.loads((tmp_path / "v-any" / "suite.json").read_text())
    assert m["version"].startswith("1+review.") and m["revised_from"]["rule"] == "any" and m["revised_from"]["dropped_items"] == 2
    assert m["revised_from"]["checksums"] == json.loads((suite_dir / "suite.json").read_text())["checksums"]
    changes = [json.loads(x) for x in (tmp_path / "v-any" / "review_changes.jsonl").read_text().splitlines()]
    assert {c["item_id"] for c in changes if c["action"] == "drop_item"} == {both, one}
    # the reviewed suite is untouched, and cannot be the output
    assert {f: sha256_file(suite_dir / f) for f in before} == before
    with pytest.raises(ReviewError, match="never in place"):
        revise_suite(review, suite_dir)
    # another suite (other checksums) is refused
    other = make_tiny_suite(seed=99).save(tmp_path / "other")
    with pytest.raises(ReviewError, match="not the suite this review sampled"):
        revise_suite(review, tmp_path / "v-x", suite_dir=other)


def _presupposition_suite(directory):
    items, probes = [], []
    for i in range(6):
        iid = f"q{i}"
        items.append(
            Item(
                id=iid,
                source="cancer-myth",
                question=f"Since my cancer {i} needs no follow-up, which diet helps?",
                reference=f"Follow-up is needed for cancer {i}.",
            )
        )
        probes.append(
            PresuppositionProbe(id=f"{iid}:presupposition", item_id=iid, condition="presupposition", facets={"category": "no_treatment", "generator": "gpt-4o"})
        )
    return Suite(SuiteManifest(name="myths", family="presupposition"), items, probes).save(directory)


def test_premise_review_discards_and_moves_questions_to_the_controls(tmp_path):
    suite_dir = _presupposition_suite(tmp_path / "suite")
    review = _review(suite_dir, tmp_path / "review", "premise", ["source"])
    outcome = {"q1": "discarded", "q2": "nfp", "q3": "nfp"}
    _rate(review, "premise", lambda r, item: {"outcome": outcome[item]} if item in outcome else {})
    r = CliRunner().invoke(app, ["review", "revise", str(review), "--out", str(tmp_path / "v2"), "--rule", "all"])
    assert r.exit_code == 0, r.output
    assert "dropped 1 items" in r.output and "relabelled 2 probes" in r.output
    new = Suite.load(tmp_path / "v2")
    assert set(new.items) == {"q0", "q2", "q3", "q4", "q5"}
    cond = {p.item_id: (p.condition, p.id) for p in new.probes}
    assert cond["q2"] == ("nfp", "q2:nfp") and cond["q3"] == ("nfp", "q3:nfp") and cond["q0"][0] == "presupposition"
    assert new.manifest.counts["nfp"] == 2 and new.manifest.counts["presupposition"] == 3


def test_a_rubric_that_rates_responses_changes_no_suite(tmp_path):
    suite_dir = _presupposition_suite(tmp_path / "suite")
    review = tmp_path / "review"
    # a premise-answer review rates answers, not items: no suite action
    assert not get_rubric("premise-answer").suite_actions and not get_rubric("B").suite_actions
    _review(suite_dir, review, "premise", ["source"])
    with ReviewDB(review) as db:
        db.conn.execute("UPDATE meta SET value = ? WHERE key = 'rubric'", (json.dumps("B"),))
        db.conn.commit()
    with pytest.raises(ReviewError, match="do not change a suite"):
        revise_suite(review, tmp_path / "v2")
