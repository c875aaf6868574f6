"""`--batch anthropic` on the builds: every stage's JSON schema goes to Anthropic's message batches
as one tool the request must call (`tool_choice` type tool, the schema as its `input_schema`),
and the reply's `tool_use` input comes back as the reply's JSON text. Against the local batch
server (its Anthropic shape asks the same policy with the schema and answers with a tool_use
block), `medres build noise`, `pressure` and `presupposition` (one round) end with the suite files
of the same build sent with `--batch openai`. A reply without a tool_use block, or whose input
does not fit the schema, is stored unread (empty) and asked again like any unusable reply
(`medres eval` counts it in the batch's line); its text is never read as the object. `--dry-run`
prices the calls with their tool. The same path serves `medres eval -O answer_format=schema`.
No network: every server is on 127.0.0.1."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from conftest import eval_command, make_tiny_suite, tiny_items_and_bundles
from medresilience.batch.lines import read_anthropic_results
from medresilience.batch.tool_schema import TOOL_PROMPT_TOKENS, schema_of, tool_reply
from medresilience.cli import app
from medresilience.families.misleading.testing import FakeGenerator as FakeMisleading
from medresilience.families.noise.testing import FakeGenerator as FakeNoise
from medresilience.families.presupposition.testing import FakePresupposition
from medresilience.runtime.fileio import write_jsonl
from medresilience.testing.stub import BatchEndpoints, BatchFaults, StubServer
from test_batch import _results as eval_results
from test_batch_builds import SUITE_FILES, WAITING, _fixed_stamp, _noise_build, _presupposition, _summary, _until_done

__all__ = ["_fixed_stamp"]  # the fixture (autouse) that gives both builds the same `created`

runner = CliRunner()


def _both(policy, build, faults: BatchFaults | None = None) -> tuple[dict[str, list], BatchEndpoints, int]:
    """The build sent as OpenAI batches (into `openai`) and as Anthropic message batches (into
    `anthropic`) against one stub: each one's runs, the batch endpoints, and how many chat
    completions were made live (none should be)."""
    eps = BatchEndpoints(faults or BatchFaults(polls=0))
    runs: dict[str, list] = {}
    with StubServer(policy=policy, batches=eps) as srv:
        for provider in ("openai", "anthropic"):
            runs[provider] = _until_done([*build(srv.base_url, provider), "--batch", provider])
            assert runs[provider][-1].exit_code == 0, [r.output for r in runs[provider]]
            assert set(r.exit_code for r in runs[provider][:-1]) <= {WAITING}
        made_live = srv.stats.by_outcome.get("ok", 0)
    return runs, eps, made_live


def _stored(db: Path) -> dict[str, tuple[str, object]]:
    """key -> (status, the reply as JSON when it is JSON, else its text) of every stored call."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT key, status, text FROM calls").fetchall()
    finally:
        con.close()

    def value(text):
        try:
            return json.loads(text)
        except (TypeError, ValueError):
            return text

    return {k: (s, value(t)) for k, s, t in rows}


def _same_suite(tmp_path: Path, work: str = ".build") -> int:
    """The Anthropic build wrote the OpenAI build's suite files, and stored the same calls with the
    same replies (the tool's input, as JSON, where the OpenAI build has the structured reply),
    except that a schema reply that is no JSON object is stored empty (unread); how many were."""
    for name in SUITE_FILES:
        assert (tmp_path / "anthropic" / name).read_text() == (tmp_path / "openai" / name).read_text(), name
    openai = _stored(tmp_path / f"openai{work}" / "store.sqlite")
    anthropic = _stored(tmp_path / f"anthropic{work}" / "store.sqlite")
    assert openai and set(anthropic) == set(openai)
    unread = {k for k in openai if anthropic[k] != openai[k]}
    assert all(anthropic[k] == ("ok", "") and not isinstance(openai[k][1], dict) for k in unread), {k: (openai[k], anthropic[k]) for k in unread}
    return len(unread)


def _each_paid_once_a_build(eps: BatchEndpoints) -> bool:
    """Every request was answered once by the OpenAI batches and once by the Anthropic ones."""
    return bool(eps.paid) and set(eps.paid.values()) == {2}


def _anthropic_requests(eps: BatchEndpoints) -> list[dict]:
    return [line["params"] for b in eps.batches.values() if b.kind == "anthropic" for line in b.lines]


def _said(runs: list) -> str:
    return " ".join(" ".join(r.output.split()) for r in runs)


# no reply of this fake is broken JSON: a broken reply is re-asked with the parser's words, which differ
# between a structured reply (its JSON error) and a tool call (no tool_use block), and so would the re-asks
NOISE = FakeNoise(flag_one=0.4, not_equivalent=0.3)


