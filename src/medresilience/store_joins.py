"""The store's units joined with their calls and scores (units x calls x scores, each unit's call
by its key and its score by its key and its own scoring): the one place that join is written, read
by the results frame, judge agreement and review sampling. `Store` inherits these readers; like
store.py, this module holds SQL and nothing outside the two does (besides the review database and
the corpus index).

Two shapes of the same join:
- `unit_results`: one typed `UnitResult` per unit, streamed in the store's order (model, unit id),
  for readers that look at units one by one (judge verdicts, review candidates);
- `unit_records`: one `UnitRecord` per unit with every column of the join and the request as sent
  (exports of a run), streamed in chunks;
- `joined_packed` / `joined_text`: the columns the results frame needs, streamed as chunks of plain
  tuples (no object per row: millions of units in bounded memory), the small columns packed into
  one integer per row (`PackedJoin`) or, for a large label vocabulary, as text. Their call and
  score columns are codes: `CALL_CODES` and `SCORE_CODES` give the meaning of each."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import InputError

_JOIN = """
FROM units u
LEFT JOIN calls c ON c.key = u.key
LEFT JOIN scores s ON s.key = u.key AND s.scorer = u.scoring
"""
#: the call column of the frame's join: no call row, ok, error, ok but cut at its token budget
#: (finish_reason 'length')
CALL_CODES = ("none", "ok", "error", "cut")
_CALL = "(CASE c.status WHEN 'ok' THEN (CASE c.finish_reason WHEN 'length' THEN 3 ELSE 1 END) WHEN 'error' THEN 2 ELSE 0 END)"
#: the score column of the frame's join: no score row, then the score's status
SCORE_CODES = ("none", "valid", "invalid", "unscored", "truncated")
_SCORE = "(CASE s.status WHEN 'valid' THEN 1 WHEN 'invalid' THEN 2 WHEN 'unscored' THEN 3 WHEN 'truncated' THEN 4 ELSE 0 END)"
# prompt and completion tokens in one integer: prompt * 2**32 + completion
_TOKENS = "(COALESCE(c.prompt_tokens, 0) * 4294967296 + COALESCE(c.completion_tokens, 0))"
#: the unit columns `joined_packed` packs, in digit order (then call, score and label)
SMALL = ("model", "condition", "setting", "scoring")


@dataclass(frozen=True, slots=True)
class UnitResult:
    """One planned answer with its call and its score under the unit's scoring. `call_status` is
    ok, error or None (never called); `status`, `label` and `value` are the score's (None: not
    scored); `text` (the reply) and `messages` (the request as sent, JSON text) are read only when
    asked for."""

    model: str
    unit_id: str
    item_id: str
    probe_id: str | None
    condition: str
    setting: str
    scoring: str
    key: str
    call_status: str | None
    status: str | None
    label: str | None
    value: float | None
    text: str | None = None
    messages: str | None = None


@dataclass(frozen=True)
class PackedJoin:
    """The frame's join with the small columns packed into one integer per row (mixed radix).

    Each row of `chunks` is (packed, item_id, probe_id, tokens, cost, value, epoch); `packed`
    holds, least significant first, one digit per `SMALL` column (its index in the vocabulary
    given), then the call code, the score code and the label (0: none, 1..n: its index + 1). A
    value outside its vocabulary reads as the digit `unknown` names (None: cannot happen)."""

    radices: tuple[int, ...]
    unknown: tuple[int | None, ...]
    chunks: Generator[list[tuple], None, None]


def _case(column: str, vocab: Sequence[Any]) -> tuple[str, list[Any]]:
    """A CASE expression mapping a column's values to their index in vocab, and any other value
    to len(vocab) (and its arguments)."""
    if not vocab:
        return "0", []
    return ("(CASE " + column + " " + " ".join("WHEN ? THEN ?" for _ in vocab) + f" ELSE {len(vocab)} END)", [x for i, v in enumerate(vocab) for x in (v, i)])


def _scan_where(run: str | None) -> tuple[str, list[Any]]:
    return ("WHERE +u.run = ?", [run]) if run is not None else ("", [])  # "+": a scan, not the index


def _chunks(conn: sqlite3.Connection, sql: str, args: Sequence[Any], chunk: int) -> Generator[list[tuple], None, None]:
    """The rows of a query, `chunk` at a time (the cursor closed when the reader stops early)."""
    cur = conn.execute(sql, args)
    try:
        while True:
            rows = cur.fetchmany(chunk)
            if not rows:
                return
            yield rows
            del rows
    finally:
        cur.close()


class JoinedReads:
    """The readers of the units x calls x scores join (mixed into `Store`)."""

    conn: sqlite3.Connection

    def unit_results(
        self, run: str | None, *, judged: bool = False, answered_probes: bool = False, text: bool = False, messages: bool = False
    ) -> Iterator[UnitResult]:
        """The units of `run` (None or empty: every unit) with their call and score, ordered by
        model and unit id: only those a judge scores (`judged`: scoring `judge:...`), or only the
        units of a probe whose call is stored ok (`answered_probes`); with the reply `text` and
        the request's `messages` when asked."""
        calls = "JOIN calls c ON c.key = u.key AND c.status = 'ok'" if answered_probes else "LEFT JOIN calls c ON c.key = u.key"
        requests = "LEFT JOIN requests r ON r.key = u.key" if messages else ""
        where = ["u.scoring LIKE 'judge:%'"] if judged else []
        if answered_probes:
            where.append("u.probe_id IS NOT NULL")
        args = []
        if run:
            where.append("u.run = ?")
            args.append(run)
        sql = f"""SELECT u.model, u.unit_id, u.item_id, u.probe_id, u.condition, u.setting, u.scoring, u.key, c.status, s.status,
                         s.label, s.value, {"c.text" if text else "NULL"}, {"r.messages" if messages else "NULL"}
                  FROM units u {calls}
                  LEFT JOIN scores s ON s.key = u.key AND s.scorer = u.scoring {requests}
                  {"WHERE " + " AND ".join(where) if where else ""} ORDER BY u.model, u.unit_id"""
        for row in self.conn.execute(sql, args):
            yield UnitResult(*row)

    def unit_records(self, run: str | None, chunk: int = 10_000) -> Iterator[UnitRecord]:
        """Every unit of `run` (None: every unit) with its request, call and score (`UnitRecord`),
        ordered by model and unit id, streamed `chunk` rows at a time."""
        return unit_records(self.conn, run, chunk)

    def unit_values(self, column: str, run: str | None) -> list[Any]:
        """The distinct values of one of the `SMALL` unit columns among the units of `run` (None:
        every unit), in the store's order (one scan)."""
        if column not in SMALL:
            raise ValueError(f"not a small unit column: {column}")
        where, args = _scan_where(run)
        return [r[0] for r in self.conn.execute(f"SELECT DISTINCT u.{column} FROM units u {where}", args)]

    def score_labels(self, limit: int) -> list[str]:
        """At most `limit` distinct score labels of the store (any scorer), sorted."""
        return sorted(r[0] for r in self.conn.execute(f"SELECT DISTINCT label FROM scores WHERE label IS NOT NULL LIMIT {int(limit)}"))

    def joined_packed(self, run: str | None, vocab: Mapping[str, Sequence[Any]], chunk: int) -> PackedJoin:
        """The frame's join of the units of `run` (None: every unit), the `SMALL` columns and the
        labels packed against `vocab` (see `PackedJoin`), streamed `chunk` rows at a time."""
        exprs, args, radices = [], [], []
        for name in SMALL:
            e, a = _case(f"u.{name}", vocab[name])
            exprs.append(e)
            args += a
            radices.append(len(vocab[name]) + 1)
        le, la = _case("s.label", vocab["label"])
        args += la
        n_labels = len(vocab["label"])
        # digits: model, condition, setting, scoring, call (4), score (5), label (0: none, 1..n, n+1: unknown)
        digits = [*exprs, _CALL, _SCORE, f"(CASE WHEN s.label IS NULL THEN 0 ELSE {le} + 1 END)"]
        radices += [len(CALL_CODES), len(SCORE_CODES), n_labels + 2]
        packed, mult = "0", 1
        for e, r in zip(digits, radices):
            packed += f" + {mult} * {e}"
            mult *= r
        where, wargs = _scan_where(run)
        sql = f"SELECT {packed}, u.item_id, u.probe_id, {_TOKENS}, c.cost, s.value, u.epoch {_JOIN} {where}"
        unknown = (*(r - 1 for r in radices[:4]), None, None, n_labels + 1)
        return PackedJoin(tuple(radices), unknown, _chunks(self.conn, sql, [*args, *wargs], chunk))

    def joined_text(self, run: str | None, chunk: int) -> Generator[list[tuple], None, None]:
        """The frame's join of the units of `run` (None: every unit) as text, streamed `chunk` rows
        at a time: (model, condition, setting, scoring, item_id, probe_id, call code, score code,
        label, tokens, cost, value, epoch)."""
        where, wargs = _scan_where(run)
        sql = f"""SELECT u.model, u.condition, u.setting, u.scoring, u.item_id, u.probe_id, {_CALL}, {_SCORE}, s.label,
                         {_TOKENS}, c.cost, s.value, u.epoch {_JOIN} {where}"""
        return _chunks(self.conn, sql, wargs, chunk)


