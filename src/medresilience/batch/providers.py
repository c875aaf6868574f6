"""Where a batch goes: OpenAI's Batch API (files + batches), Anthropic's Message Batches, or a
file for your own engine (vLLM's run_batch, Ray Data). Each is reached at the model spec's base
URL with its usual key variable; each can submit a recorded request file, find a batch it holds
by the local id (after a crash between send and record), read a batch's state, and read its
results as (custom id, outcome) pairs (`lines`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx

from ..models.spec import ModelSpec
from ..runtime.errors import ConfigError, MedresError
from ..store import BatchRecord
from .lines import Outcome, read_anthropic_results, read_openai_results

#: the metadata key an OpenAI batch carries the local batch id under (how a resume finds it)
META_KEY = "medres_batch"
ANTHROPIC_VERSION = "2023-06-01"


class BatchError(MedresError):
    """A provider's batch endpoint answered with an error (named with its status and body)."""


@dataclass(frozen=True)
class State:
    """A batch's state at the provider: ended or not, its status word and counts in words."""

    ended: bool
    status: str
    counts: str


class Backend(Protocol):
    name: str
    request_format: str  # "openai" or "anthropic": the request lines it takes

    async def submit(self, record: BatchRecord, data: bytes) -> str: ...

    async def find(self, record: BatchRecord, adopted: set[str]) -> str | None: ...

    async def state(self, remote_id: str, record: BatchRecord) -> State: ...

    async def results(self, remote_id: str) -> list[tuple[str, Outcome]]: ...

    async def close(self) -> None: ...


def _check(resp: httpx.Response, what: str) -> Any:
    if resp.status_code >= 400:
        raise BatchError(f"{what}: HTTP {resp.status_code}: {resp.text[:300]}")
    return resp.json()


class OpenAIBatches:
    """OpenAI's Batch API at the spec's base URL: POST /files (purpose=batch), POST /batches
    (metadata: the local id), GET /batches/{id}, GET /files/{id}/content, GET /batches (find)."""

    name = "openai"
    request_format = "openai"

    def __init__(self, spec: ModelSpec):
        if not spec.base_urls:
            raise ConfigError(f"--model {spec.label}", "a batch needs the model's base URL (an OpenAI-compatible endpoint)")
        self.base = spec.base_urls[0].rstrip("/")
        self.http = httpx.AsyncClient(headers={"Authorization": f"Bearer {spec.api_key()}"}, timeout=max(spec.timeout, 120.0))

    async def close(self) -> None:
        await self.http.aclose()

    async def submit(self, record: BatchRecord, data: bytes) -> str:
        f = _check(
            await self.http.post(f"{self.base}/files", data={"purpose": "batch"}, files={"file": (Path(record.path).name, data, "application/jsonl")}),
            "upload of the batch file",
        )
        body = {"input_file_id": f["id"], "endpoint": "/v1/chat/completions", "completion_window": "24h", "metadata": {META_KEY: record.batch_id}}
        return str(_check(await self.http.post(f"{self.base}/batches", json=body), "creating the batch")["id"])

    async def find(self, record: BatchRecord, adopted: set[str]) -> str | None:
        got = _check(await self.http.get(f"{self.base}/batches", params={"limit": 100}), "listing the batches")
        for b in got.get("data") or []:
            if (b.get("metadata") or {}).get(META_KEY) == record.batch_id:
                return str(b["id"])
        return None

    async def state(self, remote_id: str, record: BatchRecord) -> State:
        b = _check(await self.http.get(f"{self.base}/batches/{remote_id}"), f"reading batch {remote_id}")
        c = b.get("request_counts") or {}
        status = str(b.get("status"))
        ended = status in ("completed", "failed", "expired", "cancelled")
        return State(ended, status, f"{c.get('completed', 0)} done, {c.get('failed', 0)} failed of {c.get('total', '?')}")

    async def results(self, remote_id: str) -> list[tuple[str, Outcome]]:
        b = _check(await self.http.get(f"{self.base}/batches/{remote_id}"), f"reading batch {remote_id}")
        out: list[tuple[str, Outcome]] = []
        for field in ("output_file_id", "error_file_id"):
            fid = b.get(field)
            if fid:
                resp = await self.http.get(f"{self.base}/files/{fid}/content")
                if resp.status_code >= 400:
                    raise BatchError(f"reading file {fid} of batch {remote_id}: HTTP {resp.status_code}: {resp.text[:300]}")
                out += read_openai_results(resp.content, f"{remote_id} {field} {fid}")
        return out