def _noise_with_checker(tmp_path: Path):
    build = _noise_build(tmp_path, "--verify", "__SELF__")

    def with_checker(url: str, out: str) -> list[str]:
        return [a.replace("__SELF__", f"openai:fake-gen,base_url={url},concurrency=4,max_retries=0") for a in build(url, out)]

    return with_checker


def test_build_noise_through_anthropic_message_batches_writes_the_openai_batch_builds_suite(tmp_path):
    runs, eps, made_live = _both(NOISE, _noise_with_checker(tmp_path))
    assert made_live == 0 and _each_paid_once_a_build(eps) and not eps.duplicates
    assert _same_suite(tmp_path) == 0
    assert _summary(runs["anthropic"][-1]) == _summary(runs["openai"][-1]) and "checker fake-gen: red herrings of" in _summary(runs["anthropic"][-1])
    sent = _anthropic_requests(eps)
    assert sent and all("response_format" not in p for p in sent)
    # every stage asks for a schema: each request carries its one tool and forces it
    names = set()
    for p in sent:
        (tool,) = p["tools"]
        assert p["tool_choice"] == {"type": "tool", "name": tool["name"]} and tool["input_schema"]["type"] == "object"
        names.add(tool["name"])
    assert len(names) >= 2, names  # the red herrings, the rewrites and the checker ask different schemas
    said = _said(runs["anthropic"])
    assert "(anthropic msgbatch_stub" in said and "unread" not in said


def test_build_pressure_through_anthropic_message_batches(tmp_path):
    write_jsonl(tmp_path / "items.jsonl", [item for item, *_ in tiny_items_and_bundles()])

    def build(url: str, out: str) -> list[str]:
        spec = f"openai:fake,base_url={url},concurrency=4,max_retries=0"
        return ["build", "pressure", "--from", str(tmp_path / "items.jsonl"), "--out", str(tmp_path / out), "--seed", "5", "--name", "p", "-g", spec]

    runs, eps, made_live = _both(FakeMisleading(), build)
    assert [r.exit_code for r in runs["anthropic"]] == [WAITING, WAITING, WAITING, 0]
    assert made_live == 0 and _each_paid_once_a_build(eps) and not eps.duplicates
    assert _same_suite(tmp_path) == 0
    for name in SUITE_FILES:  # the claims suite in the work directory too
        assert (tmp_path / "anthropic.build" / "misleading" / name).read_text() == (tmp_path / "openai.build" / "misleading" / name).read_text()
    assert "claims: 4 of 4 items, rejected 0, failed 0" in " ".join(runs["anthropic"][-1].output.split())


def test_build_presupposition_in_one_round_through_anthropic_message_batches(tmp_path):
    fake = FakePresupposition(unreadable=0.2, bad_category=0.3, unsound=0.3, salt="b1")
    runs, eps, made_live = _both(fake, _presupposition(tmp_path, 4))
    assert len(runs["anthropic"]) == len(runs["openai"]) >= 6
    assert made_live == 0 and _each_paid_once_a_build(eps) and not eps.duplicates
    # the verifier's verdicts the fake words as no JSON are unread both ways (stored empty here)
    assert _same_suite(tmp_path) > 0
    assert _summary(runs["anthropic"][-1]) == _summary(runs["openai"][-1])
    # the responder's answers are free text: those requests go without a tool
    sent = _anthropic_requests(eps)
    assert any("tools" not in p for p in sent) and any("tools" in p for p in sent)


