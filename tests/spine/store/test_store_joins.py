"""The store's typed readers of the units x calls x scores join and of a run's configuration,
on a real SQLite store."""

from __future__ import annotations

from medresilience.store import CallCode, CallRow, RunConfig, ScoreCode, ScoreRow, Store, UnitRow


def _store(tmp_path) -> Store:
    store = Store(tmp_path / "store.sqlite")
    store.record_run("r1", {"models": [{"label": "m"}], "options": {"settings": ["none"], "scoring": "judge:x@ab:j#1"}})
    units = [
        UnitRow("m", "u1", "i1", None, "clean", "none", "judge:x@ab:j#1", "k1"),
        UnitRow("m", "u2", "i1", "p1", "type2", "none", "judge:x@ab:j#1", "k2"),
        UnitRow("m", "u3", "i2", "p2", "type2", "none", "letter", "k3"),
        UnitRow("m", "u4", "i2", "p3", "type2", "none", "judge:x@ab:j#1", "k4"),
    ]
    store.add_plan(units, [(u.key, "m", [{"role": "user", "content": u.unit_id}], {}) for u in units])
    store.write_results(
        [
            CallRow("k1", "m", "ok", text="one"),
            CallRow("k2", "m", "ok", text="two", finish_reason="length"),
            CallRow("k3", "m", "ok", text="three"),
            CallRow("k4", "m", "error", error="boom"),
        ],
        [ScoreRow("k1", "judge:x@ab:j#1", "fully", "valid", value=1.0), ScoreRow("k2", "judge:x@ab:j#1", None, "unscored")],
    )
    return store


def test_unit_results_filters_and_reads_only_what_is_asked(tmp_path):
    with _store(tmp_path) as store:
        judged = list(store.unit_results("r1", judged=True))
        assert [u.unit_id for u in judged] == ["u1", "u2", "u4"]
        assert [(u.call_status, u.status, u.value) for u in judged] == [("ok", "valid", 1.0), ("ok", "unscored", None), ("error", None, None)]
        assert all(u.text is None and u.messages is None for u in judged)
        answered = list(store.unit_results("r1", answered_probes=True, text=True, messages=True))
        assert [(u.unit_id, u.text) for u in answered] == [("u2", "two"), ("u3", "three")]
        assert answered[0].messages == '[{"role": "user", "content": "u2"}]'
        assert list(store.unit_results("another run")) == []
        assert len(list(store.unit_results(None))) == 4


def test_run_config_is_typed_and_unreadable_json_is_empty(tmp_path):
    with _store(tmp_path) as store:
        cfg = store.run_config("r1")
        assert isinstance(cfg, RunConfig)
        assert cfg.model_labels == ["m"] and cfg.options["scoring"] == "judge:x@ab:j#1" and cfg.prompts == {}
        assert store.run_config("nope") is None
        store.conn.execute("UPDATE runs SET config = '{not json' WHERE run_id = 'r1'")
        assert store.run_config("r1") == RunConfig("r1", {})


def test_joined_text_streams_the_frame_columns_in_chunks(tmp_path):
    """The frame's join as text: (model, condition, setting, scoring, item_id, probe_id, call code,
    score code, label, tokens, cost, value, epoch), `chunk` rows at a time; each unit's score is the
    one of its own scoring."""
    with _store(tmp_path) as store:
        chunks = list(store.joined_text("r1", chunk=3))
        assert [len(c) for c in chunks] == [3, 1]  # streamed `chunk` rows at a time
        rows = {(r[4], r[5]): r for c in chunks for r in c}
        assert rows["i1", None][:9] == ("m", "clean", "none", "judge:x@ab:j#1", "i1", None, CallCode.OK, ScoreCode.VALID, "fully")
        assert rows["i1", None][11] == 1.0 and rows["i1", None][12] == 0
        assert rows["i1", "p1"][6:9] == (CallCode.CUT, ScoreCode.UNSCORED, None)
        assert rows["i2", "p2"][3] == "letter" and rows["i2", "p2"][7:9] == (ScoreCode.NONE, None)  # scored by another scorer than its own
        assert rows["i2", "p3"][6:8] == (CallCode.ERROR, ScoreCode.NONE)
        assert list(store.joined_text("another run", chunk=3)) == [] and sum(len(c) for c in store.joined_text(None, chunk=10)) == 4


def test_unit_records_join_everything_and_stream_in_chunks(tmp_path):
    with _store(tmp_path) as store:
        recs = list(store.unit_records("r1", chunk=3))  # four units over two chunks
        assert [r.unit_id for r in recs] == ["u1", "u2", "u3", "u4"]
        u1, u2, u3, u4 = recs
        assert (u1.call, u1.reply, u1.score, u1.label, u1.value) == (CallCode.OK, "one", ScoreCode.VALID, "fully", 1.0)
        assert (u2.call, u2.finish_reason, u2.score) == (CallCode.CUT, "length", ScoreCode.UNSCORED)
        assert (u3.score, u3.label) == (ScoreCode.NONE, None)  # scored by another scorer than its own
        assert (u4.call, u4.error, u4.reply) == (CallCode.ERROR, "boom", None)
        assert u2.messages == '[{"role": "user", "content": "u2"}]' and u1.epoch == 0 and u1.key == "k1"
        assert list(store.unit_records("another run")) == [] and len(list(store.unit_records(None))) == 4


def test_results_and_records_extend_the_one_unit_type(tmp_path):
    """A unit's identity is declared once (`UnitRow`): the readers' results are units with what
    was joined to them, and give back the unit as planned."""
    with _store(tmp_path) as store:
        planned = UnitRow("m", "u2", "i1", "p1", "type2", "none", "judge:x@ab:j#1", "k2")
        result = next(u for u in store.unit_results("r1") if u.unit_id == "u2")
        record = next(u for u in store.unit_records("r1") if u.unit_id == "u2")
        assert isinstance(result, UnitRow) and isinstance(record, UnitRow)
        assert result.unit == record.unit == planned and type(result.unit) is UnitRow
        # the codes name the stored statuses they stand for
        assert record.score.status == "unscored" and record.call is CallCode.CUT and ScoreCode.NONE.status is None