@dataclass(frozen=True, slots=True)
class UnitRecord:
    """Everything the store holds about one planned answer: the unit, the request as sent
    (`messages`, JSON text), its call (`call` and `score` are `CALL_CODES` / `SCORE_CODES`
    indexes; the reply, how it ended, attempts, the error, tokens, latency, cost) and its score
    under the unit's scoring (label, value, `detail` as JSON text: how the label was read, a
    judge's reason, why it is unscored)."""

    model: str
    unit_id: str
    item_id: str
    probe_id: str | None
    condition: str
    setting: str
    scoring: str
    epoch: int
    key: str
    messages: str | None
    call: int
    reply: str | None
    finish_reason: str | None
    attempts: int | None
    error: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float | None
    cost: float | None
    score: int
    label: str | None
    value: float | None
    detail: str | None


def unit_records(conn: sqlite3.Connection, run: str | None, chunk: int) -> Iterator[UnitRecord]:
    """The units of `run` (None: every unit) with everything joined to them (`UnitRecord`), in
    the store's order (model, unit id), read `chunk` rows at a time (bounded memory)."""
    where, wargs = ("WHERE u.run = ?", [run]) if run is not None else ("", [])
    sql = f"""SELECT u.model, u.unit_id, u.item_id, u.probe_id, u.condition, u.setting, u.scoring, u.epoch, u.key, r.messages,
                     {_CALL}, c.text, c.finish_reason, c.attempts, c.error, c.prompt_tokens, c.completion_tokens, c.latency_s, c.cost,
                     {_SCORE}, s.label, s.value, s.detail
              {_JOIN} LEFT JOIN requests r ON r.key = u.key {where} ORDER BY u.model, u.unit_id"""
    for rows in _chunks(conn, sql, wargs, chunk):
        for row in rows:
            yield UnitRecord(*row)


