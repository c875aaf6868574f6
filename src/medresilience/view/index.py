"""The viewer's index of one run's units, in SQLite's temporary database of a store opened
read-only (`Store.reading_connection`: never in the store file, so a run on read-only storage is
served). Per unit it holds its state (`UnitState`), whether it is right, its item's and probe's
facets and its outcomes (`Outcome`, bits of one integer), with indexes for the viewer's filters, a
table of counts, a trigram text index (FTS5) of the replies and prompts as sent, and a pairing of
its units with another index's (another run's units). This module and the store package are the
only places that run SQL over a run's tables."""

from __future__ import annotations

import enum
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..runtime.errors import InputError
from ..store import CallStatus, ScoreStatus, Store
from ..store.base import SqlValue


class Outcome(enum.IntFlag):
    """A unit's outcomes in the index, one bit each, in the order the viewer shows them (the
    names are the viewer's `outcome` values; what each means: `build`)."""

    flip = 1
    flip_read = 128
    flip_to_target = 2
    recovered = 4
    unread = 8
    truncated = 16
    unscored = 32
    error = 64
    extracted = 256
    paired = 512
    reference_right = 1024
    flip_elsewhere = 2048
    paired_none = 4096
    better_than_none = 8192
    worse_than_none = 16384
    reference_right_none = 32768
    flip_to_target_only_none = 65536
    flip_to_target_only_here = 131072


#: the outcome names, in the order the viewer shows them
OUTCOMES: tuple[str, ...] = tuple(str(o.name) for o in Outcome)
#: the outcomes read against a counterpart (the same unit under none in the run, or in another run
#: when a filter pairs the units with another run's: `ViewFilter.paired`)
VERSUS = (
    Outcome.paired_none
    | Outcome.better_than_none
    | Outcome.worse_than_none
    | Outcome.reference_right_none
    | Outcome.flip_to_target_only_none
    | Outcome.flip_to_target_only_here
)


class UnitState(enum.StrEnum):
    """A unit's state in the index (the `state` filter), as the results frame reads it."""

    VALID = "valid"
    INVALID = "invalid"
    TRUNCATED = "truncated"
    UNSCORED = "unscored"
    ERROR = "error"
    MISSING = "missing"


#: the states, in the order the viewer shows them
VIEW_STATES: tuple[str, ...] = tuple(s.value for s in UnitState)


def _bit(o: Outcome) -> str:
    return str(int(o))


# a unit's state, read as the results frame reads it: the call's failure, else its score's status,
# else (a reply with no score row) truncated when cut at its budget, else invalid
_STATE = (
    f"(CASE WHEN c.status = '{CallStatus.ERROR}' THEN '{UnitState.ERROR}' WHEN c.status IS NULL THEN '{UnitState.MISSING}' "
    f"WHEN s.status IS NOT NULL THEN s.status WHEN c.finish_reason = 'length' THEN '{UnitState.TRUNCATED}' ELSE '{UnitState.INVALID}' END)"
)
# the outcomes a unit's state gives; a label an extraction model read (the score's detail says
# read_by "extract") is the outcome extracted
_STATE_BITS = (
    "(CASE state "
    + " ".join(
        f"WHEN '{state}' THEN {_bit(o)}"
        for state, o in (
            (UnitState.INVALID, Outcome.unread),
            (UnitState.TRUNCATED, Outcome.truncated),
            (UnitState.UNSCORED, Outcome.unscored),
            (UnitState.ERROR, Outcome.error),
        )
    )
    + f" WHEN '{UnitState.VALID}' THEN (CASE read_by WHEN 'extract' THEN {_bit(Outcome.extracted)} ELSE 0 END) ELSE 0 END)"
)
# a unit's score as the filter `score` names it: the value of a valid score, written as Python's
# f"{value:g}" writes it (-1, 0, 1, 0.5), None for every other state
_SCORE_TEXT = f"(CASE WHEN state = '{UnitState.VALID}' AND value IS NOT NULL THEN printf('%g', value) END)"
# the states of an answer (a reply read, unread or cut) when unread replies count as answers
_ANSWERED = f"('{UnitState.VALID}', '{UnitState.INVALID}', '{UnitState.TRUNCATED}')"
# an unscored unit's reason (the filter `reason`), as `Store.score_reasons` reads it: its score
# detail's reason, else '(no reason recorded)'; None for every other state
_REASON = (
    f"(CASE WHEN c.status = '{CallStatus.OK}' AND s.status = '{ScoreStatus.UNSCORED}' THEN COALESCE(NULLIF(CASE WHEN json_valid(s.detail) "
    "THEN CAST(json_extract(s.detail, '$.reason') AS TEXT) END, ''), '(no reason recorded)') END)"
)


