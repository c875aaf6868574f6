"""An item's passage (PubMedQA's abstract, kept by the importer in meta["context"]) is asked with
the question in every family, as inspect_evals and lm-eval ask PubMedQA; `-O context=none` leaves
it out, and an item without a passage is asked exactly as before. End to end: `medres eval` on a
suite of the PubMedQA sample sends the abstract to the model (the stub server's request log)."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from medresilience import EvalOptions, evaluate, parse_model_spec
from medresilience.family import families
from medresilience.records import Item, SuiteManifest
from medresilience.sources.passage import HEADER
from medresilience.sources.pubmedqa import read_pubmedqa
from medresilience.suite import Suite
from medresilience.testing.stub import StubServer

REQUIRED = {"presupposition": {"judge": "openai:judge,base_url=http://127.0.0.1:9"}, "adaptive": {"attacker": "openai:attacker,base_url=http://127.0.0.1:9"}}


@pytest.fixture(scope="module")
def items() -> list[Item]:
    return list(read_pubmedqa(FIXTURES / "pubmedqa_sample.json"))


def _user(messages: list[dict[str, str]]) -> str:
    return next(m["content"] for m in messages if m["role"] == "user")


@pytest.mark.parametrize("family", [f.name for f in families()])
def test_every_family_asks_a_pubmedqa_item_with_its_abstract(family, items):
    fam = next(f for f in families() if f.name == family)
    item = items[0]
    abstract = item.meta["context"]
    assert abstract.startswith("OBJECTIVE: To assess whether mobilisation")
    scoring = "judge" if family == "presupposition" else "letter"
    shown = _user(fam.evaluation.render(item, None, scoring, fam.parse_options(REQUIRED.get(family, {}))))
    assert f"{HEADER}\n{abstract}" in shown and shown.index(abstract) < shown.index(item.question)
    alone = _user(fam.evaluation.render(item, None, scoring, fam.parse_options({**REQUIRED.get(family, {}), "context": "none"})))
    assert abstract not in alone and item.question in alone
    # an item without a passage is asked as it always was
    bare = item.model_copy(update={"meta": {}})
    assert _user(fam.evaluation.render(bare, None, scoring, fam.parse_options(REQUIRED.get(family, {})))) == alone


def test_the_passage_comes_before_the_misleading_context_and_the_question(items):
    from medresilience.families.misleading.delivery import MisleadingOptions, render
    from medresilience.families.misleading.probe import ContextSentence, MisleadingProbe

    item = items[0]
    probe = MisleadingProbe(
        id=f"{item.id}:t1",
        item_id=item.id,
        condition="type1",
        content_type="spurious_anchoring",
        bundle_id="b1",
        provenance="neutral",
        target="B",
        context=(ContextSentence(option="B", text="A false claim."),),
    )
    for position in ("after_options", "before_question"):
        text = _user(render(item, probe, "letter", MisleadingOptions(context_position=position)))
        order = (
            [text.index(s) for s in (HEADER, "A false claim.", "Question:")]
            if position == "before_question"
            else [text.index(s) for s in (HEADER, "Question:", "Options:", "A false claim.")]
        )
        assert order == sorted(order), position
    open_text = _user(render(item, probe, "letter", MisleadingOptions(answer="open", judge="openai:j,base_url=http://127.0.0.1:9")))
    assert open_text.index(HEADER) < open_text.index("A false claim.") < open_text.index("Question:")


def test_eval_sends_the_abstract_and_context_none_does_not(items, tmp_path):
    suite = Suite(SuiteManifest(name="pubmedqa-clean", family="misleading"), items, [])
    suite.save(tmp_path / "suite")
    suite = Suite.load(tmp_path / "suite")
    sent: list[str] = []

    def answerer(messages, request):
        sent.append(_user(messages))
        return "Answer: A"

    with StubServer(policy=answerer) as srv:
        spec = parse_model_spec(f"openai:m,base_url={srv.base_url}")
        evaluate(suite, [spec], tmp_path / "with", EvalOptions())
        with_abstract = list(sent)
        sent.clear()
        evaluate(suite, [spec], tmp_path / "without", EvalOptions(family={"context": "none"}))
    assert len(with_abstract) == len(items) == len(sent)
    for it in items:
        assert any(it.meta["context"] in s and it.question in s for s in with_abstract), it.id
        assert not any(it.meta["context"] in s for s in sent)
