"""The viewer's index of a store's units (view.index.ViewIndex, on a store opened read-only): each
unit's outcome read against the unit of its item under the reference condition, as the family's
`Outcomes` says; filters, pages and counts; the store opened read-only stays unchanged."""

from __future__ import annotations

import hashlib

import pytest

from medresilience.store import CallRow, ScoreRow, Store, UnitRow
from medresilience.view.index import VERSUS as VERSUS_BITS
from medresilience.view.index import Outcome, ViewFilter, ViewIndex

# (item, condition, target, call status, finish, score status, label, value)
ROWS = [
    ("i1", "clean", None, "ok", "stop", "valid", "A", 1.0),
    ("i1", "s", "B", "ok", "stop", "valid", "B", 0.0),  # flip to the target
    ("i2", "clean", None, "ok", "stop", "valid", "A", 1.0),
    ("i2", "s", "B", "ok", "stop", "valid", "C", 0.0),  # flip elsewhere
    ("i3", "clean", None, "ok", "stop", "valid", "A", 1.0),
    ("i3", "s", "B", "ok", "stop", "invalid", None, None),  # unread: a flip only when unread flips count
    ("i4", "clean", None, "ok", "stop", "valid", "B", 0.0),
    ("i4", "s", "C", "ok", "stop", "valid", "A", 1.0),  # recovered
    ("i5", "clean", None, "ok", "stop", "valid", "A", 1.0),
    ("i5", "s", "B", "error", None, None, None, None),  # error: never a flip
    ("i6", "clean", None, "ok", "length", "truncated", None, None),
    ("i6", "s", "B", "ok", "stop", "unscored", None, None),  # unscored, its reference truncated
]


def _write_store(path, rows, model: str = "m") -> None:
    """A store of one run, r1, of `model`: a unit per row (item, probe id, condition, setting,
    call status, reply text, finish reason, score as (label, status, detail, value) or None),
    asked "question <item> <condition>"."""
    with Store(path) as st:
        st.record_run("r1", {})
        units, calls, scores, reqs = [], [], [], []
        for n, (item, probe, cond, setting, cstatus, text, finish, score) in enumerate(rows):
            key = f"k{n}"
            units.append(UnitRow(model, f"{probe or item}|{cond}|{setting}|letter", item, probe, cond, setting, "letter", key))
            reqs.append((key, model, [{"role": "user", "content": f"question {item} {cond}"}], {}))
            calls.append(CallRow(key, model, cstatus, text=None if cstatus == "error" else text, finish_reason=finish))
            if score is not None:
                label, sstatus, detail, value = score
                scores.append(ScoreRow(key, "letter", label, sstatus, detail, value=value))
        st.add_plan(units, reqs)
        st.write_results(calls, scores)


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "store.sqlite"
    _write_store(
        path,
        [
            (
                item,
                None if cond == "clean" else f"{item}:p",
                cond,
                "none",
                cstatus,
                f"reply {n} 100%",
                finish,
                (label, sstatus, {"reason": "no verdict in the reply"} if sstatus == "unscored" else None, value) if sstatus else None,
            )
            for n, (item, cond, _t, cstatus, finish, sstatus, label, value) in enumerate(ROWS)
        ],
    )
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    ro = Store.read_only(path)
    yield ro
    ro.close()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


@pytest.fixture
def index(store):
    return ViewIndex(store)


def _index(st: ViewIndex, **kw) -> dict[str, int]:
    probes = [(f"{item}:p", [t]) for item, cond, t, *_ in ROWS if cond != "clean"]
    st.build("r1", ("target",), probes, **kw)
    return {r[2]: r[11] for r in st.page(ViewFilter(), 0, 100, 1)}


def _names(flags: int) -> set[str]:
    return {str(o.name) for o in Outcome if flags & o}


