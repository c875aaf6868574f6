"""What the review app's routers share: the app's state (one review database, its rubric, the
session codec, the sign-in rate limits, the page templates, the cookie and proxy settings), kept
in `app.state.review` and given to a route by the `State` dependency; the signed-in reviewer,
given by the `Who` dependency (a request without a valid session raises `SignInRequired`, which
the app answers with a redirect to sign-in that ends the session cookie); and the page and
cookie helpers every route answers with."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment

from .auth import RateLimiter, Session, SessionCodec
from .db import ReviewDB, Reviewer
from .pages import CSS
from .rubrics import ReviewRubric

SESSION_COOKIE = "medres_review_session"
LOGIN_COOKIE = "medres_review_login"
#: The header the reverse proxy sets to the shared secret.
PROXY_SECRET_HEADER = "X-Medres-Proxy-Secret"


@dataclass
class ReviewState:
    """One review served: its database and rubric, the session codec, the sign-in rate limits
    (per reviewer name, per client), the templates; `secure_cookies` marks cookies Secure (behind
    a TLS proxy); `proxy_secret`: X-Forwarded-For is read only from requests carrying it."""

    db: ReviewDB
    rubric: ReviewRubric
    codec: SessionCodec
    names: RateLimiter
    clients: RateLimiter
    env: Environment
    secure_cookies: bool
    proxy_secret: str | None

    def page(self, template: str, status: int = 200, headers: dict[str, str] | None = None, **ctx: object) -> HTMLResponse:
        html = self.env.get_template(template).render(css=CSS, rubric=self.rubric, **ctx)
        return HTMLResponse(html, status_code=status, headers=headers)

    def cookie(self, response: Response, key: str, value: str, max_age: int, path: str = "/") -> None:
        response.set_cookie(key, value, max_age=max_age, path=path, httponly=True, samesite="strict", secure=self.secure_cookies)

    def current(self, request: Request) -> tuple[Reviewer, Session] | None:
        """The reviewer of a request's session cookie, if it is valid: signed, of a reviewer who
        exists, is not revoked, has a password and still has the cookie's epoch."""
        s = self.codec.read(request.cookies.get(SESSION_COOKIE))
        if s is None:
            return None
        r = self.db.reviewer(s.reviewer)
        if r is None or r.revoked or r.epoch != s.epoch or not r.has_password:
            return None
        return r, s

    def login_page(self, status: int = 200, error: str | None = None, name: str = "", headers: dict[str, str] | None = None) -> HTMLResponse:
        """The sign-in form with a fresh double-submit CSRF token (its cookie is scoped to /login)."""
        cookie_value, token = self.codec.login_token()
        resp = self.page("login.html", status, headers=headers, reviewer=None, login_csrf=token, error=error, name=name)
        self.cookie(resp, LOGIN_COOKIE, cookie_value, 3600, path="/login")
        return resp

    def message(self, who: SignedIn, status: int, heading: str, message: str) -> HTMLResponse:
        return self.page("message.html", status, reviewer=who.reviewer, csrf=who.session.csrf, heading=heading, message=message)

    def not_found(self, who: SignedIn) -> HTMLResponse:
        return self.message(who, 404, "Not found", "There is no such task in your queue.")

    def refused(self, who: SignedIn) -> HTMLResponse:
        """A form without the session's CSRF token."""
        return self.message(who, 403, "Refused", "The form was not sent from this site.")

    def no_such_page(self, who: SignedIn) -> HTMLResponse:
        """What a reviewer who is not an admin sees of the admin pages: nothing there."""
        return self.message(who, 404, "Not found", "There is no such page.")


@dataclass(frozen=True)
class SignedIn:
    """The reviewer of a request and their session (its CSRF token)."""

    reviewer: Reviewer
    session: Session


class SignInRequired(Exception):
    """A route needs a session and the request has no valid one."""


def to_login() -> RedirectResponse:
    """To the sign-in form, ending the session cookie."""
    resp = RedirectResponse("/login", status_code=303)
    resp.delete_cookie(SESSION_COOKIE, path="/")
    return resp


def review_state(request: Request) -> ReviewState:
    return request.app.state.review


State = Annotated[ReviewState, Depends(review_state)]


def signed_in(request: Request, state: State) -> SignedIn:
    who = state.current(request)
    if who is None:
        raise SignInRequired
    return SignedIn(*who)


Who = Annotated[SignedIn, Depends(signed_in)]


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
