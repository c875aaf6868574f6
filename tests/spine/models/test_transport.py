"""The lean chat-completions transport keeps the `openai` SDK's interface: its exceptions for
error replies (class, message, headers, body), refused and cut connections, timeouts, malformed
bodies; the SDK's URL joining; proxies from the environment; and a CLI that never imports the SDK
until a call fails. Against the real local stub server (the SDK is the boundary we do not own)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys

import openai
import pytest

from medresilience.models.openai_compatible import OpenAICompatibleModel, _refused
from medresilience.models.spec import parse_model_spec
from medresilience.models.transport import ChatTransport, endpoint, env_proxy
from medresilience.testing.stub import Faults, StubServer

BODY = {"model": "stub-model", "messages": [{"role": "user", "content": "Which? A. x B. y"}], "max_tokens": 8}


def _post(url: str, body: dict | None = None, timeout: float = 10.0):
    async def go():
        t = ChatTransport(url, "sk-test", timeout)
        try:
            return await t.post(body or BODY)
        finally:
            await t.close()

    return asyncio.run(go())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_endpoint_joins_like_the_sdk():
    assert endpoint("http://h:1/v1") == "http://h:1/v1/chat/completions"
    assert endpoint("http://h:1/v1/") == "http://h:1/v1/chat/completions"
    assert endpoint("https://h/openai/deployments/x?api-version=2024") == "https://h/openai/deployments/x/chat/completions?api-version=2024"


def test_a_reply_is_its_json_object():
    with StubServer() as srv:
        reply = _post(srv.base_url)
        assert reply["choices"][0]["message"]["content"]
        assert srv.stats.total == 1


@pytest.mark.parametrize(
    ("fault", "cls", "status"),
    [
        ("rate_429", openai.RateLimitError, 429),
        ("rate_500", openai.InternalServerError, 500),
        ("rate_503", openai.InternalServerError, 503),
        ("rate_401", openai.AuthenticationError, 401),
        ("rate_404", openai.NotFoundError, 404),
        ("rate_permanent", openai.BadRequestError, 400),
    ],
)
def test_error_replies_raise_the_sdks_exception(fault, cls, status):
    with StubServer(faults=Faults(**{fault: 1.0}, retry_after=2.5)) as srv, pytest.raises(cls) as e:
        _post(srv.base_url)
    err = e.value
    assert err.status_code == status
    assert str(err).startswith(f"Error code: {status} - ")  # the SDK's message: status and the body's error message
    assert isinstance(err.body, dict) and err.body.get("message")  # the SDK keeps the error object
    if status == 429:
        assert err.response.headers["retry-after"] == "2.5"  # read case-insensitively, as the client's backoff does


def test_refused_connection_is_the_sdks_connection_error_with_its_cause():
    with pytest.raises(openai.APIConnectionError) as e:
        _post(f"http://127.0.0.1:{_free_port()}/v1")
    assert _refused(e.value)  # the ConnectionRefusedError stays in the chain


def test_malformed_body_raises_a_json_error():
    with StubServer(faults=Faults(rate_malformed=1.0, malformed_kind="invalid_json")) as srv, pytest.raises(json.JSONDecodeError):
        _post(srv.base_url)


def test_a_slow_read_is_the_sdks_timeout_error():
    with StubServer(faults=Faults(delay=2.0)) as srv, pytest.raises(openai.APITimeoutError):
        _post(srv.base_url, timeout=0.3)


def test_proxy_from_the_environment(monkeypatch):
    """HTTP_PROXY is honoured as by the SDK's client: a base URL that does not resolve is reached
    through the proxy (the stub answers absolute-form requests on its path)."""
    with StubServer() as srv:
        monkeypatch.setenv("HTTP_PROXY", srv.root_url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        reply = _post("http://model.invalid/v1")
        assert reply["choices"][0]["message"]["content"]
        assert srv.stats.total == 1


def test_credentials_in_the_base_url_are_a_configuration_error():
    spec = parse_model_spec("openai:stub-model,base_url=http://user:secret-pass@127.0.0.1:9/v1,max_retries=3")

    async def go():
        async with OpenAICompatibleModel(spec) as m:
            return await m.complete(BODY["messages"], {"max_tokens": 8})

    with pytest.raises(Exception) as e:
        asyncio.run(go())
    assert getattr(e.value, "config", False) and e.value.attempts == 1
    assert "secret-pass" not in str(e.value)


def test_the_cli_does_not_import_the_sdk():
    """The SDK costs about a third of a second to import; only a failing call needs it."""
    code = "import sys, medresilience.cli, medresilience.calls; print('openai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_no_proxy_bypasses_the_proxy(monkeypatch):
    """NO_PROXY names the hosts reached directly: a dead proxy is never tried for them."""
    with StubServer() as srv:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{_free_port()}")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        reply = _post(srv.base_url)
        assert reply["choices"][0]["message"]["content"]


def test_proxy_credentials_go_to_the_proxy_not_the_url(monkeypatch):
    for k in ("HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://user:pw@proxy.example:3128")
    proxy, headers = env_proxy("https://api.example/v1/chat/completions")
    assert proxy == "http://proxy.example:3128" and headers == {"Proxy-Authorization": "Basic dXNlcjpwdw=="}  # user:pw
    monkeypatch.setenv("NO_PROXY", "api.example")
    assert env_proxy("https://api.example/v1/chat/completions") == (None, None)
