"""The review web app (FastAPI, server-rendered Jinja2 pages, no script).

Routes (review/routes/, one APIRouter per area, sharing the app's state and the signed-in
reviewer through the dependencies of review/web.py): GET/POST /login (the only ones open without a
session), POST /logout, GET / (the reviewer's queue and progress), GET /next, GET/POST /tasks/{id}
(show and rate one task), GET /rubric, and for admins GET /admin and POST /admin/revoke.

Security: every route but sign-in needs a signed session cookie (itsdangerous; HttpOnly,
SameSite=Strict) whose reviewer exists, is not revoked and still has the cookie's epoch (sign-out
and revocation bump it, ending every copy); every form carries a CSRF token (the session's, or
for sign-in a signed double-submit token) and cross-site posts are refused; a task is read and
written only through `WHERE task_id = ? AND reviewer = ?`, so another reviewer's task is a 404
like a missing one; sign-in failures are rate-limited per reviewer name and per client; every
text is escaped by Jinja2's autoescape (the templates in review/templates/); each response carries a strict Content-Security-Policy
(no script, the inline stylesheet by hash), no caching, no framing, no referrer to other sites; only Host
headers naming the loopback address are served. Behind a proxy (`--public-host`), a client is
named by X-Forwarded-For only on requests that carry the proxy's shared secret (PROXY_SECRET_HEADER,
the value of MEDRES_PROXY_SECRET): any other local process is counted as itself."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.middleware.trustedhost import TrustedHostMiddleware

from .auth import RateLimiter, SessionCodec
from .db import ReviewDB
from .pages import CSP, environment
from .routes import admin, queue, session
from .web import PROXY_SECRET_HEADER, SESSION_COOKIE, ReviewState, SignInRequired, to_login

__all__ = ["PROXY_SECRET_ENV", "PROXY_SECRET_HEADER", "SESSION_COOKIE", "create_app", "proxy_options", "serve"]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost")
#: The variable holding the shared secret the reverse proxy sends in PROXY_SECRET_HEADER.
PROXY_SECRET_ENV = "MEDRES_PROXY_SECRET"
MIN_PROXY_SECRET = 16
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), interest-cohort=()",
}


def create_app(
    review: Path | str,
    *,
    allowed_hosts: Sequence[str] = LOOPBACK_HOSTS,
    name_limiter: RateLimiter | None = None,
    client_limiter: RateLimiter | None = None,
    secure_cookies: bool = False,
    proxy_secret: str | None = None,
) -> FastAPI:
    """The app serving one review database. `secure_cookies` marks cookies Secure (behind a TLS
    proxy); `proxy_secret`: X-Forwarded-For is read only from requests carrying it."""
    db = ReviewDB(review)
    state = ReviewState(
        db=db,
        rubric=db.rubric,
        codec=SessionCodec(db.secret_key()),
        names=name_limiter or RateLimiter(),
        clients=client_limiter or RateLimiter(limit=20),
        env=environment(),
        secure_cookies=secure_cookies,
        proxy_secret=proxy_secret,
    )

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI):
        yield
        db.close()

    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None, title="medresilience review", lifespan=lifespan)
    app.state.db = db
    app.state.review = state
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))
    app.middleware("http")(_security_headers)
    app.add_exception_handler(SignInRequired, _to_login)
    # Each area's routes are added to the app itself, so app.routes lists every served route
    # (FastAPI's include_router keeps an included router as one entry that hides its routes).
    for area in (session, queue, admin):
        for route in area.router.routes:
            app.add_api_route(route.path, route.endpoint, methods=sorted(route.methods), name=route.name)
    return app


async def _security_headers(request: Request, call_next) -> Response:
    """Cross-site state-changing requests are refused; every response carries the security headers."""
    if request.method not in ("GET", "HEAD") and not _same_origin(request):
        response: Response = Response("cross-site request refused", status_code=403, media_type="text/plain")
    else:
        response = await call_next(request)
    for k, v in SECURITY_HEADERS.items():
        response.headers[k] = v
    return response


async def _to_login(request: Request, exc: Exception) -> Response:
    return to_login()


def _same_origin(request: Request) -> bool:
    """A state-changing request must not come from another site: Sec-Fetch-Site, which browsers
    send, must be same-origin (or none: typed by the user); without it, an Origin header other
    than "null" must name this host. The CSRF token is checked as well, in every handler."""
    site = request.headers.get("sec-fetch-site")
    if site:
        return site in ("same-origin", "none")
    origin = request.headers.get("origin")
    if origin and origin != "null":
        return urlsplit(origin).netloc == request.headers.get("host", "")
    return True


def proxy_options(public_host: str | None, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The app's and the server's options for serving behind a TLS-terminating reverse proxy on
    this machine that forwards `https://PUBLIC_HOST/` to 127.0.0.1: that host name is allowed,
    cookies are Secure, and X-Forwarded-For names the client (so sign-in rate limits count each
    client, not the proxy) only on requests carrying the shared secret of MEDRES_PROXY_SECRET in
    X-Medres-Proxy-Secret, which the proxy sets (any local process can connect from 127.0.0.1:
    the address alone proves nothing). The server itself never reads forwarded headers. None:
    loopback only. A bad host name or a missing or short secret is a ValueError."""
    if public_host is None:
        return {"app": {}, "server": {"proxy_headers": False}}
    host = public_host.strip().lower()
    if not re.fullmatch(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*", host):
        raise ValueError(f"--public-host must be a host name such as review.example.org (no scheme, port or path), not {public_host!r}")
    secret = (os.environ if environ is None else environ).get(PROXY_SECRET_ENV, "")
    if len(secret) < MIN_PROXY_SECRET:
        raise ValueError(
            f"--public-host needs a shared secret of at least {MIN_PROXY_SECRET} characters in {PROXY_SECRET_ENV}, which the "
            f"proxy sends in the {PROXY_SECRET_HEADER} header (X-Forwarded-For is trusted only from it)"
        )
    return {"app": {"allowed_hosts": (*LOOPBACK_HOSTS, host), "secure_cookies": True, "proxy_secret": secret}, "server": {"proxy_headers": False}}


def serve(
    review: Path | str, port: int = 8765, log_level: str = "warning", public_host: str | None = None
) -> None:  # pragma: no cover - exercised by a subprocess test
    """Serve a review on 127.0.0.1 (loopback only) until interrupted; `public_host`: behind a TLS
    proxy on this machine (see proxy_options)."""
    import uvicorn

    opts = proxy_options(public_host)
    app = create_app(review, **opts["app"])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level=log_level, server_header=False, date_header=False, access_log=False, **opts["server"])
