"""The evidence viewer in a real headless Chromium (Debian's /usr/bin/chromium driven by
Playwright; no browser is downloaded), served by `medres view` in a subprocess over runs of the
three families whose prompts, replies, judge reasons, a facet and a label carry hostile text:
the base URL printed on start, the filter form and its stable URL, counts that follow the
filter, a flip beside its clean pair with the injected sentence marked, the same unit across
models, and no script of the hostile text running. Skipped, with the reason, when chromium or
the playwright package is not available."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from urllib.parse import quote

import httpx
import pytest

from conftest import ROOT, browser, needs_chromium, view_serve

sync_api = needs_chromium()

from view_runs import make_runs  # noqa: E402

ORDER = ("misleading", "presupposition", "noise", "label")
VIEWPORT = {"width": 1400, "height": 900}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("view-browser")
    dirs = make_runs(root)
    before = {k: hashlib.sha256((d / "store.sqlite").read_bytes()).hexdigest() for k, d in dirs.items()}
    with view_serve(*(dirs[k] for k in ORDER)) as viewer:  # the viewer prints its base URL once the runs are indexed
        yield {"url": viewer.url, "dirs": dirs, "before": before}


def _inert(page) -> dict:
    """What of the hostile text could act on the page: a changed title, scripts, media, handlers."""
    return page.evaluate("""() => ({
        title: document.title.includes('pwned') || document.title === '1',
        scripts: document.scripts.length,
        media: document.querySelectorAll('img, iframe, object, embed').length,
        handlers: Array.from(document.querySelectorAll('*')).filter(e => Array.from(e.attributes).some(a => a.name.startsWith('on'))).length,
    })""")


def _count(page, dim: str, value: str) -> int:
    row = page.locator(f'table.count[data-dim="{dim}"] tr', has_text=value).first
    return int(row.locator("td").nth(1).inner_text())


def test_filter_form_stable_urls_and_counts(served, tmp_path):
    url = served["url"]
    with browser(sync_api, tmp_path / "profile", viewport=VIEWPORT) as b:
        b.page.goto(f"{url}/units?run=0", wait_until="load")
        assert "384" in b.page.inner_text("#total")
        b.page.select_option('select[name="model"]', "model-a")
        b.page.select_option('select[name="setting"]', "none")
        b.page.select_option('select[name="condition"]', "type1")
        b.page.select_option('select[name="outcome"]', "flip")
        b.page.click("form.filters button[type=submit]")
        b.page.wait_for_load_state("load")
        assert re.search(r"/units\?run=0&model=model-a&setting=none&condition=type1&outcome=flip", b.page.url), b.page.url
        api = httpx.get(f"{url}/api/units", params={"run": 0, "model": "model-a", "setting": "none", "condition": "type1", "outcome": "flip"}).json()
        assert f"{api['total']} units match" in b.page.inner_text("#total")
        assert _count(b.page, "outcome", "flip_to_target") == api["counts"]["outcome"]["flip_to_target"]
        rows = b.page.locator("#units tbody tr")
        assert rows.count() == api["total"] and all("flip" in rows.nth(i).inner_text() for i in range(rows.count()))
        # a count's link refines the filter: its URL is stable and reloads to the same page
        b.page.locator('table.count[data-dim="content_type"] a').first.click()
        b.page.wait_for_load_state("load")
        assert "content_type=" in b.page.url
        again = b.page.inner_text("#total")
        b.page.goto(b.page.url, wait_until="load")
        assert b.page.inner_text("#total") == again
        assert not b.dialogs and not b.errors


def test_score_filter_from_its_count_and_the_form(served, tmp_path):
    """A judged run's count of answers per score links to those answers (score=-1, a stable URL);
    the form's score field gives the same page."""
    url = served["url"]
    with browser(sync_api, tmp_path / "profile", viewport=VIEWPORT) as b:
        b.page.goto(f"{url}/units?run=1&condition=presupposition", wait_until="load")
        shown = _count(b.page, "score", "-1")
        b.page.locator('table.count[data-dim="score"] a', has_text="-1").first.click()
        b.page.wait_for_load_state("load")
        assert re.search(r"/units\?run=1&condition=presupposition&score=-1$", b.page.url), b.page.url
        api = httpx.get(f"{url}/api/units", params={"run": 1, "condition": "presupposition", "score": "-1"}).json()
        assert shown == api["total"] > 0 and f"{shown} units match" in b.page.inner_text("#total")
        assert {u["value"] for u in api["units"]} == {-1} and {u["state"] for u in api["units"]} == {"valid"}
        assert b.page.locator("#units tbody tr").count() == shown
        assert api["counts"]["score"] == {"-1": shown}  # the counts follow the filter
        # the form: clear the score, pick it again, submit: the same stable URL
        b.page.goto(f"{url}/units?run=1&condition=presupposition", wait_until="load")
        b.page.select_option('select[name="score"]', "-1")
        b.page.click("form.filters button[type=submit]")
        b.page.wait_for_load_state("load")
        assert re.search(r"/units\?run=1&condition=presupposition&score=-1$", b.page.url), b.page.url
        assert f"{shown} units match" in b.page.inner_text("#total")
        assert not b.dialogs and not b.errors


