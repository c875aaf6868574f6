"""The stub server in-process: served from a background thread with its own event loop, or on the
running loop (`async with`)."""

from __future__ import annotations

import asyncio
import os
import socket
import threading

from aiohttp import web

from .app import StubApp, StubStats
from .batches import BatchEndpoints

__all__ = ["StubServer", "StubStats"]
from .faults import Faults
from .policies import Policy


def _bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.setblocking(False)
    return sock


class StubServer:
    """The stub server, in-process.

    `with StubServer(...) as srv:` serves from a background thread with its own event loop
    (usable from sync and async code alike); `async with StubServer(...) as srv:` serves on the
    running loop instead. `srv.base_url` is "http://127.0.0.1:PORT/v1"."""

    def __init__(
        self,
        policy: str | Policy = "hash",
        faults: Faults | None = None,
        log_path: str | os.PathLike[str] | None = None,
        *,
        json_text: str = "{}",
        model: str = "stub-model",
        host: str = "127.0.0.1",
        port: int = 0,
        response_format: str = "ignore",
        batches: BatchEndpoints | None = None,
    ) -> None:
        self._app = StubApp(policy, faults, log_path, json_text=json_text, model=model, response_format=response_format, batches=batches)
        #: the OpenAI files + batches and Anthropic message-batch endpoints, when given (`batches.BatchEndpoints`)
        self.batches = batches
        self.host = host
        self._requested_port = port
        self.port: int | None = None
        self._runner: web.AppRunner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._own_loop = False

    # ---- addresses and counters
    @property
    def faults(self) -> Faults:
        return self._app.faults

    @property
    def root_url(self) -> str:
        if self.port is None:
            raise RuntimeError("stub server is not running")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        return self.root_url + "/v1"

    @property
    def stats(self) -> StubStats:
        return self._app.stats()

    # ---- async lifecycle (current loop)
    async def astart(self) -> StubServer:
        if self._runner is not None:
            raise RuntimeError("stub server already running")
        self._app.open()
        runner = web.AppRunner(self._app.build(), access_log=None, handle_signals=False, shutdown_timeout=0.5)
        await runner.setup()
        try:
            sock = _bind(self.host, self._requested_port)
            site = web.SockSite(runner, sock, backlog=1024)
            await site.start()
        except BaseException:
            await runner.cleanup()
            self._app.close()
            raise
        self.port = sock.getsockname()[1]
        self._runner = runner
        return self

    async def astop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is None:
            return
        self._app.begin_closing()
        try:
            await runner.cleanup()
        finally:
            self._app.close()
            self.port = None

    async def __aenter__(self) -> StubServer:
        return await self.astart()

    async def __aexit__(self, *exc: object) -> None:
        await self.astop()

    # ---- thread lifecycle
    def start(self, timeout: float = 10.0) -> StubServer:
        if self._thread is not None:
            raise RuntimeError("stub server already running")
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        thread = threading.Thread(target=run, name="medres-stub-server", daemon=True)
        thread.start()
        ready.wait(timeout)
        self._loop, self._thread, self._own_loop = loop, thread, True
        try:
            asyncio.run_coroutine_threadsafe(self.astart(), loop).result(timeout)
        except BaseException:
            self._shutdown_thread(timeout)
            raise
        return self

    def stop(self, timeout: float = 10.0) -> None:
        if self._thread is None or self._loop is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self.astop(), self._loop).result(timeout)
        finally:
            self._shutdown_thread(timeout)

    def _shutdown_thread(self, timeout: float) -> None:
        loop, thread = self._loop, self._thread
        self._loop, self._thread = None, None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        if not thread.is_alive():
            loop.close()

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
