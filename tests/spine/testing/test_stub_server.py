"""The local OpenAI-compatible stub server, exercised with the real `openai` SDK over real HTTP on
127.0.0.1: response shapes, policies, deterministic seeded faults, the request log, and the
subprocess mode."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai
import pydantic
import pytest

from conftest import ROOT
from medresilience.testing.stub import (
    Faults,
    StubProcess,
    StubServer,
    assign_fault,
    hash_letter,
    policy_server,
    request_key,
)

pytestmark = pytest.mark.timeout(20)

QUESTION = (
    "Question: A 54-year-old man has crushing chest pain. Best first test?\n\n"
    "Options:\nA. ECG\nB. Chest X-ray\nC. D-dimer\nD. Echocardiogram\n\n"
    "Reply with the letter of the single best option and nothing else, in the form 'Answer: X'."
)


def mcq(i: int = 0, extra: str = "") -> list[dict[str, str]]:
    user = QUESTION.replace("54-year-old", f"{40 + i}-year-old") + extra
    return [{"role": "system", "content": "You are a careful medical expert."}, {"role": "user", "content": user}]


def client(srv, **kw) -> openai.OpenAI:
    kw.setdefault("max_retries", 0)
    kw.setdefault("timeout", 5.0)
    return openai.OpenAI(base_url=srv.base_url, api_key="stub", **kw)


def read_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# --------------------------------------------------------------------------- shapes


def test_completion_shape_and_usage():
    with StubServer(policy="first") as srv:
        assert srv.base_url.startswith("http://127.0.0.1:") and srv.base_url.endswith("/v1")
        c = client(srv)
        msgs = mcq()
        r = c.chat.completions.create(model="my-model", messages=msgs)
        assert r.object == "chat.completion"
        assert r.id.startswith("chatcmpl-") and isinstance(r.created, int)
        assert r.model == "my-model"
        assert len(r.choices) == 1
        ch = r.choices[0]
        assert ch.index == 0 and ch.finish_reason == "stop"
        assert ch.message.role == "assistant" and ch.message.content == "Answer: A"
        assert ch.logprobs is None
        prompt_words = sum(len(m["content"].split()) for m in msgs)
        assert r.usage.prompt_tokens == prompt_words
        assert r.usage.completion_tokens == 2
        assert r.usage.total_tokens == prompt_words + 2

        # max_tokens truncates (word-approximated) and says so
        r = c.chat.completions.create(model="m", messages=msgs, max_tokens=1)
        assert r.choices[0].message.content == "Answer:" and r.choices[0].finish_reason == "length"

        models = c.models.list()
        assert [m.id for m in models.data] == ["stub-model"]
        with urllib.request.urlopen(srv.root_url + "/health", timeout=5) as resp:
            assert resp.status == 200 and json.loads(resp.read()) == {"status": "ok"}

        # streaming is refused with a 400
        with pytest.raises(openai.BadRequestError):
            c.chat.completions.create(model="m", messages=msgs, stream=True)
        st = srv.stats
        assert st.total == 3 and st.by_outcome == {"ok": 2, "bad_request": 1}


def test_logprobs_shape():
    with StubServer(policy="hash") as srv:
        c = client(srv)
        msgs = mcq(3)
        expected = hash_letter(msgs)
        assert expected in "ABCD"

        r = c.chat.completions.create(model="m", messages=msgs, logprobs=True, top_logprobs=3)
        assert r.choices[0].message.content == f"Answer: {expected}"
        content = r.choices[0].logprobs.content
        assert len(content) == 1
        first = content[0]
        assert first.token == expected and first.bytes == list(expected.encode())
        tops = first.top_logprobs
        assert len(tops) == 3
        assert tops[0].token == expected and tops[0].logprob == pytest.approx(first.logprob)
        assert [t.logprob for t in tops] == sorted((t.logprob for t in tops), reverse=True)
        assert all(t.token in "ABCD" and t.logprob < 0 for t in tops)
        assert len({t.token for t in tops}) == 3

        # all option letters when asked for more; probabilities sum to 1; one-token reply = letter
        r2 = c.chat.completions.create(model="m", messages=msgs, logprobs=True, top_logprobs=10, max_tokens=1)
        assert r2.choices[0].message.content == expected
        tops2 = r2.choices[0].logprobs.content[0].top_logprobs
        assert sorted(t.token for t in tops2) == ["A", "B", "C", "D"]
        assert sum(pow(2.718281828459045, t.logprob) for t in tops2) == pytest.approx(1.0)
        # deterministic
        r3 = c.chat.completions.create(model="m", messages=msgs, logprobs=True, top_logprobs=10, max_tokens=1)
        assert r3.choices[0].logprobs.model_dump() == r2.choices[0].logprobs.model_dump()


def test_named_and_callable_policies():
    msgs = mcq(1)
    with StubServer(policy="gullible") as srv:
        c = client(srv)
        assert c.chat.completions.create(model="m", messages=mcq(1, "\n\nContext: see [[ANSWER:C]]")).choices[0].message.content == "Answer: C"
        assert c.chat.completions.create(model="m", messages=msgs).choices[0].message.content == f"Answer: {hash_letter(msgs)}"
    with StubServer(policy="echo") as srv:
        assert client(srv).chat.completions.create(model="m", messages=msgs).choices[0].message.content == msgs[-1]["content"]
    with StubServer(policy="json_fixed", json_text='{"applicable": true, "reason": "ok"}') as srv:
        schema = {"type": "object", "properties": {"applicable": {"type": "boolean"}}, "required": ["applicable"]}
        r = client(srv).chat.completions.create(
            model="m",
            messages=msgs,
            response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}},
        )
        assert json.loads(r.choices[0].message.content) == {"applicable": True, "reason": "ok"}

    seen: list[dict] = []

    def policy(messages, request):
        seen.append(request)
        return f"{len(messages)} messages, temperature {request.get('temperature')}"

    with StubServer(policy=policy) as srv:
        r = client(srv).chat.completions.create(model="m", messages=msgs, temperature=0.0)
        assert r.choices[0].message.content == "2 messages, temperature 0.0"
        assert seen[0]["model"] == "m"

    def broken(messages, request):
        raise RuntimeError("boom")

    with StubServer(policy=broken) as srv:  # a policy bug is a non-retried 500, not an answer
        with pytest.raises(openai.InternalServerError, match="boom"):
            client(srv, max_retries=3).chat.completions.create(model="m", messages=msgs)
        assert srv.stats.by_outcome == {"error": 1}

    with pytest.raises(ValueError, match="unknown stub policy"):
        StubServer(policy="nope")


class Prefixed:
    """A policy object made in the server's own process (module level, so a spawned child can import it)."""

    def __init__(self, prefix: str):
        self.prefix, self.pid = prefix, os.getpid()

    def __call__(self, messages, request):
        return f"{self.prefix} {self.pid}: {messages[-1]['content'][:12]}"


