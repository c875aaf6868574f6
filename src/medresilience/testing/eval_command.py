"""The `medres eval` command line of a run against the stub server, as the tests and benchmarks of
the answer-loop settings and batches start it: `suite_dir` into `out`, the stub's model
`stub-model` at `url`, each setting of `settings` once, then `extra` (`--batch openai`, ...).

May import: nothing of medresilience (each helper stands alone)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path


def stub_eval_args(
    suite_dir: Path, out: Path, url: str, settings: Iterable[str] = (), *extra: str, limit: int | None = None, model_opts: str = "concurrency=2"
) -> list[str]:
    """`medres eval`'s arguments (after `medres`): the first `limit` items of the suite (all of them
    when None), the stub model with `model_opts` (`concurrency=2,price_input=...`)."""
    return [
        "eval",
        "--suite",
        str(suite_dir),
        "--out",
        str(out),
        *(("--limit", str(limit)) if limit is not None else ()),
        "--model",
        f"openai:stub-model,base_url={url},{model_opts}",
        *(x for s in settings for x in ("--setting", s)),
        *extra,
    ]


def stub_eval_command(
    suite_dir: Path, out: Path, url: str, settings: Iterable[str] = (), *extra: str, limit: int | None = None, model_opts: str = "concurrency=2"
) -> list[str]:
    """The same as a real process: this interpreter running `python -m medresilience.cli eval ...`."""
    return [sys.executable, "-m", "medresilience.cli", *stub_eval_args(suite_dir, out, url, settings, *extra, limit=limit, model_opts=model_opts)]
