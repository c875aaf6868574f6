"""The work directory of a build or an optimisation, held while it runs: one process at a time
(lock.RunLock: a second one is refused, naming the holder), its call store (`store.sqlite`, the
cache that is also the resume point), and the models it calls, served for as long as it holds
them (embedded ones started here, stopped on exit) after each one's API key is checked. Also what
such a process records of its models and when it made what it writes.

    with workspace(work, specs, {"kind": "build x", "out": str(out)}) as ws:
        ws.store, ws.models          # the live specs, in the order given
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..models.serving import serving
from ..models.spec import ModelSpec
from ..runtime.jsontypes import JSONObject
from ..runtime.lock import RunLock
from ..store import Store

STORE = "store.sqlite"


@dataclass
class Workspace:
    """A held work directory: its open call store and its served models (the specs given, each
    pointing at a live endpoint)."""

    work: Path
    store: Store
    models: list[ModelSpec]

    def live(self, spec: ModelSpec) -> ModelSpec:
        """The served model of that spec (by label)."""
        return next(s for s in self.models if s.label == spec.label)


@contextlib.contextmanager
def workspace(
    work: Path | str,
    specs: Sequence[ModelSpec],
    run: Mapping[str, object] | None = None,
    *,
    prefix: str = "build",
    what: str = "build work directory",
    wait: bool = False,
    hint: str | None = None,
) -> Iterator[Workspace]:
    """Hold `work`: the lock first (a directory held by another process is refused before
    anything is opened), then the store (recording `run` as `<prefix>-<time>` when given), then
    the served models, each with its API key checked (a missing key variable fails before
    anything is called)."""
    work = Path(work)
    with RunLock(work, what=what, wait=wait, hint=hint), Store(work / STORE) as store:
        if run is not None:
            store.record_run(time.strftime(f"{prefix}-%Y%m%dT%H%M%S"), dict(run))
        with serving(specs) as live:
            for s in live:
                s.api_key()
            yield Workspace(work, store, live)


def created_stamp() -> str:
    """Now, or SOURCE_DATE_EPOCH when set (reproducible builds), as ISO 8601 in UTC to the second."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = datetime.fromtimestamp(int(epoch), UTC) if epoch and epoch.strip().isdigit() else datetime.now(UTC)
    return when.isoformat(timespec="seconds")


def model_identity(spec: ModelSpec) -> JSONObject:
    """What a manifest records of a model: its label, what makes its calls the same calls, and the
    hash of that (no endpoint, no secret)."""
    return {"label": spec.label, **spec.identity(), "identity_hash": spec.identity_hash}
