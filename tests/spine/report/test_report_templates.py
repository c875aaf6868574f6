"""The report's HTML comes from Jinja2 templates: values are escaped as `html.esc` escapes them
(quotes included), HTML passed in as such is kept, the templates' layout adds no whitespace to the
page, and every template ships with the package."""

from __future__ import annotations

import tomllib

import pytest
from jinja2 import UndefinedError

from conftest import ROOT
from medresilience.report.html import page, run_facts
from medresilience.report.parts import Cell, Column, Table
from medresilience.report.render_html import table_html
from medresilience.report.rundir import RunData
from medresilience.report.templating import render

PKG = ROOT / "src" / "medresilience"


def test_page_escapes_text_as_esc_does_and_keeps_html():
    out = page("Gwet's <AC1>", ["<b>two</b> runs"], [("a&b", 'Rater\'s "view"', "<p>body</p>")], "<i>footer</i>")
    assert "<title>Gwet&#x27;s &lt;AC1&gt;</title>" in out
    assert "<h2>Rater&#x27;s &quot;view&quot;</h2>" in out and '<section id="a&amp;b">' in out
    assert "<p><b>two</b> runs</p>" in out and "<p>body</p></section>" in out and "<footer><i>footer</i></footer>" in out
    assert out.startswith('<!DOCTYPE html>\n<html lang="en"><head>') and out.endswith("</html>\n")


def test_template_layout_adds_no_whitespace_between_elements():
    out = page("t", [], [("a", "A", "x"), ("b", "B", "y")], "")
    assert '<nav class="toc"><a href="#a">A</a><a href="#b">B</a></nav><section id="a">' in out
    cells = table_html(Table("t", (Column("h", "h"), Column("n", "n", numeric=True)), ((Cell("1"), Cell("2", strong=True)),), ("sig",)))
    assert (
        cells
        == '<div class="scroll"><table><thead><tr><th>h</th><th class="num">n</th></tr></thead><tbody><tr class="sig"><td>1</td><td class="num"><b>2</b></td></tr></tbody></table></div>'
    )


def test_run_facts_escape_what_a_run_recorded(tmp_path):
    run = RunData(
        path=tmp_path,
        name="run <1>",
        config={"medresilience": "1.0", "python": "3.11", "options": {"note": "a'b"}},
        results={},
        notes=["model <x> had 'errors'"],
        last_execution={"called": 3, "cached": 1, "errors": 0, "seconds": 2.26},
    )
    out = run_facts([run], lambda u: u)
    assert "<h3>Run <code>run &lt;1&gt;</code></h3>" in out
    assert "<p class='warn'>model &lt;x&gt; had &#x27;errors&#x27;</p>" in out
    assert "<p>Options: <code>{&quot;note&quot;: &quot;a&#x27;b&quot;}</code></p>" in out
    assert "Last execution: 3 calls made, 1 reused from the store, 0 errors, 2.3s." in out
    assert "Secrets are never stored" not in out  # no model: no model table and no note about it


def test_a_missing_value_fails_rather_than_printing_nothing():
    with pytest.raises(UndefinedError):
        render("medresilience.report", "page.html.j2", title="t", subtitle=[], sections=[], footer="")


def test_every_template_ships_with_the_package():
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["medresilience"]
    shipped = {p for g in globs for p in PKG.glob(g)}
    templates = list(PKG.rglob("*.j2"))
    assert templates
    assert [p.relative_to(PKG).as_posix() for p in templates if p not in shipped] == []


def test_compiled_templates_are_kept_between_processes(tmp_path):
    """A second process renders the page from the compiled templates the first left in the user's
    temporary directory (no template compiled again), and renders the same page."""
    import os
    import subprocess
    import sys

    code = (
        "import jinja2\n"
        "compiled = []\n"
        "inner = jinja2.Environment.compile\n"
        "def counted(self, *a, **k):\n"
        "    compiled.append(1)\n"
        "    return inner(self, *a, **k)\n"
        "jinja2.Environment.compile = counted\n"
        "from medresilience.report.html import page\n"
        "out = page('t', ['x'], [('a', 'A', '<p>y</p>')], 'f')\n"
        "print(len(compiled), hash(out))\n"
    )
    env = dict(os.environ, TMPDIR=str(tmp_path), PYTHONHASHSEED="0")
    first, second = (subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.split() for _ in range(2))
    assert int(first[0]) > 0 and int(second[0]) == 0 and first[1] == second[1]
    assert list(tmp_path.glob("_jinja2-cache-*/__jinja2_*.cache"))


def test_a_compiled_template_that_cannot_be_kept_is_rendered_all_the_same(tmp_path):
    from jinja2 import DictLoader, Environment

    from medresilience.report.templating import _CompiledTemplates

    cache = _CompiledTemplates(str(tmp_path / "missing"))  # no such directory: every write fails
    env = Environment(loader=DictLoader({"t": "{{ x }}!"}), bytecode_cache=cache)
    assert env.get_template("t").render(x=1) == "1!"
