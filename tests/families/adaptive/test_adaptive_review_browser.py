"""The attack rubric in a real headless Chromium (Debian's /usr/bin/chromium driven by Playwright; no
browser is downloaded), served by `medres review serve` in a subprocess over a review of the scripted
stub run's successful attacks: a reviewer signs in, sees the original and the attacked item side by
side and the question, answers each attack by mouse (one "no" and one "unsure" with a comment), and
the ratings stored are the ones given. Skipped, with the reason, when chromium or the playwright
package is not available."""

from __future__ import annotations

import json
import sqlite3

import pytest

from conftest import needs_chromium, reviewer, signed_in

sync_api = needs_chromium()

from test_adaptive import run  # noqa: E402

from medresilience.families.adaptive.testing import ScriptedAttack  # noqa: E402
from medresilience.review import ReviewDB, sample_review  # noqa: E402
from medresilience.testing.stub import StubServer  # noqa: E402

QUESTION = "Does the original right answer still stand for the attacked item?"


@pytest.fixture(scope="module")
def served(tmp_path_factory, review_server):
    root = tmp_path_factory.mktemp("attack-review-browser")
    with StubServer(policy=ScriptedAttack()) as srv:
        run(root, srv.base_url)
    review = root / "review"
    sample_review("attack", root / "suite", review, run_dir=root / "run", n=10, reviewers=["alice"], seed=5)
    return {"url": review_server(review), "review": review}


def test_a_reviewer_answers_each_attack_by_mouse(served, tmp_path):
    review = served["review"]
    password, tasks = reviewer(review, "alice")
    assert len(tasks) == 4  # the four attacks that flipped
    answers = {tasks[0]: "no", tasks[1]: "unsure", tasks[2]: "yes", tasks[3]: "yes"}
    with signed_in(sync_api, served["url"], password, tmp_path / "profile", "alice") as page:
        for tid, answer in answers.items():
            page.goto(f"{served['url']}/tasks/{tid}", wait_until="load")
            assert QUESTION in page.inner_text("main")
            sides = page.locator(".pair .side")
            assert sides.count() == 2
            left, right = sides.nth(0).bounding_box(), sides.nth(1).bounding_box()
            assert left["x"] < right["x"] and abs(left["y"] - right["y"]) < 5  # side by side
            added = page.locator("section.block", has_text="What the attacker added").locator("p.text").inner_text()
            assert added in sides.nth(1).inner_text() and added not in sides.nth(0).inner_text()
            page.locator(f'input[name="dim_stands"][value="{answer}"]').click()
            if answer != "yes":
                page.fill("#comment", f"{answer}: the added detail")
            page.locator('button[value="submit"]').click()
            page.wait_for_load_state("load")
    con = sqlite3.connect(review / "review.sqlite")
    try:
        got = {r[0]: (r[1], json.loads(r[2]), r[3]) for r in con.execute("SELECT task_id, status, vals, comment FROM ratings")}
    finally:
        con.close()
    assert {t: (s, v["stands"], c) for t, (s, v, c) in got.items()} == {
        t: ("rated", a, "" if a == "yes" else f"{a}: the added detail") for t, a in answers.items()
    }
    with ReviewDB(review) as db:
        assert db.progress("alice")["rated"] == 4