#: the outcome bits of a unit in the viewer's index (`ViewReads`), in the order they are shown
OUTCOME_BITS = {
    "flip": 1,
    "flip_read": 128,
    "flip_to_target": 2,
    "recovered": 4,
    "unread": 8,
    "truncated": 16,
    "unscored": 32,
    "error": 64,
    "extracted": 256,
    "paired": 512,
    "reference_right": 1024,
    "flip_elsewhere": 2048,
    "paired_none": 4096,
    "better_than_none": 8192,
    "worse_than_none": 16384,
    "reference_right_none": 32768,
    "flip_to_target_only_none": 65536,
    "flip_to_target_only_here": 131072,
}
#: the bits read against a counterpart (the same unit under none in the run, or in another run when
#: a filter pairs the units with another run's: `ViewFilter.paired`)
VERSUS_BITS = (
    OUTCOME_BITS["paired_none"]
    | OUTCOME_BITS["better_than_none"]
    | OUTCOME_BITS["worse_than_none"]
    | OUTCOME_BITS["reference_right_none"]
    | OUTCOME_BITS["flip_to_target_only_none"]
    | OUTCOME_BITS["flip_to_target_only_here"]
)
#: a unit's states in the viewer's index (the `state` filter), as the results frame reads them
VIEW_STATES = ("valid", "invalid", "truncated", "unscored", "error", "missing")
# a unit's state, read as the results frame reads it: the call's failure, else its score's status,
# else (a reply with no score row) truncated when cut at its budget, else invalid
_STATE = (
    "(CASE WHEN c.status = 'error' THEN 'error' WHEN c.status IS NULL THEN 'missing' WHEN s.status IS NOT NULL THEN s.status "
    "WHEN c.finish_reason = 'length' THEN 'truncated' ELSE 'invalid' END)"
)
# a label an extraction model read (the score's detail says read_by "extract") is the outcome extracted
_STATE_BITS = (
    "(CASE state WHEN 'invalid' THEN 8 WHEN 'truncated' THEN 16 WHEN 'unscored' THEN 32 WHEN 'error' THEN 64 "
    "WHEN 'valid' THEN (CASE read_by WHEN 'extract' THEN 256 ELSE 0 END) ELSE 0 END)"
)
# a unit's score as the filter `score` names it: the value of a valid score, written as Python's
# f"{value:g}" writes it (-1, 0, 1, 0.5), None for every other state
_SCORE_TEXT = "(CASE WHEN state = 'valid' AND value IS NOT NULL THEN printf('%g', value) END)"
_ANSWERED = "('valid', 'invalid', 'truncated')"
# an unscored unit's reason (the filter `reason`), as `Store.score_reasons` reads it: its score
# detail's reason, else '(no reason recorded)'; None for every other state
_REASON = (
    "(CASE WHEN c.status = 'ok' AND s.status = 'unscored' THEN COALESCE(NULLIF(CASE WHEN json_valid(s.detail) "
    "THEN CAST(json_extract(s.detail, '$.reason') AS TEXT) END, ''), '(no reason recorded)') END)"
)


