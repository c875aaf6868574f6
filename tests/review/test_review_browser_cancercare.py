"""A 3-rater CancerCare review in a real headless Chromium against `medres review serve`: each
reviewer rates every answer as a whole and paragraph by paragraph (a "no advice" paragraph, issue
labels), a submission missing a paragraph is refused with what is missing, and the paragraph
statistics of what was clicked are the expected ones.

Skipped, with the reason, when chromium or the playwright package is not available."""

from __future__ import annotations

import pytest

from conftest import Browser, needs_chromium, review_serve

sync_api = needs_chromium()

from medresilience.review import ReviewDB, sample_review  # noqa: E402
from medresilience.review.parts import compute_parts  # noqa: E402
from test_review_browser import VIEWPORT, sign_in  # noqa: E402
from test_review_cancercare import ANSWERS, LABELS, SCORES, _answers_csv  # noqa: E402

RATERS = ("ann", "ben", "cat")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("cancercare-browser")
    review = root / "review"
    sample_review("cancercare", None, review, answers=_answers_csv(root / "answers.csv", ANSWERS), raters=3, reviewers=list(RATERS), seed=1)
    with ReviewDB(review) as db:
        passwords = {r: db.add_reviewer(r) for r in RATERS}
        units = db.units()
        key = {uid: (int(u.item_id[1:]), u.hidden["source"]) for uid, u in units.items()}
        tasks = {r: {t.task_id: key[t.unit_id] for t in db.tasks_for(r)} for r in RATERS}
    server = review_serve(review).start()
    try:
        yield {"url": server.url, "review": review, "pw": passwords, "tasks": tasks}
    finally:
        server.stop()


def test_three_raters_rate_answers_paragraph_by_paragraph(served, tmp_path):
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
                    q, source = served["tasks"][rater][tid]
                    text = page.inner_text("main")
                    assert "gpt" not in text and "human" not in text  # the source is hidden
                    overall, parts = SCORES[(q, source)][rater]
                    assert page.locator("fieldset.part").count() == len(parts)
                    page.check(f"input[name=dim_overall][value='{overall}']")
                    for n, v in enumerate(parts, 1):
                        if i == 0 and n == 2:
                            continue  # the first submission leaves paragraph 2 out
                        page.check(f"input[name=part_{n}][value='{v}']")
                    for flag in LABELS.get((rater, q, source), []):
                        _, n, label = flag.split(":")
                        page.check(f"input[name=partlabel_{n}][value='{label}']")
                    page.click("button[value=submit]")
                    page.wait_for_load_state("load")
                    if i == 0:
                        assert "missing: paragraph 2" in page.inner_text("main")
                        assert page.is_checked(f"input[name=part_1][value='{parts[0]}']")  # what was chosen is kept
                        page.check(f"input[name=part_2][value='{parts[1]}']")
                        page.click("button[value=submit]")
                        page.wait_for_load_state("load")
                    assert ("All your tasks are rated" if i == 3 else "Saved.") in page.inner_text("main")
                assert not b.dialogs and not b.errors
    res = compute_parts(review, n_resamples=200)
    assert dict(zip(res.misd_distribution["misd"], res.misd_distribution["paragraphs"])) == {0: 2, 1: 2, 2: 4, 3: 0, 4: 0}
    labels = {(r.source, r.label): r.count for r in res.labels.itertuples()}
    assert labels[("human", "overly_generic")] == 2 and labels[("human", "bad_advice")] == 1
    by = res.by_source.set_index("source")
    assert (by.loc["gpt", "no_advice"], by.loc["human", "no_advice"]) == (3, 1)
