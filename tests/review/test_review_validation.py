"""The Cancer-Myth validation as the study ran it: three raters per question on the premise rubric,
the share of questions with full agreement and Gwet's AC1 (checked by hand on a small example and
against irrCAC's published values through the whole review: import, `medres review stats`), and
the categoriser's agreement with the categories the raters give (hand-counted)."""

from __future__ import annotations

import csv

import pytest
from typer.testing import CliRunner

from medresilience.cli import app
from medresilience.families.presupposition.probe import PresuppositionProbe
from medresilience.records import Item
from medresilience.review import ReviewDB, sample_review
from medresilience.review.exchange import COLUMNS, import_ratings
from medresilience.review.stats import compute
from medresilience.suite import Suite, SuiteManifest


def _ratings_csv(path, units: list[list[str]], dimension: str):
    """units: one list of values per unit, rater i giving the i-th (None: not rated)."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS)
        for u, values in enumerate(units):
            for i, v in enumerate(values):
                if v is not None:
                    w.writerow([f"rater{i}", f"u{u}", f"q{u}", dimension, v])
    return path


def _row(res, dimension, coefficient):
    ag = res.agreement
    return ag[(ag["dimension"] == dimension) & (ag["coefficient"] == coefficient)].iloc[0]


def test_three_raters_full_agreement_and_ac1_by_hand(tmp_path):
    # 10 questions, 3 raters: 8 all yes, 1 yes/yes/no, 1 all no
    units = [["yes"] * 3] * 8 + [["yes", "yes", "no"], ["no"] * 3]
    imp = import_ratings(_ratings_csv(tmp_path / "r.csv", units, "false_presupposition"), "premise", tmp_path / "review")
    assert (imp.units, imp.raters, imp.ratings) == (10, 3, 30)
    res = compute(tmp_path / "review", n_resamples=200)
    full = _row(res, "false_presupposition", "full_agreement")
    assert (full["value"], full["units"], full["detail"]) == (0.9, 10, "9/10 units (Wilson)")
    assert full["lo"] == pytest.approx(0.5958, abs=1e-4) and full["hi"] == pytest.approx(0.9821, abs=1e-4)
    # Gwet's AC1 by hand: p_a = (9 + 1/3) / 10; pi_yes = (8 + 2/3) / 10; p_e = 2 pi (1 - pi) / (q - 1), q = 2
    pa = (9 + 1 / 3) / 10
    pi = (8 + 2 / 3) / 10
    pe = 2 * pi * (1 - pi)
    ac1 = _row(res, "false_presupposition", "gwet_ac1")
    assert ac1["value"] == pytest.approx((pa - pe) / (1 - pe)) and ac1["value"] == pytest.approx(0.913295, abs=1e-6)
    assert ac1["units"] == 10


def test_review_agreement_matches_irrcac_published_values(tmp_path):
    # irrCAC overview vignette, cont3x3abstractors (2 raters, 100 units): AC1 0.8493305, percent
    # agreement 0.89, Cohen's kappa 0.7964094, Krippendorff's alpha 0.7972585; as outcomes
    table = [[13, 0, 0], [0, 20, 7], [0, 4, 56]]
    cats = ["discarded", "nfp", "kept"]
    units = [[cats[i], cats[j]] for i, row in enumerate(table) for j, n in enumerate(row) for _ in range(n)]
    import_ratings(_ratings_csv(tmp_path / "r.csv", units, "outcome"), "premise", tmp_path / "review")
    res = compute(tmp_path / "review", n_resamples=200)
    assert _row(res, "outcome", "gwet_ac1")["value"] == pytest.approx(0.8493305, abs=1e-7)
    assert _row(res, "outcome", "cohen_kappa")["value"] == pytest.approx(0.7964094, abs=1e-7)
    assert _row(res, "outcome", "krippendorff_alpha")["value"] == pytest.approx(0.7972585, abs=1e-7)
    assert _row(res, "outcome", "full_agreement")["value"] == _row(res, "outcome", "percent_agreement")["value"] == pytest.approx(0.89)


def _myth_suite(directory, categories):
    items, probes = [], []
    for i, cat in enumerate(categories):
        items.append(Item(id=f"q{i}", source="cancer-myth", question=f"Since my cancer {i} needs no follow-up, which diet helps?", reference="No."))
        probes.append(
            PresuppositionProbe(id=f"q{i}:presupposition", item_id=f"q{i}", condition="presupposition", facets={"category": cat, "generator": "gpt-4o"})
        )
    return Suite(SuiteManifest(name="myths", family="presupposition"), items, probes).save(directory)


def test_categoriser_agreement_with_the_raters_categories(tmp_path):
    cats = ["no_treatment", "inevitable_side_effect", "causal_misattribution", "underestimated_risk", "other", "no_treatment"]
    suite = _myth_suite(tmp_path / "suite", cats)
    out = tmp_path / "review"
    sample_review("premise", suite, out, n=6, raters=3, reviewers=["ann", "ben", "cat"], strata=["source"], seed=1)
    # every rater agrees with the categoriser except: ben on q1, cat on q1 and q4; ann leaves q5 blank
    differ = {("ben", "q1"), ("cat", "q1"), ("cat", "q4")}
    with ReviewDB(out) as db:
        units = db.units()
        assert all("auto_category" not in str(t.display) for r in ("ann", "ben", "cat") for t in map(lambda t, r=r: db.task(t.task_id, r), db.tasks_for(r)))
        for r in ("ann", "ben", "cat"):
            for t in db.tasks_for(r):
                item = units[t.unit_id].item_id
                values = {"false_presupposition": "yes", "correction_sound": "yes", "outcome": "kept"}
                if not (r == "ann" and item == "q5"):
                    values["category"] = (
                        "other" if (r, item) in differ and cats[int(item[1:])] != "other" else ("no_treatment" if (r, item) in differ else cats[int(item[1:])])
                    )
                assert db.submit(t.task_id, r, "rated", values, [], "")
    res = compute(out, n_resamples=200)
    auto = res.auto.set_index("dimension").loc["category"]
    assert (auto["agree"], auto["n"]) == (14, 17)  # 17 categories given, 3 differ
    assert auto["rate"] == pytest.approx(14 / 17)
    assert "category" not in set(res.pass_rates["dimension"])  # a label, not a pass or fail
    full = _row(res, "outcome", "full_agreement")
    assert (full["value"], full["units"]) == (1.0, 6)
    r = CliRunner().invoke(app, ["review", "stats", str(out), "--resamples", "50"])
    assert r.exit_code == 0, r.output
    assert "the categoriser's category: 14/17 agree" in " ".join(r.output.split())
    with open(out / "stats" / "agreement.csv", newline="") as fh:
        written = [row for row in csv.DictReader(fh) if row["coefficient"] == "full_agreement" and row["dimension"] == "outcome"]
    assert [(row["value"], row["units"], row["detail"]) for row in written] == [("1.0", "6", "6/6 units (Wilson)")]