def _versus_bits(unread_flips: bool) -> str:
    """The bits of a unit `vu` against its counterpart `r` (`VERSUS_BITS`, see
    `ViewReads.build_view_index`): paired (both answered: 4096), then better (8192) or worse
    (16384), a flip to the target on one side only (65536 the counterpart's, 131072 this one's),
    and the counterpart's reference right (32768)."""
    answered = (lambda t: f"{t}.state IN {_ANSWERED}") if unread_flips else (lambda t: f"{t}.state = 'valid'")
    right = "COALESCE(vu.correct, 0)", "COALESCE(r.correct, 0)"
    target = "(CASE WHEN (r.flags & 2) AND NOT (vu.flags & 2) THEN 65536 WHEN (vu.flags & 2) AND NOT (r.flags & 2) THEN 131072 ELSE 0 END)"
    return f"""((CASE WHEN {answered("vu")} AND {answered("r")} THEN 4096 | {target} | (CASE
                WHEN {right[0]} AND NOT {right[1]} THEN 8192 WHEN {right[1]} AND NOT {right[0]} THEN 16384 ELSE 0 END) ELSE 0 END)
              | (CASE WHEN r.flags & 1024 THEN 32768 ELSE 0 END))"""


#: the columns of a row of `ViewReads.view_page`, then one per facet
VIEW_COLUMNS = ("n", "model", "unit_id", "item_id", "probe_id", "condition", "setting", "epoch", "state", "label", "value", "flags")