def _answered(table: str, unread_flips: bool) -> str:
    """Whether the unit `table` is an answer, as flips count them."""
    return f"{table}.state IN {_ANSWERED}" if unread_flips else f"{table}.state = '{UnitState.VALID}'"


def _versus_bits(unread_flips: bool) -> str:
    """The outcomes of a unit `vu` against its counterpart `r` (`VERSUS`, see `ViewIndex.build`):
    paired_none (both answered), then better_than_none or worse_than_none, a flip to the target on
    one side only, and the counterpart's reference_right."""
    o = Outcome
    right = "COALESCE(vu.correct, 0)", "COALESCE(r.correct, 0)"
    t = _bit(o.flip_to_target)
    target = (
        f"(CASE WHEN (r.flags & {t}) AND NOT (vu.flags & {t}) THEN {_bit(o.flip_to_target_only_none)} "
        f"WHEN (vu.flags & {t}) AND NOT (r.flags & {t}) THEN {_bit(o.flip_to_target_only_here)} ELSE 0 END)"
    )
    return f"""((CASE WHEN {_answered("vu", unread_flips)} AND {_answered("r", unread_flips)} THEN {_bit(o.paired_none)} | {target} | (CASE
                WHEN {right[0]} AND NOT {right[1]} THEN {_bit(o.better_than_none)} WHEN {right[1]} AND NOT {right[0]} THEN {_bit(o.worse_than_none)}
                ELSE 0 END) ELSE 0 END)
              | (CASE WHEN r.flags & {_bit(o.reference_right)} THEN {_bit(o.reference_right_none)} ELSE 0 END))"""


def _reference_bits(unread_flips: bool, tcol: str | None) -> str:
    """The outcomes of a unit `vu` against the unit `r` of its item under the reference condition
    (see `ViewIndex.build`)."""
    o = Outcome
    unread, ref_wrong = _answered("vu", unread_flips), _answered("r", unread_flips)
    # the pairs the paired rates count: both answered; the reference right
    pair_bits = (
        f"(CASE WHEN {ref_wrong} AND {unread} THEN {_bit(o.paired)} ELSE 0 END) | (CASE WHEN r.correct AND {unread} THEN {_bit(o.reference_right)} ELSE 0 END)"
    )
    # a flip, to the target when its label is the probe's target, read when its reply was read
    flip = f"(CASE WHEN vu.label = vu.{tcol} THEN {_bit(o.flip | o.flip_to_target)} ELSE {_bit(o.flip)} END)" if tcol else _bit(o.flip)
    flip += f" | (CASE WHEN vu.state = '{UnitState.VALID}' THEN {_bit(o.flip_read)} ELSE 0 END)"
    if tcol:  # a read flip to a label other than the target
        flip += f" | (CASE WHEN vu.state = '{UnitState.VALID}' AND vu.label IS NOT vu.{tcol} THEN {_bit(o.flip_elsewhere)} ELSE 0 END)"
    return f"""(CASE WHEN r.correct AND NOT vu.correct AND {unread} THEN {flip}
                 WHEN {ref_wrong} AND NOT r.correct AND vu.correct THEN {_bit(o.recovered)} ELSE 0 END) | {pair_bits}"""


#: the columns of a row of `ViewIndex.page`, then one per facet
VIEW_COLUMNS = ("n", "model", "unit_id", "item_id", "probe_id", "condition", "setting", "epoch", "state", "label", "value", "flags")