def test_a_flip_beside_its_clean_pair_with_the_stress_marked(served, tmp_path):
    url = served["url"]
    with browser(sync_api, tmp_path / "profile", viewport=VIEWPORT) as b:
        b.page.goto(f"{url}/units?run=0&model=model-a&setting=none&condition=type1&outcome=flip_to_target", wait_until="load")
        b.page.locator("#units tbody tr a").first.click()
        b.page.wait_for_load_state("load")
        assert "/unit/0/" in b.page.url
        assert b.page.locator("#across-models tbody tr").count() == 2  # model-a and model-b
        pair = b.page.locator("div.pair").first
        assert pair.locator("section.card").count() == 2
        box_clean, box_stressed = (pair.locator("section.card").nth(i).bounding_box() for i in range(2))
        assert box_clean["x"] < box_stressed["x"] and abs(box_clean["y"] - box_stressed["y"]) < 5  # side by side
        marks = pair.locator("section.stressed ins.added")
        assert marks.count() >= 1 and "Misleading claim" in marks.first.inner_text()
        assert pair.locator("section.clean ins.added").count() == 0
        assert "read as" in pair.locator("section.stressed dl.reading").inner_text()
        assert b.page.locator("#across section.card").count() == 4  # 2 models x 2 settings, side by side
        boxes = [b.page.locator("#across section.card").nth(i).bounding_box() for i in range(2)]
        assert boxes[0]["x"] < boxes[1]["x"] and abs(boxes[0]["y"] - boxes[1]["y"]) < 5
        shot = tmp_path / "unit.png"
        b.page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 20_000


def test_hostile_text_is_inert_and_nothing_is_written(served, tmp_path):
    url = served["url"]
    with browser(sync_api, tmp_path / "profile", viewport=VIEWPORT) as b:
        lists = [f"{url}/units?run=1", f"{url}/units?run=3&condition=type1", f"{url}/units?run=2&q=pwned"]
        units = []
        for run in (0, 1, 2, 3):
            first = httpx.get(f"{url}/api/units", params={"run": run, "condition": "type1" if run == 3 else None}).json()["units"][0]
            units.append(f"{url}/unit/{run}/{quote(first['unit_id'], safe='')}")
        for target in lists + units:
            resp = b.page.goto(target, wait_until="load")
            assert resp.status == 200, target
            assert "script-src" not in resp.headers["content-security-policy"]
            assert _inert(b.page) == {"title": False, "scripts": 0, "media": 0, "handlers": 0}, target
            if target in units:  # the prompt's and the reply's hostile text shown as text
                assert "<script>document.title" in b.page.inner_text("main") and 'onerror="document.title=1"' in b.page.inner_text("main")
        # the judge's reason and the hostile facet and label are shown as text too
        b.page.goto(f"{url}/units?run=1", wait_until="load")
        assert "gpt-4o <script>" in b.page.inner_text("main")
        b.page.goto(f"{url}/units?run=3&condition=type1", wait_until="load")
        assert "B <script>" in b.page.inner_text("#units")
        assert not b.dialogs and not b.errors
        assert all(r.startswith(url) for r in b.requests), b.requests
    after = {k: hashlib.sha256((d / "store.sqlite").read_bytes()).hexdigest() for k, d in served["dirs"].items()}
    assert after == served["before"]


