"""The agent's search backends: the local corpus index (ids P<rowid>, read back by id, the item's
answer key kept out of both) and the HTTP backend of the documented JSON shape against a local
search service on 127.0.0.1 (bearer key from a variable, 5xx retried, a wrong shape or an unknown
id named)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from medresilience.corpus import CorpusIndex, build_index
from medresilience.mitigations.search import HttpSearch, LocalSearch, SearchError
from medresilience.testing.search_server import SearchServer

DOCS = [
    {
        "id": "w-cpr",
        "title": "Resuscitation",
        "text": "Push hard and fast in cardiac arrest: compressions of 100 to 120 a minute.",
        "url": "https://example.org/cpr",
    },
    {"id": "w-dm", "title": "Diabetes", "text": "Fasting plasma glucose of 126 mg/dL or more on two occasions means diabetes."},
    {"id": "w-asthma", "title": "Asthma", "text": "Salbutamol relieves acute asthma; inhaled corticosteroids control it."},
]
GOLD = ("100 to 120 a minute",)


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def local(tmp_path) -> LocalSearch:
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    build_index(src, tmp_path / "i.sqlite")
    return LocalSearch(CorpusIndex(tmp_path / "i.sqlite"))


def test_local_backend_searches_and_reads_by_id(local):
    hits = run(local.search("asthma salbutamol", 2, ()))
    assert hits[0].title == "Asthma (w-asthma)" and hits[0].id.startswith("P")
    again = run(local.read(hits[0].id, ()))
    assert again == hits[0]
    assert run(local.read(hits[0].id.lower(), ())) == hits[0]  # p3 reads as P3
    assert run(local.read("P999", ())) is None and run(local.read("w-asthma", ())) is None
    assert local.identity == f"local index {local.index.index_hash}"


def test_local_backend_keeps_the_answer_key_out_of_search_and_read(local):
    found = run(local.search("cardiac arrest compressions minute", 3, ()))
    cpr = next(h for h in found if "w-cpr" in h.title)
    assert all("w-cpr" not in h.title for h in run(local.search("cardiac arrest compressions minute", 3, GOLD)))
    assert run(local.read(cpr.id, GOLD)) is None  # asking by id does not get round the filter


def test_http_backend_speaks_the_documented_shape(monkeypatch):
    monkeypatch.setenv("SEARCH_KEY", "s3cret-token")
    with SearchServer(DOCS, token="s3cret-token") as srv:
        backend = HttpSearch(srv.url, "SEARCH_KEY")
        hits = run(backend.search("cardiac arrest compressions", 2, ()))
        assert [h.id for h in hits][:1] == ["w-cpr"] and hits[0].url == "https://example.org/cpr"
        assert run(backend.read("w-dm", ())).text.startswith("Fasting plasma glucose")
        assert run(backend.read("nope", ())) is None
        assert [h.id for h in run(backend.search("cardiac arrest compressions diabetes", 3, ()))] == ["w-cpr", "w-dm"]
        assert [h.id for h in run(backend.search("cardiac arrest compressions diabetes", 3, GOLD))] == ["w-dm"]
        assert run(backend.read("w-cpr", GOLD)) is None
        assert srv.requests[0] == ("/v1/search", {"query": "cardiac arrest compressions", "k": 2})
        assert backend.identity == f"http {srv.url}" and "s3cret" not in backend.identity


def test_http_backend_retries_a_busy_service_and_names_a_bad_one(monkeypatch):
    with SearchServer(DOCS, fail_first=2) as srv:
        backend = HttpSearch(srv.url, backoff=0.01)
        assert run(backend.search("asthma", 1, ()))[0].id == "w-asthma"
        assert len(srv.requests) == 3  # two 503s, then the answer
    with SearchServer(DOCS, fail_first=99) as srv, pytest.raises(SearchError, match="gave up after 4 attempts"):
        run(HttpSearch(srv.url, backoff=0.01).search("asthma", 1, ()))
    with SearchServer(DOCS, shape="bad") as srv, pytest.raises(SearchError, match="no 'results' list"):
        run(HttpSearch(srv.url).search("asthma", 1, ()))
    with SearchServer(DOCS, token="t0k3n-x") as srv:
        with pytest.raises(SearchError, match="HTTP 401"):
            run(HttpSearch(srv.url).search("asthma", 1, ()))
        monkeypatch.delenv("NO_SUCH_SEARCH_KEY", raising=False)
        with pytest.raises(SearchError, match="NO_SUCH_SEARCH_KEY is not set"):
            run(HttpSearch(srv.url, "NO_SUCH_SEARCH_KEY").search("asthma", 1, ()))


def test_a_refused_connection_is_retried_then_named(tmp_path: Path):
    with SearchServer(DOCS) as srv:
        url = srv.url
    with pytest.raises(SearchError, match="gave up after 4 attempts"):
        run(HttpSearch(url, backoff=0.01, timeout=2).search("asthma", 1, ()))


# ------------------------------------------------------------------ a hanging or flooding service


def test_a_hanging_service_is_stopped_by_the_breaker_after_repeated_failures(monkeypatch):
    """Each request to a service that never answers times out; after MEDRES_STOP_AFTER_AUTH_ERRORS
    failed requests in a row (the model endpoints' limit) nothing more is sent: counted in requests
    the service received, not in seconds."""
    monkeypatch.setenv("MEDRES_STOP_AFTER_AUTH_ERRORS", "2")
    with SearchServer(DOCS, hang=True) as srv:
        backend = HttpSearch(srv.url, timeout=0.3, backoff=0.01)
        errors = []
        for _ in range(5):  # five units' searches
            with pytest.raises(SearchError) as e:
                run(backend.search("asthma", 1, ()))
            errors.append(str(e.value))
        assert len(srv.requests) == 2 * 4  # two requests of four attempts each, then none
    assert all("gave up after 4 attempts" in m and "Timeout" in m for m in errors[:2])
    assert all("stopped after 2 failed requests in a row" in m for m in errors[2:])


def test_a_success_resets_the_breaker(monkeypatch):
    monkeypatch.setenv("MEDRES_STOP_AFTER_AUTH_ERRORS", "2")
    with SearchServer(DOCS, fail_first=4) as srv:  # the first request fails all four attempts
        backend = HttpSearch(srv.url, backoff=0.01)
        with pytest.raises(SearchError, match="gave up"):
            run(backend.search("asthma", 1, ()))
        assert run(backend.search("asthma", 1, ()))[0].id == "w-asthma"
        srv._server.fail_left = 4
        with pytest.raises(SearchError, match="gave up"):  # one failure in a row again: not stopped
            run(backend.search("asthma", 1, ()))
        assert run(backend.search("asthma", 1, ()))[0].id == "w-asthma"


def test_a_reply_past_the_byte_cap_is_an_error_read_no_further():
    """A 64 MiB reply against the 8 MiB default cap: refused while it streams (the service saw the
    client stop reading long before the end), once (not retried), as a SearchError."""
    size = 64 * 2**20
    with SearchServer(DOCS, huge=size) as srv:
        backend = HttpSearch(srv.url, backoff=0.01)
        with pytest.raises(SearchError, match="larger than 8388608 bytes"):
            run(backend.search("asthma", 1, ()))
        assert len(srv.requests) == 1
    assert srv.sent < size // 2
    with SearchServer(DOCS, huge=4096) as srv:  # under the cap: read as usual
        [hit] = run(HttpSearch(srv.url).search("asthma", 1, ()))
        assert hit.id == "big" and len(hit.text) > 4000
