"""Sign-in and sign-out: GET/POST /login (open without a session: a double-submit CSRF token,
failures rate-limited per reviewer name and per client) and POST /logout (ends every session of
the reviewer)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse
from starlette.concurrency import run_in_threadpool

from ..auth import same_token
from ..web import LOGIN_COOKIE, SESSION_COOKIE, ReviewState, State, Who, client_address, to_login

router = APIRouter()


@router.get("/login")
def login_form(request: Request, state: State):
    if state.current(request):
        return RedirectResponse("/", status_code=303)
    return state.login_page()


@router.post("/login")
async def login(request: Request, state: State):
    form = await request.form()
    name = str(form.get("name") or "").strip()[:64]
    password = str(form.get("password") or "")[:256]
    if not state.codec.login_token_ok(request.cookies.get(LOGIN_COOKIE), str(form.get("csrf") or "")):
        return state.login_page(400, "The sign-in form expired or was not sent from this page; please try again.", name)
    client = client_address(request, state.proxy_secret)
    wait = max(state.names.retry_after(f"name:{name.lower()}"), state.clients.retry_after(f"client:{client}"))
    if wait > 0:
        minutes = max(1, int(wait // 60 + (wait % 60 > 0)))
        return state.login_page(
            429, f"Too many failed sign-ins. Try again in {minutes} minute{'s' if minutes != 1 else ''}.", name, headers={"Retry-After": str(int(wait) + 1)}
        )
    reviewer = await run_in_threadpool(state.db.check_password, name, password)
    if reviewer is None:
        return await _failed(state, name, client)
    state.names.succeeded(f"name:{name.lower()}")
    value, _ = state.codec.issue(reviewer.name, reviewer.epoch)
    await run_in_threadpool(state.db.audit, reviewer.name, "sign-in", client)
    resp = RedirectResponse("/", status_code=303)
    state.cookie(resp, SESSION_COOKIE, value, state.codec.max_age)
    resp.delete_cookie(LOGIN_COOKIE, path="/login")
    return resp


async def _failed(state: ReviewState, name: str, client: str):
    """A failed sign-in counts against the name and the client, and is audited."""
    state.names.failed(f"name:{name.lower()}")
    state.clients.failed(f"client:{client}")
    await run_in_threadpool(state.db.audit, name or "?", "sign-in failed", client)
    return state.login_page(401, "Wrong name or password (or this reviewer was revoked).", name)


@router.post("/logout")
async def logout(request: Request, state: State, who: Who):
    form = await request.form()
    if not same_token(who.session.csrf, form.get("csrf")):
        return state.refused(who)
    await run_in_threadpool(state.db.end_sessions, who.reviewer.name)
    await run_in_threadpool(state.db.audit, who.reviewer.name, "sign-out", "")
    return to_login()
