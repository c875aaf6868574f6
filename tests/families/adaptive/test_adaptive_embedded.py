"""The adaptive family end to end on the embedded default model (Qwen2.5-Coder-1.5B): five items of
the bundled sample, the model attacking itself over two turns. What a 1.5B attacker writes is not
the point (most of its candidates are refused or too weak to move anything); the point is that every
stage runs on a real model: the clean answers, attacker turns read as candidates or rejected with a
reason, checker verdicts read or counted unread, answers to stressed items, one trace per attacked
item and a rerun that makes no call."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from conftest import needs_qwen, needs_xllamacpp
from medresilience.cli import app
from medresilience.families.adaptive.traces import TRACE_KEYS, full_traces
from medresilience.run.bundled_suite import sample_suite_dir
from medresilience.store import Store


@pytest.mark.slow
@needs_xllamacpp
@needs_qwen
def test_five_items_attacked_by_the_embedded_model_over_two_turns(tmp_path):
    r = CliRunner().invoke(app, ["build", "adaptive", "--from", str(sample_suite_dir()), "--out", str(tmp_path / "suite"), "--limit", "5"])
    assert r.exit_code == 0, r.output
    out = tmp_path / "run"
    args = ["eval", "--suite", str(tmp_path / "suite"), "--model", "embedded", "--attacker", "embedded", "-O", "budget=2", "--out", str(out)]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    res = json.loads((out / "results.json").read_text())
    loop = res["loop"]["none"]
    counts = loop["counts"]["embedded-qwen"]
    assert counts["items"] == 5 and counts["attacked"] == len(loop["traces"]) == counts["right_at_clean"]
    assert all(tuple(t) == TRACE_KEYS and t["budget"] == 2 and 1 <= t["turns_used"] <= 2 for t in loop["traces"])
    with Store(out / "store.sqlite") as store:
        full = full_traces(store)
    turns = [turn for t in full for turn in t["turns"]]
    # every turn taken ended one way, and a rejected one says why
    assert all(turn.get("outcome") in ("rejected", "held", "flipped", "unread") for turn in turns)
    assert all(turn["problems"] for turn in turns if turn["outcome"] == "rejected")
    assert counts["calls"]["attacker"]["calls"] == len(turns) and counts["calls"]["clean"]["calls"] == 5
    print(json.dumps({"counts": counts, "turns": [(t["item_id"], [(x["kind"], x["outcome"], x["problems"][:1]) for x in t["turns"]]) for t in full]}, indent=1))
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and "calls: 0 made" in again.output, again.output
