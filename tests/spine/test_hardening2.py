"""Hardening, second round (issue #26): what an attack campaign broke, each reproduced against the
real code paths with the stub server standing in for the model (the boundary we do not own).

Odd replies (content as text parts or a number; an endpoint with no log-probabilities; one that
echoes the API key), dead and slow servers (a refused connection, a reply dripped a byte a second),
runs that did not do what was asked (every judgment unscored, an empty suite, a build that kept
nothing), review blinding, the review app behind a proxy, and bad input refused before anything is
written."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import oracle_policy
from medresilience.cli import app
from medresilience.errors import MedresError
from medresilience.evaluation import evaluate
from medresilience.models.openai_compatible import ModelCallError, OpenAICompatibleModel
from medresilience.models.spec import parse_model_spec
from medresilience.runner import EvalOptions
from medresilience.store import Store
from medresilience.testing.stub import Faults, StubServer

runner = CliRunner()
ALL = EvalOptions(family={"type1": "all"})
MSGS = [{"role": "user", "content": "Question number 1: which option is right?\nA. a\nB. b\nC. c\nD. d"}]
PARAMS = {"temperature": 0.0, "max_tokens": 16}
SECRET = "sk-hardening2-SECRET-0123456789abcdef"


def _spec(url: str, **kw):
    opts = {"concurrency": 4, "max_retries": 2, "timeout": 5, **kw}
    return parse_model_spec(f"openai:stub-model,base_url={url}," + ",".join(f"{k}={v}" for k, v in opts.items()))


def _lines(result) -> list[str]:
    return [ln for ln in result.output.splitlines() if ln.strip()]


def _one_error_line(result) -> str:
    assert result.exit_code != 0, result.output
    lines = _lines(result)
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.fixture
def dead_url():
    """The URL of a port that refuses connections: bound, never listening, held for the test (so no
    server started meanwhile can take it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{s.getsockname()[1]}/v1"


# =========================================================================== 1. content shapes


def test_content_as_text_parts_is_joined_and_scored(tmp_path, tiny_suite):
    with StubServer(policy=oracle_policy, faults=Faults(rate_content_parts=1.0)) as srv:
        res = evaluate(tiny_suite, [_spec(srv.base_url)], tmp_path / "run", ALL)
        assert srv.stats.by_outcome == {"content_parts": 20}
    assert res.stats.ok == 20 and res.stats.errors == 0
    with Store(tmp_path / "run" / "store.sqlite") as st:
        texts = [t for (t,) in st.conn.execute("SELECT text FROM calls")]
        assert st.count("scores", "WHERE status = 'valid'") == 20
    assert all(t.startswith("Answer: ") and len(t) == len("Answer: A") for t in texts)
    with StubServer(policy=oracle_policy) as srv:  # the same answers as plain strings: the same numbers
        plain = evaluate(tiny_suite, [_spec(srv.base_url)], tmp_path / "plain", ALL)
    assert res.results.models == plain.results.models


def test_content_that_is_not_text_is_malformed_retried_and_never_scored(tmp_path, tiny_suite):
    d = tmp_path / "suite"
    tiny_suite.save(d)
    out = tmp_path / "run"
    with StubServer(policy=oracle_policy, faults=Faults(rate_content_number=1.0, transient_attempts=99)) as srv:
        r = runner.invoke(
            app, ["eval", "--suite", str(d), "--out", str(out), "-O", "type1=all", "--model", f"openai:stub-model,base_url={srv.base_url},max_retries=1"]
        )
        assert srv.stats.by_outcome == {"content_number": 40}  # each call tried twice
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    assert r.exit_code == 1 and "every call failed" in _lines(r)[-1], r.output
    with Store(out / "store.sqlite") as st:
        assert st.count("calls", "WHERE status = 'error'") == 20 and st.count("scores") == 0
        err = st.conn.execute("SELECT error FROM calls LIMIT 1").fetchone()[0]
    assert "int" in err and "not text" in err
    # a number once: the retry is answered and scored
    with StubServer(policy=oracle_policy, faults=Faults(rate_content_number=1.0, transient_attempts=1)) as srv:
        res = evaluate(tiny_suite, [_spec(srv.base_url, max_retries=1)], tmp_path / "once", ALL)
    assert res.stats.ok == 20 and res.stats.errors == 0


# =========================================================================== 3. the deadline


async def test_timeout_is_a_deadline_for_the_whole_attempt():
    # one byte a second: each read succeeds within the timeout, the reply never ends within it
    with StubServer(policy=oracle_policy, faults=Faults(rate_drip=1.0, drip_interval=1.0, transient_attempts=99)) as srv:
        async with OpenAICompatibleModel(_spec(srv.base_url, timeout=2, max_retries=1), backoff_base=0.01) as m:
            with pytest.raises(ModelCallError) as ei:
                await m.complete(MSGS, PARAMS)
        dripped = srv.stats.by_outcome
    # each attempt ended by the 2 s deadline (a reply of hundreds of bytes at one a second would
    # otherwise take minutes): two attempts, each named as the deadline
    assert dripped == {"drip": 2}
    assert ei.value.attempts == 2 and not ei.value.permanent and "no complete reply within the timeout of 2 s" in str(ei.value)
    # a drip that ends within the deadline is an answer
    with StubServer(policy=oracle_policy, faults=Faults(rate_drip=1.0, drip_interval=0.0005)) as srv:
        async with OpenAICompatibleModel(_spec(srv.base_url, timeout=5)) as m:
            c = await m.complete(MSGS, PARAMS)
    assert c.text == "Answer: A"


# =========================================================================== 4. a dead endpoint


async def test_a_refused_connection_is_named_with_its_url_and_not_retried_long(dead_url):
    url = dead_url
    async with OpenAICompatibleModel(_spec(url, max_retries=6), backoff_base=0.05) as m:
        with pytest.raises(ModelCallError) as ei:
            await m.complete(MSGS, PARAMS)
    e = ei.value
    assert f"connection refused at {url}" in str(e) and "timed out" not in str(e)
    assert e.attempts == 3 and e.stops_model == "connection-refused"


def test_a_dead_endpoint_stops_the_model_after_a_few_refused_calls(tmp_path, tiny_suite, monkeypatch, dead_url):
    monkeypatch.setenv("MEDRES_STOP_AFTER_AUTH_ERRORS", "2")
    url = dead_url
    d = tmp_path / "suite"
    tiny_suite.save(d)
    r = runner.invoke(
        app, ["eval", "--suite", str(d), "--out", str(tmp_path / "run"), "-O", "type1=all", "--model", f"openai:stub-model,base_url={url},concurrency=1"]
    )
    assert r.exit_code == 1, r.output
    stopped = [ln for ln in _lines(r) if "stopped" in ln]
    assert len(stopped) == 1 and "connection-refused" in stopped[0] and "18 remaining calls were not sent" in stopped[0]
    assert f"connection refused at {url}" in r.output


@pytest.mark.parametrize("url", ["ftp://127.0.0.1:8000/v1", "127.0.0.1:8000/v1", "file:///tmp/x", "http:///v1"])
def test_a_base_url_that_is_not_http_is_refused_at_parse_time(url):
    with pytest.raises(MedresError) as ei:
        parse_model_spec(f"openai:m,base_url={url}")
    assert "base_url" in str(ei.value) and "http" in str(ei.value)
    parse_model_spec("openai:m,base_url=https://llm.example.org/v1|http://127.0.0.1:8000/v1")


# =========================================================================== 10. no log-probabilities


def test_logprob_scoring_on_an_endpoint_without_logprobs_stops_with_one_line(tmp_path, tiny_suite):
    d = tmp_path / "suite"
    tiny_suite.save(d)
    with StubServer(policy=oracle_policy, faults=Faults(rate_no_logprobs=1.0)) as srv:  # answers, never with log-probabilities
        r = runner.invoke(
            app,
            [
                "eval",
                "--suite",
                str(d),
                "--out",
                str(tmp_path / "run"),
                "-O",
                "type1=all",
                "--scoring",
                "logprob",
                "--model",
                f"openai:stub-model,base_url={srv.base_url},concurrency=1",
            ],
        )
        sent = srv.stats.total
    assert r.exit_code == 1, r.output
    assert sent == 5
    stopped = [ln for ln in _lines(r) if "stopped" in ln]
    assert len(stopped) == 1 and "no-logprobs" in stopped[0] and "--scoring letter" in stopped[0]
    with Store(tmp_path / "run" / "store.sqlite") as st:
        assert st.count("scores") == 0 and st.count("calls", "WHERE status = 'error'") == 5


# =========================================================================== 2. runs that measured nothing


def _presup_suite(path):
    from test_presupposition_eval import make_suite

    return make_suite(path)


def _answers_and_unreadable_verdicts(messages, request):
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    if system.startswith("You are a judge."):
        return "I cannot tell what this answer does."
    return "Here is some advice for your family."


def test_a_judged_run_whose_judge_always_failed_exits_1_with_one_line(tmp_path, dead_url):
    suite = _presup_suite(tmp_path / "suite")
    dead = dead_url
    with StubServer(policy=_answers_and_unreadable_verdicts) as srv:
        r = runner.invoke(
            app,
            [
                "eval",
                "--suite",
                str(suite.path),
                "--out",
                str(tmp_path / "run"),
                "--model",
                f"openai:m1,base_url={srv.base_url}",
                "--judge",
                f"openai:judge-4,base_url={dead},max_retries=0",
            ],
        )
    assert r.exit_code == 1, r.output
    last = _lines(r)[-1]
    assert "no answer was judged" in last and "27 answers" in last and "rerun the same command" in last, r.output
    assert (tmp_path / "run" / "results.json").exists()


def test_a_judged_run_where_every_judgment_is_unscored_exits_1(tmp_path):
    suite = _presup_suite(tmp_path / "suite")
    with StubServer(policy=_answers_and_unreadable_verdicts) as srv:
        r = runner.invoke(
            app,
            [
                "eval",
                "--suite",
                str(suite.path),
                "--out",
                str(tmp_path / "run"),
                "--model",
                f"openai:m1,base_url={srv.base_url}",
                "--judge",
                f"openai:judge-4,base_url={srv.base_url}",
            ],
        )
    assert r.exit_code == 1, r.output
    last = _lines(r)[-1]
    assert "no answer was scored" in last and "27 judged answers" in last and "--judge" in last, r.output
    # one readable verdict is a measurement: no shortfall
    from medresilience.evaluation import shortfall

    with Store(tmp_path / "run" / "store.sqlite") as st:
        st.conn.execute("UPDATE scores SET status = 'valid', value = 1, label = '1' WHERE rowid = (SELECT MIN(rowid) FROM scores)")
        st.conn.commit()
        from medresilience.calls import RunStats

        assert shortfall(st, RunStats(planned_units=27)) is None


def test_an_empty_suite_evaluated_exits_1(tmp_path):
    from medresilience.records import SuiteManifest
    from medresilience.suite import Suite

    Suite(SuiteManifest(name="empty", family="misleading"), [], []).save(tmp_path / "suite")
    with StubServer(policy=oracle_policy) as srv:
        r = runner.invoke(
            app, ["eval", "--suite", str(tmp_path / "suite"), "--out", str(tmp_path / "run"), "--model", f"openai:stub-model,base_url={srv.base_url}"]
        )
        assert srv.stats.total == 0
    assert r.exit_code == 1, r.output
    assert "nothing was evaluated" in _lines(r)[-1], r.output


def test_a_build_that_kept_nothing_exits_1_with_one_line(tmp_path):
    from medresilience.fileio import write_jsonl
    from medresilience.records import Item

    items = tmp_path / "items.jsonl"  # no question asks for a diagnosis: no case to perturb
    write_jsonl(
        items,
        [
            Item(
                id=f"q{i}",
                source="t",
                question=f"Which drug is first-line for hypertension in case {i}?",
                options={"A": "x", "B": "y", "C": "z", "D": "w"},
                answer="A",
            )
            for i in range(3)
        ],
    )
    inv = tmp_path / "abbr.tsv"
    inv.write_text("abbreviation\tsense\tvariation\tCUI\tfrequency\nBP\tblood pressure\tBP\tC0005823\t100\n")
    r = runner.invoke(app, ["build", "noise", "--items", str(items), "--out", str(tmp_path / "s"), "--variants", "abbreviations", "--abbreviations", str(inv)])
    assert r.exit_code == 1, r.output
    last = _lines(r)[-1]
    assert "nothing was built" in last and "build_report.md" in last and "rerun" in last, r.output


# =========================================================================== 7. a key echoed as the answer


def test_a_key_echoed_as_the_answer_is_stored_scrubbed_and_never_sent_to_the_judge(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDRES_HARDEN_KEY", SECRET)
    suite = _presup_suite(tmp_path / "suite")
    out = tmp_path / "run"
    prompts: list[str] = []

    def judge_sees(messages, request):
        if request["model"] == "judge-4":
            prompts.append(json.dumps(messages))
            return json.dumps({"reason": "ok", "verdict": "1" if "<correction>" in messages[-1]["content"] else "answers"})
        return "unused"

    with StubServer(policy=judge_sees, faults=Faults(rate_echo_key=1.0)) as answering, StubServer(policy=judge_sees) as judge:
        r = runner.invoke(
            app,
            [
                "eval",
                "--suite",
                str(suite.path),
                "--out",
                str(out),
                "--model",
                f"openai:m1,base_url={answering.base_url},api_key_env=MEDRES_HARDEN_KEY",
                "--judge",
                f"openai:judge-4,base_url={judge.base_url}",
            ],
        )
        assert answering.stats.by_outcome == {"echo_key": 27}
    assert r.exit_code == 0, r.output
    assert len(prompts) == 27 and all(SECRET not in p and "[redacted]" in p for p in prompts)
    for f in out.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f
    with Store(out / "store.sqlite") as st:
        texts = {t for (t,) in st.conn.execute("SELECT text FROM calls WHERE model = 'm1'")}
    assert texts == {"[redacted]"}


# =========================================================================== 9. bad settings, refused before anything is written

STUB = "openai:stub-model,base_url=http://127.0.0.1:9/v1"


@pytest.mark.parametrize(
    "args, blamed",
    [
        (["--limit", "0"], "--limit"),
        (["--limit", "-5"], "--limit"),
        (["-O", "answer=open", "-O", "judge=nosuch/x"], "-O judge"),
        (["--judge", "nosuch/x"], "--judge"),
        (["--judge", "openai:j,base_url=http://127.0.0.1:9/v1"], "judge model is used only for open answers"),
        (["-O", "type1=all", "-O", "type1=sample"], "-O type1"),
        (["--model", STUB + ",temperature=0.5,temperature=0"], "temperature"),
        (["--model", STUB + ",base_url=http://127.0.0.1:10/v1"], "base_url"),
        (["--model", STUB + ",price_input=nan"], "price_input"),
        (["--model", STUB + ",max_tokens=0"], "max_tokens"),
        (["--model", STUB + ",temperature=1e308"], "temperature"),
        (["--model", STUB + ",top_p=0"], "top_p"),
        (["--model", STUB + ",timeout=inf"], "timeout"),
    ],
)
def test_a_bad_setting_is_one_line_before_anything_is_written(tmp_path, tiny_suite, args, blamed):
    out = tmp_path / "run"
    model = [] if "--model" in args else ["--model", STUB]
    r = runner.invoke(app, ["eval", "--suite", str(tiny_suite.path), "--out", str(out), *model, *args])
    line = _one_error_line(r)
    assert r.exit_code == 2 and blamed in line, line
    if blamed.startswith("-") and blamed != "-O judge":
        assert f"setting '{blamed}" in line
    if blamed == "-O judge":
        assert "--model" not in line
    assert not out.exists()


def test_a_model_file_giving_a_setting_twice_is_refused(tmp_path):
    f = tmp_path / "m.json"
    f.write_text('{"model": "m", "base_urls": "http://127.0.0.1:9/v1", "temperature": 0.5, "temperature": 0}')
    with pytest.raises(MedresError, match=r"temperature.*twice"):
        parse_model_spec(f"@{f}")


def test_the_build_commands_refuse_a_limit_below_one(tmp_path):
    for cmd in (["build", "noise", "--items", "x.jsonl"], ["build", "misleading", "--items", "x.jsonl"]):
        r = runner.invoke(app, [*cmd, "--out", str(tmp_path / "s"), "--limit", "0"])
        assert r.exit_code == 2 and not (tmp_path / "s").exists()


# =========================================================================== 8. readers


def test_the_myth_reader_names_a_bad_byte_by_file_and_line(tmp_path):
    from medresilience.errors import InputError
    from medresilience.families.presupposition.formats import myths

    good = '{"cancer": "breast", "myth": "M%d.", "fact": "F%d."}\n'
    f = tmp_path / "myths.jsonl"
    f.write_bytes("".join(good % (i, i) for i in range(3)).encode() + b'{"cancer": "lung", "myth": "Caf\xe9.", "fact": "F."}\n')
    with pytest.raises(InputError) as ei:
        myths.read_myths(f)
    assert str(ei.value).startswith(f"{f}:4: not UTF-8 text")
    # the same past a chunk boundary
    big = tmp_path / "big.jsonl"
    big.write_bytes("".join(good % (i, i) for i in range(40)).encode() + b'{"cancer": "lung", "myth": "\xff", "fact": "F."}\n')
    old = myths.CHUNK
    myths.CHUNK = 100
    try:
        with pytest.raises(InputError) as ei:
            myths.read_myths(big)
    finally:
        myths.CHUNK = old
    assert str(ei.value).startswith(f"{big}:41: not UTF-8 text")
    ok = tmp_path / "ok.jsonl"
    ok.write_text("".join(good % (i, i) for i in range(40)))
    myths.CHUNK = 100
    try:
        assert len(myths.read_myths(ok)) == 40  # read in small chunks, every myth whole
    finally:
        myths.CHUNK = old


def test_medres_toml_with_a_bom_is_read_and_a_bad_byte_is_named(tmp_path):
    from medresilience.config import load_config

    (tmp_path / "medres.toml").write_bytes(b'\xef\xbb\xbfout = "runs/x"\nmodels = ["embedded"]\n')
    assert str(load_config(tmp_path).out(None, Path("d"))) == "runs/x"
    (tmp_path / "medres.toml").write_bytes(b'out = "runs/x"\n# caf\xe9\n')
    with pytest.raises(MedresError) as ei:
        load_config(tmp_path)
    assert str(ei.value).startswith(f"{tmp_path / 'medres.toml'}:2: not UTF-8 text")


def test_an_empty_mmlu_csv_is_an_error_and_writes_nothing(tmp_path):
    src = tmp_path / "anatomy_test.csv"
    src.write_text("")
    out = tmp_path / "items.jsonl"
    r = runner.invoke(app, ["import", str(src), "--out", str(out), "--format", "mmlu"])
    line = _one_error_line(r)
    assert r.exit_code == 2 and str(src) in line and "no item found" in line
    assert not out.exists()


# =========================================================================== 5. review blinding


def test_rubric_b_tasks_show_the_prompt_without_what_a_setting_added(tmp_path, tiny_suite):
    from medresilience.mitigations.caution import CAUTION_INSTRUCTION
    from medresilience.review.db import ReviewDB
    from medresilience.review.sample import sample_review

    with StubServer(policy=oracle_policy) as srv:
        evaluate(tiny_suite, [_spec(srv.base_url)], tmp_path / "run", EvalOptions(settings=("none", "caution"), family={"type1": "all"}))
    with Store(tmp_path / "run" / "store.sqlite") as st:  # the caution units were sent the caution text
        sent = [m for (m,) in st.conn.execute("SELECT r.messages FROM units u JOIN requests r ON r.key = u.key WHERE u.setting = 'caution'")]
    assert sent and all(CAUTION_INSTRUCTION in m for m in sent)
    sample_review("B", tiny_suite.path, tmp_path / "review", run_dir=tmp_path / "run", n=1000, reviewers=["alice"], seed=3)
    with ReviewDB(tmp_path / "review") as db:
        rows = db.conn.execute("SELECT display, hidden FROM units").fetchall()
    by_probe: dict[str, dict[str, str]] = {}
    for display, hidden in rows:
        h = json.loads(hidden)
        blocks = [b for b in json.loads(display) if b["kind"] == "messages"]
        assert len(blocks) == 1 and CAUTION_INSTRUCTION not in json.dumps(blocks)
        by_probe.setdefault(h["probe_id"], {})[h["setting"]] = json.dumps(blocks)
    assert len(rows) == 2 * len(by_probe) and by_probe
    assert all(v["none"] == v["caution"] for v in by_probe.values())  # the same prompt whatever the setting


async def test_a_scorer_that_raises_on_a_reply_loses_nothing(tmp_path):
    from medresilience.calls import CallRequest, run_calls
    from medresilience.scoring.types import Score

    def scorer(c):
        if c.text.endswith("C"):
            raise AttributeError("'list' object has no attribute 'strip'")
        return Score("A", "valid", 1.0)

    spec = _spec("http://127.0.0.1:9/v1")
    reqs = [
        CallRequest(spec.label, f"k{i}", [{"role": "user", "content": f"Question number {i}: ?\nA. a\nB. b\nC. c\nD. d"}], PARAMS, scorer, "letter")
        for i in range(1, 13)
    ]
    with StubServer(policy=oracle_policy) as srv, Store(tmp_path / "store.sqlite") as st:
        spec = _spec(srv.base_url)
        stats = await run_calls(reqs, [spec], st)
        assert stats.ok == 12 and any("scorer failed" in e for e in stats.error_samples)
        assert st.count("calls", "WHERE status = 'ok'") == 12
        unscored = st.conn.execute("SELECT key, detail FROM scores WHERE status = 'unscored'").fetchall()
        assert sorted(k for k, _ in unscored) == ["k11", "k3", "k7"]  # gold C: questions 3, 7, 11
        assert all("AttributeError" in d for _, d in unscored) and st.count("scores", "WHERE status = 'valid'") == 9
