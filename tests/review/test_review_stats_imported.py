"""`medres review stats` on a review imported through `medres review import` (three raters on
every answer, the CancerCare rubric): the overview says how many reviewers rated each unit and
where the ratings came from (no blank suite, seed or dual-share fields), and a rubric with no
pass rule shows no pass-rate table."""

from __future__ import annotations

import csv
import json

from typer.testing import CliRunner

from medresilience.cli import app
from medresilience.review.exchange import COLUMNS

# (unit, source) -> rater -> (overall, [paragraph ratings])
SCORES = {
    ("u1", "gpt"): {"ann": ("5", ["5", "4"]), "ben": ("4", ["4", "2"]), "cat": ("4", ["5", "4"])},
    ("u2", "human"): {"ann": ("3", ["3", "no_advice"]), "ben": ("2", ["3", "2"]), "cat": ("3", ["1", "4"])},
    ("u3", "gpt"): {"ann": ("5", ["5", "4"]), "ben": ("5", ["5", "5"]), "cat": ("4", ["5", "5"])},
    ("u4", "human"): {"ann": ("3", ["2"]), "ben": ("3", ["4"])},  # two raters only
}


def _imported(tmp_path):
    path = tmp_path / "ratings.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([*COLUMNS, "stratum_source"])
        for (unit, source), by in SCORES.items():
            for rater, (overall, parts) in by.items():
                w.writerow([rater, unit, f"q{unit[1]}", "overall", overall, source])
                for i, v in enumerate(parts, 1):
                    w.writerow([rater, unit, f"q{unit[1]}", f"part:{i}", v, source])
    r = CliRunner().invoke(app, ["review", "import", str(path), "--rubric", "cancercare", "--out", str(tmp_path / "imp")])
    assert r.exit_code == 0, r.output
    return tmp_path / "imp"


def test_stats_of_an_imported_three_rater_review(tmp_path):
    review = _imported(tmp_path)
    r = CliRunner().invoke(app, ["review", "stats", str(review), "--resamples", "50", "--out", str(tmp_path / "s")])
    assert r.exit_code == 0, r.output
    html = " ".join((tmp_path / "s" / "review_stats.html").read_text().split())
    assert "rated twice" not in html
    assert "3 units rated by 3 reviewers, 1 by 2" in html
    for blank in ("Suite v", "seed ,", "dual share .", "Suite None", "vNone"):
        assert blank not in html
    assert "Imported from ratings.csv" in html
    # the CancerCare rubric has no pass rule: no pass-rate table (in the page or the terminal)
    assert "Pass rates" not in html and "Passing ratings" not in html
    assert "pass rates" not in r.output
    counts = json.loads((tmp_path / "s" / "summary.json").read_text())["counts"]
    assert counts["raters_per_unit"] == {"3": 3, "2": 1} and counts["dual_rated_units"] == 4
