"""The search backends of the `agent` setting: what its `search(query)` and `read(id)` tools reach.

- `LocalSearch` (the default): a local corpus index (`medres corpus index`, which refuses answer
  keys), ranked by FTS5 bm25() as `retrieval` ranks it; a passage's id is `P<rowid>`.
- `HttpSearch`: any search service that speaks this JSON shape (a wrapper around a web search API):

      POST {URL}/search   {"query": "...", "k": 3}  ->  {"results": [{"id": "...", "title": "...", "text": "...", "url": "..."}]}
      POST {URL}/read     {"id": "..."}             ->  {"id": "...", "title": "...", "text": "...", "url": "..."}
                                                        (404 or {"error": "..."} when there is no such id)

  with `Authorization: Bearer <key>` when a key variable is named (`key_env=VAR`; the key itself is
  never stored). `url` is optional; `id`, `title` and `text` are strings. A 5xx, a timeout or a
  refused connection is retried (`RETRIES` times, with backoff); a reply of another shape is a
  `SearchError` naming what is wrong. A reply body is read as it streams and refused past
  `max_bytes` (`MAX_REPLY_BYTES`), without retrying. A request that fails (after its retries, or
  over the cap) counts towards the model endpoints' circuit breaker (`breaker.Breaker`, the same
  MEDRES_STOP_AFTER_AUTH_ERRORS limit): after that many failures in a row the service is stopped
  and every later request is a `SearchError` at once, with nothing sent.

Both leave out a passage that holds the item's answer key as a run of whole words (the gold
option's text or the reference, when it has at least `retrieval.MIN_GOLD_WORDS` words: the rule of
`retrieval`), whether it comes back from a search or is asked for by id. `identity` is what decides
what a backend returns (the index's hash, or the service's URL), recorded with the run."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..corpus.query import contains
from ..runtime.breaker import Breaker, stop_limit
from ..runtime.errors import MedresError

if TYPE_CHECKING:  # pragma: no cover
    import aiohttp

    from ..corpus.index import CorpusIndex

__all__ = ["MAX_REPLY_BYTES", "RETRIES", "Hit", "HttpSearch", "LocalSearch", "SearchBackend", "SearchError"]

#: retries of a failed request to a search service (after the first attempt)
RETRIES = 3
#: the longest passage text a tool result carries (characters)
TEXT_CHARS = 4000
#: the most bytes of one reply read from a search service: k passages kept at TEXT_CHARS each are
#: far below it; more is a fault of the service, not a result
MAX_REPLY_BYTES = 8 * 2**20
_CHUNK = 64 * 1024


class _TooLarge(Exception):
    """A reply past the byte cap (raised while it streams)."""


class SearchError(MedresError):
    """The search backend could not answer (after its retries), or answered in another shape."""


@dataclass(frozen=True)
class Hit:
    """One passage a backend returns: its id (what `read` takes and a citation names), title and text."""

    id: str
    title: str
    text: str
    url: str = ""

    def record(self) -> dict[str, str]:
        return {"id": self.id, "title": self.title, "text": self.text[:TEXT_CHARS], **({"url": self.url} if self.url else {})}


class SearchBackend(Protocol):
    name: str
    identity: str

    async def search(self, query: str, k: int, exclude: tuple[str, ...]) -> list[Hit]: ...

    async def read(self, passage_id: str, exclude: tuple[str, ...]) -> Hit | None: ...


def _holds(hit: Hit, exclude: tuple[str, ...]) -> bool:
    return any(contains(f"{hit.title}\n{hit.text}", g) for g in exclude)


class LocalSearch:
    """A local corpus index (see corpus.index); ids are `P<rowid>`."""

    name = "local"

    def __init__(self, index: CorpusIndex):
        self.index = index
        self.identity = f"local index {index.index_hash}"

    async def search(self, query: str, k: int, exclude: tuple[str, ...]) -> list[Hit]:
        return [Hit(f"P{p.rowid}", p.citation, p.text) for p in self.index.search(query, k, exclude)]

    async def read(self, passage_id: str, exclude: tuple[str, ...]) -> Hit | None:
        ident = passage_id.strip().upper()
        if not (ident.startswith("P") and ident[1:].isdigit()):
            return None
        p = self.index.passage(int(ident[1:]))
        if p is None:
            return None
        hit = Hit(f"P{p.rowid}", p.citation, p.text)
        return None if _holds(hit, exclude) else hit


class HttpSearch:
    """A search service of the documented JSON shape at `url` (see the module doc)."""

    name = "http"

    def __init__(
        self,
        url: str,
        key_env: str | None = None,
        timeout: float = 30.0,
        backoff: float = 0.5,
        max_bytes: int = MAX_REPLY_BYTES,
        stop_after: int | None = None,
    ):
        self.url = url.rstrip("/")
        self.key_env = key_env
        self.timeout = timeout
        self.backoff = backoff
        self.max_bytes = max_bytes
        self.breaker = Breaker(stop_limit() if stop_after is None else stop_after)
        self.attempts = 0  # requests sent, over the backend's life
        self.identity = f"http {self.url}"

    def _headers(self) -> dict[str, str]:
        import os

        if not self.key_env:
            return {}
        key = os.environ.get(self.key_env)
        if not key:
            raise SearchError(f"search backend {self.url}: environment variable {self.key_env} is not set")
        return {"Authorization": f"Bearer {key}"}

    async def _post(self, op: str, payload: Mapping[str, object]) -> Any:
        """The JSON reply of one request (None on 404), retried on 429, 5xx, timeouts and connection
        errors; a failure counts towards the breaker, and a stopped service is not asked again."""
        if self.breaker.is_stopped(self.url):
            _why, last = self.breaker.stopped[self.url]
            raise SearchError(
                f"search backend {self.url} stopped after {self.breaker.limit} failed requests in a row: not asked again in this run "
                f"(rerun to resume); last error: {last}"
            )
        try:
            body = await self._retried(op, payload)
        except SearchError as e:
            self.breaker.failed(self.url, "search-service", " ".join(str(e).split())[:200])
            raise
        self.breaker.succeeded(self.url)
        return body

    async def _retried(self, op: str, payload: Mapping[str, object]) -> Any:
        import aiohttp

        headers = self._headers()
        last = ""
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout)) as session:
            for attempt in range(RETRIES + 1):
                if attempt:
                    await asyncio.sleep(self.backoff * 2 ** (attempt - 1))
                self.attempts += 1
                try:
                    status, body = await self._attempt(session, op, payload, headers)
                except _TooLarge:
                    raise SearchError(f"search backend {self.url}/{op}: the reply is larger than {self.max_bytes} bytes (not read further)") from None
                except (aiohttp.ClientError, TimeoutError) as e:
                    last = f"{type(e).__name__}: {e}"
                    continue
                if status == 404:
                    return None
                if status >= 500 or status == 429:
                    last = f"HTTP {status}"
                    continue
                if status >= 400:
                    raise SearchError(f"search backend {self.url}/{op}: HTTP {status}: {body[:200]}")
                try:
                    return json.loads(body)
                except ValueError:
                    raise SearchError(f"search backend {self.url}/{op}: the reply is not JSON: {body[:120]!r}") from None
        raise SearchError(f"search backend {self.url}/{op}: gave up after {RETRIES + 1} attempts ({last})")

    async def _attempt(self, session: aiohttp.ClientSession, op: str, payload: Mapping[str, object], headers: dict[str, str]) -> tuple[int, str]:
        """One request: its status and body, read as it streams and stopped past `max_bytes`."""
        async with session.post(f"{self.url}/{op}", json=payload, headers=headers) as resp:
            if (resp.content_length or 0) > self.max_bytes:
                raise _TooLarge
            raw = bytearray()
            async for chunk in resp.content.iter_chunked(_CHUNK):
                raw += chunk
                if len(raw) > self.max_bytes:
                    raise _TooLarge
            return resp.status, raw.decode(resp.charset or "utf-8", errors="replace")

    def _hit(self, value: object, where: str) -> Hit:
        if not isinstance(value, dict):
            raise SearchError(f"search backend {self.url}: {where} is {type(value).__name__}, not an object with id, title and text")
        for f in ("id", "title", "text"):
            if not isinstance(value.get(f), str):
                raise SearchError(f"search backend {self.url}: {where}.{f} is missing or not a string")
        url = value.get("url")
        return Hit(value["id"], value["title"], value["text"], url if isinstance(url, str) else "")

    async def search(self, query: str, k: int, exclude: tuple[str, ...]) -> list[Hit]:
        body = await self._post("search", {"query": query, "k": k})
        results = body.get("results") if isinstance(body, dict) else None
        if not isinstance(results, list):
            raise SearchError(f"search backend {self.url}/search: the reply has no 'results' list")
        hits = [self._hit(r, f"results[{i}]") for i, r in enumerate(results)]
        return [h for h in hits if not _holds(h, exclude)][:k]

    async def read(self, passage_id: str, exclude: tuple[str, ...]) -> Hit | None:
        body = await self._post("read", {"id": passage_id})
        if body is None or (isinstance(body, dict) and "error" in body):
            return None
        hit = self._hit(body, "the reply")
        return None if _holds(hit, exclude) else hit
