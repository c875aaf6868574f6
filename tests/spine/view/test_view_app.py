"""The evidence viewer hardened (issue #49, item 7), over a real run made against the stub server
(the model is the boundary we do not own): a page number too large for SQLite is a 400, browsing a
finished run writes nothing beside its store (no `-wal`, no `-shm`), a run still open by a writer
is read through its WAL, a non-loopback address needs `--public` (which says what is exposed and
keeps the Host check), and a store that is empty or has no run's tables is one line, not a
traceback."""

from __future__ import annotations

import os
import socket
import sqlite3
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from medresilience.cli import app as cli_app
from medresilience.runtime.errors import MedresError
from medresilience.store import Store, StoreWriteError
from medresilience.view.app import create_app
from medresilience.view.query import open_runs

runner = CliRunner()
HUGE = "99999999999999999999"  # more than SQLite's 64-bit integers hold


@pytest.fixture(scope="module")
def oracle_run(oracle_run) -> Path:
    return oracle_run


def _files(d: Path) -> set[str]:
    return set(os.listdir(d))


def test_a_page_too_large_is_a_400_not_a_500(oracle_run):
    [rv] = open_runs([oracle_run])
    try:
        client = TestClient(create_app([rv]), base_url="http://127.0.0.1", raise_server_exceptions=False)
        for page in (HUGE, "2"):  # 12 units: one page of 50; any filter keeps fewer
            r = client.get("/api/units", params={"page": page})
            assert r.status_code == 400 and "page" in r.json()["error"], r.text
            assert client.get("/units", params={"page": page}).status_code == 400
        assert client.get("/api/units", params={"page": "1"}).json()["total"] == 12
    finally:
        rv.close()


def test_browsing_a_finished_run_writes_nothing_beside_its_store(oracle_run):
    before = _files(oracle_run)
    assert not any(n.startswith("store.sqlite-") for n in before)
    [rv] = open_runs([oracle_run])
    try:
        client = TestClient(create_app([rv]), base_url="http://127.0.0.1")
        unit = client.get("/api/units").json()["units"][0]["unit_id"]
        assert client.get(f"/unit/0/{unit}").status_code == 200
        assert _files(oracle_run) == before  # no store.sqlite-wal, no store.sqlite-shm while open
    finally:
        rv.close()
    assert _files(oracle_run) == before


def test_a_store_open_by_a_writer_is_read_through_its_wal(oracle_run, tmp_path):
    """With a writer's connection open the store is not immutable: a reader must see what the
    writer committed to its WAL (an immutable open would read the main file alone and miss it)."""
    import shutil

    d = tmp_path / "live"
    shutil.copytree(oracle_run, d)
    with Store(d / "store.sqlite") as writer:
        writer.conn.execute("PRAGMA wal_autocheckpoint=0")  # keep the commit in the WAL
        writer.record_run("live-run", {"note": "written while a reader looks"})
        assert (d / "store.sqlite-wal").stat().st_size > 0
        with Store.read_only(d / "store.sqlite") as reader:
            assert reader.run_config("live-run") is not None


def test_a_non_loopback_host_needs_public(oracle_run):
    from medresilience.view.app import exposure

    res = runner.invoke(cli_app, ["view", str(oracle_run), "--host", "0.0.0.0", "--port", "1"])
    assert res.exit_code == 2 and "--public" in res.output and len(res.output.strip().splitlines()) == 1, res.output
    with pytest.raises(MedresError, match="--public"):
        exposure([oracle_run], "192.0.2.7", 8766, public=False)
    hosts, message = exposure([oracle_run], "127.0.0.1", 8766, public=False)
    assert set(hosts) == {"127.0.0.1", "localhost"} and message is None
    hosts, message = exposure([oracle_run], "0.0.0.0", 8766, public=True, allow_hosts=["viewer.lab.example"])
    # what is exposed: every interface, the runs, no authentication, and the Host names answered
    assert "every interface" in message and str(oracle_run) in message and "no authentication" in message
    assert "viewer.lab.example" in hosts and socket.gethostname() in hosts and "*" not in hosts
    assert "viewer.lab.example" in message
    [rv] = open_runs([oracle_run])
    try:
        client = TestClient(create_app([rv], allowed_hosts=hosts), base_url="http://127.0.0.1")
        assert client.get("/", headers={"host": "viewer.lab.example:8766"}).status_code == 200
        assert client.get("/", headers={"host": "attacker.example"}).status_code == 400  # DNS rebinding
    finally:
        rv.close()


def test_an_empty_or_tableless_store_is_one_line(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "store.sqlite").write_bytes(b"")
    other = tmp_path / "other"
    other.mkdir()
    with sqlite3.connect(other / "store.sqlite") as c:
        c.execute("CREATE TABLE notes (x)")
    for d, why in ((empty, "empty file"), (other, "no units and calls tables")):
        before = (d / "store.sqlite").read_bytes()
        res = runner.invoke(cli_app, ["view", str(d), "--port", "1"])
        lines = res.output.strip().splitlines()
        assert res.exit_code == 2 and len(lines) == 1 and why in lines[0] and str(d / "store.sqlite") in lines[0], res.output
        with pytest.raises(StoreWriteError, match=why):
            Store.read_only(d / "store.sqlite")
        assert (d / "store.sqlite").read_bytes() == before and _files(d) == {"store.sqlite"}


def test_a_run_locked_by_a_live_writer_is_seen_as_held(tmp_path):
    """`lock.held` decides, with the WAL file, whether a store may be opened immutable: true while
    a process holds the run lock, false once it lets go or when there is no lock file."""
    from medresilience.runtime.lock import RunLock, held

    assert not held(tmp_path)
    with RunLock(tmp_path):
        assert held(tmp_path)
    assert not held(tmp_path)
    (tmp_path / RunLock.NAME).write_text('{"pid": 1}')  # a killed run's file, its flock gone
    assert not held(tmp_path)
