"""The report's parts (report/parts.py) and their renderers: one table of cells written as HTML
(escaped, each linked cell's link and small print kept), as Markdown and as a data frame from the
same values; the one difference figure drawn from its values; a section's blocks in order."""

from __future__ import annotations

import math
from html.parser import HTMLParser

import pandas as pd

from medresilience.report import parts as P
from medresilience.report.parts import Column, DifferenceFigure, DifferencePanel, DifferencePoint, Heading, ItemList, Paragraph, Section, Table
from medresilience.report.render_data import table_frame
from medresilience.report.render_html import cell_html, section_html, table_html
from medresilience.report.render_markdown import section_markdown, table_markdown


def sample() -> Table:
    return Table(
        "sample",
        (
            Column("model", "Model <m>", note='the model\'s "label"'),
            Column("setting", "Setting"),
            Column("acc", "Accuracy", numeric=True),
            Column("flips", "Flips", numeric=True),
            Column("hidden", "Hidden", shown=False),
        ),
        (
            (
                P.text("m<1>", strong=True),
                P.Cell("no mitigation", "none"),
                P.rate(0.712, 0.654, 0.764, 250, "http://127.0.0.1:1/units?run=0&model=m%3C1%3E", 178),
                P.count(12, "http://127.0.0.1:1/units?run=0&outcome=flip", tail=" of 40"),
                P.count(3),
            ),
            (P.text("m2"), P.Cell("caution", "caution"), P.rate(None, None, None, 0), P.count(0, "http://x/units"), P.count(None)),
        ),
        row_classes=("sig", ""),
    )