@dataclass(frozen=True)
class ViewFilter:
    """A filter of the viewer's index: equalities on unit columns and facets (by position in the
    facets the index was built with; `condition` one or several: any one of them), a score (a valid
    score's value as `_SCORE_TEXT` writes it), an unscored unit's `reason` (its score detail's),
    states (`UnitState`: any one of them), outcome names (`Outcome`: every one must hold)
    and a text searched (case-insensitively for ASCII letters) in the replies and the prompts as
    sent. `by_item`: the facets select items (every unit of an item one of whose units has the
    values, so a clean unit, which has no probe, goes with the probes of its item), not units."""

    model: str | None = None
    setting: str | None = None
    condition: str | tuple[str, ...] | None = None
    item_id: str | None = None
    facets: tuple[tuple[int, str], ...] = ()
    outcomes: tuple[str, ...] = ()
    q: str | None = None
    score: str | None = None
    states: tuple[str, ...] = ()
    by_item: bool = False
    reason: str | None = None
    #: the outcomes against a counterpart (`VERSUS`) read from the pairing the index holds
    #: (`ViewIndex.pair`: each unit against another run's), not against none in the run
    paired: bool = False

    @property
    def scans(self) -> bool:
        """Whether its counts need a scan of the units (not the index's table of counts)."""
        return bool(self.q) or self.item_id is not None or (self.by_item and bool(self.facets)) or self.paired

    @property
    def source(self) -> str:
        """The units it reads (as `v`), with the pairing's bits (as `x`) when paired."""
        return "temp.vu v LEFT JOIN temp.vx x ON x.n = v.n" if self.paired else "temp.vu v"

    @property
    def flags(self) -> str:
        """A unit's outcome bits: with a pairing, those against a counterpart are the pairing's."""
        return f"((v.flags & {~int(VERSUS)}) | COALESCE(x.flags, 0))" if self.paired else "v.flags"

    def where(self) -> tuple[str, list[SqlValue]]:
        parts: list[str] = ["1"]
        args: list[SqlValue] = []
        for col in ("model", "setting", "condition", "item_id", "score", "reason"):
            v = getattr(self, col)
            if v is None or v == ():
                continue
            if isinstance(v, tuple) and len(v) > 1:
                parts.append(f"v.{col} IN ({', '.join('?' * len(v))})")
                args += list(v)
            else:
                parts.append(f"v.{col} = ?")
                args.append(v[0] if isinstance(v, tuple) else v)
        if self.states:
            parts.append(f"v.state IN ({', '.join('?' * len(self.states))})")
            args += list(self.states)
        if self.by_item and self.facets:
            has = " AND ".join(f"p.f{int(i)} = ?" for i, _ in self.facets)
            parts.append(f"v.item_id IN (SELECT p.item_id FROM temp.vu p WHERE {has})")
            args += [v for _, v in self.facets]
        for i, v in () if self.by_item else self.facets:
            parts.append(f"v.f{int(i)} = ?")
            args.append(v)
        bits = 0
        for name in self.outcomes:
            bits |= int(Outcome[name])
        if bits:
            parts.append(f"({self.flags} & ?) = ?")
            args += [bits, bits]
        if self.q:
            # the matches of the text, put in temp.vq by `ViewIndex` before the filter is used
            parts.append("v.n IN (SELECT n FROM temp.vq)")
        return " AND ".join(parts), args

    def search(self) -> tuple[str, list[SqlValue]]:
        """The query of the units whose reply or prompt holds the text `q` (a plain substring,
        case-insensitive for ASCII), through the trigram index: LIKE without ESCAPE on one column
        uses it (an OR of the columns would scan); a text holding a pattern character (%, _ or a
        backslash) is escaped and scanned."""
        q = self.q or ""
        if any(ch in q for ch in "%_\\"):
            like = "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            esc = " ESCAPE '\\'"
        else:
            like, esc = f"%{q}%", ""
        return f"SELECT rowid FROM temp.vt WHERE reply LIKE ?{esc} UNION SELECT rowid FROM temp.vt WHERE prompt LIKE ?{esc}", [like, like]


