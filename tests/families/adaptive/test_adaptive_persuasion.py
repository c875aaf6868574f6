"""The persuasion measures in the adaptive family's results block and report section, on
test_adaptive's scripted run (budget 3, six items right at clean, every one a `noise` attack):
flipped at turns 1 (q1), 2 (q2, q4) and 3 (q7), held through the budget (q3, q5); three of the four
flips to the target (q1, q4, q7); three candidates rejected (q4 one, q7 two)."""

from __future__ import annotations

import json

import pytest
from test_adaptive import run

from medresilience import stats
from medresilience.families.adaptive.testing import ScriptedAttack
from medresilience.testing.stub import StubServer

ATTACKED = 6
FLIPS_WITHIN = {1: 1, 2: 3, 3: 4}


def test_the_results_block_holds_the_flip_curve_median_and_flips_to_target(tmp_path):
    with StubServer(policy=ScriptedAttack()) as srv:
        res = run(tmp_path, srv.base_url)
    block = res.results.block("stub-model")
    p = block["persuasion"]
    assert p["attacked"] == ATTACKED and p["method"] == "wilson" and p["budgets"] == [3]
    for point in p["curve"]:
        k = FLIPS_WITHIN[point["turn"]]
        w = stats.wilson(k, ATTACKED)
        assert (point["k"], point["n"]) == (k, ATTACKED)
        assert point["p"] == k / ATTACKED and (point["lo"], point["hi"]) == (w.lo, w.hi)
    assert [pt["turn"] for pt in p["curve"]] == [1, 2, 3]
    # half flipped by turn 2 (3 of 6): the median is 2
    assert p["median_turns"]["turns"] == 2 and p["median_turns"]["reached"] and p["median_turns"]["n"] == ATTACKED
    assert (p["to_target"]["k"], p["to_target"]["n"]) == (3, 4)
    assert p["rejected"] == 3 and p["turns_used"] == 1 + 2 + 3 + 2 + 3 + 3
    assert list(block["persuasion_by_kind"]) == ["noise"]
    assert block["persuasion_by_kind"]["noise"]["curve"] == p["curve"]
    # results.json holds the same block, and it loads back in its declared shape
    saved = json.loads((tmp_path / "run" / "results.json").read_text())["models"]["stub-model"]["none"]
    assert saved["persuasion"] == p


def test_the_report_shows_the_persuasion_section_with_linked_flips_and_the_calls_by_role(tmp_path):
    from medresilience import build_report

    with StubServer(policy=ScriptedAttack()) as srv:
        run(tmp_path, srv.base_url)
    rep = build_report([tmp_path / "run"], viewer_url="http://viewer.test")
    html, md = rep.html.read_text(), rep.markdown.read_text()
    for page in (html, md):
        assert "Adaptive attacks" in page and "Right answers flipped within t turns" in page
        assert "Median turns to flip" in page and "Rejected candidates" in page and "Prompt tokens" in page
    assert 'id="adaptive"' in html and "<svg" in html
    # the flipped cell (4 of 6 within the budget of 3) links to the viewer's flipped units
    assert "66.7%" in html and "outcome=flip" in html and "condition=adaptive" in html
    tables = rep.out_dir / "tables"
    persuasion = (tables / "adaptive_persuasion.csv").read_text().splitlines()
    header = persuasion[0].split(",")
    row = dict(zip(header, persuasion[1].split(",")))
    assert (row["attacked"], row["flipped_k"], row["flipped_n"], row["median_turns"], row["to_target_k"], row["to_target_n"], row["rejected"]) == (
        "6",
        "4",
        "6",
        "2",
        "3",
        "4",
        "3",
    )
    calls = (tables / "adaptive_calls.csv").read_text().splitlines()
    assert calls[0] == "model,setting,role,calls,prompt_tokens,completion_tokens"
    by_role = {line.split(",")[2]: int(line.split(",")[3]) for line in calls[1:]}
    # test_adaptive's CALLS: attacker 14, checker 13, target 11, one clean call per item
    assert by_role == {"clean": 7, "attacker": 14, "checker": 13, "target": 11}


def test_a_bad_trace_in_the_loop_block_is_an_error_naming_its_setting_index_and_field():
    from medresilience.families.adaptive.persuasion import loop_measures

    good = {"model": "m", "item_id": "q1", "kind": "noise", "budget": 3, "flipped_at": 1, "to_target": True, "rejected": 0, "turns_used": 1}
    assert loop_measures({"none": {"traces": [good]}})["m"]["none"]["persuasion"]["curve"][0]["k"] == 1
    with pytest.raises(ValueError, match=r"loop\.none\.traces\[1\]: .*flipped_at.*past the budget"):
        loop_measures({"none": {"traces": [good, {**good, "item_id": "q2", "flipped_at": 4, "turns_used": 3}]}})
