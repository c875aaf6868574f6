"""The HTML report in a real headless Chromium (Debian's /usr/bin/chromium driven by Playwright's
Python API; no browser is ever downloaded): it loads with no console errors and no network
request other than the page itself, its figures render, and a screenshot is taken.

Skipped, with the reason, when chromium or the playwright package is not available."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import pytest

from conftest import browser, needs_chromium

sync_api = needs_chromium()

from medresilience.report import build_report  # noqa: E402
from test_report import SECRET, SECRET_VAR, make_runs  # noqa: E402


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(SECRET_VAR, SECRET)
        runs = make_runs(tmp_path_factory.mktemp("browser-runs"))
        return build_report([runs["both"]]).out_dir


@pytest.fixture
def server(report_dir):
    """The report directory over HTTP on 127.0.0.1 (an ephemeral port), in a thread."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(report_dir))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _open(url: str, user_data: Path, shot: Path, full_page: bool = True) -> dict:
    with browser(sync_api, user_data, viewport={"width": 1280, "height": 900}) as b:
        page = b.page
        seen: dict = {"console": b.console, "errors": b.errors, "requests": [], "failed": []}
        page.on("request", lambda r: seen["requests"].append(r.url))
        page.on("requestfailed", lambda r: seen["failed"].append(r.url))
        resp = page.goto(url, wait_until="load")
        page.wait_for_load_state("networkidle")
        seen["status"] = None if resp is None else resp.status
        seen["title"] = page.title()
        seen["svgs"] = page.locator("svg.figure").count()
        seen["rendered"] = page.evaluate(
            "Array.from(document.querySelectorAll('svg.figure')).filter(s => s.getBoundingClientRect().width > 300 && s.getBoundingClientRect().height > 150).length"
        )
        seen["first_heading"] = page.locator("h2").first.inner_text()
        seen["overflow"] = page.evaluate("document.documentElement.scrollWidth > window.innerWidth + 1")
        page.screenshot(path=str(shot), full_page=full_page)
    return seen


def _check(seen: dict, url: str) -> None:
    errors = [t for kind, t in seen["console"] if kind in ("error", "warning")]
    assert not errors, f"console errors: {errors}"
    assert not seen["errors"], f"page errors: {seen['errors']}"
    assert seen["requests"] == [url], f"requests other than the page: {seen['requests']}"
    assert not seen["failed"]
    assert seen["title"] == "medresilience report"
    assert seen["first_heading"] == "Key numbers"
    assert seen["svgs"] >= 6 and seen["rendered"] == seen["svgs"], seen
    assert not seen["overflow"], "the page scrolls sideways at 1280 px"


def test_report_in_chromium_over_http(server, tmp_path):
    url = f"{server}/report.html"
    shot = tmp_path / "report.png"
    seen = _open(url, tmp_path / "profile", shot)
    assert seen["status"] == 200
    _check(seen, url)
    assert shot.stat().st_size > 50_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_in_chromium_from_file(report_dir, tmp_path):
    url = (report_dir / "report.html").as_uri()
    shot = tmp_path / "report-top.png"
    seen = _open(url, tmp_path / "profile", shot, full_page=False)
    _check(seen, url)
    assert shot.stat().st_size > 20_000
