"""The process that hosts the embedded model's llama.cpp server (xllamacpp) for `embedded.serve`.

`serve` starts it (`python -m medresilience.models.embedded_host ...`); it loads the GGUF, serves
it on 127.0.0.1 on a port the system picks, and writes one JSON line `{"address": ...}` to its
stdout once the server is up. It ends, by `os._exit`, when its parent asks (SIGTERM, or its stdin
closing) or is gone (its stdin ends, or its parent process id changes): never through the server's destructor, which
joins llama.cpp's loop thread, and that thread loses a stop request that comes before it has
started waiting (a busy machine delays it), so the destructor can wait forever. Reads only its
arguments and the xllamacpp package; imports nothing else of medresilience."""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import sys

#: seconds between two checks that the parent process is still there
PARENT_CHECK_S = 0.5


def _params(args: argparse.Namespace):  # -> xllamacpp.CommonParams
    import xllamacpp as xlc

    p = xlc.CommonParams()
    p.model.path = args.model
    p.n_parallel = args.n_parallel
    p.n_ctx = args.n_ctx
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads
    p.port = 0
    p.hostnames = ["127.0.0.1"]
    try:
        p.verbosity = 0
    except (AttributeError, TypeError):  # an xllamacpp without the setting logs at its default
        pass
    return p


def _watch(parent: int) -> None:
    """Return once stdin reaches its end (the parent closed it, or died) or the parent process is
    gone (this process was handed to another parent)."""
    fd = sys.stdin.fileno()
    while os.getppid() == parent:
        ready, _, _ = select.select([fd], [], [], PARENT_CHECK_S)
        if ready and not os.read(fd, 4096):
            return


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m medresilience.models.embedded_host")
    ap.add_argument("--model", required=True, help="the GGUF file")
    ap.add_argument("--n-parallel", type=int, default=1)
    ap.add_argument("--n-ctx", type=int, required=True, help="context tokens over all slots")
    ap.add_argument("--threads", type=int, required=True)
    args = ap.parse_args(argv)
    # Ctrl-C in a terminal reaches the whole process group: the parent handles it and stops this one
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()
    # the address line goes out on the stdout the parent reads; llama.cpp's own prints go with its
    # log to stderr (which the parent keeps, or shows with MEDRES_DEBUG)
    channel = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    import xllamacpp as xlc

    try:
        server = xlc.Server(_params(args))
    except Exception as e:  # xllamacpp raises RuntimeError when the model or the listener fails
        print(f"error: {e}", file=sys.stderr, flush=True)
        os._exit(1)
    # xllamacpp installed its own SIGINT/SIGTERM handlers (they stop the loop only); this process
    # ends at once on SIGTERM and leaves Ctrl-C to its parent
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    channel.write(json.dumps({"address": server.listening_address}) + "\n")
    channel.flush()
    if not os.environ.get("MEDRES_DEBUG"):
        # the log was kept for an error at startup; past it, a long run's log would only grow
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
    _watch(parent)
    os._exit(0)


if __name__ == "__main__":
    main()
