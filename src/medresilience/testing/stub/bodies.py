"""Request bodies as the stub sees them: the canonical encoding that keys the request log and the
fault assignment, and the fast JSON encoding of replies."""

from __future__ import annotations

import hashlib
import json

try:  # optional speed-up; the stdlib json is fine
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None


def dumps(obj: object) -> bytes:
    if _orjson is not None:
        return _orjson.dumps(obj)
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def canonical_body(body: object) -> bytes:
    """The canonical encoding of a parsed request body: sorted keys, no spaces, UTF-8."""
    return json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def request_key(body: object) -> str:
    """SHA-256 hex of the canonical body: the `key` of the request log and `StubStats.by_key`.
    The openai SDK resends the same body on retries, so all attempts of a call share a key."""
    return hashlib.sha256(canonical_body(body)).hexdigest()
