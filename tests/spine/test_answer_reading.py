"""Answer reading against a table of realistic replies (tests/data/answer_reading.jsonl): each row
is a reply, the option labels it was asked with and the label a careful reader assigns (null when
the reply is ambiguous or has no answer). Every row must read as expected."""

from __future__ import annotations

import json
import math
from collections import Counter

from conftest import TESTS
from medresilience.scoring import choice_from_logprobs, extract_letter

TABLE = TESTS / "data" / "answer_reading.jsonl"


def _rows() -> list[dict]:
    return [json.loads(line) for line in TABLE.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_table_is_well_formed():
    rows = _rows()
    assert len(rows) >= 80
    assert len({r["id"] for r in rows}) == len(rows), "ids must be unique"
    for r in rows:
        assert set(r) == {"id", "letters", "reply", "expected", "why"}, r["id"]
        assert r["expected"] is None or r["expected"] in r["letters"], r["id"]
    # every category is covered, with valid and invalid rows among them
    categories = Counter(r["id"].split("-")[0] for r in rows)
    assert {"terse", "ans", "json", "md", "tex", "rsn", "rev", "hdg", "ref", "txt", "low", "ten", "num", "ctx", "art"} <= set(categories)
    assert any(r["expected"] is None for r in rows) and any(r["expected"] for r in rows)


def test_every_reply_reads_as_a_careful_reader_reads_it():
    failures = []
    for r in _rows():
        got = extract_letter(r["reply"], r["letters"])
        if got != r["expected"]:
            failures.append(f"{r['id']}: expected {r['expected']!r}, got {got!r} ({r['why']})\n    reply: {r['reply']!r}")
    if failures:
        print("\n".join(failures))
    assert not failures, f"{len(failures)} misread replies:\n" + "\n".join(failures)


def test_logprob_reads_numbered_labels():
    tops = [{"3": -0.2, " 1": -1.2, "(2": -2.5, "Answer": -0.1, "10": -0.3, "6": -0.05}]
    label, dist = choice_from_logprobs(tops, "12345")
    assert label == "3"
    assert set(dist) == {"1", "2", "3"}
    assert math.isclose(sum(dist.values()), 1.0)
    for digit in "123456789":
        assert choice_from_logprobs([{digit: -0.5, "The": -0.1}], "123456789")[0] == digit
    assert choice_from_logprobs([{"A": -0.1}], "12345") == (None, {})


def test_the_letter_scorer_reads_with_its_items_question():
    # the runner's scorer passes the item's question to the reader: an option called wrong answers
    # an item asking for the wrong option, and only such an item
    from medresilience.records import Item
    from medresilience.scoring.mcq import LetterScorer

    options = {"A": "救死扶伤", "B": "仁爱救人", "C": "清廉正直", "D": "认真负责", "E": "不畏权贵"}
    reply = "A、B、C、E都是古代医德思想。因此D选项是不正确的。"
    wrong = Item(id="q1", source="test", question="下列各项，不属中国古代医德思想内容的是（  ）。", options=options, answer="D")
    right = Item(id="q2", source="test", question="下列各项，属于中国古代医德思想内容的是（  ）。", options=options, answer="A")
    got = LetterScorer(wrong).read(reply, "stop")
    assert (got.label, got.status, got.value) == ("D", "valid", 1.0)
    got = LetterScorer(right).read(reply, "stop")
    assert (got.label, got.status) == (None, "invalid") and got.detail["unread"] == "no_answer"
