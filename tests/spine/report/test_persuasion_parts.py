"""The adaptive measures as report parts (report/persuasion.py): the summary table's cells from
known traces (flipped within the budget, the median turns with "not reached", flips to the target,
rejected candidates), the curve's values per turn, the curve figure drawn by matplotlib with its
title and one legend entry per model, and the parts rendered as HTML, Markdown and data."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from medresilience.report.parts import DrawnFigure, Paragraph, Section, Table
from medresilience.report.persuasion import curve_figure, persuasion_parts, summary_table
from medresilience.report.render_data import table_frame
from medresilience.report.render_html import section_html
from medresilience.report.render_markdown import section_markdown
from medresilience.stats import wilson
from medresilience.stats.persuasion import AttackTrace, summarise


def traces() -> list[AttackTrace]:
    # model a: 6 of 10 flip at turn 2 (3 of them to the target); model b: 3 of 10 flip at turn 1
    out = [AttackTrace("a", f"q{i}", "context", 3, 2 if i < 6 else None, (i % 2 == 1) if i < 6 else None, 1, 2 if i < 6 else 3) for i in range(10)]
    out += [AttackTrace("b", f"q{i}", "context", 3, 1 if i < 3 else None, None, 0, 1 if i < 3 else 3) for i in range(10)]
    return out


def test_the_summary_table_holds_each_measure_with_its_interval_and_n():
    table = summary_table(summarise(traces()), link=lambda s: f"http://127.0.0.1:1/units?model={s.model}&outcome=flip")
    assert [c.key for c in table.columns] == ["model", "attacked", "flipped", "median_turns", "to_target", "rejected"]
    a, b = table.rows
    assert [c.shown for c in a] == ["a", "10", "60.0% [31.3, 83.2] n=10", "2 [2, not reached] n=10", "50.0% [18.8, 81.2] n=6", "10 in 24 turns"]
    assert [c.shown for c in b] == ["b", "10", "30.0% [10.8, 60.3] n=10", "not reached n=10", "— n=0", "0 in 24 turns"]
    ref = wilson(6, 10)
    assert (a[2].value, a[2].data["lo"], a[2].data["hi"]) == (ref.p, ref.lo, ref.hi)
    # the flipped cell links to the flips it counts
    linked = [(col.key, cell.href, cell.units) for col, cell in table.linked()]
    assert linked == [("flipped", "http://127.0.0.1:1/units?model=a&outcome=flip", 6), ("flipped", "http://127.0.0.1:1/units?model=b&outcome=flip", 3)]
    assert "same budget" in table.note and "Wilson" in table.note
    frame = table_frame(table)
    assert frame.loc[0, "flipped_lo"] == pytest.approx(ref.lo) and pd.isna(frame.loc[1, "median_turns"])


def test_differing_budgets_say_kaplan_meier_and_the_curve_table_has_a_column_per_turn():
    more = [*traces(), AttackTrace("b", "z1", "context", 5, 4, None, 0, 4), AttackTrace("b", "z2", "context", 5, None, None, 0, 5)]
    figure, summary, curve = persuasion_parts(summarise(more))
    assert isinstance(figure, DrawnFigure) and isinstance(summary, Table) and isinstance(curve, Table)
    assert "Kaplan-Meier" in summary.note and "Kaplan-Meier" in figure.caption
    assert [c.header for c in curve.columns] == ["Model", "Within 1", "Within 2", "Within 3", "Within 4", "Within 5"]
    a_row, b_row = curve.rows
    assert [c.shown for c in a_row[4:]] == ["—", "—"]  # past a's budget of 3
    assert b_row[1].shown == "25.0% [8.9, 53.2] n=12"  # 3 of 12, nothing censored yet: Wilson's


def test_the_curve_figure_is_drawn_from_the_summaries():
    fig = curve_figure(summarise(traces()))
    assert fig.name == "persuasion-curve" and fig.svg.startswith("<svg")
    assert 'id="fig-persuasion-curve"' in fig.svg and "<title>Right answers flipped within t turns</title>" in fig.svg
    assert "a (n=10)" in fig.svg and "b (n=10)" in fig.svg and "Attacker turns" in fig.svg
    assert len(re.findall(r"<path", fig.svg)) > 4


def test_the_parts_render_as_html_and_markdown():
    section = Section("persuasion", "Adaptive attacks", persuasion_parts(summarise(traces())))
    html = str(section_html(section))
    assert 'id="fig-persuasion-curve"' in html and "not reached" in html and 'href="http' not in html
    md = section_markdown(section)
    assert "| a | 10 | 60.0% [31.3, 83.2] n=10 | 2 [2, not reached] n=10 |" in md
    assert "*Right answers flipped within t turns.*" in md
    assert persuasion_parts([]) == (Paragraph("No attacked item: no model had an item right at clean to attack."),)