def test_outcomes_against_the_reference(index):
    got = {uid.split("|")[0] + "|" + uid.split("|")[1]: _names(f) for uid, f in _index(index, reference="clean", target="target", unread_flips=True).items()}
    # every answered unit whose reference is answered is paired; reference_right: the reference right
    pair = {"paired", "reference_right"}
    assert got["i1:p|s"] == {"flip", "flip_read", "flip_to_target", *pair}
    assert got["i2:p|s"] == {"flip", "flip_read", "flip_elsewhere", *pair}  # a read flip to a label not the target
    assert got["i3:p|s"] == {"flip", "unread", *pair}  # a flip, its reply not read
    assert got["i4:p|s"] == {"recovered", "paired"}
    assert got["i5:p|s"] == {"error"}
    assert got["i6:p|s"] == {"unscored"} and got["i6|clean"] == {"truncated"}
    assert all(not got[f"i{i}|clean"] for i in range(1, 6))


def test_unread_replies_not_counted_as_flips_and_no_reference(index):
    got = {uid.split("|")[0]: _names(f) for uid, f in _index(index, reference="clean", target="target", unread_flips=False).items() if "|s|" in uid}
    # an unread reply is no answer when unread flips do not count: no flip, no pair
    assert got["i3:p"] == {"unread"} and got["i1:p"] == {"flip", "flip_read", "flip_to_target", "paired", "reference_right"}
    got = {uid.split("|")[0]: _names(f) for uid, f in _index(index, reference=None, target=None, unread_flips=True).items() if "|s|" in uid}
    assert got["i1:p"] == set() and got["i3:p"] == {"unread"} and got["i4:p"] == set()
    # without a target, no flip is to the target or elsewhere
    got = {uid.split("|")[0]: _names(f) for uid, f in _index(index, reference="clean", target=None, unread_flips=True).items() if "|s|" in uid}
    assert got["i2:p"] == {"flip", "flip_read", "paired", "reference_right"}


def test_filters_pages_and_counts(store, index):
    _index(index, reference="clean", target="target", unread_flips=True)
    flips = index.page(ViewFilter(outcomes=("flip",)), 0, 10, 1)
    assert [r[3] for r in flips] == ["i1", "i2", "i3"]
    assert sum(r[-1] for r in index.counts(ViewFilter(outcomes=("flip",)), 1)) == 3
    assert sum(r[-1] for r in index.counts(ViewFilter(facets=((0, "B"),)), 1)) == 5  # the target facet B: every probe but i4
    assert [r[3] for r in index.page(ViewFilter(condition="s"), 2, 2, 1)] == ["i3", "i4"]  # a page in store order
    # text search: a plain substring of replies or prompts ("%" is text, not a pattern)
    assert sum(r[-1] for r in index.counts(ViewFilter(q="QUESTION i4"), 1)) == 2
    assert sum(r[-1] for r in index.counts(ViewFilter(q="100%"), 1)) == 11  # every reply but the error's
    assert sum(r[-1] for r in index.counts(ViewFilter(q="0%"), 1)) == 11
    assert index.counts(ViewFilter(q="1%0"), 1) == []
    # a scan's counts (a text, an item) are the table of counts' groups, group for group
    table = sorted(index.counts(ViewFilter(condition="s"), 1), key=repr)
    assert sorted(index.counts(ViewFilter(condition="s", q="question"), 1), key=repr) == table
    assert sorted(index.counts(ViewFilter(condition="s", q="i"), 1), key=repr) == table  # shorter than a trigram
    assert sum(r[-1] for r in index.counts(ViewFilter(item_id="i1", condition="s"), 1)) == 1
    d = store.unit_detail("m", "i1:p|s|none|letter")
    assert d.call["text"] == "reply 1 100%" and d.score["label"] == "B" and d.messages[0]["content"] == "question i1 s"
    assert store.unit_detail("m", "nope") is None


