"""Structured answers (`EvalOptions.answer_format="schema"`, `-O answer_format=schema`), end to end
against the stub server on a real local port: a server that honours `response_format` gets every
answer asked with the item's schema and read from its answer field (the labels the stub's scripted
policy gives, none unread); a server that rejects it (400) or ignores it gets one probe, one
warning and the prompt-format requests, exactly as a run without the option sends them; a rerun
or a resumed run sends no probe again; a provider the table declares without `response_format`
is never probed. The reader of schema replies reads the answer field only."""

from __future__ import annotations

import json
import sqlite3

import pytest
from typer.testing import CliRunner

from conftest import make_tiny_suite, oracle_policy
from medresilience import EvalOptions, Suite, evaluate, parse_model_spec
from medresilience.calls import request_key
from medresilience.records import Item
from medresilience.run.answer_format import PROBE_MESSAGES, PROBE_SCORER, SCHEMA_MIN_TOKENS, probe_request
from medresilience.runtime.errors import ConfigError
from medresilience.scoring.schema_answer import SCHEMA_NAME, SchemaScorer, answer_schema, read_schema_answer
from medresilience.store import Store
from medresilience.testing.stub import Faults, StubServer, fit_to_schema, hash_letter

ITEM = Item(id="x", source="s", question="q?", options={k: f"option {k}" for k in "ABCD"}, answer="C")


# ---- the reader of schema replies


@pytest.mark.parametrize(
    ("text", "finish", "label", "status", "why"),
    [
        ('{"reasoning": "B is tempting, but C fits.", "answer": "C"}', "stop", "C", "valid", "answer field"),
        ('  {"reasoning": "...", "answer": "B"}\n', "stop", "B", "valid", "answer field"),
        # the reasoning names another option: only the answer field counts
        ('{"reasoning": "Answer: A", "answer": "D"}', "stop", "D", "valid", "answer field"),
        ('{"reasoning": "x", "answer": "E"}', "stop", None, "invalid", "not one of the option labels"),
        ('{"reasoning": "x", "answer": "AB"}', "stop", None, "invalid", "not one of the option labels"),
        ('{"reasoning": "x", "answer": ["C"]}', "stop", None, "invalid", "not one of the option labels"),
        ('{"reasoning": "the answer is C"}', "stop", None, "invalid", "no answer field"),
        ('{"reasoning": "C is right because', "length", None, "truncated", "does not parse"),
        ('{"reasoning": "C is right because', "stop", None, "invalid", "does not parse"),
        ("Answer: C", "stop", None, "invalid", "does not parse"),
        ('["C"]', "stop", None, "invalid", "not an object"),
        ("", "stop", None, "invalid", "empty reply"),
    ],
)
def test_a_schema_reply_is_read_from_its_answer_field_only(text, finish, label, status, why):
    s = SchemaScorer(ITEM).read(text, finish)
    assert (s.label, s.status) == (label, status)
    assert why in s.detail["read"]
    assert s.value == (None if label is None else float(label == "C"))


def test_the_schema_names_the_items_labels_reasoning_first():
    schema = answer_schema("12345")
    assert list(schema["properties"]) == ["reasoning", "answer"]
    assert schema["properties"]["answer"]["enum"] == ["1", "2", "3", "4", "5"]
    assert schema["required"] == ["reasoning", "answer"] and schema["additionalProperties"] is False
    assert read_schema_answer('{"reasoning": "", "answer": "3"}', "12345") == ("3", "the answer field of the JSON reply")


def test_the_honouring_stub_fits_the_policys_letter_into_the_schema():
    fitted = json.loads(fit_to_schema("Answer: B", answer_schema("ABCD")))
    assert fitted == {"reasoning": "Answer: B", "answer": "B"}
    # a letter the enum lacks: guided decoding can only emit an allowed value
    assert json.loads(fit_to_schema("Answer: E", answer_schema("ABCD")))["answer"] == "A"


# ---- runs against the stub


@pytest.fixture
def suite(tmp_path):
    make_tiny_suite().save(tmp_path / "suite")
    return Suite.load(tmp_path / "suite")


def _spec(srv, name="stub-model"):
    return parse_model_spec(f"openai:{name},base_url={srv.base_url}")


