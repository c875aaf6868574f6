"""A local search service on 127.0.0.1 that speaks the JSON shape of the agent's HTTP search
backend (mitigations.search.HttpSearch), so the backend is tested without leaving the machine.

    POST /search {"query", "k"} -> {"results": [{"id", "title", "text", "url"}]}: the passages
         sharing the most words with the query, best first (ties by the order given), at most k
    POST /read {"id"}            -> the passage, or 404 {"error": ...}

With a `token`, a request without ``Authorization: Bearer <token>`` gets 401. `fail_first` makes
the first n requests answer 503 (the backend retries them); `shape` "bad" answers a search with
{"hits": ...} instead of {"results": ...}; `hang` never answers (each request is held until the
server stops); `huge` answers a search with a JSON reply of that many bytes, streamed in 1 MiB
chunks without a Content-Length, stopping when the client closes (`sent` counts the bytes that
went out). Every request is logged in `requests` as (path, body).

    with SearchServer([{"id": "d1", "title": "...", "text": "..."}]) as srv:
        HttpSearch(srv.url)
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .loopback import LoopbackServer

__all__ = ["SearchServer"]

_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def _json(self, status: int, obj: object) -> None:
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        srv = self.server
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        with srv.lock:
            srv.requests.append((self.path, body))
            failing = srv.fail_left > 0
            srv.fail_left -= int(failing)
        if failing:
            return self._json(503, {"error": "overloaded (stub fault)"})
        if srv.hang:
            srv.stopping.wait()
            return None
        if srv.huge and self.path.rstrip("/").endswith("/search"):
            return self._huge(srv.huge)
        if srv.token and self.headers.get("Authorization") != f"Bearer {srv.token}":
            return self._json(401, {"error": "missing or wrong bearer token"})
        if not isinstance(body, dict):
            return self._json(400, {"error": "the body must be a JSON object"})
        if self.path.rstrip("/").endswith("/search"):
            return self._search(body)
        if self.path.rstrip("/").endswith("/read"):
            found = srv.by_id.get(str(body.get("id")))
            return self._json(200, found) if found else self._json(404, {"error": "no such id"})
        return self._json(404, {"error": f"no endpoint {self.path}"})

    def _huge(self, size: int) -> None:
        """A search reply of `size` bytes (one passage whose text fills it), without a Content-Length."""
        srv = self.server
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Connection", "close")
        self.end_headers()
        head, tail = b'{"results": [{"id": "big", "title": "big", "text": "', b'"}]}'
        chunk = b"x" * 2**20
        left = size - len(head) - len(tail)
        try:
            self.wfile.write(head)
            while left > 0:
                part = chunk[: min(left, len(chunk))]
                self.wfile.write(part)
                left -= len(part)
                with srv.lock:
                    srv.sent += len(part)
            self.wfile.write(tail)
        except OSError:  # the client stopped reading and closed
            pass
        self.close_connection = True

    def _search(self, body: dict[str, Any]) -> None:
        srv = self.server
        query, k = _words(str(body.get("query") or "")), int(body.get("k") or 3)
        scored = [(len(query & _words(d["title"] + " " + d["text"])), -i, d) for i, d in enumerate(srv.docs)]
        hits = [d for n, _, d in sorted(scored, key=lambda x: (x[0], x[1]), reverse=True) if n > 0][:k]
        self._json(200, {"hits" if srv.shape == "bad" else "results": hits})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    docs: list[dict[str, str]]
    by_id: dict[str, dict[str, str]]
    token: str | None
    fail_left: int
    shape: str
    requests: list[tuple[str, object]]
    lock: threading.Lock
    hang: bool
    huge: int
    sent: int
    stopping: threading.Event


class SearchServer(LoopbackServer):
    """The local search service over `docs` (dicts with id, title, text, url), from a background thread."""

    def __init__(self, docs: list[dict[str, str]], token: str | None = None, fail_first: int = 0, shape: str = "good", hang: bool = False, huge: int = 0):
        super().__init__(_Server(("127.0.0.1", 0), _Handler))
        s = self._server
        s.docs, s.by_id = list(docs), {d["id"]: d for d in docs}
        s.token, s.fail_left, s.shape, s.requests, s.lock = token, fail_first, shape, [], threading.Lock()
        s.hang, s.huge, s.sent, s.stopping = hang, huge, 0, threading.Event()

    def __exit__(self, *exc: object) -> None:
        self._server.stopping.set()  # lets held requests go
        super().__exit__(*exc)

    @property
    def sent(self) -> int:
        """Bytes of `huge` replies that went out."""
        return self._server.sent

    @property
    def url(self) -> str:
        return f"{self.root_url}/v1"
