"""`medres review serve --public-host HOST`: behind a TLS-terminating proxy on the same machine the
app allows that host name (and still refuses others), marks its cookies Secure, and accepts forms
whose Origin is the public https address; X-Forwarded-For names the client only on requests that
carry the proxy's shared secret; a bad host name or a missing secret is refused before anything is
served."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from medresilience.cli import app
from medresilience.review.app import PROXY_SECRET_ENV, PROXY_SECRET_HEADER, SESSION_COOKIE, create_app, proxy_options
from medresilience.review.auth import RateLimiter
from test_review_app import csrf_of, data, new_review  # noqa: F401  (the module fixture)

HOST = "review.example.org"
SECRET = "proxy-shared-secret-0123456789"


@pytest.fixture(autouse=True)
def _secret(monkeypatch):
    monkeypatch.setenv(PROXY_SECRET_ENV, SECRET)


def test_the_public_host_is_allowed_with_secure_cookies(data, tmp_path):  # noqa: F811
    path, pw = new_review(data, tmp_path)
    opts = proxy_options(HOST)
    assert opts["server"] == {"proxy_headers": False}  # the server never reads forwarded headers itself
    c = TestClient(create_app(path, **opts["app"]), base_url=f"https://{HOST}", follow_redirects=False)
    token = csrf_of(c.get("/login").text)
    r = c.post("/login", data={"name": "alice", "password": pw["alice"], "csrf": token}, headers={"origin": f"https://{HOST}"})
    assert r.status_code == 303, r.text
    cookie = next(v for k, v in r.headers.multi_items() if k == "set-cookie" and v.startswith(SESSION_COOKIE))
    assert "secure" in [a.strip().lower() for a in cookie.split(";")]
    assert c.get("/").status_code == 200
    # a form posted from another origin is refused, and so is another host name
    assert c.post("/logout", data={"csrf": token}, headers={"origin": "https://evil.example"}).status_code in (400, 403)
    evil = TestClient(create_app(path, **opts["app"]), base_url="https://evil.example", follow_redirects=False)
    assert evil.get("/login").status_code == 400
    # without --public-host the app answers loopback names only, cookies not Secure
    plain = TestClient(create_app(path, **proxy_options(None)["app"]), base_url=f"https://{HOST}", follow_redirects=False)
    assert plain.get("/login").status_code == 400


@pytest.mark.parametrize("bad", ["https://review.example.org", "review.example.org:443", "review.example.org/x", "-bad-.org", ""])
def test_a_bad_public_host_is_refused(bad, tmp_path):
    with pytest.raises(ValueError, match="host name"):
        proxy_options(bad)
    r = CliRunner().invoke(app, ["review", "serve", str(tmp_path), "--public-host", bad])
    assert r.exit_code != 0 and "host name" in r.output


def _failed_sign_ins(c: TestClient, n: int, headers_of) -> list[int]:
    codes = []
    for i in range(n):
        token = csrf_of(c.get("/login").text)
        r = c.post("/login", data={"name": f"nobody{i}", "password": "wrong", "csrf": token}, headers={"origin": f"https://{HOST}", **headers_of(i)})
        codes.append(r.status_code)
    return codes


def test_x_forwarded_for_is_trusted_only_with_the_proxys_secret(data, tmp_path):  # noqa: F811
    path, _ = new_review(data, tmp_path)
    opts = proxy_options(HOST)

    def app_client():
        return TestClient(create_app(path, client_limiter=RateLimiter(limit=5), **opts["app"]), base_url=f"https://{HOST}", follow_redirects=False)

    # a local process making up a client per attempt (no secret, or a wrong one) is one client: limited
    for extra in ({}, {PROXY_SECRET_HEADER: "guess-guess-guess-guess"}):
        codes = _failed_sign_ins(app_client(), 30, lambda i, extra=extra: {"X-Forwarded-For": f"10.0.0.{i}", **extra})
        assert codes[:5] == [401] * 5 and set(codes[5:]) == {429}, codes
    # the proxy (with the secret) names each client: thirty clients, none limited; its last entry counts
    codes = _failed_sign_ins(app_client(), 30, lambda i: {"X-Forwarded-For": f"6.6.6.6, 10.0.0.{i}", PROXY_SECRET_HEADER: SECRET})
    assert set(codes) == {401}, codes
    codes = _failed_sign_ins(app_client(), 8, lambda i: {"X-Forwarded-For": f"10.0.{i}.1, 10.9.9.9", PROXY_SECRET_HEADER: SECRET})
    assert set(codes[5:]) == {429}, codes


@pytest.mark.parametrize("secret", [None, "short"])
def test_public_host_without_a_shared_secret_is_refused(secret, tmp_path, monkeypatch):
    if secret is None:
        monkeypatch.delenv(PROXY_SECRET_ENV)
    else:
        monkeypatch.setenv(PROXY_SECRET_ENV, secret)
    with pytest.raises(ValueError, match=PROXY_SECRET_ENV):
        proxy_options(HOST)
    r = CliRunner().invoke(app, ["review", "serve", str(tmp_path), "--public-host", HOST])
    assert r.exit_code == 2 and PROXY_SECRET_ENV in r.output