def test_score_state_and_item_scope_filters(index):
    _index(index, reference="clean", target="target", unread_flips=True)

    def n(**kw) -> int:
        return sum(r[-1] for r in index.counts(ViewFilter(**kw), 1))

    # a valid score's value as the metrics write it; counted per score like the other filters
    assert index.values("score") == ["0", "1"]
    assert n(score="0") == 3 and n(score="1") == 5 and n(score="0", condition="s") == 2
    assert [r[3] for r in index.page(ViewFilter(score="0"), 0, 10, 1)] == ["i1", "i2", "i4"]
    # states, any of them
    assert n(states=("valid",)) == 8 and n(states=("invalid", "truncated")) == 2 and n(states=("error", "missing")) == 1
    # facets by item: the clean units of the items with a probe of target C (i4) or B (the others)
    assert n(condition="clean", facets=((0, "C"),)) == 0  # by unit: a clean unit has no probe facet
    assert n(condition="clean", facets=((0, "C"),), by_item=True) == 1
    assert [r[3] for r in index.page(ViewFilter(condition="clean", facets=((0, "B"),), by_item=True), 0, 10, 1)] == ["i1", "i2", "i3", "i5", "i6"]
    assert n(facets=((0, "B"),), by_item=True) == 10  # every unit of those items
    # the pairs a flip rate counts (its n) and a paired test's
    assert n(outcomes=("reference_right",)) == 3 and n(outcomes=("paired",)) == 4


def test_several_conditions_and_an_unscored_reason(store, index):
    """`condition` takes several values (any of them: a rate pooled over conditions); `reason`
    selects the unscored units of one reason, read as the report's tally of reasons reads it."""
    _index(index, reference="clean", target="target", unread_flips=True)

    def n(**kw) -> int:
        return sum(r[-1] for r in index.counts(ViewFilter(**kw), 1))

    assert n(condition=("clean", "s")) == 12 and n(condition=("s",)) == n(condition="s") == 6
    assert n(condition=("s", "other"), outcomes=("flip",)) == 3 and n(condition=("clean", "other")) == 6
    assert [r[3] for r in index.page(ViewFilter(condition=("s", "clean"), item_id="i2"), 0, 10, 1)] == ["i2", "i2"]
    tally = store.score_reasons("unscored", run="r1")
    assert [(r[3], r[4]) for r in tally] == [("no verdict in the reply", 1)]
    assert index.values("reason") == ["no verdict in the reply"]
    assert n(reason="no verdict in the reply") == 1 and n(reason="no verdict in the reply", condition="clean") == 0 and n(reason="other") == 0
    # counted per reason like the other filters (the reason column of a count row)
    assert [r[6] for r in index.counts(ViewFilter(reason="no verdict in the reply"), 1)] == ["no verdict in the reply"]
    assert n(outcomes=("flip_elsewhere",)) == 1