class AnthropicBatches:
    """Anthropic's Message Batches at the spec's base URL: POST /messages/batches, GET
    /messages/batches/{id}, its results_url (JSONL). A batch carries no metadata: a resume finds
    one sent but not recorded among the listed batches created after the record, by its size."""

    name = "anthropic"
    request_format = "anthropic"

    def __init__(self, spec: ModelSpec):
        if not spec.base_urls:
            raise ConfigError(f"--model {spec.label}", "a batch needs the model's base URL")
        self.base = spec.base_urls[0].rstrip("/")
        headers = {"x-api-key": spec.api_key(), "anthropic-version": ANTHROPIC_VERSION}
        self.http = httpx.AsyncClient(headers=headers, timeout=max(spec.timeout, 120.0))

    async def close(self) -> None:
        await self.http.aclose()

    async def submit(self, record: BatchRecord, data: bytes) -> str:
        requests = [json.loads(x) for x in data.decode().splitlines() if x.strip()]
        return str(_check(await self.http.post(f"{self.base}/messages/batches", json={"requests": requests}), "creating the message batch")["id"])

    async def find(self, record: BatchRecord, adopted: set[str]) -> str | None:
        got = _check(await self.http.get(f"{self.base}/messages/batches", params={"limit": 100}), "listing the message batches")
        for b in got.get("data") or []:  # no metadata: the batch of this size that no record holds
            c = b.get("request_counts") or {}
            if b["id"] not in adopted and sum(int(v or 0) for v in c.values()) == len(record.keys):
                return str(b["id"])
        return None

    async def state(self, remote_id: str, record: BatchRecord) -> State:
        b = _check(await self.http.get(f"{self.base}/messages/batches/{remote_id}"), f"reading message batch {remote_id}")
        c = b.get("request_counts") or {}
        status = str(b.get("processing_status"))
        words = ", ".join(f"{v} {k}" for k, v in c.items() if v)
        return State(status == "ended", status, words or "no counts")

    async def results(self, remote_id: str) -> list[tuple[str, Outcome]]:
        b = _check(await self.http.get(f"{self.base}/messages/batches/{remote_id}"), f"reading message batch {remote_id}")
        url = b.get("results_url")
        if not url:
            return []
        resp = await self.http.get(url)
        if resp.status_code >= 400:
            raise BatchError(f"reading the results of message batch {remote_id}: HTTP {resp.status_code}: {resp.text[:300]}")
        return read_anthropic_results(resp.content, f"{remote_id} results")


class FileBatches:
    """A batch for your own engine: the request file is the batch (written to the run directory);
    its results are read from the output file the user gives (`--batch-results FILE`), matched to
    the batch by its custom ids. Nothing is sent anywhere."""

    name = "files"
    request_format = "openai"

    def __init__(self, results: Path | None):
        self.results_path = results
        self._read: list[tuple[str, Outcome]] | None = None

    async def close(self) -> None:
        return None

    async def submit(self, record: BatchRecord, data: bytes) -> str:
        return f"file:{record.path}"

    async def find(self, record: BatchRecord, adopted: set[str]) -> str | None:
        return f"file:{record.path}"

    def _outcomes(self) -> list[tuple[str, Outcome]]:
        if self.results_path is None:
            return []
        if self._read is None:
            try:
                data = self.results_path.read_bytes()
            except OSError as e:
                raise ConfigError("--batch-results", f"cannot read {self.results_path}: {e.strerror or e}") from None
            self._read = read_openai_results(data, str(self.results_path))
        return self._read

    async def state(self, remote_id: str, record: BatchRecord) -> State:
        """Ended once the results file holds a line of this batch (its custom ids)."""
        todo = f"run {remote_id[5:]} through your engine, then rerun with --batch-results OUTPUT.jsonl"
        if self.results_path is None:
            return State(False, "written", todo)
        mine = sum(1 for cid, _ in self._outcomes() if cid in record.keys)
        if not mine:
            return State(False, "written", f"{self.results_path} holds none of its lines: {todo}")
        return State(True, "results given", f"{mine} of its {len(record.keys)} lines in {self.results_path}")

    async def results(self, remote_id: str) -> list[tuple[str, Outcome]]:
        return self._outcomes()
