"""The viewer's unit page shows the item's answer key (the gold option's letter and text), read
from the run's suite, on the clean and the stressed units alike; a run whose suite is gone says
it has none."""

from __future__ import annotations

import html
import re
import shutil

from medresilience.models.spec import parse_model_spec
from medresilience.run.bundled_suite import sample_suite
from medresilience.run.evaluation import evaluate
from medresilience.run.runner import EvalOptions
from medresilience.testing.stub import StubServer
from medresilience.view.export import export_site
from medresilience.view.query import close_all, open_runs


def _pages(run, out):
    runs = open_runs([run])
    try:
        export_site(runs, out, max_units=20)
    finally:
        close_all(runs)
    return out


def test_a_unit_page_shows_the_answer_key(tmp_path):
    mine = sample_suite()
    mine.manifest = mine.manifest.model_copy(update={"name": "mine"})  # not the bundled suite, which a run always finds
    suite = mine.save(tmp_path / "suite")
    from medresilience.suite import Suite

    s = Suite.load(suite)
    with StubServer() as srv:
        evaluate(s, [parse_model_spec(f"openai:m,base_url={srv.base_url}")], tmp_path / "run", EvalOptions(limit=2))
    site = _pages(tmp_path / "run", tmp_path / "site")
    keys = {f"{it.answer}. {it.options[it.answer]}" for it in s.items.values() if it.id in {"bm-001", "bm-002"}}
    pages = sorted(site.glob("unit-r0-*.html"))
    assert len(pages) == 6  # 2 items x clean, Type 1, Type 2
    for page in pages:
        text = page.read_text()
        shown = re.search(r'<p id="answer-key">Answer key: <strong>(.*?)</strong>', text)
        assert shown and html.unescape(shown.group(1)) in keys, page.name
        item = re.search(r"item <strong>(.*?)</strong>", text).group(1)
        it = s.items[item]
        assert html.unescape(shown.group(1)) == f"{it.answer}. {it.options[it.answer]}"

    shutil.rmtree(suite)  # the suite gone: no key, and the page says so
    site2 = _pages(tmp_path / "run", tmp_path / "site2")
    text = next(site2.glob("unit-r0-*.html")).read_text()
    assert "Answer key:" not in text and "No answer key" in text