def test_a_store_of_an_older_layout_is_read_through_a_migrated_copy_not_changed(tmp_path):
    import sqlite3

    path = tmp_path / "old.sqlite"
    with Store(path) as st:
        st.record_run("r1", {})
        st.add_plan([UnitRow("m", "i1|clean|none|letter", "i1", None, "clean", "none", "letter", "k")], [("k", "m", [], {})])
    con = sqlite3.connect(path)
    con.execute("ALTER TABLE units DROP COLUMN epoch")  # the layout before repeats
    con.close()
    before = path.read_bytes()
    with Store.read_only(path) as ro:  # migrated in memory: the file is never changed
        assert ViewIndex(ro).build("r1", (), (), reference=None, target=None, unread_flips=True) == 1
    assert path.read_bytes() == before and "epoch" not in {r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(units)")}


def test_text_search_goes_through_the_trigram_index(index):
    _index(index, reference="clean", target="target", unread_flips=True)
    # a plain text of three characters or more is looked up in the index, not scanned from the store
    sql, args = ViewFilter(q="reply 1").search()
    plan = " ".join(r[-1] for r in index.conn.execute(f"EXPLAIN QUERY PLAN {sql}", args))
    assert plan.count("VIRTUAL TABLE INDEX 0:L") == 2 and "calls" not in plan and "requests" not in plan  # L: LIKE on a column
    assert sum(r[-1] for r in index.counts(ViewFilter(q="REPLY 1"), 1)) == 3  # reply 1, reply 10, reply 11
    # shorter texts and texts with pattern characters still find their substrings
    assert sum(r[-1] for r in index.counts(ViewFilter(q="i4"), 1)) == 2
    assert sum(r[-1] for r in index.counts(ViewFilter(q="y 1_"), 1)) == 0


# (item, probe, condition, setting, call status, score status, value): a unit under caution is read
# against the same unit (model, item, probe, condition, repeat) under none
VERSUS_ROWS = [
    ("i1", None, "clean", "none", "ok", "valid", 1.0),
    ("i1", "p1", "s", "none", "ok", "valid", 1.0),
    ("i1", "p2", "s", "none", "ok", "valid", 0.0),
    ("i2", None, "clean", "none", "ok", "valid", 1.0),
    ("i2", "p1", "s", "none", "ok", "invalid", None),
    ("i3", None, "clean", "none", "ok", "valid", 0.0),
    ("i3", "p1", "s", "none", "ok", "valid", 1.0),
    ("i1", None, "clean", "caution", "ok", "valid", 1.0),
    ("i1", "p1", "s", "caution", "ok", "valid", 0.0),  # worse than none (p1 right under none)
    ("i1", "p2", "s", "caution", "ok", "valid", 1.0),  # better than none (p2 wrong under none): probes pair by id
    ("i2", None, "clean", "caution", "ok", "valid", 0.0),  # worse than none
    ("i2", "p1", "s", "caution", "ok", "valid", 1.0),  # better than an unread reply, when unread replies are answers
    ("i3", None, "clean", "caution", "error", None, None),  # no answer: no pair
    ("i3", "p1", "s", "caution", "ok", "valid", 1.0),  # both right: a pair, neither better nor worse
    ("i4", "p1", "s", "caution", "ok", "valid", 1.0),  # no unit under none: no pair
]


@pytest.fixture
def versus_store(tmp_path):
    path = tmp_path / "index.sqlite"
    _write_store(
        path,
        [
            (
                item,
                probe and f"{item}:{probe}",
                cond,
                setting,
                cstatus,
                f"reply {n}",
                "stop",
                (None if value is None else "AB"[int(value)], sstatus, None, value) if sstatus else None,
            )
            for n, (item, probe, cond, setting, cstatus, sstatus, value) in enumerate(VERSUS_ROWS)
        ],
    )
    with Store.read_only(path) as ro:
        yield ViewIndex(ro)


VERSUS = {"paired_none", "better_than_none", "worse_than_none", "reference_right_none"}


def _versus(st: ViewIndex, **kw) -> dict[str, set[str]]:
    st.build("r1", (), (), reference="clean", target=None, **kw)
    return {f"{r[3]}:{r[4]}|{r[5]}|{r[6]}": _names(r[11]) & (VERSUS | {"reference_right"}) for r in st.page(ViewFilter(), 0, 100, 0)}


def test_units_under_a_setting_read_against_the_same_units_under_none(versus_store):
    got = _versus(versus_store, unread_flips=True, baseline="none")
    both = {"paired_none", "reference_right", "reference_right_none"}  # answered on both sides, the clean answer right on both
    assert got["i1:i1:p1|s|caution"] == {*both, "worse_than_none"}
    assert got["i1:i1:p2|s|caution"] == {*both, "better_than_none"}
    assert got["i1:None|clean|caution"] == {"paired_none"}
    assert got["i2:None|clean|caution"] == {"paired_none", "worse_than_none"}
    # an unread reply under none is an answer, and wrong (the study's rule)
    assert got["i2:i2:p1|s|caution"] == {"paired_none", "better_than_none", "reference_right_none"}
    assert got["i3:None|clean|caution"] == set() and got["i3:i3:p1|s|caution"] == {"paired_none"}
    assert got["i4:i4:p1|s|caution"] == set()
    # units under none are the other side of the pair: no bit of their own
    assert not set().union(*(v & VERSUS for k, v in got.items() if k.endswith("|none")))

    def n(*outcomes: str) -> int:
        return sum(r[-1] for r in versus_store.counts(ViewFilter(outcomes=outcomes), 0))

    # a trade-off's pairs and discordant pairs, as filters of the units under the setting
    assert n("paired_none") == 6 and n("paired_none", "better_than_none") == 2 and n("worse_than_none") == 2
    assert n("reference_right", "reference_right_none") == 2 and n("reference_right", "reference_right_none", "worse_than_none") == 1
    assert sum(r[-1] for r in versus_store.counts(ViewFilter(condition="s", outcomes=("paired_none",)), 0)) == 4


def test_only_scored_answers_pair_without_unread_flips_and_no_baseline_no_bits(versus_store):
    got = _versus(versus_store, unread_flips=False, baseline="none")
    assert got["i2:i2:p1|s|caution"] == set()  # its counterpart's reply unread: no answer, no pair
    assert got["i1:i1:p1|s|caution"] >= {"paired_none", "worse_than_none"}
    got = _versus(versus_store, unread_flips=True, baseline=None)
    assert not set().union(*(v & VERSUS for v in got.values()))


# (item, probe, condition, setting, score status, label): gold A, every probe's target B
TARGET_ROWS = [
    ("i1", None, "clean", "none", "valid", "A"),
    ("i1", None, "clean", "caution", "valid", "A"),
    ("i1", "p1", "s", "none", "valid", "B"),
    ("i1", "p1", "s", "caution", "valid", "C"),  # to the target under none only (b)
    ("i1", "p2", "s", "none", "valid", "C"),
    ("i1", "p2", "s", "caution", "valid", "B"),  # to the target under the setting only (c)
    ("i1", "p3", "s", "none", "valid", "B"),
    ("i1", "p3", "s", "caution", "valid", "B"),  # to the target on both sides: neither
    ("i1", "p4", "s", "none", "valid", "B"),
    ("i1", "p4", "s", "caution", "valid", "A"),  # right under the setting: b (and better than none)
    ("i2", None, "clean", "none", "valid", "A"),
    ("i2", None, "clean", "caution", "valid", "C"),  # clean wrong under the setting: no flip there
    ("i2", "p1", "s", "none", "valid", "B"),
    ("i2", "p1", "s", "caution", "valid", "B"),  # b, but not a TASR pair (the clean answer wrong on one side)
    ("i3", None, "clean", "none", "valid", "A"),
    ("i3", None, "clean", "caution", "valid", "A"),
    ("i3", "p1", "s", "none", "invalid", None),  # unread under none: an answer only when unread replies count
    ("i3", "p1", "s", "caution", "valid", "B"),  # c when unread replies are answers
]


def _target_store(path, model: str = "m"):
    """A store of `TARGET_ROWS` for `model`, opened read-only."""
    _write_store(
        path,
        [
            (
                item,
                probe and f"{item}:{probe}",
                cond,
                setting,
                "ok",
                f"reply {n}",
                "stop",
                (label, sstatus, None, None if label is None else float(label == "A")),
            )
            for n, (item, probe, cond, setting, sstatus, label) in enumerate(TARGET_ROWS)
        ],
        model,
    )
    return Store.read_only(path)


@pytest.fixture
def target_store(tmp_path):
    with _target_store(tmp_path / "store.sqlite") as ro:
        yield ViewIndex(ro)


TARGET_VERSUS = {"flip_to_target_only_none", "flip_to_target_only_here"}
TARGET_PROBES = [(pid, ["B"]) for pid in sorted({f"{i}:{p}" for i, p, *_ in TARGET_ROWS if p})]


def test_flips_to_the_target_on_one_side_against_none(target_store):
    """A TASR's b and c against none: a flip to the target under none and not under the setting
    (`flip_to_target_only_none`), and the reverse (`flip_to_target_only_here`), both answered; its
    pairs (the clean answer right on both sides) keep only the probes the TASR's test counts."""
    probes = TARGET_PROBES
    target_store.build("r1", ("target",), probes, reference="clean", target="target", unread_flips=True, baseline="none")
    got = {f"{r[4]}|{r[6]}": _names(r[11]) & TARGET_VERSUS for r in target_store.page(ViewFilter(), 0, 100, 1)}
    assert got["i1:p1|caution"] == {"flip_to_target_only_none"} and got["i1:p4|caution"] == {"flip_to_target_only_none"}
    assert got["i1:p2|caution"] == {"flip_to_target_only_here"} and got["i3:p1|caution"] == {"flip_to_target_only_here"}
    assert got["i1:p3|caution"] == set() and got["i2:p1|caution"] == {"flip_to_target_only_none"}
    # units under none are the other side of the pair
    assert not set().union(*(v for k, v in got.items() if k.endswith("|none")))

    def n(*outcomes: str) -> int:
        return sum(r[-1] for r in target_store.counts(ViewFilter(outcomes=outcomes), 1))

    tasr = ("reference_right", "reference_right_none")
    assert n(*tasr) == 5 and n(*tasr, "flip_to_target_only_none") == 2 and n(*tasr, "flip_to_target_only_here") == 2
    assert n("flip_to_target_only_none") == 3
    # an unread reply under none is no answer when unread replies are left out: no pair, no c
    target_store.build("r1", ("target",), probes, reference="clean", target="target", unread_flips=False, baseline="none")
    got = {f"{r[4]}|{r[6]}": _names(r[11]) & TARGET_VERSUS for r in target_store.page(ViewFilter(), 0, 100, 1)}
    assert got["i3:p1|caution"] == set() and got["i1:p2|caution"] == {"flip_to_target_only_here"}


def test_units_paired_with_another_runs_units(tmp_path):
    """`view_pair`: a run's units read against another run's (`view_counterparts`: its units of
    one model and setting), each with the unit of the same item, probe, condition and repeat,
    give the bits a unit under a setting has against none in its own run; a filter `paired` reads
    them (its page and its counts), one that is not reads the run's own."""
    kw = {"reference": "clean", "target": "target", "unread_flips": True}
    with _target_store(tmp_path / "a.sqlite", "m") as sa, _target_store(tmp_path / "b.sqlite", "m2") as sb:
        a, b = ViewIndex(sa), ViewIndex(sb)
        a.build("r1", ("target",), TARGET_PROBES, baseline="none", **kw)
        b.build("r1", ("target",), TARGET_PROBES, baseline=None, **kw)
        own = {r[2]: r[11] for r in a.page(ViewFilter(setting="caution"), 0, 100, 1)}
        # b's units under caution (model m2) against a's under none (model m): another model, so not by label
        n = b.pair(a.counterparts("m", "none"), model="m2", setting="caution", unread_flips=True)
        assert n == 9
        rows = b.page(ViewFilter(setting="caution", paired=True), 0, 100, 1)
        assert {r[2]: r[11] for r in rows} == own
        assert not any(r[11] & VERSUS_BITS for r in b.page(ViewFilter(setting="caution"), 0, 100, 1))

        def count(st, **kw) -> int:
            return sum(r[-1] for r in st.counts(ViewFilter(**kw), 1))

        for outcomes in (("paired_none",), ("reference_right", "reference_right_none", "flip_to_target_only_none"), ("worse_than_none",)):
            assert count(b, outcomes=outcomes, paired=True) == count(a, outcomes=outcomes) > 0, outcomes
        # a model or setting the other run does not have: no counterpart
        assert b.pair(a.counterparts("m2", "none"), model="m2", setting=None, unread_flips=True) == 0
        assert count(b, outcomes=("paired_none",), paired=True) == 0
        # a's own units under none paired with b's under none (the same answers): both answered, none better or worse
        assert a.pair(b.counterparts("m2", "none"), model="m", setting="none", unread_flips=True) == 9
        assert count(a, setting="none", outcomes=("paired_none",), paired=True) == 9
        assert count(a, setting="none", outcomes=("better_than_none",), paired=True) == 0


def test_the_index_is_built_only_on_a_read_only_connection(tmp_path):
    """The store hands the viewer's index its connection only when opened read-only; through it
    the index's tables live in SQLite's temporary database and the store's tables cannot change."""
    import sqlite3

    path = tmp_path / "store.sqlite"
    _write_store(path, [("i1", None, "clean", "none", "ok", "reply", "stop", ("A", "valid", None, 1.0))])
    with Store(path) as st, pytest.raises(ValueError, match="read_only"):
        ViewIndex(st)
    with Store.read_only(path) as ro:
        ix = ViewIndex(ro)
        assert ix.build("r1", (), (), reference=None, target=None, unread_flips=True) == 1
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            ix.conn.execute("DELETE FROM units")