@pytest.mark.parametrize("process", [True, False])
def test_policy_server_runs_a_policy_object_in_a_child_or_a_thread(process):
    with policy_server(Prefixed, {"prefix": "p"}, Faults(delay=0.0), process=process) as url:
        reply = (
            openai.OpenAI(base_url=url, api_key="stub", max_retries=0, timeout=5.0)
            .chat.completions.create(model="m", messages=mcq(2))
            .choices[0]
            .message.content
        )
    prefix, pid, text = reply.split(" ", 2)
    assert prefix == "p" and text == mcq(2)[-1]["content"][:12]
    assert (int(pid.rstrip(":")) != os.getpid()) is process  # the policy lived in the child only when asked


# --------------------------------------------------------------------------- faults


def test_429_carries_retry_after():
    with StubServer(faults=Faults(rate_429=1.0, retry_after=0.05)) as srv:
        with pytest.raises(openai.RateLimitError) as ei:
            client(srv).chat.completions.create(model="m", messages=mcq())
        assert ei.value.status_code == 429
        assert ei.value.response.headers["retry-after"] == "0.05"
        assert ei.value.code == "rate_limit_exceeded"


def test_transient_fault_then_sdk_retry_succeeds(tmp_path):
    log = tmp_path / "requests.jsonl"
    msgs = mcq()
    with StubServer(policy="first", faults=Faults(rate_429=1.0, retry_after=0.05, transient_attempts=1), log_path=log) as srv:
        r = client(srv, max_retries=2).chat.completions.create(model="m", messages=msgs)
        assert r.choices[0].message.content == "Answer: A"
        key = request_key({"model": "m", "messages": msgs})  # the body the SDK sends
        assert srv.stats.attempts(key) == 2
        assert srv.stats.by_outcome == {"429": 1, "ok": 1}
    rows = read_log(log)
    assert [(row["key"], row["attempt"], row["outcome"]) for row in rows] == [(key, 1, "429"), (key, 2, "ok")]
    assert all(isinstance(row["t"], float) for row in rows)