@dataclass(frozen=True)
class ViewFilter:
    """A filter of the viewer's index: equalities on unit columns and facets (by position in the
    facets the index was built with; `condition` one or several: any one of them), a score (a valid
    score's value as `_SCORE_TEXT` writes it), an unscored unit's `reason` (its score detail's),
    states (`VIEW_STATES`: any one of them), outcome names (`OUTCOME_BITS`: every one must hold)
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
    #: the bits against a counterpart (`VERSUS_BITS`) read from the pairing the index holds
    #: (`ViewReads.view_pair`: each unit against another run's), not against none in the run
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
        return f"((v.flags & {~VERSUS_BITS}) | COALESCE(x.flags, 0))" if self.paired else "v.flags"

    def where(self) -> tuple[str, list[Any]]:
        parts, args = ["1"], []
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
            bits |= OUTCOME_BITS[name]
        if bits:
            parts.append(f"({self.flags} & ?) = ?")
            args += [bits, bits]
        if self.q:
            # the matches of the text, put in temp.vq by `ViewReads` before the filter is used
            parts.append("v.n IN (SELECT n FROM temp.vq)")
        return " AND ".join(parts), args

    def search(self) -> tuple[str, list[Any]]:
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


@dataclass(frozen=True)
class UnitDetail:
    """Everything stored about one unit: its plan row, the request as sent (messages, params), its
    call (status, reply, finish reason, attempts, tokens, latency, waiting, cost, error) and its
    score under its scoring (label, status, value, scorer, detail as stored: how it was read, or
    the judge's reason), and the calls linked to it (a setting's call before it, an agent's steps,
    tool results and summary): role, key, status, text, tool_calls, finish_reason, prompt and
    completion tokens, cost, latency_s, attempts, error and model, in role order."""

    unit: dict[str, Any]
    messages: list[dict[str, Any]] | None
    params: dict[str, Any] | None
    call: dict[str, Any] | None
    score: dict[str, Any] | None
    linked: tuple[dict[str, Any], ...] = ()


class ViewReads:
    """The evidence viewer's readers (mixed into `Store`): an index of one run's units in SQLite's
    temporary database (never in the store file, so a store opened read-only serves it), holding
    per unit its state, whether it is right, its probe's facets and its outcome bits, with indexes
    for the viewer's filters; pages and counts of a filter from it; a pairing of its units with
    another index's (`view_pair`: another run's units); one unit's stored detail."""

    conn: sqlite3.Connection
    #: the text whose matches temp.vq holds (None: none)
    _view_q: str | None = None

    def build_view_index(
        self,
        run: str | None,
        facets: Sequence[str],
        probe_facets: Iterable[tuple[str, Sequence[Any]]],
        *,
        reference: str | None,
        target: str | None,
        unread_flips: bool,
        item_facets: Sequence[str] = (),
        item_rows: Iterable[tuple[str, Sequence[Any]]] = (),
        baseline: str | None = None,
    ) -> int:
        """Index the units of `run` (None: every unit) in store order (model, unit id), with the
        items' `item_facets` values (from (item id, values) rows; every unit of the item has them)
        then the probes' `facets` values (from (probe id, values) rows), as the columns f0, f1, ...
        in that order; returns the number of units.

        A unit is right when its score is valid with value 1; its `score` is its valid score's value
        as text (`_SCORE_TEXT`); its `reason`, an unscored unit's reason (`_REASON`). Outcomes (`OUTCOME_BITS`): unread (invalid), truncated, unscored
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
            self._build_view_index(run, facets, probe_facets, reference, target, unread_flips, item_facets, item_rows)
            if baseline is not None:
                self._view_versus(baseline, unread_flips)
            return self._view_counts_table(len(item_facets) + len(facets))
        except sqlite3.OperationalError as e:
            # a store of an older layout is read through a migrated copy (Store.read_only): this is
            # a store this version does not know
            raise InputError(getattr(self, "path", "store"), None, None, f"cannot be indexed ({e})") from None

    def _build_view_index(
        self,
        run: str | None,
        facets: Sequence[str],
        probe_facets: Iterable[tuple[str, Sequence[Any]]],
        reference: str | None,
        target: str | None,
        unread_flips: bool,
        item_facets: Sequence[str],
        item_rows: Iterable[tuple[str, Sequence[Any]]],
    ) -> None:
        c = self.conn
        icols = [f"f{i}" for i in range(len(item_facets))]
        pcols = [f"f{len(icols) + i}" for i in range(len(facets))]
        fcols = icols + pcols
        c.executescript(
            "DROP TABLE IF EXISTS temp.vi; DROP TABLE IF EXISTS temp.vp; DROP TABLE IF EXISTS temp.vu; DROP TABLE IF EXISTS temp.vc; DROP TABLE IF EXISTS temp.vt; DROP TABLE IF EXISTS temp.vq;"
        )
        self._view_q = None
        self._view_facts("vi", "item_id", icols, item_rows)
        self._view_facts("vp", "probe_id", pcols, probe_facets)
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
                       (c.status = 'ok' AND s.status = 'valid' AND s.value >= 1), 0,
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
        if reference is not None:
            unread = f"vu.state IN {_ANSWERED}" if unread_flips else "vu.state = 'valid'"
            ref_wrong = f"r.state IN {_ANSWERED}" if unread_flips else "r.state = 'valid'"
            # the pairs the paired rates count: both answered (512); the reference right (1024)
            pair_bits = f"(CASE WHEN {ref_wrong} AND {unread} THEN 512 ELSE 0 END) | (CASE WHEN r.correct AND {unread} THEN 1024 ELSE 0 END)"
            tcol = pcols[list(facets).index(target)] if target in facets else None
            # a flip: 1, with 2 when to the target, with 128 when its reply was read
            to_target = f"(CASE WHEN vu.label = vu.{tcol} THEN 3 ELSE 1 END)" if tcol else "1"
            to_target += " | (CASE WHEN vu.state = 'valid' THEN 128 ELSE 0 END)"
            if tcol:  # a read flip to a label other than the target: 2048
                to_target += f" | (CASE WHEN vu.state = 'valid' AND vu.label IS NOT vu.{tcol} THEN 2048 ELSE 0 END)"
            c.execute(
                f"""UPDATE temp.vu SET flags = flags | COALESCE((SELECT (CASE
                        WHEN r.correct AND NOT vu.correct AND {unread} THEN {to_target}
                        WHEN {ref_wrong} AND NOT r.correct AND vu.correct THEN 4 ELSE 0 END) | {pair_bits}
                      FROM temp.vu r WHERE r.item_id = vu.item_id AND r.model = vu.model AND r.setting = vu.setting
                        AND r.epoch = vu.epoch AND r.condition = ?), 0)
                    WHERE condition != ?""",
                (reference, reference),
            )

    def _view_versus(self, baseline: str, unread_flips: bool) -> None:
        """The cross-setting outcome bits of the units under a setting other than `baseline`, read
        against their counterparts under it (see `build_view_index`)."""
        self.conn.execute(
            f"""UPDATE temp.vu SET flags = flags | COALESCE((SELECT {_versus_bits(unread_flips)}
                  FROM temp.vu r WHERE r.item_id = vu.item_id AND r.model = vu.model AND r.setting = ? AND r.epoch = vu.epoch
                    AND r.condition = vu.condition AND r.probe_id IS vu.probe_id), 0)
                WHERE setting != ?""",
            (baseline, baseline),
        )

    def view_counterparts(self, model: str, setting: str) -> list[tuple]:
        """The indexed units of `model` under `setting`, as the other side of a pairing
        (`view_pair`): (item_id, probe_id, condition, epoch, state, correct, flags)."""
        return self.conn.execute(
            "SELECT item_id, probe_id, condition, epoch, state, correct, flags FROM temp.vu WHERE setting = ? AND model = ?", (setting, model)
        ).fetchall()

    def view_pair(self, counterparts: Iterable[Sequence[Any]], *, model: str, setting: str | None, unread_flips: bool) -> int:
        """Pair the indexed units of `model` under `setting` (None: any) with `counterparts` (rows
        of `view_counterparts`, another index's: another run's units of one model and setting),
        each unit with the one of the same item, probe, condition and repeat, and keep their bits
        against them (`VERSUS_BITS`, read as against none: `build_view_index`) in temp.vx for
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

    def _view_counts_table(self, n_facets: int) -> int:
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

    def _view_facts(self, table: str, key: str, cols: Sequence[str], rows: Iterable[tuple[str, Sequence[Any]]]) -> None:
        """A temporary table of facts by id (an item's or a probe's facets as text)."""
        c = self.conn
        c.execute(f"CREATE TEMP TABLE {table} ({key} TEXT PRIMARY KEY{''.join(f', {f} TEXT' for f in cols)})")
        c.execute("BEGIN")
        c.executemany(
            f"INSERT OR REPLACE INTO temp.{table} VALUES ({', '.join('?' * (1 + len(cols)))})",
            ((rid, *(None if v is None else str(v) for v in values)) for rid, values in rows),
        )
        c.execute("COMMIT")

    def view_values(self, column: str) -> list[Any]:
        """The distinct values of an indexed column (model, setting, condition, f0, ...), sorted."""
        if column not in ("model", "setting", "condition", "score", "reason") and not (column.startswith("f") and column[1:].isdigit()):
            raise ValueError(f"not an indexed column: {column}")
        return [r[0] for r in self.conn.execute(f"SELECT DISTINCT {column} FROM temp.vu WHERE {column} IS NOT NULL ORDER BY 1")]

    def _view_search(self, flt: ViewFilter) -> None:
        """Put the matches of the filter's text in temp.vq, searched once: the last text's matches
        are kept, so its pages, counts and refinements do not search again."""
        if not flt.q or self._view_q == flt.q:
            return
        sql, args = flt.search()
        self.conn.execute("DROP TABLE IF EXISTS temp.vq")
        self.conn.execute("CREATE TEMP TABLE vq (n INTEGER PRIMARY KEY)")
        self.conn.execute(f"INSERT INTO temp.vq {sql}", args)
        self._view_q = flt.q

    def view_page(self, flt: ViewFilter, offset: int, limit: int, n_facets: int) -> list[tuple]:
        """One page of the units a filter keeps, in store order: rows of `VIEW_COLUMNS` then the facets."""
        self._view_search(flt)
        where, args = flt.where()
        cols = ", ".join([*(flt.flags if c == "flags" else f"v.{c}" for c in VIEW_COLUMNS), *(f"v.f{i}" for i in range(n_facets))])
        return self.conn.execute(f"SELECT {cols} FROM {flt.source} WHERE {where} ORDER BY v.n LIMIT ? OFFSET ?", [*args, int(limit), int(offset)]).fetchall()

    def view_counts(self, flt: ViewFilter, n_facets: int) -> list[tuple]:
        """The units a filter keeps, counted per (model, setting, condition, outcome bits, state,
        score, unscored reason, facets...): from the index's table of counts, or, for a text search, an item,
        facets selecting items or a pairing (`ViewFilter.paired`), by a scan of the units."""
        self._view_search(flt)
        where, args = flt.where()
        cols = ", ".join(["v.model", "v.setting", "v.condition", flt.flags, "v.state", "v.score", "v.reason", *(f"v.f{i}" for i in range(n_facets))])
        if flt.scans:
            if flt.paired:  # the outcome bits come from the pairing: counted by every column
                return self.conn.execute(f"SELECT {cols}, COUNT(*) FROM {flt.source} WHERE {where} GROUP BY {cols}", args).fetchall()
            # the units kept, counted by their group (an integer), then named by the group's row
            kept = f"SELECT v.g, COUNT(*) AS k FROM temp.vu v WHERE {where} GROUP BY v.g"
            return self.conn.execute(f"SELECT {cols}, t.k FROM ({kept}) t JOIN temp.vc v ON v.rowid = t.g", args).fetchall()
        return self.conn.execute(f"SELECT {cols}, SUM(v.n) FROM temp.vc v WHERE {where} GROUP BY {cols}", args).fetchall()

    def unit_detail(self, model: str, unit_id: str) -> UnitDetail | None:
        """What the store holds about one unit (None: no such unit)."""
        cur = self.conn.execute(
            """SELECT u.model, u.unit_id, u.item_id, u.probe_id, u.condition, u.setting, u.scoring, u.key, u.epoch, u.run,
                      r.messages, r.params FROM units u LEFT JOIN requests r ON r.key = u.key WHERE u.model = ? AND u.unit_id = ?""",
            (model, unit_id),
        )
        unit = _row_dict(cur)
        if unit is None:
            return None
        messages, params = _loads(unit.pop("messages")), _loads(unit.pop("params"))
        call = _row_dict(
            self.conn.execute(
                """SELECT status, permanent, text, finish_reason, prompt_tokens, completion_tokens, cost, latency_s, attempts, error,
                          waited_s, model FROM calls WHERE key = ?""",
                (unit["key"],),
            )
        )
        score = _row_dict(
            self.conn.execute("SELECT scorer, label, status, detail, value FROM scores WHERE key = ? AND scorer = ?", (unit["key"], unit["scoring"]))
        )
        if score is not None:
            score["detail"] = _loads(score["detail"])
        cur = self.conn.execute(
            """SELECT l.role, l.key, c.status, c.text, c.tool_calls, c.finish_reason, c.prompt_tokens, c.completion_tokens, c.cost,
                      c.latency_s, c.attempts, c.error, c.model FROM unit_calls l LEFT JOIN calls c ON c.key = l.key
                WHERE l.model = ? AND l.unit_id = ? ORDER BY l.role""",
            (model, unit_id),
        )
        cols = [d[0] for d in cur.description]
        linked = tuple({**dict(zip(cols, r)), "tool_calls": _loads(r[4])} for r in cur)
        return UnitDetail(unit, messages, params, call, score, linked)

    def view_units_of_item(self, item_id: str, n_facets: int) -> list[tuple]:
        """Every indexed unit of one item (all models, settings and conditions), as `view_page` rows."""
        cols = ", ".join([*(f"v.{c}" for c in VIEW_COLUMNS), *(f"v.f{i}" for i in range(n_facets))])
        return self.conn.execute(f"SELECT {cols} FROM temp.vu v WHERE v.item_id = ? ORDER BY v.n", (item_id,)).fetchall()

    def view_units_of_id(self, unit_id: str, n_facets: int) -> list[tuple]:
        """The indexed units of one unit id (one per model), as `view_page` rows."""
        cols = ", ".join([*(f"v.{c}" for c in VIEW_COLUMNS), *(f"v.f{i}" for i in range(n_facets))])
        return self.conn.execute(f"SELECT {cols} FROM temp.vu v WHERE v.unit_id = ? ORDER BY v.n", (unit_id,)).fetchall()


def _row_dict(cur: sqlite3.Cursor) -> dict[str, Any] | None:
    """The first row of a query as {column: value} (None: no row)."""
    row = cur.fetchone()
    return None if row is None else dict(zip((d[0] for d in cur.description), row))


def _loads(text: Any) -> Any:
    """A stored JSON column (None and unreadable text stay as they are)."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text