def _units(run):
    con = sqlite3.connect(run / "store.sqlite")
    try:
        q = "SELECT u.unit_id, u.key, s.label, s.status FROM units u LEFT JOIN scores s ON s.key = u.key AND s.scorer = u.scoring"
        return {uid: (key, label, status) for uid, key, label, status in con.execute(q)}
    finally:
        con.close()


def _requests(run):
    with Store(run / "store.sqlite") as st:
        return {uid: st.request(key) for uid, (key, _, _) in _units(run).items()}


def test_an_honouring_server_answers_every_unit_with_the_schema(tmp_path, suite):
    with StubServer(policy="hash", response_format="honour") as srv:
        spec = _spec(srv)
        res = evaluate(suite, [spec], tmp_path / "schema", EvalOptions(answer_format="schema"))
        prompt = evaluate(suite, [spec], tmp_path / "prompt", EvalOptions())
        sent = srv.stats.total
    units, reqs = _units(tmp_path / "schema"), _requests(tmp_path / "schema")
    assert len(units) == 4 + 8 and res.stats.fallbacks == [] and res.stats.errors == 0
    assert all(status == "valid" for _, _, status in units.values())  # none unread
    for uid, (key, label, _) in units.items():
        req = reqs[uid]
        rf = req["params"]["response_format"]
        assert rf["type"] == "json_schema" and rf["json_schema"]["name"] == SCHEMA_NAME and rf["json_schema"]["strict"] is True
        assert rf["json_schema"]["schema"] == answer_schema("ABCD")
        assert key == request_key(spec, req["messages"], req["params"])  # the schema is part of the key
        assert label == hash_letter(req["messages"])  # the stub's scripted letter, read from the answer field
    # the same messages in the prompt format: the same letters, other keys
    prompt_units = _units(tmp_path / "prompt")
    assert {u: lab for u, (_, lab, _) in prompt_units.items()} == {u: lab for u, (_, lab, _) in units.items()}
    assert not {k for k, _, _ in prompt_units.values()} & {k for k, _, _ in units.values()}
    h, hp = res.results.headline("stub-model"), prompt.results.headline("stub-model")
    assert (h["clean_acc"].k, h["clean_acc"].n) == (hp["clean_acc"].k, hp["clean_acc"].n)
    assert sent == 12 + 1 + 12  # the schema run's answers and its one probe, then the prompt run's answers
    run_json = json.loads((tmp_path / "schema" / "run.json").read_text())
    assert run_json["options"]["answer_format"] == "schema"
    assert "answer_format" not in json.loads((tmp_path / "prompt" / "run.json").read_text())["options"]


@pytest.mark.parametrize(("given", "sent"), [(16, SCHEMA_MIN_TOKENS), (SCHEMA_MIN_TOKENS + 100, SCHEMA_MIN_TOKENS + 100)])
def test_a_schema_answer_gets_room_for_its_reasoning(tmp_path, suite, given, sent):
    # a terse budget (the embedded models' 16 tokens) would cut every schema reply before its answer field
    with StubServer(policy="hash", response_format="honour") as srv:
        spec = parse_model_spec(f"openai:stub-model,base_url={srv.base_url},max_tokens={given}")
        evaluate(suite, [spec], tmp_path / "schema", EvalOptions(answer_format="schema", limit=1))
        evaluate(suite, [spec], tmp_path / "prompt", EvalOptions(limit=1))
    assert {r["params"]["max_tokens"] for r in _requests(tmp_path / "schema").values()} == {sent}
    assert {r["params"]["max_tokens"] for r in _requests(tmp_path / "prompt").values()} == {given}  # the prompt format keeps its budget


