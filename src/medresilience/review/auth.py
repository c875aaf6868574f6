"""Sign-in for the review app: passwords (shown once, kept only as a scrypt hash), signed session
cookies (itsdangerous, bound to the reviewer's session epoch so that signing out and revocation
end every copy of a cookie), CSRF tokens, and a sign-in rate limit."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass

from itsdangerous import BadSignature, URLSafeTimedSerializer

#: scrypt cost: N = 2^15, r = 8, p = 1 (32 MiB, about 0.1 s a check on one core)
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**15, 8, 1
SCRYPT_MAXMEM = 128 * 1024 * 1024
SESSION_MAX_AGE = 12 * 3600  # seconds a session cookie is honoured
LOGIN_WINDOW = 300.0  # seconds over which failed sign-ins are counted
LOGIN_MAX_FAILURES = 5  # failed sign-ins per window, per client and per reviewer name


def new_password() -> str:
    """A random password of about 96 bits, easy to copy (URL-safe characters)."""
    return secrets.token_urlsafe(12)


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def hash_password(password: str, *, n: int = SCRYPT_N, r: int = SCRYPT_R, p: int = SCRYPT_P) -> str:
    """`scrypt$N$r$p$salt$hash` (base64): the only form in which a password is stored."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=SCRYPT_MAXMEM, dklen=32)
    return f"scrypt${n}${r}${p}${_b64(salt)}${_b64(digest)}"


_DUMMY_HASH: str | None = None


def verify_password(password: str, stored: str | None) -> bool:
    """Constant-time check of a password against its stored hash. A reviewer without a password
    (or an unknown name) still costs one scrypt, so timing does not tell names apart."""
    global _DUMMY_HASH
    if not stored:
        if _DUMMY_HASH is None:
            _DUMMY_HASH = hash_password(secrets.token_urlsafe(12))
        stored, ok = _DUMMY_HASH, False
    else:
        ok = True
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        got = hashlib.scrypt(
            password.encode("utf-8"), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p), maxmem=SCRYPT_MAXMEM, dklen=len(base64.b64decode(digest))
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(got, base64.b64decode(digest)) and ok


@dataclass(frozen=True)
class Session:
    reviewer: str
    epoch: int
    csrf: str


class SessionCodec:
    """Signed, timed session cookies: {reviewer, epoch, csrf}. The cookie holds no secret; it
    cannot be forged without the review database's secret key, and it is honoured only while the
    reviewer's epoch is unchanged (sign-out and revocation bump it)."""

    def __init__(self, secret: str, max_age: int = SESSION_MAX_AGE):
        self._session = URLSafeTimedSerializer(secret, salt="medres-review-session")
        self._login = URLSafeTimedSerializer(secret, salt="medres-review-login")
        self.max_age = max_age

    def issue(self, reviewer: str, epoch: int) -> tuple[str, Session]:
        s = Session(reviewer, epoch, secrets.token_urlsafe(24))
        return self._session.dumps({"r": s.reviewer, "e": s.epoch, "c": s.csrf}), s

    def read(self, cookie: str | None) -> Session | None:
        if not cookie:
            return None
        try:
            data: object = self._session.loads(cookie, max_age=self.max_age)
        except BadSignature:  # also SignatureExpired
            return None
        if not isinstance(data, dict) or not isinstance(data.get("r"), str) or not isinstance(data.get("e"), int) or not isinstance(data.get("c"), str):
            return None
        return Session(data["r"], data["e"], data["c"])

    def login_token(self) -> tuple[str, str]:
        """(cookie value, form value) of the sign-in form's CSRF token (double submit, signed)."""
        token = secrets.token_urlsafe(24)
        return self._login.dumps(token), token

    def login_token_ok(self, cookie: str | None, form_value: str | None) -> bool:
        if not cookie or not form_value:
            return False
        try:
            token = self._login.loads(cookie, max_age=3600)
        except BadSignature:
            return False
        return isinstance(token, str) and hmac.compare_digest(token, form_value)


def same_token(expected: str, given: object) -> bool:
    """Whether a form field holds the expected token (a missing field or an upload never does)."""
    return isinstance(given, str) and bool(given) and hmac.compare_digest(expected.encode(), given.encode())


class RateLimiter:
    """Failed sign-ins per key (a client address, a reviewer name) in a sliding window. A key with
    `limit` failures in the window is refused until the oldest one leaves it."""

    def __init__(self, limit: int = LOGIN_MAX_FAILURES, window: float = LOGIN_WINDOW, clock=time.monotonic):
        self.limit, self.window, self.clock = limit, window, clock
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _prune(self, key: str, now: float) -> deque[float]:
        q = self._failures.setdefault(key, deque())
        while q and now - q[0] >= self.window:
            q.popleft()
        return q

    def retry_after(self, *keys: str) -> float:
        """Seconds until a sign-in for these keys is allowed (0: allowed now)."""
        now = self.clock()
        with self._lock:
            waits = [self.window - (now - q[0]) for q in (self._prune(k, now) for k in keys) if len(q) >= self.limit]
        return max(waits, default=0.0)

    def failed(self, *keys: str) -> None:
        now = self.clock()
        with self._lock:
            for k in keys:
                self._prune(k, now).append(now)

    def succeeded(self, key: str) -> None:
        with self._lock:
            self._failures.pop(key, None)
