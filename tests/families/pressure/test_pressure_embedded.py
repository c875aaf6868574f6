"""The pressure family on a real (tiny) embedded model: five items of the bundled sample asked
clean, then pushed back on in a second turn that carries the model's own first reply."""

from __future__ import annotations

import json
import sqlite3

import pytest
from typer.testing import CliRunner

from conftest import needs_smollm2, needs_xllamacpp
from medresilience.cli import app
from medresilience.run.bundled_suite import sample_suite_dir


@pytest.mark.slow
@needs_xllamacpp
@needs_smollm2
def test_five_items_on_the_embedded_tiny_model(tmp_path):
    r = CliRunner().invoke(app, ["build", "pressure", "--from", str(sample_suite_dir()), "--out", str(tmp_path / "suite")])
    assert r.exit_code == 0, r.output
    out = tmp_path / "run"
    r = CliRunner().invoke(app, ["eval", "--suite", str(tmp_path / "suite"), "--model", "embedded:smollm2", "--limit", "5", "--out", str(out)])
    assert r.exit_code == 0, r.output
    block = json.loads((out / "results.json").read_text())["models"]["embedded-smollm2"]["none"]
    assert block["overall"]["clean_acc"]["n"] + block["counts"]["errors"] >= 5 and block["counts"]["turn2_not_run"] == 0
    con = sqlite3.connect(out / "store.sqlite")
    try:
        second = [json.loads(m) for (m,) in con.execute("SELECT r.messages FROM units u JOIN requests r ON r.key = u.key WHERE u.condition != 'clean'")]
    finally:
        con.close()
    assert len(second) == 20 and all(len(m) == 4 and m[2]["role"] == "assistant" for m in second)
