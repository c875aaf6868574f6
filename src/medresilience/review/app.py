"""The review web app (FastAPI, server-rendered Jinja2 pages, no script).

Routes: GET/POST /login (the only ones open without a session), POST /logout, GET / (the
reviewer's queue and progress), GET /next, GET/POST /tasks/{id} (show and rate one task),
GET /rubric, and for admins GET /admin and POST /admin/revoke.

Security: every route but sign-in needs a signed session cookie (itsdangerous; HttpOnly,
SameSite=Strict) whose reviewer exists, is not revoked and still has the cookie's epoch (sign-out
and revocation bump it, ending every copy); every form carries a CSRF token (the session's, or
for sign-in a signed double-submit token) and cross-site posts are refused; a task is read and
written only through `WHERE task_id = ? AND reviewer = ?`, so another reviewer's task is a 404
like a missing one; sign-in failures are rate-limited per reviewer name and per client; every
text is escaped by Jinja2's autoescape; each response carries a strict Content-Security-Policy
(no script, the inline stylesheet by hash), no caching, no framing, no referrer to other sites; only Host
headers naming the loopback address are served. Behind a proxy (`--public-host`), a client is
named by X-Forwarded-For only on requests that carry the proxy's shared secret (PROXY_SECRET_HEADER,
the value of MEDRES_PROXY_SECRET): any other local process is counted as itself."""

from __future__ import annotations

import contextlib
import hmac
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import DictLoader, Environment, select_autoescape
from starlette.concurrency import run_in_threadpool
from starlette.middleware.trustedhost import TrustedHostMiddleware

from .auth import RateLimiter, Session, SessionCodec, same_token
from .db import ReviewDB, Reviewer
from .templates import CSP, CSS, TEMPLATES

SESSION_COOKIE = "medres_review_session"
LOGIN_COOKIE = "medres_review_login"
MAX_COMMENT = 4000
LOOPBACK_HOSTS = ("127.0.0.1", "localhost")
#: The header the reverse proxy sets to the shared secret, and the variable holding that secret.
PROXY_SECRET_HEADER = "X-Medres-Proxy-Secret"
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


def _env() -> Environment:
    return Environment(
        loader=DictLoader(TEMPLATES), autoescape=select_autoescape(default=True, default_for_string=True), trim_blocks=False, lstrip_blocks=False
    )