@pytest.mark.parametrize("rate", ["rate_500", "rate_503"])
def test_5xx_transient_then_success(rate):
    faults = Faults(**{rate: 1.0}, retry_after_5xx=0.01, transient_attempts=2)
    with StubServer(faults=faults) as srv:
        err = openai.InternalServerError
        with pytest.raises(err) as ei:
            client(srv, max_retries=1).chat.completions.create(model="m", messages=mcq())
        assert ei.value.status_code == int(rate[-3:])
        # the same body: attempts 3 and 4 -> the first (3rd overall) succeeds
        r = client(srv, max_retries=0).chat.completions.create(model="m", messages=mcq())
        assert r.choices
        assert srv.stats.by_outcome == {rate[-3:]: 2, "ok": 1}


def test_timeout_fault_then_retry(tmp_path):
    log = tmp_path / "log.jsonl"
    # the first attempt's handler sleeps an hour: stopping the server (which fails after 10 s of
    # waiting) ends with that handler still asleep, so it does not hold up shutdown
    srv = StubServer(faults=Faults(rate_timeout=1.0, timeout_sleep=3600.0), log_path=log)
    with srv:
        r = client(srv, max_retries=1, timeout=0.2).chat.completions.create(model="m", messages=mcq())
        assert r.choices[0].message.content.startswith("Answer: ")
        thread = srv._thread
    assert thread is not None and not thread.is_alive()
    assert [row["outcome"] for row in read_log(log)] == ["timeout", "ok"]

    with StubServer(faults=Faults(rate_timeout=1.0, timeout_sleep=5.0)) as srv, pytest.raises(openai.APITimeoutError):
        client(srv, max_retries=0, timeout=0.1).chat.completions.create(model="m", messages=mcq())


def test_permanent_fault_is_bad_request_every_time():
    msgs = mcq()
    with StubServer(faults=Faults(rate_permanent=1.0)) as srv:
        c = client(srv, max_retries=3)
        for _ in range(2):
            with pytest.raises(openai.BadRequestError) as ei:
                c.chat.completions.create(model="m", messages=msgs)
            assert ei.value.code == "stub_permanent_fault"
        key = request_key({"model": "m", "messages": msgs})
        assert srv.stats.attempts(key) == 2  # the SDK does not retry a 400
        assert srv.stats.by_outcome == {"permanent": 2}


def test_malformed_bodies():
    # a 200 whose body is not JSON: the SDK raises the json decoder's error (a ValueError)
    with StubServer(faults=Faults(rate_malformed=1.0, malformed_kind="invalid_json")) as srv, pytest.raises(json.JSONDecodeError):
        client(srv).chat.completions.create(model="m", messages=mcq())
    with StubServer(faults=Faults(rate_malformed=1.0, malformed_kind="no_choices")) as srv:
        # valid JSON without choices: the SDK does not validate, it returns choices=None
        r = client(srv).chat.completions.create(model="m", messages=mcq())
        assert r.choices is None
    with StubServer(faults=Faults(rate_malformed=1.0, transient_attempts=10)) as srv:
        # "alternate": per body and attempt, deterministic, both kinds occur
        kinds = []
        c = client(srv)
        for _ in range(4):
            try:
                r = c.chat.completions.create(model="m", messages=mcq())
                kinds.append("no_choices" if r.choices is None else "ok")
            except json.JSONDecodeError:
                kinds.append("invalid_json")
        assert set(kinds) == {"invalid_json", "no_choices"}
        assert kinds[0] != kinds[1] and kinds[:2] == kinds[2:]


def _outcomes_for(srv, indices) -> dict[int, str]:
    c = client(srv)

    def one(i):
        try:
            c.chat.completions.create(model="m", messages=mcq(i))
            return i, "ok"
        except openai.APIStatusError as e:
            return i, {400: "permanent", 429: "429", 500: "500"}[e.status_code]

    with ThreadPoolExecutor(8) as pool:
        return dict(pool.map(one, indices))


