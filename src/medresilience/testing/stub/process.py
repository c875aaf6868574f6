"""The stub server in a child process: `StubProcess` (the `python -m medresilience.testing.stub`
command, named policies only) and `policy_server` (any importable policy factory, in a spawned
process); no GIL shared with the client."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import select
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event as EventType
from pathlib import Path

from .faults import Faults
from .policies import POLICIES, Policy
from .server import StubServer


def cli_args(
    policy: str,
    faults: Faults,
    log_path: str | os.PathLike[str] | None,
    json_text: str,
    model: str,
    host: str,
    port: int,
    response_format: str = "ignore",
) -> list[str]:
    """The command line of `python -m medresilience.testing.stub` with these settings (what
    cli.arg_parser and cli.faults_from_args read back)."""
    args = ["--host", host, "--port", str(port), "--policy", policy, "--model", model, "--json-text", json_text]
    args += ["--response-format", response_format]
    f = faults
    args += ["--seed", str(f.seed), "--delay", repr(f.delay)]
    args += ["--rate-429", repr(f.rate_429), "--retry-after", repr(f.retry_after)]
    args += ["--rate-500", repr(f.rate_500), "--rate-503", repr(f.rate_503)]
    if f.retry_after_5xx is not None:
        args += ["--retry-after-5xx", repr(f.retry_after_5xx)]
    args += ["--rate-timeout", repr(f.rate_timeout), "--timeout-sleep", repr(f.timeout_sleep)]
    args += ["--rate-malformed", repr(f.rate_malformed), "--malformed-kind", f.malformed_kind]
    args += ["--rate-permanent", repr(f.rate_permanent), "--transient-attempts", str(f.transient_attempts)]
    args += ["--rate-null-content", repr(f.rate_null_content), "--rate-null-message", repr(f.rate_null_message)]
    args += ["--rate-429-long", repr(f.rate_429_long), "--retry-after-long", repr(f.retry_after_long)]
    args += ["--rate-401", repr(f.rate_401), "--rate-404", repr(f.rate_404)]
    args += ["--rate-content-parts", repr(f.rate_content_parts), "--rate-content-number", repr(f.rate_content_number)]
    args += ["--rate-echo-key", repr(f.rate_echo_key), "--rate-drip", repr(f.rate_drip), "--drip-interval", repr(f.drip_interval)]
    args += ["--rate-no-logprobs", repr(f.rate_no_logprobs)]
    if log_path is not None:
        args += ["--log", str(log_path)]
    return args


class StubProcess:
    """The stub server as a child process (`python -m medresilience.testing.stub`): no
    GIL shared with the client, so use it for throughput benchmarks and kill/resume tests.
    Only named policies. `with StubProcess(...) as p: p.base_url`; stop() sends SIGTERM."""

    def __init__(
        self,
        policy: str = "hash",
        faults: Faults | None = None,
        log_path: str | os.PathLike[str] | None = None,
        *,
        json_text: str = "{}",
        model: str = "stub-model",
        host: str = "127.0.0.1",
        port: int = 0,
        python: str | None = None,
        startup_timeout: float = 30.0,
        response_format: str = "ignore",
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"StubProcess needs a named policy ({', '.join(POLICIES)}), got {policy!r}")
        self.argv = [python or sys.executable, "-m", "medresilience.testing.stub"]
        self.argv += cli_args(policy, faults or Faults(), log_path, json_text, model, host, port, response_format)
        self.startup_timeout = startup_timeout
        self.proc: subprocess.Popen[str] | None = None
        self.base_url: str = ""

    @property
    def root_url(self) -> str:
        return self.base_url[: -len("/v1")]

    def start(self) -> StubProcess:
        env = dict(os.environ)
        src = str(Path(__file__).resolve().parents[3])
        env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, text=True, env=env)
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], self.startup_timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line.startswith("LISTENING "):
            self.stop()
            raise RuntimeError(f"stub server process did not start (first line: {line!r})")
        self.base_url = line.split(None, 1)[1].strip()
        return self

    def stop(self, timeout: float = 10.0) -> int | None:
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        return proc.returncode

    def __enter__(self) -> StubProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _serve_policy(factory: Callable[..., Policy], kwargs: Mapping[str, object], faults: Faults, conn: Connection, stop: EventType) -> None:
    with StubServer(policy=factory(**kwargs), faults=faults) as srv:  # in the spawned child
        conn.send(srv.base_url)
        stop.wait()


@contextlib.contextmanager
def policy_server(
    factory: Callable[..., Policy],
    kwargs: Mapping[str, object] | None = None,
    faults: Faults | None = None,
    process: bool = True,
    startup_timeout: float = 60.0,
) -> Iterator[str]:
    """A stub server whose policy is `factory(**kwargs)` (a policy object, such as a builder's scripted
    fake generator, that StubProcess's named policies cannot express); yields its base URL. With
    `process` it runs in a spawned child process (no GIL shared with the client: for benchmarks),
    else in a thread. The factory must be importable by name (a module-level class or function)."""
    kwargs, faults = dict(kwargs or {}), faults or Faults()
    if not process:
        with StubServer(policy=factory(**kwargs), faults=faults) as srv:
            yield srv.base_url
        return
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    stop = ctx.Event()
    proc = ctx.Process(target=_serve_policy, args=(factory, kwargs, faults, child, stop), daemon=True)
    proc.start()
    try:
        if not parent.poll(startup_timeout):
            raise RuntimeError("the stub server process did not start")
        yield parent.recv()
    finally:
        stop.set()
        proc.join(10)
        if proc.is_alive():
            proc.terminate()
            proc.join()