def test_the_static_copy_is_inert_and_its_links_work(served, tmp_path):
    out = tmp_path / "site"
    dirs = served["dirs"]
    res = subprocess.run(
        [sys.executable, "-m", "medresilience.cli", "view", *(str(dirs[k]) for k in ORDER), "--export", str(out), "--max-units", "60"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    with browser(sync_api, tmp_path / "profile", viewport=VIEWPORT) as b:
        b.page.goto((out / "index.html").as_uri(), wait_until="load")
        b.page.locator("a", has_text="mis-label").first.click()
        b.page.wait_for_load_state("load")
        assert b.page.url.endswith("units-r3-all-p1.html") and "Capped: each list stops at the page holding its 60th unit" in b.page.inner_text("main")
        b.page.locator("#units tbody tr a").first.click()
        b.page.wait_for_load_state("load")
        assert "/unit-r3-" in b.page.url and b.page.locator("div.pair").count() >= 1
        for page in sorted(out.glob("*.html"))[:40]:
            b.page.goto(page.as_uri(), wait_until="load")
            assert _inert(b.page) == {"title": False, "scripts": 0, "media": 0, "handlers": 0}, page
        assert not b.dialogs and not b.errors
        assert all(r.startswith("file://") for r in b.requests), b.requests


def _expected(cell: str, href: str) -> int:
    """The units a report cell counts: its n, or for a flip rate the flips (the rate times n)."""
    value, n = re.match(r"([+-]?[0-9.]+)%?", cell).group(1), int(re.search(r"n=(\d+)", cell).group(1))
    return round(float(value) * n / 100) if "outcome=flip" in href else n


def test_a_report_cell_links_to_its_units(served, tmp_path):
    url, dirs = served["url"], served["dirs"]
    # the report of the viewer's first three runs, in its order (a link names a run by its index)
    res = subprocess.run(
        [sys.executable, "-m", "medresilience.cli", "report", *(str(dirs[k]) for k in ORDER[:3]), "--out", str(tmp_path / "rep"), "--viewer-url", url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    report = (tmp_path / "rep" / "report.html").as_uri()
    # a read-replies flip rate, a per-source rate, a mean score of a category, a noise variant's flip rate
    wanted = [
        "run=0&model=model-a&setting=none&condition=type1&outcome=flip_read",
        "run=0&model=model-a&setting=none&condition=type1&source=",
        "category=",
        "run=2&model=model-a&setting=none&condition=redherring-10&outcome=flip",
        # a trade-off's b: the clean units right under none and wrong under caution
        "setting=caution&condition=clean&outcome=paired_none%2Cworse_than_none",
    ]
    with browser(sync_api, tmp_path / "profile", viewport=VIEWPORT) as b:
        b.page.goto(report, wait_until="load")
        hrefs = b.page.eval_on_selector_all("a.units", "els => els.map(e => e.getAttribute('href'))")
        for part in wanted:
            b.page.goto(report, wait_until="load")
            b.page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")  # tables folded away
            link = b.page.locator(f'a.units[href*="{part}"]').first
            href = link.get_attribute("href")
            assert href.startswith(url + "/units?"), (part, hrefs[:5])
            cell = link.locator("xpath=ancestor::td").text_content()
            text = link.text_content().strip()
            want = int(text) if text.isdigit() else _expected(cell, href)  # a count, or a rate
            link.click()
            b.page.wait_for_load_state("load")
            assert b.page.url == href
            assert f"{want} units match" in b.page.inner_text("#total"), (href, cell, b.page.inner_text("#total"))
        assert not b.dialogs and not b.errors