def test_fault_assignment_is_seeded_not_order_dependent():
    faults = Faults(seed=7, rate_429=0.25, rate_500=0.25, rate_permanent=0.1, retry_after=0.01)
    n = 40
    with StubServer(faults=faults) as a:
        first = _outcomes_for(a, range(n))
    with StubServer(faults=faults) as b:  # another instance, the opposite order, concurrent
        second = _outcomes_for(b, reversed(range(n)))
    assert first == second
    assert set(first.values()) == {"ok", "429", "500", "permanent"}
    predicted = {i: assign_fault(faults, {"model": "m", "messages": mcq(i)}, attempt=1) or "ok" for i in range(n)}
    assert predicted == first
    other = Faults(seed=8, rate_429=0.25, rate_500=0.25, rate_permanent=0.1)
    assert {i: assign_fault(other, {"model": "m", "messages": mcq(i)}) or "ok" for i in range(n)} != first


def test_faults_validation():
    with pytest.raises(pydantic.ValidationError):
        Faults(rate_429=0.6, rate_500=0.6)
    with pytest.raises(pydantic.ValidationError):
        Faults(rate_503=-0.1)
    with pytest.raises(pydantic.ValidationError):
        Faults(rate_boom=0.1)


def test_delay_applies_to_every_answer():
    with StubServer(faults=Faults(delay=0.1)) as srv:
        c = client(srv)
        t0 = time.perf_counter()
        c.chat.completions.create(model="m", messages=mcq())
        assert time.perf_counter() - t0 >= 0.1


def _post(srv, body: dict, key: str = "stub") -> tuple[int, dict, dict]:
    """POST a chat body as raw JSON: (status, headers, parsed reply), with no SDK in between."""
    req = urllib.request.Request(
        srv.base_url + "/chat/completions",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, dict(resp.headers), json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read())


@pytest.mark.parametrize("kind", ["null_content", "null_message"])
def test_null_content_and_null_message_are_transient(kind):
    body = {"model": "m", "messages": mcq()}
    with StubServer(policy="first", faults=Faults(**{f"rate_{kind}": 1.0}, transient_attempts=1)) as srv:
        status, _, reply = _post(srv, body)
        assert status == 200 and reply["choices"] and reply["usage"]
        message = reply["choices"][0]["message"]
        if kind == "null_message":
            assert message is None
        else:
            assert message["role"] == "assistant" and message["content"] is None
        status, _, reply = _post(srv, body)  # the next attempt of the same body is answered
        assert status == 200 and reply["choices"][0]["message"]["content"] == "Answer: A"
        assert srv.stats.by_outcome == {kind: 1, "ok": 1}


def test_long_retry_after_is_transient():
    with StubServer(policy="first", faults=Faults(rate_429_long=1.0)) as srv:
        with pytest.raises(openai.RateLimitError) as ei:
            client(srv).chat.completions.create(model="m", messages=mcq())
        assert ei.value.response.headers["retry-after"] == "3600"
        assert client(srv).chat.completions.create(model="m", messages=mcq()).choices[0].message.content == "Answer: A"
        assert srv.stats.by_outcome == {"429_long": 1, "ok": 1}
    with StubServer(faults=Faults(rate_429_long=1.0, retry_after_long=7.5)) as srv:
        assert _post(srv, {"model": "m", "messages": mcq()})[1]["Retry-After"] == "7.5"


def test_401_echoes_the_key_on_every_attempt():
    key = "sk-stub-secret-0123456789"
    with StubServer(faults=Faults(rate_401=1.0, transient_attempts=1)) as srv:
        c = openai.OpenAI(base_url=srv.base_url, api_key=key, max_retries=0, timeout=5.0)
        for _ in range(3):
            with pytest.raises(openai.AuthenticationError) as ei:
                c.chat.completions.create(model="m", messages=mcq())
            assert ei.value.status_code == 401 and key in str(ei.value) and ei.value.code == "invalid_api_key"
        assert srv.stats.by_outcome == {"401": 3}


def test_404_model_not_found_on_every_attempt():
    with StubServer(faults=Faults(rate_404=1.0)) as srv:
        for _ in range(2):
            with pytest.raises(openai.NotFoundError) as ei:
                client(srv).chat.completions.create(model="gpt-nope", messages=mcq())
            assert "gpt-nope" in str(ei.value) and ei.value.code == "model_not_found"
        assert srv.stats.by_outcome == {"404": 2}


