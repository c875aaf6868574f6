"""A test server's lifetime: a ThreadingHTTPServer bound to 127.0.0.1 (a free port) and served from
a daemon thread while its `with` block runs; the server's `requests` are what its handler logged."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from typing import Any, Self


class LoopbackServer:
    """The base of the local test servers (hub, search): `with Server(...) as s: s.root_url`."""

    def __init__(self, server: ThreadingHTTPServer):
        self._server: Any = server
        self._thread: threading.Thread | None = None

    @property
    def root_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def requests(self) -> list[tuple[str, object]]:
        return self._server.requests

    def __enter__(self) -> Self:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
