"""The review app in a real headless Chromium (Debian's /usr/bin/chromium driven by Playwright's
Python API; no browser is ever downloaded) against a real server on 127.0.0.1: sign in, rate three
tasks (mouse and keyboard), sign out; a second reviewer's queue; hostile text in items, options,
context and model responses opens no dialog, runs no script and sends no request beyond
127.0.0.1; a screenshot of the task page.

Skipped, with the reason, when chromium or the playwright package is not available."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import Browser, browser, needs_chromium, review_serve

sync_api = needs_chromium()

from medresilience.review import ReviewDB, sample_review  # noqa: E402
from test_review_app import REVIEWERS, SCRIPT, TEXTAREA, hostile_suite, make_run, stored  # noqa: E402

VIEWPORT = {"width": 1280, "height": 900}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A rubric-B review of hostile responses (every reviewer with a password), served by
    `medres review serve` in a subprocess."""
    root = tmp_path_factory.mktemp("review-browser")
    suite = hostile_suite(root / "suite")
    run = make_run(root, suite)
    review = root / "review"
    sample_review("B", suite, review, run_dir=run, n=30, dual=0.5, reviewers=list(REVIEWERS), seed=2)
    with ReviewDB(review) as db:
        passwords = {r: db.add_reviewer(r) for r in REVIEWERS}
    server = review_serve(review).start()
    try:
        yield {"url": server.url, "review": review, "pw": passwords}
    finally:
        server.stop()


def sign_in(b: Browser, url: str, name: str, password: str) -> None:
    """Signs `name` in to the review app at `url` in `b`'s page: the app asks first, then shows the queue."""
    b.page.goto(f"{url}/", wait_until="load")
    assert b.page.url == f"{url}/login"
    b.page.fill("#name", name)
    b.page.fill("#password", password)
    b.page.press("#password", "Enter")  # the keyboard submits the form
    b.page.wait_for_load_state("load")
    assert b.page.url == f"{url}/", b.page.content()[:2000]


def _task_ids(review: Path, name: str) -> list[int]:
    with ReviewDB(review) as db:
        return [t.task_id for t in db.tasks_for(name)]


def test_sign_in_rate_three_tasks_and_sign_out(served, tmp_path):
    url, review, pw = served["url"], served["review"], served["pw"]
    with browser(sync_api, tmp_path / "profile", viewport=VIEWPORT) as b:
        sign_in(b, url, "alice", pw["alice"])
        page = b.page
        assert "0</strong> of" in page.inner_text("main").replace(" ", "") or "0 of" in page.inner_text("main")
        page.click("text=Continue with task")
        rated = []
        for i in range(3):
            page.wait_for_load_state("load")
            tid = int(page.url.split("/tasks/")[1].split("?")[0])
            rated.append(tid)
            if i == 1:  # by keyboard: focus each group's first radio, arrow to the last choice, Enter submits
                for dim in ("final_answer", "injection_uptake", "clinical_grounding", "harm"):
                    page.focus(f"input[name=dim_{dim}] >> nth=0")
                    page.keyboard.press("Space")
                    page.keyboard.press("ArrowDown")
                page.keyboard.press("Enter")
            else:  # by mouse
                page.check("input[name=dim_final_answer][value=incorrect]")
                page.check("input[name=dim_injection_uptake][value='2']")
                page.check("input[name=dim_clinical_grounding][value='0']")
                page.check("input[name=dim_harm][value='3']")
                page.check("input[name=flag][value=needs_second_look]")
                page.fill("#comment", f"note {i} {TEXTAREA}")
                page.click("button[value=submit]")
            page.wait_for_load_state("load")
            assert "Saved." in page.inner_text("main")
        kept = stored(review)
        assert all(kept[t][0] == "rated" for t in rated)
        assert '"final_answer": "incorrect"' in kept[rated[1]][1]  # the keyboard's choices: the second of each scale
        assert '"harm": "1"' in kept[rated[1]][1]
        assert kept[rated[0]][3] == f"note 0 {TEXTAREA}"
        page.goto(f"{url}/", wait_until="load")
        assert "3 of" in page.inner_text("main")
        page.click("text=Sign out")
        page.wait_for_load_state("load")
        assert page.url == f"{url}/login"
        page.goto(f"{url}/", wait_until="load")
        assert page.url == f"{url}/login"  # the session is over
        assert not b.dialogs and not b.errors
        assert all(r.startswith(url) or r.startswith("data:") for r in b.requests), b.requests


def test_a_second_reviewers_queue(served, tmp_path):
    url, review, pw = served["url"], served["review"], served["pw"]
    with browser(sync_api, tmp_path / "profile", viewport=VIEWPORT) as b:
        sign_in(b, url, "bob", pw["bob"])
        links = b.page.eval_on_selector_all("table a[href^='/tasks/']", "els => els.map(e => e.getAttribute('href'))")
        assert sorted(int(h.rsplit("/", 1)[1]) for h in links) == sorted(_task_ids(review, "bob"))
        assert "Signed in as bob" in b.page.inner_text("header")
        alices = _task_ids(review, "alice")[0]
        resp = b.page.goto(f"{url}/tasks/{alices}", wait_until="load")
        assert resp.status == 404 and "no such task in your queue" in b.page.inner_text("main")


def test_hostile_text_runs_no_script_and_sends_nothing_beyond_loopback(served, tmp_path):
    url, review, pw = served["url"], served["review"], served["pw"]
    with browser(sync_api, tmp_path / "profile", viewport=VIEWPORT) as b:
        sign_in(b, url, "carol", pw["carol"])
        for tid in _task_ids(review, "carol")[:3]:
            resp = b.page.goto(f"{url}/tasks/{tid}", wait_until="load")
            b.page.wait_for_load_state("networkidle")
            assert resp.status == 200
            assert "content-security-policy" in resp.headers and "script-src" not in resp.headers["content-security-policy"]
            text = b.page.inner_text("main")
            assert SCRIPT in text and "onerror=alert(1)" in text and TEXTAREA in text and "alert(3)" in text  # shown as text
            found = b.page.evaluate("""() => ({
                scripts: document.scripts.length,
                media: document.querySelectorAll('img, iframe, object, embed').length,
                handlers: Array.from(document.querySelectorAll('*')).filter(e => Array.from(e.attributes).some(a => a.name.startsWith('on'))).length,
                textareas: document.querySelectorAll('textarea').length,
            })""")
            assert found == {"scripts": 0, "media": 0, "handlers": 0, "textareas": 1}
        shot = tmp_path / "task-page.png"
        b.page.screenshot(path=str(shot), full_page=True)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
        assert not b.dialogs, b.dialogs
        assert not b.errors, b.errors
        assert not [t for kind, t in b.console if kind == "error"], b.console
        assert b.requests and all(r.startswith(url) or r.startswith("data:") for r in b.requests), b.requests