def test_a_rejecting_server_falls_back_once_to_the_prompt_format(tmp_path, suite):
    with StubServer(policy=oracle_policy, response_format="reject") as srv:
        spec = _spec(srv)
        res = evaluate(suite, [spec], tmp_path / "run", EvalOptions(answer_format="schema"))
        rejected = srv.stats.by_outcome.get("bad_request", 0)
        evaluate(suite, [spec], tmp_path / "prompt", EvalOptions())
    assert rejected == 1  # the probe alone
    assert len(res.stats.fallbacks) == 1
    line = res.stats.fallbacks[0]
    assert "stub-model" in line and "rejects response_format" in line and "not supported" in line and "prompt format" in line
    # the probe's 400 is not one of the run's errors: the run measured what it was asked
    assert (res.stats.errors, res.stats.permanent_errors, res.stats.not_run) == (0, 0, 0)
    units = _units(tmp_path / "run")
    assert all(status == "valid" for _, _, status in units.values())
    assert all("response_format" not in r["params"] for r in _requests(tmp_path / "run").values())
    # the fallback requests are the prompt format's: the same keys as a run without the option
    assert {u: k for u, (k, _, _) in units.items()} == {u: k for u, (k, _, _) in _units(tmp_path / "prompt").items()}
    h = res.results.headline("stub-model")
    assert (h["clean_acc"].k, h["clean_acc"].n) == (3, 4)  # the oracle's: q4 wrong clean
    with Store(tmp_path / "run" / "store.sqlite") as st:
        probe = st.score(probe_request(spec).key, PROBE_SCORER)
    assert probe["label"] == "rejected" and probe["detail"]["status"] == 400


def test_a_server_that_ignores_the_schema_falls_back_too(tmp_path, suite):
    with StubServer(policy=oracle_policy) as srv:  # the default: response_format dropped, the text sent as is
        res = evaluate(suite, [_spec(srv)], tmp_path / "run", EvalOptions(answer_format="schema"))
    assert len(res.stats.fallbacks) == 1 and "ignores response_format" in res.stats.fallbacks[0]
    assert all(status == "valid" for _, _, status in _units(tmp_path / "run").values())


@pytest.mark.parametrize("mode", ["honour", "reject"])
def test_a_rerun_and_a_resumed_run_send_no_probe_again(tmp_path, mode):
    make_tiny_suite(n_copies=2).save(tmp_path / "suite")
    suite = Suite.load(tmp_path / "suite")
    with StubServer(policy=oracle_policy, response_format=mode) as srv:
        spec = _spec(srv)
        first = evaluate(suite, [spec], tmp_path / "run", EvalOptions(answer_format="schema", limit=4))
        after_first = srv.stats.total
        again = evaluate(suite, [spec], tmp_path / "run", EvalOptions(answer_format="schema", limit=4))
        assert srv.stats.total == after_first and again.stats.called == 0
        more = evaluate(suite, [spec], tmp_path / "run", EvalOptions(answer_format="schema"))
        stats = srv.stats
    assert first.stats.called == 12 + 1
    assert more.stats.called == 12 and stats.total == after_first + 12  # the new items' answers, no probe
    assert stats.attempts(_probe_stub_key(spec)) == 1
    assert len(more.stats.fallbacks) == (1 if mode == "reject" else 0)  # said again by the run that falls back, from the stored probe
    assert all(status == "valid" for _, _, status in _units(tmp_path / "run").values())


def _probe_stub_key(spec):
    """The stub's key of the probe's request body (sha256 of its canonical body)."""
    import hashlib

    from medresilience.testing.stub import canonical_body

    r = probe_request(spec)
    return hashlib.sha256(canonical_body({"model": spec.model, "messages": r.messages, **r.params})).hexdigest()


