"""The comparison page's parts (report/compare.py): a row of paired differences becomes cells, a
paired test's discordant counts b and c each linked to their units on one line, the table folded as
the family asks, and the page's HTML and Markdown written from the same cells."""

from __future__ import annotations

import math
from html.parser import HTMLParser

import pandas as pd

from medresilience.report.compare import CompareColumn, CompareSpec, compare_table, holm_p, paired_test
from medresilience.report.parts import Cell, Column, Table, change, count, rate, text
from medresilience.report.render_html import table_html
from medresilience.report.render_markdown import table_markdown

B_URL, C_URL = "http://127.0.0.1:1/units?run=1&outcome=b", "http://127.0.0.1:1/units?run=1&outcome=c"


def row(**over) -> dict:
    r = {
        "pair": "m-b vs m-a",
        "metric": "pcr",
        "a_p": 0.412,
        "a_lo": 0.216,
        "a_hi": 0.64,
        "a_n": 17,
        "diff": -0.176,
        "lo": -0.471,
        "hi": 0.118,
        "test": "mcnemar_exact",
        "test_b": 5,
        "test_c": 0,
        "p_test": 0.0625,
        "p_holm": 0.0312,
        "n": 17,
        "units": {"b": B_URL, "c": C_URL, "pairs": "http://127.0.0.1:1/units?run=1"},
    }
    return {**r, **over}


class Links(HTMLParser):
    """Each link's href and text, and the text of the whole."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[list[str]] = []
        self.text = ""
        self.href: str | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.href = dict(attrs)["href"]
            self.links.append([self.href, ""])

    def handle_endtag(self, tag):
        if tag == "a":
            self.href = None

    def handle_data(self, data):
        self.text += data
        if self.href is not None:
            self.links[-1][1] += data


def parsed(html: str) -> Links:
    p = Links()
    p.feed(html)
    return p


def test_a_paired_test_links_its_discordant_counts_on_one_line():
    cell = paired_test(row(test_c=2))
    t = Table("t", (Column("test", "Test", numeric=True),), ((cell,),))
    page = parsed(str(table_html(t)))
    assert page.links == [[B_URL, "5"], [C_URL, "2"]]
    assert page.text == "Testmcnemar_exact: 5 / 2, p 0.062"  # header, then the cell
    assert table_markdown(t).splitlines()[-1] == "| mcnemar_exact: 5 / 2, p 0.062 |"
    # the table lists both linked counts with the units each names; the cell's value is the p
    assert [(c.href, c.units) for _, c in t.linked()] == [(B_URL, 5), (C_URL, 2)]
    assert cell.value == 0.0625


def test_a_zero_count_is_not_linked_and_a_test_without_counts_or_a_row_without_a_test_say_so():
    page = parsed(str(table_html(Table("t", (Column("test", "Test"),), ((paired_test(row()),),)))))
    assert page.links == [[B_URL, "5"]] and "5 / 0, p 0.062" in page.text
    assert paired_test(row(test="permutation_exact", test_b=math.nan, test_c=math.nan, p_test=0.434)).shown == "permutation_exact, p 0.434"
    assert paired_test(row(test="", p_test=math.nan)).shown == "—"


def spec(fold: tuple[str, int] | None, significance: bool = True) -> CompareSpec:
    return CompareSpec(
        sides=lambda a, b: None,
        columns=(),
        table=(
            CompareColumn("pair", "Pair", lambda r: text(r["pair"])),
            CompareColumn("a", "A", lambda r: rate(r["a_p"], r["a_lo"], r["a_hi"], r["a_n"]), numeric=True),
            CompareColumn("diff", "B - A", lambda r: change(r["diff"], r["lo"], r["hi"]), numeric=True),
            CompareColumn("test", "Test", paired_test, numeric=True),
            CompareColumn("p_holm", "Holm p", holm_p, numeric=True),
            CompareColumn("n", "pairs", lambda r: count(r["n"], r["units"].get("pairs")), numeric=True),
        ),
        intro="",
        figure=lambda t: (),
        figure_caption="",
        figure_name="x",
        methods=(),
        heading="",
        fold=fold,
        significance=significance,
    )


def test_the_table_is_the_familys_cells_with_each_row_shaded_by_its_holm_p():
    frame = pd.DataFrame([{k: v for k, v in row().items() if k != "units"}, {k: v for k, v in row(p_holm=0.2, pair="x").items() if k != "units"}])
    units = [row()["units"], {}]
    t = compare_table(spec(None), frame, units)
    assert [c.header for c in t.columns] == ["Pair", "A", "B - A", "Test", "Holm p", "pairs"]
    assert t.row_classes == ("sig", "") and t.fold is None
    first, second = t.rows
    assert first[1].text == "41.2%" and first[1].note == ("[21.6, 64.0]", "n=17") and first[2].text == "-17.6 pp"
    assert first[4] == Cell("0.031", 0.0312) and first[5].href == units[0]["pairs"] and first[5].units == 17
    assert second[5].href is None and second[3].after[0].href is None  # a row without URLs links nothing
    assert compare_table(spec(None, significance=False), frame, units).row_classes == ()


def test_a_long_table_folds_open_up_to_the_familys_limit():
    frame = pd.DataFrame([{k: v for k, v in row().items() if k != "units"}] * 13)
    folded = str(table_html(compare_table(spec(("Differences table", 12)), frame)))
    opened = str(table_html(compare_table(spec(("Differences table", 24)), frame)))
    assert "<details><summary>Differences table (13 rows)</summary>" in folded
    assert "<details open><summary>Differences table (13 rows)</summary>" in opened
