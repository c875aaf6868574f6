"""`medres review serve --public-host HOST`: behind a TLS-terminating proxy on the same machine the
app allows that host name (and still refuses others), marks its cookies Secure, and accepts forms
whose Origin is the public https address; a bad host name is refused before anything is served."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from medresilience.cli import app
from medresilience.review.app import SESSION_COOKIE, create_app, proxy_options
from test_review_app import csrf_of, data, new_review  # noqa: F401  (the module fixture)

HOST = "review.example.org"


def test_the_public_host_is_allowed_with_secure_cookies(data, tmp_path):  # noqa: F811
    path, pw = new_review(data, tmp_path)
    opts = proxy_options(HOST)
    assert opts["server"] == {"proxy_headers": True, "forwarded_allow_ips": "127.0.0.1"}
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