class ViewIndex:
    """The index of one run's units, on the read-only connection of a store (`Store.read_only`):
    built by `build`, then read by filters (`page`, `counts`), its columns' values (`values`),
    an item's or a unit id's units; `pair` reads its units against another index's (`counterparts`:
    another run's units of one model and setting). Nothing here writes the store's file."""

    def __init__(self, store: Store):
        self.conn: sqlite3.Connection = store.reading_connection()
        self.path: Path = store.path
        #: the text whose matches temp.vq holds (None: none)
        self._q: str | None = None

    def build(
        self,
        run: str | None,
        facets: Sequence[str],
        probe_facets: Iterable[tuple[str, Sequence[object]]],
        *,
        reference: str | None,
        target: str | None,
        unread_flips: bool,
        item_facets: Sequence[str] = (),
        item_rows: Iterable[tuple[str, Sequence[object]]] = (),
        baseline: str | None = None,
    ) -> int:
        """Index the units of `run` (None: every unit) in store order (model, unit id), with the
        items' `item_facets` values (from (item id, values) rows; every unit of the item has them)
        then the probes' `facets` values (from (probe id, values) rows), as the columns f0, f1, ...
        in that order; returns the number of units.

        A unit is right when its score is valid with value 1; its `score` is its valid score's value
        as text (`_SCORE_TEXT`); its `reason`, an unscored unit's reason (`_REASON`). Outcomes (`Outcome`): unread (invalid), truncated, unscored
        and error from its state, extracted (a valid label an extraction model read); against the unit of its item
        under the `reference` condition (same model, setting and repeat; None: no pairing): flip
        (the reference right, this one answered and not right; an unread reply counts only when
        `unread_flips`), flip_read (a flip whose reply was read: the rates that leave unread
        replies out), flip_to_target (a flip whose label is the probe's `target` facet),
        flip_elsewhere (with a `target`: a read flip to a label other than the target) and
        recovered (the reference answered and not right, this one right), paired (the reference and
        this one answered, as flips count them: the pairs of a paired test) and reference_right (the
        reference right, this one answered: the pairs a flip rate counts).

        Across settings, a unit under a setting other than `baseline` (None: no such pairing) against
        its counterpart, the unit of the same model, item, probe, condition and repeat under
        `baseline` in the same run: paired_none (both answered, as flips count them: the pairs of a
        setting's paired test), better_than_none (both answered, this one right and the counterpart
        not), worse_than_none (the reverse), flip_to_target_only_none (both answered, the counterpart
        a flip to the target and this one not: a targeted rate's b), flip_to_target_only_here (the reverse: its
        c) and reference_right_none (the counterpart's reference_right)."""
        try:
            self._units(run, facets, probe_facets, item_facets, item_rows)
            if reference is not None:
                # the probe's target facet, among the columns after the items' facets
                tcol = f"f{len(item_facets) + list(facets).index(target)}" if target is not None and target in facets else None
                self._against_reference(reference, tcol, unread_flips)
            if baseline is not None:
                self._versus(baseline, unread_flips)
            return self._counts_table(len(item_facets) + len(facets))
        except sqlite3.OperationalError as e:
            # a store of an older layout is read through a migrated copy (Store.read_only): this is
            # a store this version does not know
            raise InputError(self.path, None, None, f"cannot be indexed ({e})") from None

    def _units(
        self,
        run: str | None,
        facets: Sequence[str],
        probe_facets: Iterable[tuple[str, Sequence[object]]],
        item_facets: Sequence[str],
        item_rows: Iterable[tuple[str, Sequence[object]]],
    ) -> None:
        """temp.vu: the units with their state, score, facets and the outcomes of their state, and
        temp.vt: the text index of their replies and prompts."""
        c = self.conn
        icols = [f"f{i}" for i in range(len(item_facets))]
        pcols = [f"f{len(icols) + i}" for i in range(len(facets))]
        fcols = icols + pcols
        c.executescript(
            "DROP TABLE IF EXISTS temp.vi; DROP TABLE IF EXISTS temp.vp; DROP TABLE IF EXISTS temp.vu; DROP TABLE IF EXISTS temp.vc; DROP TABLE IF EXISTS temp.vt; DROP TABLE IF EXISTS temp.vq;"
        )
        self._q = None
        self._facts("vi", "item_id", icols, item_rows)
        self._facts("vp", "probe_id", pcols, probe_facets)
        c.execute(
            f"""CREATE TEMP TABLE vu (n INTEGER PRIMARY KEY, model TEXT, unit_id TEXT, item_id TEXT, probe_id TEXT, condition TEXT,
                    setting TEXT, epoch INTEGER, key TEXT, state TEXT, label TEXT, value REAL, correct INTEGER, flags INTEGER,
                    read_by TEXT, score TEXT, reason TEXT, g INTEGER {"".join(f", {f} TEXT" for f in fcols)})"""
        )
        where, args = ("WHERE u.run = ?", [run]) if run is not None else ("", [])
        c.execute(
            f"""INSERT INTO temp.vu (model, unit_id, item_id, probe_id, condition, setting, epoch, key, state, label, value, correct, flags,
                    read_by, reason {"".join(f", {f}" for f in fcols)})
                SELECT u.model, u.unit_id, u.item_id, u.probe_id, u.condition, u.setting, u.epoch, u.key, {_STATE}, s.label, s.value,
                       (c.status = '{CallStatus.OK}' AND s.status = '{ScoreStatus.VALID}' AND s.value >= 1), 0,
                       (CASE WHEN json_valid(s.detail) THEN json_extract(s.detail, '$.read_by') END), {_REASON} {"".join(f", i.{f}" for f in icols)}
                       {"".join(f", p.{f}" for f in pcols)}
                FROM units u LEFT JOIN calls c ON c.key = u.key LEFT JOIN scores s ON s.key = u.key AND s.scorer = u.scoring
                LEFT JOIN temp.vi i ON i.item_id = u.item_id LEFT JOIN temp.vp p ON p.probe_id = u.probe_id {where}
                ORDER BY u.model, u.unit_id""",
            args,
        )
        c.execute(f"UPDATE temp.vu SET flags = {_STATE_BITS}, score = {_SCORE_TEXT}")
        # the text search's index: each unit's reply and prompt as sent, by the unit's row (trigrams:
        # any substring of three characters or more is looked up, shorter ones scan this table)
        c.execute("CREATE VIRTUAL TABLE temp.vt USING fts5(reply, prompt, tokenize='trigram')")
        c.execute(
            """INSERT INTO temp.vt (rowid, reply, prompt) SELECT v.n, c.text, r.messages
                FROM temp.vu v LEFT JOIN main.calls c ON c.key = v.key LEFT JOIN main.requests r ON r.key = v.key"""
        )
        c.execute("CREATE INDEX temp.vu_pair ON vu(item_id, model, setting, epoch, condition)")

    def _against_reference(self, reference: str, tcol: str | None, unread_flips: bool) -> None:
        """The outcomes of the units against the unit of their item under `reference`, the probe's
        target in the column `tcol` (see `build`)."""
        self.conn.execute(
            f"""UPDATE temp.vu SET flags = flags | COALESCE((SELECT {_reference_bits(unread_flips, tcol)}
                  FROM temp.vu r WHERE r.item_id = vu.item_id AND r.model = vu.model AND r.setting = vu.setting
                    AND r.epoch = vu.epoch AND r.condition = ?), 0)
                WHERE condition != ?""",
            (reference, reference),
        )

    def _versus(self, baseline: str, unread_flips: bool) -> None:
        """The cross-setting outcomes of the units under a setting other than `baseline`, read
        against their counterparts under it (see `build`)."""
        self.conn.execute(
            f"""UPDATE temp.vu SET flags = flags | COALESCE((SELECT {_versus_bits(unread_flips)}
                  FROM temp.vu r WHERE r.item_id = vu.item_id AND r.model = vu.model AND r.setting = ? AND r.epoch = vu.epoch
                    AND r.condition = vu.condition AND r.probe_id IS vu.probe_id), 0)
                WHERE setting != ?""",
            (baseline, baseline),
        )

    def counterparts(self, model: str, setting: str) -> list[tuple]:
        """The indexed units of `model` under `setting`, as the other side of a pairing
        (`pair`): (item_id, probe_id, condition, epoch, state, correct, flags)."""
        return self.conn.execute(
            "SELECT item_id, probe_id, condition, epoch, state, correct, flags FROM temp.vu WHERE setting = ? AND model = ?", (setting, model)
        ).fetchall()

    def pair(self, counterparts: Iterable[Sequence[SqlValue]], *, model: str, setting: str | None, unread_flips: bool) -> int:
        """Pair the indexed units of `model` under `setting` (None: any) with `counterparts` (rows
        of `counterparts`, another index's: another run's units of one model and setting),
        each unit with the one of the same item, probe, condition and repeat, and keep their
        outcomes against them (`VERSUS`, read as against none: `build`) in temp.vx for
        filters `paired`; returns the units paired. The last pairing is kept until the next."""
        c = self.conn
        c.executescript(
            """DROP TABLE IF EXISTS temp.vo; DROP TABLE IF EXISTS temp.vx;
               CREATE TEMP TABLE vo (item_id TEXT, probe_id TEXT, condition TEXT, epoch INTEGER, state TEXT, correct INTEGER, flags INTEGER);
               CREATE TEMP TABLE vx (n INTEGER PRIMARY KEY, flags INTEGER);"""
        )
        c.execute("BEGIN")
        c.executemany("INSERT INTO temp.vo VALUES (?, ?, ?, ?, ?, ?, ?)", counterparts)
        c.execute("COMMIT")
        c.execute("CREATE INDEX temp.vo_pair ON vo(item_id, condition, epoch)")
        where, args = ("vu.model = ? AND vu.setting = ?", [model, setting]) if setting is not None else ("vu.model = ?", [model])
        # one counterpart per unit (the first, should a repeat be planned twice)
        c.execute(
            f"""INSERT OR IGNORE INTO temp.vx (n, flags) SELECT vu.n, {_versus_bits(unread_flips)}
                FROM temp.vu JOIN temp.vo r ON r.item_id = vu.item_id AND r.condition = vu.condition AND r.epoch = vu.epoch
                  AND r.probe_id IS vu.probe_id
                WHERE {where}""",
            args,
        )
        return int(c.execute("SELECT COUNT(*) FROM temp.vx").fetchone()[0])

    def _counts_table(self, n_facets: int) -> int:
        """The indexes of the viewer's filters and the table of counts of the units' groups; returns
        the number of units indexed."""
        c = self.conn
        fcols = [f"f{i}" for i in range(n_facets)]
        for col in ("unit_id", "model", "setting", "condition", "flags", "state", "score", "reason", *fcols):
            c.execute(f"CREATE INDEX temp.vu_{col} ON vu({col})")
        # the counts of every filter but a text search, read from this small table, not the units
        group_cols = ["model", "setting", "condition", "flags", "state", "score", "reason", *fcols]
        groups = ", ".join(group_cols)
        c.execute(f"CREATE TEMP TABLE vc AS SELECT {groups}, COUNT(*) AS n FROM temp.vu GROUP BY {groups}")
        # each unit's group (its row of vc: `g`), so a scan's counts group by one integer, not every column
        same = " AND ".join(f"vc.{col} IS vu.{col}" for col in group_cols)
        c.execute(f"CREATE INDEX temp.vc_groups ON vc({groups})")
        c.execute(f"UPDATE temp.vu SET g = (SELECT vc.rowid FROM temp.vc WHERE {same})")
        c.execute("DROP INDEX temp.vc_groups")
        c.execute("ANALYZE temp")
        return int(c.execute("SELECT COUNT(*) FROM temp.vu").fetchone()[0])

    def _facts(self, table: str, key: str, cols: Sequence[str], rows: Iterable[tuple[str, Sequence[object]]]) -> None:
        """A temporary table of facts by id (an item's or a probe's facets as text)."""
        c = self.conn
        c.execute(f"CREATE TEMP TABLE {table} ({key} TEXT PRIMARY KEY{''.join(f', {f} TEXT' for f in cols)})")
        c.execute("BEGIN")
        c.executemany(
            f"INSERT OR REPLACE INTO temp.{table} VALUES ({', '.join('?' * (1 + len(cols)))})",
            ((rid, *(None if v is None else str(v) for v in values)) for rid, values in rows),
        )
        c.execute("COMMIT")

    def values(self, column: str) -> list[SqlValue]:
        """The distinct values of an indexed column (model, setting, condition, f0, ...), sorted."""
        if column not in ("model", "setting", "condition", "score", "reason") and not (column.startswith("f") and column[1:].isdigit()):
            raise ValueError(f"not an indexed column: {column}")
        return [r[0] for r in self.conn.execute(f"SELECT DISTINCT {column} FROM temp.vu WHERE {column} IS NOT NULL ORDER BY 1")]

    def _search(self, flt: ViewFilter) -> None:
        """Put the matches of the filter's text in temp.vq, searched once: the last text's matches
        are kept, so its pages, counts and refinements do not search again."""
        if not flt.q or self._q == flt.q:
            return
        sql, args = flt.search()
        self.conn.execute("DROP TABLE IF EXISTS temp.vq")
        self.conn.execute("CREATE TEMP TABLE vq (n INTEGER PRIMARY KEY)")
        self.conn.execute(f"INSERT INTO temp.vq {sql}", args)
        self._q = flt.q

    def page(self, flt: ViewFilter, offset: int, limit: int, n_facets: int) -> list[tuple]:
        """One page of the units a filter keeps, in store order: rows of `VIEW_COLUMNS` then the facets."""
        self._search(flt)
        where, args = flt.where()
        cols = ", ".join([*(flt.flags if c == "flags" else f"v.{c}" for c in VIEW_COLUMNS), *(f"v.f{i}" for i in range(n_facets))])
        return self.conn.execute(f"SELECT {cols} FROM {flt.source} WHERE {where} ORDER BY v.n LIMIT ? OFFSET ?", [*args, int(limit), int(offset)]).fetchall()

    def counts(self, flt: ViewFilter, n_facets: int) -> list[tuple]:
        """The units a filter keeps, counted per (model, setting, condition, outcome bits, state,
        score, unscored reason, facets...): from the index's table of counts, or, for a text search, an item,
        facets selecting items or a pairing (`ViewFilter.paired`), by a scan of the units."""
        self._search(flt)
        where, args = flt.where()
        cols = ", ".join(["v.model", "v.setting", "v.condition", flt.flags, "v.state", "v.score", "v.reason", *(f"v.f{i}" for i in range(n_facets))])
        if flt.scans:
            if flt.paired:  # the outcome bits come from the pairing: counted by every column
                return self.conn.execute(f"SELECT {cols}, COUNT(*) FROM {flt.source} WHERE {where} GROUP BY {cols}", args).fetchall()
            # the units kept, counted by their group (an integer), then named by the group's row
            kept = f"SELECT v.g, COUNT(*) AS k FROM temp.vu v WHERE {where} GROUP BY v.g"
            return self.conn.execute(f"SELECT {cols}, t.k FROM ({kept}) t JOIN temp.vc v ON v.rowid = t.g", args).fetchall()
        return self.conn.execute(f"SELECT {cols}, SUM(v.n) FROM temp.vc v WHERE {where} GROUP BY {cols}", args).fetchall()

    def units_of_item(self, item_id: str, n_facets: int) -> list[tuple]:
        """Every indexed unit of one item (all models, settings and conditions), as `page` rows."""
        cols = ", ".join([*(f"v.{c}" for c in VIEW_COLUMNS), *(f"v.f{i}" for i in range(n_facets))])
        return self.conn.execute(f"SELECT {cols} FROM temp.vu v WHERE v.item_id = ? ORDER BY v.n", (item_id,)).fetchall()

    def units_of_id(self, unit_id: str, n_facets: int) -> list[tuple]:
        """The indexed units of one unit id (one per model), as `page` rows."""
        cols = ", ".join([*(f"v.{c}" for c in VIEW_COLUMNS), *(f"v.f{i}" for i in range(n_facets))])
        return self.conn.execute(f"SELECT {cols} FROM temp.vu v WHERE v.unit_id = ? ORDER BY v.n", (unit_id,)).fetchall()
