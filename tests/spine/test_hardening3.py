"""Hardening, third round (issue #49): what an attack and fault campaign broke, each reproduced
against the real code paths, with the stub server standing in for the model (the boundary we do
not own).

A reply no UTF-8 can hold (a lone surrogate), a ratings file whose unclosed quote swallows rows,
spreadsheet formulas in the CSVs the toolkit writes, a signal in the results phase, an empty
bundles import, control characters in a model label; and tests that could not fail at what they
claimed: resume past one chunk of keys, the verdict reader's copy-of-the-answer rule, a JSON-lines
row that is not an object."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from conftest import oracle_policy
from medresilience.cli import app
from medresilience.store import Store
from medresilience.testing.stub import Faults, StubServer

runner = CliRunner()


def _lines(result) -> list[str]:
    return [ln for ln in result.output.splitlines() if ln.strip()]


def _one_error_line(result) -> str:
    assert result.exit_code != 0, result.output
    lines = _lines(result)
    assert len(lines) == 1, result.output
    return lines[0]


def _eval(suite_dir: Path, out: Path, url: str, *extra: str) -> list[str]:
    return [
        "eval",
        "--suite",
        str(suite_dir),
        "--out",
        str(out),
        "-O",
        "type1=all",
        "--model",
        f"openai:stub-model,base_url={url},concurrency=2,max_retries=1",
        *extra,
    ]


# =========================================================================== 1. a reply no UTF-8 can hold


def test_a_reply_with_a_lone_surrogate_is_stored_and_never_sent_again(tmp_path, tiny_suite):
    """Every reply ends in a lone UTF-16 surrogate (valid JSON: `\\ud800`): the run finishes with
    every reply stored (the surrogate replaced, the answer still read), and a rerun sends nothing."""
    d = tmp_path / "suite"
    tiny_suite.save(d)
    out = tmp_path / "run"
    with StubServer(policy=oracle_policy, faults=Faults(rate_surrogate=1.0)) as srv:
        r = runner.invoke(app, _eval(d, out, srv.base_url))
        assert r.exit_code == 0, r.output
        first = srv.stats.total
        again = runner.invoke(app, _eval(d, out, srv.base_url))
        assert again.exit_code == 0, again.output
        assert srv.stats.total == first, "a stored reply was sent again"
    assert first == 20  # 4 items x (clean + 3 Type 1 + Type 2), one call each
    con = sqlite3.connect(out / "store.sqlite")
    try:
        texts = [t for (t,) in con.execute("SELECT text FROM calls WHERE status = 'ok'")]
    finally:
        con.close()
    assert len(texts) == 20
    assert all(t.endswith(" \ufffd") for t in texts), texts[:3]  # the surrogate replaced by U+FFFD
    with Store(out / "store.sqlite") as st:
        assert st.count("scores", "WHERE status = 'valid'") == 20  # the answer before it is still read


def test_the_store_holds_any_text_it_is_given(tmp_path):
    """The store's own guard: a text no UTF-8 can hold (from any source, not only a reply) is stored
    with U+FFFD in place of the surrogate, and the batch's other rows with it."""
    from medresilience.store import CallRow, ScoreRow

    bad = "Answer: A \ud800"
    with Store(tmp_path / "store.sqlite") as st:
        st.write_results(
            [
                CallRow("k1", "m", "ok", text=bad, tool_calls=[{"function": {"arguments": bad}}]),
                CallRow("k2", "m", "error", error=bad),
                CallRow("k3", "m", "ok", text="fine"),
            ],
            [ScoreRow("k1", "letter", bad, "valid")],
        )
        assert st.call("k1")["text"] == st.call("k2")["error"] == st.score("k1", "letter")["label"] == "Answer: A \ufffd"
        assert "\ufffd" in st.call("k1")["tool_calls"] and st.call("k3")["text"] == "fine"