def client_address(request: Request, proxy_secret: str | None) -> str:
    """Who sent a request: the connection's address, or, on a request carrying the proxy's shared
    secret, the address the proxy appended last to X-Forwarded-For (earlier entries are the
    client's own words)."""
    peer = request.client.host if request.client else "?"
    if proxy_secret and hmac.compare_digest(request.headers.get(PROXY_SECRET_HEADER, "").encode(), proxy_secret.encode()):
        forwarded = request.headers.get("x-forwarded-for", "").split(",")[-1].strip()
        if forwarded:
            return forwarded[:64]
    return peer


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
    rubric = db.rubric
    codec = SessionCodec(db.secret_key())
    names = name_limiter or RateLimiter()
    clients = client_limiter or RateLimiter(limit=20)
    env = _env()

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI):
        yield
        db.close()

    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None, title="medresilience review", lifespan=lifespan)
    app.state.db = db
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))

    @app.middleware("http")
    async def headers(request: Request, call_next):
        if request.method not in ("GET", "HEAD") and not _same_origin(request):
            response: Response = Response("cross-site request refused", status_code=403, media_type="text/plain")
        else:
            response = await call_next(request)
        for k, v in SECURITY_HEADERS.items():
            response.headers[k] = v
        return response

    # ------------------------------------------------------------------ helpers
    def page(template: str, status: int = 200, headers: dict[str, str] | None = None, **ctx: Any) -> HTMLResponse:
        html = env.get_template(template).render(css=CSS, rubric=rubric, **ctx)
        return HTMLResponse(html, status_code=status, headers=headers)

    def cookie(response: Response, key: str, value: str, max_age: int, path: str = "/") -> None:
        response.set_cookie(key, value, max_age=max_age, path=path, httponly=True, samesite="strict", secure=secure_cookies)

    def current(request: Request) -> tuple[Reviewer, Session] | None:
        s = codec.read(request.cookies.get(SESSION_COOKIE))
        if s is None:
            return None
        r = db.reviewer(s.reviewer)
        if r is None or r.revoked or r.epoch != s.epoch or not r.has_password:
            return None
        return r, s

    def to_login() -> RedirectResponse:
        resp = RedirectResponse("/login", status_code=303)
        resp.delete_cookie(SESSION_COOKIE, path="/")
        return resp

    def not_found(reviewer: Reviewer, s: Session) -> HTMLResponse:
        return page("message.html", 404, reviewer=reviewer, csrf=s.csrf, heading="Not found", message="There is no such task in your queue.")

    def login_page(status: int = 200, error: str | None = None, name: str = "", headers: dict[str, str] | None = None) -> HTMLResponse:
        cookie_value, token = codec.login_token()
        resp = page("login.html", status, headers=headers, reviewer=None, login_csrf=token, error=error, name=name)
        cookie(resp, LOGIN_COOKIE, cookie_value, 3600, path="/login")
        return resp

    # ------------------------------------------------------------------ sign-in
    @app.get("/login")
    def login_form(request: Request):
        if current(request):
            return RedirectResponse("/", status_code=303)
        return login_page()

    @app.post("/login")
    async def login(request: Request):
        form = await request.form()
        name = str(form.get("name") or "").strip()[:64]
        password = str(form.get("password") or "")[:256]
        if not codec.login_token_ok(request.cookies.get(LOGIN_COOKIE), str(form.get("csrf") or "")):
            return login_page(400, "The sign-in form expired or was not sent from this page; please try again.", name)
        client = client_address(request, proxy_secret)
        wait = max(names.retry_after(f"name:{name.lower()}"), clients.retry_after(f"client:{client}"))
        if wait > 0:
            minutes = max(1, int(wait // 60 + (wait % 60 > 0)))
            return login_page(
                429, f"Too many failed sign-ins. Try again in {minutes} minute{'s' if minutes != 1 else ''}.", name, headers={"Retry-After": str(int(wait) + 1)}
            )
        reviewer = await run_in_threadpool(db.check_password, name, password)
        if reviewer is None:
            names.failed(f"name:{name.lower()}")
            clients.failed(f"client:{client}")
            await run_in_threadpool(db.audit, name or "?", "sign-in failed", client)
            return login_page(401, "Wrong name or password (or this reviewer was revoked).", name)
        names.succeeded(f"name:{name.lower()}")
        value, _ = codec.issue(reviewer.name, reviewer.epoch)
        await run_in_threadpool(db.audit, reviewer.name, "sign-in", client)
        resp = RedirectResponse("/", status_code=303)
        cookie(resp, SESSION_COOKIE, value, codec.max_age)
        resp.delete_cookie(LOGIN_COOKIE, path="/login")
        return resp

    @app.post("/logout")
    async def logout(request: Request):
        who = current(request)
        if who is None:
            return to_login()
        form = await request.form()
        if not same_token(who[1].csrf, form.get("csrf")):
            return page("message.html", 403, reviewer=who[0], csrf=who[1].csrf, heading="Refused", message="The form was not sent from this site.")
        await run_in_threadpool(db.end_sessions, who[0].name)
        await run_in_threadpool(db.audit, who[0].name, "sign-out", "")
        return to_login()

    # ------------------------------------------------------------------ the queue
    @app.get("/")
    def queue(request: Request):
        who = current(request)
        if who is None:
            return to_login()
        r, s = who
        tasks = db.tasks_for(r.name)
        return page("queue.html", reviewer=r, csrf=s.csrf, tasks=tasks, progress=db.progress(r.name), next_task=db.next_task(r.name))

    @app.get("/next")
    def next_task(request: Request):
        who = current(request)
        if who is None:
            return to_login()
        t = db.next_task(who[0].name)
        return RedirectResponse(f"/tasks/{t.task_id}" if t else "/", status_code=303)

    @app.get("/rubric")
    def rubric_page(request: Request):
        who = current(request)
        if who is None:
            return to_login()
        return page("rubric.html", reviewer=who[0], csrf=who[1].csrf)

    # ------------------------------------------------------------------ one task
    def render_task(
        r: Reviewer, s: Session, task, status: int = 200, error: str | None = None, values=None, flags=None, comment=None, saved: bool = False
    ) -> HTMLResponse:
        order = [t.task_id for t in db.tasks_for(r.name)]
        i = order.index(task.task_id)
        return page(
            "task.html",
            status,
            reviewer=r,
            csrf=s.csrf,
            task=task,
            blocks=task.display or [],
            progress=db.progress(r.name),
            values=task.values if values is None else values,
            flags=task.flags if flags is None else flags,
            comment=task.comment if comment is None else comment,
            error=error,
            saved=saved,
            prev_task=order[i - 1] if i > 0 else None,
            next_task=order[i + 1] if i + 1 < len(order) else None,
        )

    @app.get("/tasks/{task_id}")
    def show_task(request: Request, task_id: str):
        who = current(request)
        if who is None:
            return to_login()
        r, s = who
        task = db.task(int(task_id), r.name) if task_id.isdigit() and len(task_id) < 12 else None
        if task is None:
            return not_found(r, s)
        return render_task(r, s, task, saved=request.query_params.get("saved") == "1")

    @app.post("/tasks/{task_id}")
    async def rate_task(request: Request, task_id: str):
        who = current(request)
        if who is None:
            return to_login()
        r, s = who
        form = await request.form()
        if not same_token(s.csrf, form.get("csrf")):
            return page("message.html", 403, reviewer=r, csrf=s.csrf, heading="Refused", message="The form was not sent from this site.")
        task = db.task(int(task_id), r.name) if task_id.isdigit() and len(task_id) < 12 else None
        if task is None:
            return not_found(r, s)
        action = form.get("action")
        if action not in ("submit", "skip"):
            return render_task(r, s, task, 400, "Choose Submit rating or Skip for now.")
        values: dict[str, str] = {}
        for d in rubric.dimensions:
            v = form.get(f"dim_{d.key}")
            if v is None or v == "":
                continue
            if v not in d.values:
                return render_task(r, s, task, 400, f"'{v}' is not a value of {d.label}.")
            values[d.key] = str(v)
        known = {f.key for f in rubric.flags}
        flags = [str(f) for f in form.getlist("flag")]
        if any(f not in known for f in flags):
            return render_task(r, s, task, 400, "Unknown flag.", values, flags)
        comment = str(form.get("comment") or "")
        if len(comment) > MAX_COMMENT:
            return render_task(r, s, task, 400, f"The comment is longer than {MAX_COMMENT} characters.", values, flags, comment)
        if action == "submit":
            missing = [d.label for d in rubric.dimensions if d.required and d.key not in values]
            if missing:
                return render_task(
                    r,
                    s,
                    task,
                    400,
                    "Rate every dimension before submitting (missing: " + ", ".join(missing) + "), or skip the task for now.",
                    values,
                    flags,
                    comment,
                )
        ok = await run_in_threadpool(db.submit, task.task_id, r.name, "rated" if action == "submit" else "skipped", values, flags, comment)
        if not ok:  # pragma: no cover - checked above; the write checks again
            return not_found(r, s)
        nxt = db.next_task(r.name, after=task.position)
        return RedirectResponse(f"/tasks/{nxt.task_id}?saved=1" if nxt else "/", status_code=303)

    # ------------------------------------------------------------------ admin
    @app.get("/admin")
    def admin(request: Request):
        who = current(request)
        if who is None:
            return to_login()
        r, s = who
        if not r.admin:
            return page("message.html", 404, reviewer=r, csrf=s.csrf, heading="Not found", message="There is no such page.")
        rows = [{**vars(x), **db.progress(x.name)} for x in db.reviewers()]
        return page("admin.html", reviewer=r, csrf=s.csrf, rows=rows, notice=request.query_params.get("revoked") and "Reviewer revoked.")

    @app.post("/admin/revoke")
    async def revoke(request: Request):
        who = current(request)
        if who is None:
            return to_login()
        r, s = who
        form = await request.form()
        if not r.admin:
            return page("message.html", 404, reviewer=r, csrf=s.csrf, heading="Not found", message="There is no such page.")
        if not same_token(s.csrf, form.get("csrf")):
            return page("message.html", 403, reviewer=r, csrf=s.csrf, heading="Refused", message="The form was not sent from this site.")
        name = str(form.get("name") or "")
        target = db.reviewer(name)
        if target is None or target.name == r.name:
            return page("message.html", 400, reviewer=r, csrf=s.csrf, heading="Not revoked", message="Choose another reviewer.")
        await run_in_threadpool(db.revoke, name, r.name)
        return RedirectResponse("/admin?revoked=1", status_code=303)

    return app


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


def proxy_options(public_host: str | None, environ: Any = None) -> dict[str, Any]:
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
