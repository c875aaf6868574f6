"""The run store's own guards: an old store file migrated in place (a column added), and any text
kept whole, even one no UTF-8 can hold."""

from __future__ import annotations

import sqlite3

from medresilience.store import Store


def test_an_old_store_gains_the_wait_column(tmp_path):
    db = tmp_path / "store.sqlite"
    con = sqlite3.connect(db)
    con.executescript("""CREATE TABLE calls (key TEXT PRIMARY KEY, model TEXT NOT NULL, status TEXT NOT NULL, permanent INTEGER NOT NULL DEFAULT 0,
        text TEXT, top_logprobs TEXT, finish_reason TEXT, prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0,
        cost REAL, latency_s REAL, attempts INTEGER NOT NULL DEFAULT 1, error TEXT, updated REAL NOT NULL);
        INSERT INTO calls VALUES ('k', 'm', 'ok', 0, 'Answer: A', NULL, 'stop', 1, 1, NULL, 0.1, 1, NULL, 0);""")
    con.commit()
    con.close()
    from medresilience.store import CallRow

    with Store(db) as st:
        st.write_results([CallRow("k2", "m", "error", attempts=3, error="x", waited_s=1.5)], [])
        assert st.call("k")["waited_s"] == 0 and st.call("k2")["waited_s"] == 1.5


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
