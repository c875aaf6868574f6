"""The label audit's `reading` task in a real headless Chromium (Debian's /usr/bin/chromium driven
by Playwright's Python API; no browser is ever downloaded) against `medres review serve` on
127.0.0.1: a run on the stub server, its audit written as a reading review; a reviewer signs in,
sees each reply with the item's options and `none`, `several`, `cannot tell` (and never the key,
the model or the run's reading), reads two replies by mouse and one by keyboard, and the audit
takes exactly those readings back.

Skipped, with the reason, when chromium or the playwright package is not available."""

from __future__ import annotations

import pytest

from conftest import make_tiny_suite, needs_chromium, oracle_policy, reviewer, signed_in

sync_api = needs_chromium()

from medresilience.audit import audit_run  # noqa: E402
from medresilience.audit.people import people_readings  # noqa: E402
from medresilience.models.spec import parse_model_spec  # noqa: E402
from medresilience.review import ReviewDB  # noqa: E402
from medresilience.run.evaluation import evaluate  # noqa: E402
from medresilience.run.runner import EvalOptions  # noqa: E402
from medresilience.suite import Suite  # noqa: E402


@pytest.fixture(scope="module")
def served(tmp_path_factory, stub_server, review_server):
    """A run of the tiny suite on the stub, its audit written as a reading review, served, with alice
    as its reviewer."""
    root = tmp_path_factory.mktemp("reading-browser")
    make_tiny_suite().save(root / "suite")
    srv = stub_server(policy=oracle_policy)
    spec = parse_model_spec(f"openai:stub,base_url={srv.base_url}")
    evaluate(Suite.load(root / "suite"), [spec], root / "run", EvalOptions(family={"type1": "all"}))
    made = audit_run(root / "run", 6, review_out=root / "review", reviewers=("alice",), seed=1)
    assert made.review_tasks >= 6  # the sample and the clean pairs of its stressed units
    pw, tasks = reviewer(root / "review")
    with ReviewDB(root / "review") as db:
        units = db.units()
    return {"url": review_server(root / "review"), "review": root / "review", "pw": pw, "units": units, "tasks": tasks}


def test_a_reviewer_reads_replies_blind_by_mouse_and_keyboard(served, tmp_path):
    url, review = served["url"], served["review"]
    given = {}
    with signed_in(sync_api, url, served["pw"], tmp_path / "profile") as page:
        for i, tid in enumerate(served["tasks"][:3]):
            page.goto(f"{url}/tasks/{tid}", wait_until="load")
            main = page.inner_text("main")
            assert "Which option, if any, does this reply commit to?" in main
            assert "keyed answer" not in main and "stub" not in main  # blind: no key, no model
            values = page.eval_on_selector_all("input[name=dim_reading]", "els => els.map(e => e.value)")
            assert values == ["A", "B", "C", "D", "none", "several", "cannot_tell"]
            if i == 2:  # by keyboard: the first choice, one step down (B), Enter submits
                page.focus("input[name=dim_reading] >> nth=0")
                page.keyboard.press("Space")
                page.keyboard.press("ArrowDown")
                with page.expect_navigation(wait_until="load"):  # the submit's page, not the one before it
                    page.keyboard.press("Enter")
                given[tid] = "B"
            else:
                choice = ("several", "C")[i]
                page.check(f"input[name=dim_reading][value={choice}]")
                with page.expect_navigation(wait_until="load"):
                    page.click("button[value=submit]")
                given[tid] = choice
            page.wait_for_load_state("load")
            assert "Saved." in page.inner_text("main")
    with ReviewDB(review) as db:
        by_task = {t.task_id: t.unit_id for t in db.tasks_for("alice")}
    readings = people_readings(review)
    for tid, value in given.items():
        key = served["units"][by_task[tid]].hidden["key"]
        r = readings[key]
        assert (r.label, r.status) == ((None, "none") if value == "several" else (value, "read")), (tid, value)
    assert len(readings) == 3  # the unrated tasks give no reading
