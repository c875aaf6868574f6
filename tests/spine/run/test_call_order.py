"""The order a model's calls are queued in (call_order.in_rounds, applied by the planner): an
item's prompts stay together; with several calls in flight, the items are taken that many at a
time and their prompts queued in rounds, so the calls in flight are of different items."""

from __future__ import annotations

from medresilience.models.spec import parse_model_spec
from medresilience.run.bundled_suite import sample_suite
from medresilience.run.call_order import in_rounds
from medresilience.run.evaluation import evaluate
from medresilience.run.runner import EvalOptions, plan
from medresilience.testing.stub import StubServer, message_text


def test_in_rounds_keeps_an_items_units_together():
    units = [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2), ("c", 1), ("c", 2), ("c", 3)]
    item = lambda u: u[0]  # noqa: E731
    assert in_rounds(units, 1, item) == units
    assert in_rounds(units, 2, item) == [("a", 1), ("b", 1), ("a", 2), ("b", 2), ("a", 3), ("c", 1), ("c", 2), ("c", 3)]
    assert sorted(in_rounds(units, 3, item)) == sorted(units)


def _plan(concurrency: int):
    spec = parse_model_spec(f"openai:m,base_url=http://127.0.0.1:9/v1,concurrency={concurrency}")
    return [(p.unit.item_id, p.unit.condition) for p in plan(sample_suite(), [spec], EvalOptions(limit=4))]


def test_the_planner_queues_an_items_prompts_in_rounds():
    one, two = _plan(1), _plan(2)
    assert sorted(one) == sorted(two) and len(one) == 12  # the same calls, in another order
    items = [i for i, _ in one[::3]]
    assert one[:3] == [(items[0], "clean"), (items[0], "type1"), (items[0], "type2")]
    assert two[:6] == [(items[0], "clean"), (items[1], "clean"), (items[0], "type1"), (items[1], "type1"), (items[0], "type2"), (items[1], "type2")]


def test_a_real_run_sends_them_in_that_order(tmp_path):
    """One call at a time to a real server: its requests arrive item by item, clean first."""
    seen: list[str] = []

    def policy(messages, request):
        text = message_text(messages[-1])
        seen.append(text.split("\n", 1)[0] + ("|ctx" if "Additional context" in text else ""))
        return "Answer: A"

    with StubServer(policy=policy) as srv:
        evaluate(sample_suite(), [parse_model_spec(f"openai:m,base_url={srv.base_url},concurrency=1")], tmp_path / "run", EvalOptions(limit=3))
    assert len(seen) == 9
    for i in range(0, 9, 3):
        assert seen[i] == seen[i + 1].removesuffix("|ctx") == seen[i + 2].removesuffix("|ctx") and not seen[i].endswith("|ctx")