class Cells(HTMLParser):
    """(tag, attrs) of every start tag, and the text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text = ""

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text += data


def test_a_table_renders_as_html_escaped_with_its_links_and_small_print():
    out = str(table_html(sample()))
    assert "<b>m&lt;1&gt;</b>" in out and "Model &lt;m&gt;" in out and 'title="the model&#x27;s &quot;label&quot;"' in out
    assert (
        '<a class="units" href="http://127.0.0.1:1/units?run=0&amp;model=m%3C1%3E" title="the units behind this rate, in the viewer">71.2%</a>'
        '<br><span class="n"><span class="nb">[65.4, 76.4]</span> <span class="nb">n=250</span></span>'
    ) in out
    assert '<a class="units" href="http://127.0.0.1:1/units?run=0&amp;outcome=flip" title="the units behind this count, in the viewer">12</a> of 40' in out
    assert "Hidden" not in out and ">3<" not in out  # a data-only column is not shown
    assert '<tr class="sig">' in out and '<td class="num">— <span class="n"><span class="nb">n=0</span></span></td>' in out
    parsed = Cells()
    parsed.feed(out)
    links = [a["href"] for t, a in parsed.tags if t == "a"]
    assert links == ["http://127.0.0.1:1/units?run=0&model=m%3C1%3E", "http://127.0.0.1:1/units?run=0&outcome=flip"]  # a count of 0 is not linked


def test_the_same_table_as_markdown_and_as_data():
    md = table_markdown(sample())
    assert md.splitlines()[0] == "| Model <m> | Setting | Accuracy | Flips |"
    assert "| m<1> | no mitigation | 71.2% [65.4, 76.4] n=250 | 12 of 40 |" in md
    df = table_frame(sample())
    assert list(df.columns) == ["model", "setting", "acc", "acc_lo", "acc_hi", "acc_n", "flips", "hidden"]
    first = df.iloc[0]
    assert (first["setting"], first["acc"], first["acc_lo"], first["acc_n"], first["flips"], first["hidden"]) == ("none", 0.712, 0.654, 250, 12, 3)
    assert pd.isna(df.iloc[1]["acc"]) and df.iloc[1]["acc_n"] == 0


def test_a_columns_fields_name_its_data_columns():
    t = Table("t", (Column("x_p", "X", fields={"lo": "x_lo"}),), ((P.rate(0.5, 0.4, 0.6, 10),),))
    assert list(table_frame(t).columns) == ["x_p", "x_lo"]


def test_each_linked_cell_says_how_many_units_its_link_names():
    linked = sample().linked()
    assert [(c.key, cell.units) for c, cell in linked] == [("acc", 178), ("flips", 12)]


def test_a_row_of_the_wrong_width_is_refused():
    import pytest

    with pytest.raises(ValueError, match="row 0 has 1 cells for 2 columns"):
        Table("t", (Column("a", "A"), Column("b", "B")), ((P.text("x"),),))


def test_numbers_are_written_one_way():
    assert P.change(0.012, 0.004, 0.02).shown == "+1.2 pp [+0.4, +2.0]"
    assert P.change(0.31, 0.12, 0.48, "score").shown == "+0.31 [+0.12, +0.48]"
    assert P.score(0.31, 0.12, 0.48, 40).shown == "+0.31 [+0.12, +0.48] n=40"
    assert P.rate(float("nan"), None, None, None).text == "—" and P.count(float("nan")).text == "—"
    assert math.isclose(P.rate(0.25, 0.1, 0.4, 8, stacked=False).value, 0.25)


def test_a_section_renders_its_blocks_in_order_with_one_difference_figure():
    fig = DifferenceFigure(
        "cmp",
        "B minus A",
        "B - A with 95% intervals.",
        (
            DifferencePanel(
                "Accuracy, B - A (pp)", (DifferencePoint("b vs a", "Clean", 0.05, -0.01, 0.11), DifferencePoint("b vs a", "Type 1", -0.1, None, None))
            ),
            DifferencePanel("PCS, B - A", (DifferencePoint("b vs a", "PCS", 0.2, 0.1, 0.3),), scale=1.0),
        ),
    )
    sec = Section(
        "s",
        "A section",
        (
            Paragraph("Read with `-O extract=SPEC` <here>."),
            Heading("Sub"),
            sample(),
            ItemList((P.Cell("u1", href="http://x/unit/0/u1", tail=": read A"),), lead="Disagreements:"),
            fig,
        ),
    )
    out = str(section_html(sec))
    assert out.startswith("<p class='note'>Read with <code>-O extract=SPEC</code> &lt;here&gt;.</p><h3>Sub</h3><div class=\"scroll\">")
    assert '<p>Disagreements:</p><ul><li><a class="units" href="http://x/unit/0/u1"' in out
    assert (
        '<figure><svg role="img" aria-label="B minus A" class="figure" id="fig-cmp"' in out
        and "<figcaption>B - A with 95% intervals.</figcaption></figure>" in out
    )
    assert out.count("<svg") == 1
    md = section_markdown(sec)
    assert md.startswith("## A section\n\nRead with `-O extract=SPEC` <here>.\n\n### Sub\n\n| Model <m> |")
    assert "- b vs a, Clean (Accuracy, B - A (pp)): +5.0 pp [-1.0, +11.0]" in md and "- b vs a, PCS (PCS, B - A): +0.20 [+0.10, +0.30]" in md


def test_a_difference_figure_with_nothing_to_draw_is_left_out():
    fig = DifferenceFigure("e", "t", "c", (DifferencePanel("x", (DifferencePoint("g", "l", None, None, None),)),))
    assert "<figure" not in str(section_html(Section("s", "S", (fig,))))


def test_a_drawn_figure_and_an_anchored_heading():
    """A family's own figure is inlined as drawn with its caption (Markdown: its title and caption);
    a heading with an anchor is a link target; one cell renders alone as the table shows it."""
    from medresilience.report.plots import plt, to_svg

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    drawn = P.DrawnFigure("fam-heat", "A heatmap", "Rows: generators <g>.", to_svg(fig, "fam-heat", "A heatmap"))
    sec = Section("s", "S", (Heading("By generator", "fam-by-generator"), drawn))
    out = str(section_html(sec))
    assert out.startswith('<h3 id="fam-by-generator">By generator</h3><figure><svg role="img" aria-label="A heatmap" class="figure" id="fig-fam-heat"')
    assert out.endswith("<figcaption>Rows: generators &lt;g&gt;.</figcaption></figure>") and out.count("<svg") == 1
    assert section_markdown(sec) == "## S\n\n### By generator\n\n*A heatmap.* Rows: generators <g>."
    cell = str(cell_html(P.score(0.31, 0.12, 0.48, 40, "http://x/units?a=1&b=2")))
    assert cell.startswith('<a class="units" href="http://x/units?a=1&amp;b=2"') and "+0.31" in cell and "[+0.12, +0.48]" in cell and "n=40" in cell


def test_a_profile_cell_names_the_units_of_its_rate(tmp_path):
    """A rate shown as 1 - rate (resilience: 1 - ASR) links to the rate's own units (the flips):
    its link names n - k of them; a rate shown as it is names its k, or its n when no outcome
    selects the units (clean accuracy: every answered unit of the condition)."""
    from medresilience.report.html import viewer_links
    from medresilience.report.profile import COLUMNS, profile_section
    from medresilience.report.rundir import RunData
    from medresilience.view.address import VIEWER_URL

    rows = [
        ("m", "none", "misleading", "misleading:clean_acc", "Clean", 0.75, 0.6, 0.85, 40, "a"),
        ("m", "none", "misleading", "misleading:type1_asr", "Resilience", 0.9, 0.8, 0.95, 30, "a"),
        ("m", "none", "noise", "noise:clean_acc", "Noise clean", 0.5, 0.3, 0.7, 10, "b"),
    ]
    df = pd.DataFrame(rows, columns=COLUMNS)
    runs = [RunData(tmp_path / "a", "a", {}, {"models": {"m": {}}}), RunData(tmp_path / "b", "b", {}, {"models": {"m": {}}})]
    with viewer_links(VIEWER_URL, runs):
        sec = profile_section(df)
    (table,) = sec.tables()
    got = {c.key: (cell.units, cell.href) for c, cell in table.linked()}
    assert got["misleading:clean_acc"][0] == 40 and "state=" in got["misleading:clean_acc"][1]
    assert got["misleading:type1_asr"][0] == 3 and "outcome=flip" in got["misleading:type1_asr"][1]  # 30 - 27 flips
    assert got["noise:clean_acc"][0] == 10 and "run=1" in got["noise:clean_acc"][1]


def test_a_scatter_figure_is_drawn_from_its_points_and_written_as_its_values():
    fig = P.ScatterFigure(
        "gain-cost",
        "Gain against cost",
        "Each point with its 95% intervals.",
        "Gain (pp)",
        "Cost (pp)",
        (
            P.ScatterPoint("Family A: x vs y", "m1 (caution)", 12.5, -2.0, 4.0, 20.0, -5.0, 1.0),
            P.ScatterPoint("Family B: u vs v", "m1 (caution)", -3.0, 1.5),
        ),
    )
    out = str(section_html(Section("s", "S", (fig,))))
    assert out.count("<svg") == 1 and 'id="fig-gain-cost"' in out and "<figcaption>Each point with its 95% intervals.</figcaption>" in out
    assert "Gain (pp)" in out and "Family B: u vs v" in out and "m1 (caution)" in out  # the figure's text stays text
    md = section_markdown(Section("s", "S", (fig,)))
    assert "- m1 (caution) (Family A: x vs y): Gain (pp) +12.5 [+4.0, +20.0]; Cost (pp) -2.0 [-5.0, +1.0]" in md
    assert "- m1 (caution) (Family B: u vs v): Gain (pp) -3.0; Cost (pp) +1.5" in md
    empty = P.ScatterFigure("e", "t", "c", "x", "y", ())
    assert "<figure" not in str(section_html(Section("s", "S", (empty,))))


def test_blocks_side_by_side_are_one_row_in_the_page_and_in_order_elsewhere():
    other = Table("other", (Column("x", "X"),), ((P.count(7, "http://x/units?run=0"),),))
    row = P.SideBySide(((Heading("Left"), sample()), (Heading("Right"), other)), "pair")
    sec = Section("s", "S", (Paragraph("Before."), row))
    out = str(section_html(sec))
    assert out.count("class='pair'") == 1 and out.index("<h3>Left</h3>") < out.index("<h3>Right</h3>")
    assert out.index("class='pair'") < out.index("<h3>Left</h3>") and out.count("<table>") == 2
    md = section_markdown(sec)
    assert md.index("### Left") < md.index("| Model <m> |") < md.index("### Right") < md.index("| X |")
    # the tables side by side are the section's tables: their links are checked like any other
    assert [t.name for t in sec.tables()] == ["sample", "other"]


def test_cards_a_folded_tables_note_and_strong_prose_render_in_every_output():
    """Key numbers as cards (a number of harm in the warning colour), a table folded from its first
    row with its small print inside the fold, and prose with strong and code spans: the same values
    in the page and in Markdown."""
    cards = P.Cards((P.Card("Clean accuracy", "71.2%", "95% CI 65.4–76.4, n=250"), P.Card("Type 1 ASR <1>", "12.0%", "", alert=True)))
    folded = Table("t", (Column("m", "Model"),), ((P.text("m"),),), fold="By source dataset: rates and tests", open_up_to=0, note="Holm: p < 0.05.")
    prose = Paragraph("Across **2 models** the `none` setting flips **12.0%**.", "lead")
    sec = Section("s", "S", (prose, cards, folded))
    html = str(section_html(sec))
    assert "<p class='lead'>Across <b>2 models</b> the <code>none</code> setting flips <b>12.0%</b>.</p>" in html
    assert '<div class="card"><div class="label">Clean accuracy</div><div class="value">71.2%</div><div class="sub">95% CI 65.4–76.4, n=250</div></div>' in html
    assert '<div class="card alert"><div class="label">Type 1 ASR &lt;1&gt;</div>' in html
    # folded even with one row, its note inside the fold after the table
    assert "<details><summary>By source dataset: rates and tests (1 rows)</summary>" in html
    assert html.index("</table></div><p class='note'>Holm: p &lt; 0.05.</p></details>") > html.index("<summary>")
    md = section_markdown(sec)
    assert "Across **2 models** the `none` setting flips **12.0%**." in md
    assert "- Clean accuracy: **71.2%** (95% CI 65.4–76.4, n=250)\n- Type 1 ASR <1>: **12.0%**" in md
    assert "| m |\n\nHolm: p < 0.05." in md


def test_a_p_value_and_a_paired_test_are_written_one_way():
    assert (P.p_value(0.0461).text, P.p_value(0.0031).text, P.p_value(2e-5).text, P.p_value(float("nan")).text) == ("0.046", "0.0031", "2.0e-05", "—")
    assert P.paired_test("mcnemar_exact", 0.046).shown == "mcnemar_exact, p 0.046"
    assert P.paired_test(None, 0.046).text == P.paired_test("mcnemar_exact", None).text == "—"
    linked = P.paired_test("mcnemar_exact", 0.046, 12, 0, "http://x/units?b", "http://x/units?c")
    assert linked.shown == "mcnemar_exact: 12 / 0, p 0.046" and linked.value == 0.046
    # b links to its 12 units; c, a count of none, is not linked
    assert [(a.text, a.href, a.units) for a in linked.after] == [("12", "http://x/units?b", 12), ("0", None, None)]
    assert str(cell_html(linked)).count("<a ") == 1