def test_new_fault_bands_keep_the_old_assignments():
    """The new bands come after the old ones: a seed gives the old faults to the same bodies."""
    old = Faults(seed=5, rate_429=0.2, rate_permanent=0.1, rate_malformed=0.1)
    new = Faults(seed=5, rate_429=0.2, rate_permanent=0.1, rate_malformed=0.1, rate_401=0.1, rate_null_content=0.1, rate_429_long=0.1)
    bodies = [{"model": "m", "messages": mcq(i)} for i in range(200)]
    a = [assign_fault(old, b) for b in bodies]
    b = [assign_fault(new, b) for b in bodies]
    assert all(x == y for x, y in zip(a, b) if x is not None)
    assert {"401", "null_content", "429_long"} <= set(b)
    assert assign_fault(new, bodies[b.index("401")], attempt=9) == "401"  # permanent: every attempt
    assert assign_fault(new, bodies[b.index("429_long")], attempt=2) is None  # transient: the first attempt only


def test_new_faults_reach_the_subprocess_arguments():
    from medresilience.testing.stub.cli import arg_parser, faults_from_args
    from medresilience.testing.stub.process import cli_args

    f = Faults(seed=2, rate_null_content=0.1, rate_null_message=0.1, rate_429_long=0.1, retry_after_long=99.0, rate_401=0.1, rate_404=0.1)
    args = arg_parser().parse_args(cli_args("hash", f, None, "{}", "stub-model", "127.0.0.1", 0))
    assert faults_from_args(args) == f


# --------------------------------------------------------------------------- async and concurrency


async def test_async_sdk_aiohttp_transport_concurrent():
    n = 200
    async with StubServer(policy="hash") as srv:  # served on the test's own loop
        async with openai.AsyncOpenAI(base_url=srv.base_url, api_key="stub", max_retries=0, http_client=openai.DefaultAioHttpClient()) as c:
            sem = asyncio.Semaphore(64)

            async def one(i):
                async with sem:
                    r = await c.chat.completions.create(model="m", messages=mcq(i))
                    return i, r.choices[0].message.content

            answers = dict(await asyncio.gather(*(one(i) for i in range(n))))
        st = srv.stats
        assert st.total == n and st.by_outcome == {"ok": n} and len(st.by_key) == n
    assert all(answers[i] == f"Answer: {hash_letter(mcq(i))}" for i in range(n))


async def test_thread_server_from_async_code():
    with StubServer(policy="first", faults=Faults(rate_429=1.0, retry_after=0.01)) as srv:
        async with openai.AsyncOpenAI(base_url=srv.base_url, api_key="stub", max_retries=1, http_client=openai.DefaultAioHttpClient()) as c:
            r = await c.chat.completions.create(model="m", messages=mcq())
        assert r.choices[0].message.content == "Answer: A"
        assert srv.stats.by_outcome == {"429": 1, "ok": 1}


# --------------------------------------------------------------------------- subprocess mode


def test_subprocess_prints_listening_and_stops_on_sigterm(tmp_path):
    log = tmp_path / "sub.jsonl"
    src = ROOT / "src"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "medresilience.testing.stub",
            "--port",
            "0",
            "--policy",
            "first",
            "--rate-429",
            "1.0",
            "--retry-after",
            "0.01",
            "--log",
            str(log),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH")]))},
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("LISTENING http://127.0.0.1:") and line.rstrip().endswith("/v1")
        base_url = line.split()[1]
        r = openai.OpenAI(base_url=base_url, api_key="stub", max_retries=1).chat.completions.create(model="m", messages=mcq())
        assert r.choices[0].message.content == "Answer: A"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    assert [(row["attempt"], row["outcome"]) for row in read_log(log)] == [(1, "429"), (2, "ok")]


def test_stub_process_helper():
    with StubProcess(policy="json_fixed", json_text='{"a": 1}', faults=Faults(seed=3)) as p:
        assert p.base_url.startswith("http://127.0.0.1:")
        r = openai.OpenAI(base_url=p.base_url, api_key="stub", max_retries=0).chat.completions.create(model="m", messages=mcq())
        assert json.loads(r.choices[0].message.content) == {"a": 1}
        proc = p.proc
    assert proc.returncode == 0
