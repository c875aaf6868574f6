"""Serving the embedded models for the length of a block: every command that calls models (eval,
build, judge) wraps its specs in `serving(specs)` and talks to the live endpoints it yields."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

from . import embedded
from .spec import ModelSpec


@contextlib.contextmanager
def serving(specs: Sequence[ModelSpec]) -> Iterator[list[ModelSpec]]:
    """Start the embedded server for embedded specs (one per embedded model); yield specs whose
    base_urls point at live endpoints; stop the servers on exit."""
    with contextlib.ExitStack() as stack:
        live: list[ModelSpec] = []
        started: dict[str, str] = {}
        for s in specs:
            if s.kind == "embedded":
                if s.model not in started:
                    started[s.model] = stack.enter_context(embedded.serve(s.model, n_parallel=s.concurrency))
                s = s.model_copy(update={"base_urls": [started[s.model]]})
            live.append(s)
        yield live