def test_an_anthropic_generator_gets_its_schemas_as_the_forced_tool(tmp_path, monkeypatch):
    """A generator named `anthropic/...`, whose live endpoint takes no response format (so its
    requests' parameters and keys carry none), still gets every stage's schema as the forced tool
    in Anthropic's message batches; the probes are the OpenAI batch build's but for the generator's name."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-key")
    build = _noise_build(tmp_path, "--variants", "redherring-5,rewrite")

    def claude(url: str, out: str) -> list[str]:
        args = build(url, out)
        return [a.replace("openai:fake-gen,", "anthropic/claude-haiku-4-5,") for a in args] if out == "anthropic" else args

    runs, eps, made_live = _both(NOISE, claude)
    assert made_live == 0 and not eps.duplicates and _summary(runs["anthropic"][-1]) == _summary(runs["openai"][-1])
    sent = _anthropic_requests(eps)
    assert len(sent) == 8 and all(p["model"] == "claude-haiku-4-5" and p["tool_choice"]["type"] == "tool" for p in sent)

    def probes(build_dir: str) -> list[dict]:
        rows = [json.loads(x) for x in (tmp_path / build_dir / "probes.jsonl").read_text().splitlines()]
        return [{**r, "meta": {**r["meta"], "generator": None}} for r in rows]

    assert {r["meta"]["generator"] for r in [json.loads(x) for x in (tmp_path / "anthropic" / "probes.jsonl").read_text().splitlines()]} == {"claude-haiku-4-5"}
    assert probes("anthropic") == probes("openai")
    # the stored requests (whose parameters make the keys) are the live ones: no response format
    con = sqlite3.connect(tmp_path / "anthropic.build" / "store.sqlite")
    try:
        params = [json.loads(row[0]) for row in con.execute("SELECT params FROM requests")]
    finally:
        con.close()
    assert len(params) == 8 and not any("response_format" in p for p in params)


def test_a_reply_without_a_tool_use_block_is_stored_unread_and_asked_again(tmp_path):
    """A model that answers a forced tool call in text (the stub's `rate_no_tool`): the text, a
    valid JSON object, is not read as the object; the reply is stored empty (unread) and the stage
    asks again (one retry each, the build's only ones), answered through the tool."""
    eps = BatchEndpoints(BatchFaults(polls=0, seed=4, rate_no_tool=0.3))
    build = _noise_build(tmp_path, "--variants", "redherring-5,rewrite")
    with StubServer(policy=NOISE, batches=eps) as srv:
        runs = _until_done([*build(srv.base_url, "anthropic"), "--batch", "anthropic"])
        assert srv.stats.by_outcome.get("ok", 0) == 0
    assert runs[-1].exit_code == 0, [r.output for r in runs]
    in_text = {
        x["custom_id"]: x["result"]["message"]["content"][0]["text"]
        for b in eps.batches.values()
        for x in b.output
        if x["result"]["type"] == "succeeded" and x["result"]["message"]["content"][0]["type"] == "text"
    }
    assert in_text, "the fault answered some forced tool calls in text"
    assert all(isinstance(json.loads(t), dict) for t in in_text.values())  # readable JSON, all the same never read
    stored = _stored(tmp_path / "anthropic.build" / "store.sqlite")
    assert {stored[k] for k in in_text} == {("ok", "")}
    assert all(stored[k][1] != "" for k in stored if k not in in_text)  # every other reply was read through the tool
    last = " ".join(runs[-1].output.split())
    assert f"0 errors, {len(in_text)} retries;" in last and "kept 4 of 4 cases" in last, last


def test_a_tool_input_that_does_not_fit_the_schema_is_unread(tmp_path):
    """A tool_use input with a property the schema does not name, or without a required one, is
    unread (empty text, with the reason); a fitting one reads as its compact JSON."""
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": ["A", "B"]}, "sentences": {"type": "array", "items": {"type": "string"}, "maxItems": 2}},
        "required": ["answer", "sentences"],
        "additionalProperties": False,
    }
    params = {"max_tokens": 50, "response_format": {"type": "json_schema", "json_schema": {"name": "pick", "strict": True, "schema": schema}}}

    def line(cid: str, content: list[dict]) -> dict:
        message = {"content": content, "stop_reason": "tool_use", "usage": {"input_tokens": 9, "output_tokens": 4}}
        return {"custom_id": cid, "result": {"type": "succeeded", "message": message}}

    def use(value: object) -> list[dict]:
        return [{"type": "tool_use", "id": "toolu_1", "name": "pick", "input": value}]

    lines = [
        line("fits", use({"answer": "B", "sentences": ["x"]})),
        line("extra", use({"answer": "B", "sentences": [], "why": "x"})),
        line("missing", use({"answer": "A"})),
        line("enum", use({"answer": "C", "sentences": []})),
        line("too-many", use({"answer": "A", "sentences": ["a", "b", "c"]})),
        line("wrong-type", use({"answer": "A", "sentences": [1]})),
        line("other-tool", [{"type": "tool_use", "id": "toolu_2", "name": "other", "input": {"answer": "A", "sentences": []}}]),
        line("text", [{"type": "text", "text": '{"answer": "A", "sentences": []}'}]),
    ]
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    read = {cid: tool_reply(schema_of(params), c) for cid, c in read_anthropic_results(path.read_bytes(), str(path))}
    fits, why = read.pop("fits")
    assert (fits.text, fits.finish_reason, fits.tool_calls, why) == ('{"answer":"B","sentences":["x"]}', "stop", None, None)
    assert {cid: (c.text, why) for cid, (c, why) in read.items()} == {
        "extra": ("", "the tool_use input does not fit the schema: $: Additional properties are not allowed ('why' was unexpected)"),
        "missing": ("", "the tool_use input does not fit the schema: $: 'sentences' is a required property"),
        "enum": ("", "the tool_use input does not fit the schema: $.answer: 'C' is not one of ['A', 'B']"),
        "too-many": ("", "the tool_use input does not fit the schema: $.sentences: ['a', 'b', 'c'] is too long"),
        "wrong-type": ("", "the tool_use input does not fit the schema: $.sentences[0]: 1 is not of type 'string'"),
        "other-tool": ("", "no tool_use block"),
        "text": ("", "no tool_use block"),
    }
    # a request that asked no schema reads as it came (its text blocks)
    plain, why = tool_reply(schema_of({"max_tokens": 50}), dict(read_anthropic_results(path.read_bytes(), str(path)))["text"])
    assert (plain.text, why) == ('{"answer": "A", "sentences": []}', None)


def test_the_dry_run_prices_anthropic_batches_with_the_tool(tmp_path):
    """`--batch anthropic --dry-run` counts the first stage's calls with their tool (its schema and
    Anthropic's tool-use system prompt) in the prompt tokens, prices them live and at half as a
    batch, and sends nothing."""
    build = _noise_build(tmp_path)

    def priced(url: str, out: str) -> list[str]:
        return [a.replace("max_retries=0", "max_retries=0,price_input=3,price_output=15") for a in build(url, out)]

    with StubServer(policy=NOISE, batches=BatchEndpoints()) as srv:
        said = {}
        for provider in ("openai", "anthropic"):
            r = runner.invoke(app, [*priced(srv.base_url, "s"), "--batch", provider, "--dry-run"])
            assert r.exit_code == 0, r.output
            said[provider] = " ".join(r.output.split())
        assert srv.stats.total == 0 and not (tmp_path / "s").exists()
    pattern = r"fake-gen: (\d+) calls, about ([\d,]+) prompt tokens and at most ([\d,]+) output tokens; live \$([\d.]+), batch \$([\d.]+)"
    numbers = {p: re.search(pattern, s) for p, s in said.items()}
    assert all(numbers.values()), said
    o, a = (numbers[p].groups() for p in ("openai", "anthropic"))  # type: ignore[union-attr]
    calls = int(a[0])
    assert calls == int(o[0]) > 0 and a[2] == o[2]
    extra = int(a[1].replace(",", "")) - int(o[1].replace(",", ""))
    assert calls * TOOL_PROMPT_TOKENS < extra < calls * (TOOL_PROMPT_TOKENS + 2000), (extra, said)
    assert float(a[3]) > float(o[3]) and abs(float(a[4]) - float(a[3]) / 2) <= 0.011


def eval_until_done(suite: Path, out: Path, url: str, *extra: str) -> list:
    """`medres eval` (in this process) rerun until it stops waiting; it ends with exit 0."""
    runs = _until_done(eval_command(suite, out, url, *extra)[3:])
    assert runs[-1].exit_code == 0, runs[-1].output
    return runs


def _tiny_suite(tmp_path: Path) -> Path:
    make_tiny_suite(n_copies=1).save(tmp_path / "suite")  # 4 items -> 20 answers and the schema probe
    return tmp_path / "suite"


SCHEMA_ANSWERS = ("-O", "answer_format=schema")


def test_eval_schema_answers_through_anthropic_message_batches_are_the_openai_batch_runs(tmp_path):
    """The same path serves `medres eval -O answer_format=schema`: through `--batch anthropic` the
    answers (and the schema probe) go as forced tool calls, and the run's results are the `--batch
    openai` run's."""
    suite = _tiny_suite(tmp_path)
    eps = BatchEndpoints(BatchFaults(polls=0))
    with StubServer(policy="hash", response_format="honour", batches=eps) as srv:
        for provider in ("openai", "anthropic"):
            eval_until_done(suite, tmp_path / provider, srv.base_url, *SCHEMA_ANSWERS, "--batch", provider)
        assert srv.stats.by_outcome.get("ok", 0) == 0
    assert eval_results(tmp_path / "anthropic") == eval_results(tmp_path / "openai")
    sent = _anthropic_requests(eps)
    assert len(sent) == 21 and all("tools" in p and "response_format" not in p for p in sent)


def test_eval_schema_answers_in_text_are_unread_and_counted(tmp_path):
    """Answered in text instead of through the tool, an answer is unread (invalid), counted in its
    batch's line, never read from the text."""
    suite = _tiny_suite(tmp_path)
    eps = BatchEndpoints(BatchFaults(polls=0, seed=1, rate_no_tool=0.2))
    with StubServer(policy="hash", response_format="honour", batches=eps) as srv:
        runs = eval_until_done(suite, tmp_path / "run", srv.base_url, *SCHEMA_ANSWERS, "--batch", "anthropic")
    in_text = [x for b in eps.batches.values() for x in b.output if x["result"]["message"]["content"][0]["type"] == "text"]
    assert in_text and all(isinstance(json.loads(x["result"]["message"]["content"][0]["text"]), dict) for x in in_text)
    said = runs[-1].output
    assert f"({len(in_text)} unread: {len(in_text)} no tool_use block)" in said, said
    assert re.search(rf"│ Invalid\s+│ {len(in_text)}\s+│", said), said
