"""The report's layout in a real headless Chromium (Debian's /usr/bin/chromium through Playwright's
Python API; no browser is downloaded) on a wide screen: the key-numbers tables of a misleading
run (two models, two settings, long labels) and of a clinical-noise run fit the page at 1920 px
without clipping or scrolling, each family's block has a heading, a note explains only the
markers the cells show, and the run facts print the suite's path relative, not absolute.

Skipped, with the reason, when chromium or the playwright package is not available."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES, browser, needs_chromium

sync_api = needs_chromium()

from medresilience import EvalOptions, build_report, evaluate  # noqa: E402
from medresilience.families.noise.construct.build import NoiseBuildOptions, build_noise  # noqa: E402
from medresilience.families.noise.testing import FakeGenerator  # noqa: E402
from medresilience.models.spec import parse_model_spec  # noqa: E402
from medresilience.suite import Suite  # noqa: E402
from test_report import make_tiny_suite, policy  # noqa: E402


@pytest.fixture(scope="module")
def runs(tmp_path_factory, stub_server):
    root = tmp_path_factory.mktemp("layout")
    make_tiny_suite(n_copies=3).save(root / "suite")
    suite = Suite.load(root / "suite")
    srv = stub_server(policy=policy)
    specs = [
        parse_model_spec(f"openai:stub-a,label=stub-model-with-a-long-label-a,base_url={srv.base_url}"),
        parse_model_spec(f"openai:stub-b,label=stub-model-with-a-long-label-b,base_url={srv.base_url}"),
    ]
    evaluate(suite, specs, root / "mis", EvalOptions(settings=("none", "caution")))
    opts = NoiseBuildOptions(seed=1, abbreviations=(str(FIXTURES / "noise_abbreviations.tsv"),))
    srv = stub_server(policy=FakeGenerator())
    build_noise(FIXTURES / "noise_items.jsonl", root / "noise-suite", parse_model_spec(f"openai:fake-gen,base_url={srv.base_url}"), opts)
    noise = Suite.load(root / "noise-suite")
    srv = stub_server(policy=lambda messages, request: "Answer: A")
    evaluate(noise, [parse_model_spec(f"openai:m-long-model-label,base_url={srv.base_url}")], root / "noise", EvalOptions(settings=("none", "caution")))
    return root


def _layout(html: Path, width: int, profile: Path) -> dict:
    with browser(sync_api, profile, viewport={"width": width, "height": 1000}) as b:
        page = b.page
        page.goto(html.as_uri(), wait_until="load")
        return page.evaluate("""() => ({
            page_scrolls: document.documentElement.scrollWidth > window.innerWidth + 1,
            key_tables: Array.from(document.querySelectorAll('#key table')).map(t => {
                const box = t.closest('.scroll') || t.parentElement;
                const cells = Array.from(t.querySelectorAll('th, td'));
                return {scrolls: box.scrollWidth > box.clientWidth + 1,
                        right: t.getBoundingClientRect().right, box_right: box.getBoundingClientRect().right,
                        clipped: cells.filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.innerText)};
            }),
            key_headings: Array.from(document.querySelectorAll('#key h3')).map(h => h.innerText),
            key_text: document.querySelector('#key').innerText,
            facts_text: document.querySelector('#facts').innerText,
        })""")


@pytest.mark.parametrize("width", [1920])
def test_the_key_numbers_fit_the_page_with_a_heading_per_family(runs, tmp_path, width):
    rep = build_report([runs / "mis", runs / "noise"], out_dir=tmp_path / "rep")
    seen = _layout(rep.html, width, tmp_path / "profile")
    assert not seen["page_scrolls"], seen["key_tables"]
    assert len(seen["key_tables"]) == 2
    for t in seen["key_tables"]:
        assert not t["scrolls"], f"a key-numbers table scrolls sideways at {width} px: {t}"
        assert t["right"] <= t["box_right"] + 1 and not t["clipped"], t
    assert "Clinical noise" in seen["key_headings"] and "Misleading context" in seen["key_headings"]
    # one seeded Type 1 probe per item: no item-clustered interval, so no note about one
    assert "items:" not in seen["key_text"]
    # the suite's path as a reader can use it, not this machine's absolute one
    assert "Path: /" not in seen["facts_text"] and f'"path": "{runs}' not in seen["facts_text"]
    assert "Path: ../suite" in seen["facts_text"] and "Path: ../noise-suite" in seen["facts_text"]
