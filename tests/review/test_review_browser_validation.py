"""A 3-rater premise validation (Cancer-Myth) in a real headless Chromium against `medres review
serve`: three reviewers sign in and rate every question (false presupposition, correction,
outcome and category, one left blank), and the statistics of what they clicked are the
hand-counted ones: full agreement, Gwet's AC1 and the categoriser's agreement.

Skipped, with the reason, when chromium or the playwright package is not available."""

from __future__ import annotations

import pytest

from conftest import Browser, needs_chromium, review_serve

sync_api = needs_chromium()

from medresilience.review import ReviewDB, sample_review  # noqa: E402
from medresilience.review.stats import compute  # noqa: E402
from test_review_browser import VIEWPORT, sign_in  # noqa: E402
from test_review_validation import _myth_suite  # noqa: E402

RATERS = ("ann", "ben", "cat")
CATS = ["no_treatment", "inevitable_side_effect", "causal_misattribution", "underestimated_risk"]


def _choice(rater: str, item: str) -> dict[str, str]:
    """cat finds no false presupposition in q3 (and gives no category); ben files q1 under other."""
    if rater == "cat" and item == "q3":
        return {"false_presupposition": "no", "correction_sound": "yes", "outcome": "nfp"}
    category = "other" if (rater, item) == ("ben", "q1") else CATS[int(item[1:])]
    return {"false_presupposition": "yes", "correction_sound": "yes", "outcome": "kept", "category": category}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("validation-browser")
    suite = _myth_suite(root / "suite", CATS)
    review = root / "review"
    sample_review("premise", suite, review, n=4, raters=3, reviewers=list(RATERS), strata=["source"], seed=3)
    with ReviewDB(review) as db:
        passwords = {r: db.add_reviewer(r) for r in RATERS}
        items = {u.unit_id: u.item_id for u in db.units().values()}
        tasks = {r: {t.task_id: items[t.unit_id] for t in db.tasks_for(r)} for r in RATERS}
    server = review_serve(review).start()
    try:
        yield {"url": server.url, "review": review, "pw": passwords, "tasks": tasks}
    finally:
        server.stop()


def test_three_raters_validate_in_the_browser(served, tmp_path):
    url, review = served["url"], served["review"]
    with sync_api.sync_playwright() as p:
        for rater in RATERS:
            with Browser(p, tmp_path / f"profile-{rater}", viewport=VIEWPORT) as b:
                sign_in(b, url, rater, served["pw"][rater])
                page = b.page
                page.click("text=Continue with task")
                for i in range(4):
                    page.wait_for_load_state("load")
                    tid = int(page.url.split("/tasks/")[1].split("?")[0])
                    for dim, value in _choice(rater, served["tasks"][rater][tid]).items():
                        page.check(f"input[name=dim_{dim}][value='{value}']")
                    page.click("button[value=submit]")
                    page.wait_for_load_state("load")
                    assert ("All your tasks are rated" if i == 3 else "Saved.") in page.inner_text("main")
                assert "4 of 4 rated" in " ".join(page.inner_text("main").split())
                assert not b.dialogs and not b.errors
    res = compute(review, n_resamples=200)
    assert int((res.ratings["status"] == "rated").sum()) == 12
    ag = res.agreement.set_index(["dimension", "coefficient"])
    assert (ag.loc[("outcome", "full_agreement"), "value"], ag.loc[("outcome", "full_agreement"), "units"]) == (0.75, 4)
    # AC1 on the outcome by hand: p_a = (3 + 1/3) / 4; pi_kept = (3 + 2/3) / 4, pi_nfp = (1/3) / 4, q = 3
    pa, pk, pn = (3 + 1 / 3) / 4, (3 + 2 / 3) / 4, (1 / 3) / 4
    pe = (pk * (1 - pk) + pn * (1 - pn)) / 2
    assert ag.loc[("outcome", "gwet_ac1"), "value"] == pytest.approx((pa - pe) / (1 - pe))
    auto = res.auto.set_index("dimension").loc["category"]
    assert (auto["agree"], auto["n"]) == (10, 11)  # 11 categories given, ben's q1 differs
