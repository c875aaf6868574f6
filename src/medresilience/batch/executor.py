"""Batch as an execution mode of the one call path (`calls.batch_mode`): `BatchExecutor` takes
the calls a run has left after its plan (deduplicated, those stored ok skipped) and, per model:

1. looks at every open batch of the model holding some of them: a batch recorded but never
   heard back from is first looked for at the provider (the local id in its metadata, Anthropic:
   an unadopted batch of its size) and sent only if the provider does not hold it; a batch not
   yet ended keeps its calls waiting; an ended one has its results stored as a live call's
   (`CallSink`: the same rows, the same scores) in one transaction, then is closed;
   A schema request's reply from Anthropic is read as its forced tool's input
   (`tool_schema.tool_reply`); one without it is stored unread, counted in the batch's line;
2. counts the requests it ended without answering (expired, cancelled, failed for a transient
   reason, no result line) and sends them again: in the next batch, or live now
   (`fallback_live`), never scored as errors;
3. writes the calls no open batch holds as a new request file in the run directory, records the
   batch in the store (keys, provider, file hash) BEFORE it is sent, sends it and stores the
   provider's id.

Each `medres eval` looks once and returns: nothing here waits for a batch. The calls still in a
batch are `RunStats.batch_waiting`, one line per batch in `RunStats.batch_lines`."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

from ..calls import CallRequest, CallSink, RunStats
from ..models.openai_compatible import Completion, ModelCallError
from ..models.spec import ModelSpec
from ..runtime.errors import ConfigError, InputError
from ..runtime.fileio import atomic_write
from ..store import BatchRecord, CallRow, ScoreRow, Store
from .cost import batch_rate, batch_spec
from .lines import Outcome, Resend, anthropic_request, jsonl, openai_line
from .providers import AnthropicBatches, Backend, FileBatches, OpenAIBatches
from .tool_schema import asked_schema, tool_reply

PROVIDERS = ("openai", "anthropic", "files")
#: the most requests one batch holds (OpenAI's limit per batch file)
MAX_LINES = 50_000
#: the batches a request may fail in (a server error on its own line) before it is stored as an
#: error, as a live call is after its retries (a rerun sends it again); expiry and cancellation
#: are the batch's, never the request's, and do not count
MAX_SENDS = 3


class BatchExecutor:
    """The batch mode of a run: `provider` (openai, anthropic, files), the folder its request
    files are written to, the output file of a `files` batch (`results`), and whether requests a
    batch did not answer are made live at once (`fallback_live`) instead of in the next batch."""

    def __init__(
        self,
        provider: str,
        workdir: Path,
        results: Path | None = None,
        fallback_live: bool = False,
        max_lines: int = MAX_LINES,
        backend: Callable[[ModelSpec], Backend] | None = None,
    ):
        if provider not in PROVIDERS:
            raise ConfigError("--batch", f"{provider!r} is not one of {', '.join(PROVIDERS)}")
        if results is not None and provider != "files":
            raise ConfigError("--batch-results", "an output file is read back with --batch files only")
        self.provider, self.workdir, self.results = provider, Path(workdir), results
        self.fallback_live, self.max_lines = fallback_live, max_lines
        self._make = backend or self._default_backend
        self.resent: dict[str, int] = {}  # why -> requests sent again

    def _default_backend(self, spec: ModelSpec) -> Backend:
        if self.provider == "openai":
            return OpenAIBatches(spec)
        if self.provider == "anthropic":
            return AnthropicBatches(spec)
        return FileBatches(self.results)

    async def dispatch(
        self, todo_by_model: dict[str, list[CallRequest]], specs: Mapping[str, ModelSpec], store: Store, sink: CallSink, stats: RunStats
    ) -> dict[str, list[CallRequest]]:
        live: dict[str, list[CallRequest]] = {}
        for label, todo in todo_by_model.items():
            spec = specs[label]
            if spec.kind == "embedded":  # served here, nothing to batch
                live[label] = todo
                continue
            backend = self._make(spec)
            try:
                pending = {r.key: r for r in todo}
                again = await self._collect(backend, spec, store, sink, stats, pending)
                if self.fallback_live and again:
                    live[label] = [pending.pop(k) for k in again if k in pending]
                if pending:
                    await self._submit(backend, spec, store, list(pending.values()), stats)
            finally:
                await backend.close()
        return live

    async def _collect(self, backend: Backend, spec: ModelSpec, store: Store, sink: CallSink, stats: RunStats, pending: dict[str, CallRequest]) -> list[str]:
        """Look at the model's open batches that hold pending calls: store what ended, keep what
        waits out of `pending`; the keys to send again (in order)."""
        again: list[str] = []
        for record in store.open_batches(spec.label):
            mine = [k for k in record.keys if k in pending]
            if not mine:
                if store.finished_keys(record.keys) >= record.keys:
                    store.batch_closed(record.batch_id, "every call stored")
                continue
            remote = record.remote_id or await self._resume_send(backend, record, store)
            state = await backend.state(remote, record)
            if not state.ended:
                for k in mine:
                    pending.pop(k)
                stats.batch_waiting += len(mine)
                stats.batch_lines.append(f"batch {record.batch_id} ({backend.name} {remote}): {state.status}, {state.counts}; {len(mine)} calls wait for it")
                continue
            outcomes = await backend.results(remote)
            again += self._store(outcomes, record, spec, store, sink, pending, stats, (backend.name, remote, state.status))
            store.batch_closed(record.batch_id, f"{state.status}: {state.counts}")
        return again

    async def _resume_send(self, backend: Backend, record: BatchRecord, store: Store) -> str:
        """A batch recorded but never heard back from: the provider's if it holds it, else sent now."""
        found = await backend.find(record, store.batch_remote_ids())
        if found is None:
            data = Path(record.path).read_bytes()
            if hashlib.sha256(data).hexdigest() != record.file_hash:
                raise InputError(record.path, None, None, "the batch request file changed after it was recorded: restore it or delete the run's batch")
            found = await backend.submit(record, data)
        store.batch_sent(record.batch_id, found)
        return found

    def _store(
        self,
        outcomes: list[tuple[str, Outcome]],
        record: BatchRecord,
        spec: ModelSpec,
        store: Store,
        sink: CallSink,
        pending: dict[str, CallRequest],
        stats: RunStats,
        where: tuple[str, str, str],
    ) -> list[str]:
        """Store an ended batch's outcomes of pending calls as live calls' rows (one transaction);
        the keys it did not answer for good, counted by why, to send again."""
        priced = batch_spec(spec, backend_name=self.provider)
        calls: list[CallRow] = []
        scores: list[ScoreRow] = []
        answered: set[str] = set()
        whys: dict[str, int] = {}
        unread: dict[str, int] = {}  # why -> schema replies stored without readable text
        sends = store.batch_sends(record.keys)
        for cid, outcome in outcomes:
            r = pending.get(cid)
            if r is None or cid not in record.keys or cid in answered:
                continue  # stored before (a collect that was cut short), or not this batch's
            if isinstance(outcome, Resend) and outcome.failed and sends.get(cid, 0) >= MAX_SENDS:
                outcome = ModelCallError(f"batch request failed in {sends[cid]} batches; last: {outcome.why}", permanent=False, attempts=sends[cid])
            if isinstance(outcome, Resend):
                whys[outcome.why.split(":")[0]] = whys.get(outcome.why.split(":")[0], 0) + 1
                continue
            if isinstance(outcome, Completion) and self.provider == "anthropic":
                outcome, why = tool_reply(asked_schema(r), outcome)
                if why is not None:
                    unread[why.split(":")[0]] = unread.get(why.split(":")[0], 0) + 1
            row, score = sink.answered_row(r, priced, outcome) if isinstance(outcome, Completion) else sink.failed_row(r, spec.label, outcome)
            calls.append(row)
            if score is not None:
                scores.append(score)
            answered.add(cid)
            stats.called += 1
        store.write_batch_results(calls, scores, record.batch_id, batch_rate(spec, self.provider))
        for k in answered:
            pending.pop(k)
        again = [k for k in record.keys if k in pending]
        missing = len(again) - sum(whys.values())
        if missing > 0:
            whys[f"no result line (batch {where[2]})"] = missing
        for why, n in whys.items():
            self.resent[why] = self.resent.get(why, 0) + n
        told = "; ".join(f"{n} {why}" for why, n in sorted(whys.items()))
        unread_told = "; ".join(f"{n} {why}" for why, n in sorted(unread.items()))
        stats.batch_lines.append(
            f"batch {record.batch_id} ({where[0]} {where[1]}, {where[2]}): {len(calls)} stored"
            + (f" ({sum(unread.values())} unread: {unread_told})" if unread else "")
            + (f", {len(again)} to send again ({told})" if again else "")
        )
        return again

    async def _submit(self, backend: Backend, spec: ModelSpec, store: Store, todo: list[CallRequest], stats: RunStats) -> None:
        """New batches of the calls no open batch holds: each written, recorded, then sent."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        for i in range(0, len(todo), self.max_lines):
            part = todo[i : i + self.max_lines]
            rows = [openai_line(r, spec) for r in part] if backend.request_format == "openai" else [anthropic_request(r, spec) for r in part]
            data = jsonl(rows)
            batch_id = f"medres-{uuid.uuid4().hex[:12]}"
            path = self.workdir / f"{batch_id}.jsonl"
            with atomic_write(path, "wb") as fh:
                fh.write(data)
            store.record_batch(batch_id, backend.name, spec.label, [r.key for r in part], hashlib.sha256(data).hexdigest(), str(path))  # before it is sent
            record = BatchRecord(batch_id, backend.name, spec.label, hashlib.sha256(data).hexdigest(), str(path), None, "recorded", frozenset(), 0.0)
            remote = await backend.submit(record, data)
            store.batch_sent(batch_id, remote)
            stats.batch_waiting += len(part)
            stats.batch_lines.append(f"batch {batch_id} ({backend.name} {remote}): submitted, {len(part)} calls; request file {path}")