def test_a_provider_declared_without_response_format_is_never_probed(tmp_path, suite, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-key")
    with StubServer(policy=oracle_policy, response_format="reject") as srv:
        spec = parse_model_spec(f"anthropic/claude-haiku-4-5,base_url={srv.base_url}")
        res = evaluate(suite, [spec], tmp_path / "run", EvalOptions(answer_format="schema"))
        stats = srv.stats
    assert stats.total == 12 and stats.by_outcome.get("bad_request", 0) == 0
    assert res.warnings == [
        "model claude-haiku-4-5: provider anthropic takes no response_format, so its answers are asked in the prompt format, not with -O answer_format=schema"
    ]
    assert res.stats.fallbacks == []
    assert all(status == "valid" for _, _, status in _units(tmp_path / "run").values())


def test_two_models_each_get_their_own_format(tmp_path, suite):
    with StubServer(policy=oracle_policy, response_format="honour") as good, StubServer(policy=oracle_policy, response_format="reject") as bad:
        res = evaluate(suite, [_spec(good, "good"), _spec(bad, "bad")], tmp_path / "run", EvalOptions(answer_format="schema"))
    assert len(res.stats.fallbacks) == 1 and res.stats.fallbacks[0].startswith("model bad rejects response_format")
    con = sqlite3.connect(tmp_path / "run" / "store.sqlite")
    q = "SELECT u.model, r.params FROM units u JOIN requests r ON r.key = u.key"
    by_model: dict[str, set[bool]] = {}
    for model, params in con.execute(q):
        by_model.setdefault(model, set()).add("response_format" in json.loads(params))
    con.close()
    assert by_model == {"good": {True}, "bad": {False}}
    for m in ("good", "bad"):
        h = res.results.headline(m)
        assert (h["clean_acc"].k, h["clean_acc"].n) == (3, 4)


# ---- what the schema cannot be asked of


def test_options_that_cannot_take_the_schema_are_refused(tmp_path, suite):
    spec = parse_model_spec("openai:m,base_url=http://127.0.0.1:9")
    with pytest.raises(ConfigError, match="--scoring letter"):
        evaluate(suite, [spec], tmp_path / "a", EvalOptions(answer_format="schema", scoring="logprob"))
    with pytest.raises(ConfigError, match="must be prompt or schema"):
        evaluate(suite, [spec], tmp_path / "b", EvalOptions(answer_format="json"))
    with pytest.raises(ConfigError, match="extraction model"):
        evaluate(suite, [spec], tmp_path / "c", EvalOptions(answer_format="schema", extract=parse_model_spec("openai:x,base_url=http://127.0.0.1:9")))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists() and not (tmp_path / "c").exists()


def test_the_command_line_says_the_fallback_once_and_succeeds(tmp_path, suite):
    from medresilience.cli import app

    with StubServer(policy=oracle_policy, response_format="reject") as srv:
        args = ["eval", "--model", f"openai:stub-model,base_url={srv.base_url}", "--suite", str(tmp_path / "suite"), "--out", str(tmp_path / "run")]
        result = CliRunner().invoke(app, [*args, "-O", "answer_format=schema"])
    assert result.exit_code == 0, result.output
    assert result.output.count("rejects response_format") == 1
    assert result.output.count("warning: model stub-model") == 1


def test_a_probe_that_fails_otherwise_decides_nothing(tmp_path, suite):
    """A fault every later call would repeat (here a rejected key) is no answer about the schema:
    the schema is kept, the answers meet the fault and are reported, the next run probes again."""
    with StubServer(policy=oracle_policy, response_format="honour", faults=Faults(rate_401=1.0)) as srv:
        spec = _spec(srv)
        res = evaluate(suite, [spec], tmp_path / "run", EvalOptions(answer_format="schema"))
    assert res.stats.fallbacks == []
    assert res.stats.errors > 0 and res.stats.stopped  # the answers' own failures, as any run reports them
    with Store(tmp_path / "run" / "store.sqlite") as st:
        assert st.score(probe_request(spec).key, PROBE_SCORER) is None
        assert all("response_format" in st.request(k)["params"] for k, _, _ in _units(tmp_path / "run").values())


def test_a_family_that_judges_its_replies_takes_no_schema(tmp_path):
    """A free-text family (false presuppositions, judged) is refused before anything is written."""
    from medresilience.families.presupposition.probe import PresuppositionProbe, probe_id
    from medresilience.suite import Suite as S
    from medresilience.suite import SuiteManifest

    item = Item(id="p1", source="cancer-myth", question="Since nothing can be done, how do we plan?", reference="Treatment still helps.")
    probe = PresuppositionProbe(
        id=probe_id("p1", "presupposition"), item_id="p1", condition="presupposition", facets={"category": "no_treatment", "generator": "g"}
    )
    S(SuiteManifest(name="presup", family="presupposition"), [item], [probe]).save(tmp_path / "suite")
    suite = Suite.load(tmp_path / "suite")
    spec = parse_model_spec("openai:m,base_url=http://127.0.0.1:9")
    opts = EvalOptions(answer_format="schema", scoring="judge", family={"judge": "openai:j,base_url=http://127.0.0.1:9"})
    with pytest.raises(ConfigError, match="family presupposition does not read option letters from its replies"):
        evaluate(suite, [spec], tmp_path / "run", opts)
    assert not (tmp_path / "run").exists()


def test_the_provider_table_says_which_providers_take_the_schema():
    from medresilience.models.providers import PROVIDERS

    takes = {p.name: "response_format" not in p.unsupported for p in PROVIDERS.values()}
    assert takes["openai"] and takes["vllm"] and takes["sglang"] and takes["llamacpp"] and takes["ollama"]
    assert not takes["anthropic"] and not takes["deepseek"]  # DeepSeek: JSON mode only, no schema
    assert PROVIDERS.get("deepseek").structured_answers == "no" and PROVIDERS.get("vllm").structured_answers == "yes"
    assert parse_model_spec("deepseek/deepseek-chat").supports("response_format") is False
    assert parse_model_spec("embedded").supports("response_format") is True  # the llama.cpp server


def test_a_mode_that_judges_its_replies_takes_no_schema(tmp_path, suite):
    """A family that reads letters in one mode and judges in another (open answers, judged against
    the reference) is refused in the judged mode, before anything is written."""
    spec = parse_model_spec("openai:m,base_url=http://127.0.0.1:9")
    opts = EvalOptions(answer_format="schema", family={"answer": "open", "judge": "openai:j,base_url=http://127.0.0.1:9"})
    with pytest.raises(ConfigError, match="does not read option letters from these replies"):
        evaluate(suite, [spec], tmp_path / "run", opts)
    assert not (tmp_path / "run").exists()


def test_the_schema_enters_the_runs_prompts_hash(tmp_path, suite):
    with StubServer(policy="hash", response_format="honour") as srv:
        spec = _spec(srv)
        runs = {fmt: evaluate(suite, [spec], tmp_path / fmt, EvalOptions(answer_format=fmt)) for fmt in ("prompt", "schema")}
    texts = {fmt: json.loads((tmp_path / fmt / "run.json").read_text())["prompts"] for fmt in runs}
    assert "answer_format" not in texts["prompt"]["texts"] and '"enum": ["A", "B", "C", "D"]' in texts["schema"]["texts"]["answer_format"]
    assert texts["prompt"]["hash"] != texts["schema"]["hash"]


def test_a_second_turn_is_asked_with_the_schema_too(tmp_path):
    """A turn that continues an earlier unit's conversation (the toy family of tests/toy_family.py)
    carries the earlier JSON reply and is asked and read with the schema as well."""
    from medresilience.family import register, unregister
    from toy_family import AGAIN, AGAIN_TURN, again_answerer, make_again_suite

    def schema_again(messages, request):  # the toy's answerer reads the first reply's letter at its end
        if messages == PROBE_MESSAGES:  # the run's format probe, answered (a policy that fails it is retried, then decides nothing)
            return "yes"
        plain = [dict(m, content="Answer: " + json.loads(m["content"])["answer"]) if m["role"] == "assistant" else m for m in messages]
        return again_answerer(plain, request)

    register(AGAIN)
    try:
        make_again_suite(8).save(tmp_path / "suite")
        suite = Suite.load(tmp_path / "suite")
        with StubServer(policy=schema_again, response_format="honour") as srv:
            res = evaluate(suite, [_spec(srv, "toy-model")], tmp_path / "run", EvalOptions(answer_format="schema"))
        h = res.results.headline("toy-model")
        assert (h["clean"].k, h["clean"].n) == (6, 8) and (h["again"].k, h["again"].n) == (4, 8)  # as in the prompt format
        reqs = _requests(tmp_path / "run")
        seconds = [r for u, r in reqs.items() if "|again|" in u]
        assert len(seconds) == 8 and all("response_format" in r["params"] for r in reqs.values())
        for r in seconds:
            assert r["messages"][-1] == {"role": "user", "content": AGAIN_TURN}
            assert json.loads(r["messages"][-2]["content"])["answer"] in "ABCD"  # the stored JSON reply, as sent back
        assert all(status == "valid" for _, _, status in _units(tmp_path / "run").values())
    finally:
        unregister(AGAIN.name)
