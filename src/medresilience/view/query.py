"""Run directories opened for the viewer, read-only, and what it asks of them.

`open_runs` opens each run directory's store read-only (`Store.read_only`) and indexes the units
of its latest run (the units its results describe) in SQLite's temporary database (`ViewIndex`),
with each unit's state, its probe's facets and its outcomes (the family's `Outcomes`): a page and
the counts of a filter are then indexed queries, also on a store of a million units. Every read
goes through the store's readers and the index; nothing here writes.

Units under a setting other than `none` are also read against the same unit under `none` in
the same run (`VERSUS_OUTCOMES`: the pairs, gains and losses of a setting's paired test); a filter
naming another run (`versus`) reads them against that run's units instead (`paired`: two runs
compared, a setting against another run's none).

A unit of a family whose probe units are answered through a loop of calls of its own
(`Family.evaluation.loop`: an adaptive attack) carries that loop as the family shows it
(`ProbeLoop.view`: every turn, with what each used turn changed against the clean request marked),
and a page of units each one's loop in brief (`loop_brief`).

`UnitQuery` is one filter as the URL carries it (`run`, `model`, `setting`, `condition`,
`outcome`, `score`, `state`, `reason`, one parameter per facet, `scope`, `versus`,
`versus_model`, `versus_setting`, `q`, `page`); a bad value is a `QueryError` (HTTP 400)."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from ..family import Family, Outcomes, ProbeLoop, get
from ..mitigations import NONE
from ..models.names import RunModels, distinct_run_names, model_names, recorded_models
from ..records import CLEAN, Item
from ..run.frame import facet_names
from ..run.run_suite import find_run_suite
from ..runtime.errors import InputError, MedresError
from ..store import Store
from ..store.base import SqlValue
from .conversation import Turns, trajectory, turns
from .diff import marked_messages
from .index import OUTCOMES, VIEW_COLUMNS, VIEW_STATES, Outcome, ViewFilter, ViewIndex

PAGE_SIZE = 50
#: the outcome names, with what each means, in the order the viewer shows them
OUTCOME_TITLES = {
    "flip": "flip (the clean answer right, this one wrong)",
    "flip_read": "flip of a read reply (a flip, its reply read: unread replies left out)",
    "flip_to_target": "flip to the target (wrong, with the label the stress pushed toward)",
    "flip_elsewhere": "flip elsewhere (a read flip to a wrong label other than the target)",
    "recovered": "recovered (the clean answer wrong, this one right)",
    "unread": "unread (a reply with no readable answer)",
    "truncated": "truncated (cut at its token budget)",
    "unscored": "unscored (the scorer could not decide)",
    "error": "error (the call failed)",
    "extracted": "extracted (a label the extraction model read from the reply)",
    "paired": "paired (this one and its clean pair answered: the pairs a paired test counts)",
    "reference_right": "clean right (its clean pair right, this one answered: the pairs a flip rate counts)",
    "paired_none": "paired with none (this one and the same unit under none answered: the pairs a setting's paired test counts)",
    "better_than_none": "better than none (right here, wrong under none: both answered)",
    "worse_than_none": "worse than none (wrong here, right under none: both answered)",
    "flip_to_target_only_none": "flip to the target under none only (the same unit under none flipped to the target, this one not: both answered)",
    "flip_to_target_only_here": "flip to the target here only (this one flipped to the target, the same unit under none not: both answered)",
    "reference_right_none": "clean right under none (the same unit under none has its clean pair right and answered)",
}
#: outcomes that say which pairs a rate counts, not what happened to a unit: the static export
#: writes no list of them
PAIR_OUTCOMES = ("paired", "reference_right", "paired_none", "reference_right_none")
#: outcomes read against the same unit under `none` (a unit under another setting of the same run)
VERSUS_OUTCOMES = (
    "paired_none",
    "better_than_none",
    "worse_than_none",
    "reference_right_none",
    "flip_to_target_only_none",
    "flip_to_target_only_here",
)
#: outcomes read against the probe's target facet (the family's `Outcomes.target`)
TARGET_OUTCOMES = ("flip_to_target", "flip_elsewhere", "flip_to_target_only_none", "flip_to_target_only_here")
# the query parameters every run has; the others name facets
FIXED_PARAMS = (
    "run",
    "model",
    "setting",
    "condition",
    "outcome",
    "score",
    "state",
    "reason",
    "scope",
    "q",
    "page",
    "versus",
    "versus_model",
    "versus_setting",
)
#: what the facet filters select: units with the values (`unit`), or every unit of an item with a
#: unit that has them (`item`: the clean units of the items whose probes have a content type)
SCOPES = ("unit", "item")
#: item facts filtered like facets (the report's strata by source dataset)
ITEM_FACETS = ("source",)


class QueryError(MedresError):
    """A filter the viewer cannot apply (an unknown run, outcome or parameter, a bad page)."""


@dataclass
class RunView:
    """One run directory as the viewer serves it: its store opened read-only with the index of its
    latest run's units, its family (None: not registered here) and facets, and notes on what could
    not be read (a suite not found: no facets)."""

    index: int
    path: Path
    config: dict[str, Any]
    family: Family | None
    facets: tuple[str, ...]
    store: Store
    #: the index of its latest run's units, on the store's read-only connection
    unit_index: ViewIndex
    run_id: str | None
    units: int
    notes: list[str] = field(default_factory=list)
    values: dict[str, list[SqlValue]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: probe id -> the condition of the earlier unit its turn continues (the family's `follows`)
    follows: dict[str, str] = field(default_factory=dict)
    #: every run the viewer serves, this one among them (the other side of a pairing: `versus=`)
    peers: list[RunView] = field(default_factory=list, repr=False, compare=False)
    #: the pairing its index holds (`paired`), by what it paired
    pairing: tuple | None = field(default=None, repr=False, compare=False)
    #: item id -> its answer key as shown ("C. 126 mg/dL", or a free-text reference); empty when
    #: the run's suite was not found
    answer_keys: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    #: label -> the model's name over every run served (model_names: `label [run]` where the label
    #: is ambiguous among them, as a report over the same runs names it)
    model_names: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def model_name(self, label: object) -> str:
        return self.model_names.get(str(label), str(label))

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def outcomes(self) -> tuple[str, ...]:
        """The outcome names this run's family defines."""
        o = self.family.outcomes if self.family else Outcomes()
        settings = self.values.get("setting") or []
        # against none: a run with units under none and under another setting
        versus = NONE in settings and len(settings) > 1
        return tuple(
            n
            for n in OUTCOMES
            if not (n in ("flip", "flip_read", "recovered", "paired", "reference_right", "reference_right_none") and o.reference is None)
            and not (n in TARGET_OUTCOMES and o.target not in self.facets)
            and not (n in VERSUS_OUTCOMES and not versus)
        )

    @property
    def paired_outcomes(self) -> tuple[str, ...]:
        """The outcome names a filter pairing its units with another run's (`versus=`) adds: those
        read against a counterpart, as its family reads them."""
        o = self.family.outcomes if self.family else Outcomes()
        return tuple(
            n
            for n in VERSUS_OUTCOMES
            if not (n == "reference_right_none" and o.reference is None) and not (n in TARGET_OUTCOMES and o.target not in self.facets)
        )

    def outcomes_of(self, q: UnitQuery) -> tuple[str, ...]:
        """The outcome names of a filter of this run: with a pairing, those read against it too."""
        return self.outcomes if q.versus is None else tuple(dict.fromkeys((*self.outcomes, *self.paired_outcomes)))

    def close(self) -> None:
        self.store.close()


@dataclass(frozen=True)
class UnitQuery:
    """One filter of one run, as its URL says it: `model` None, every model of the run; `condition`,
    any of its conditions (comma-separated in the URL: a rate pooled over several; empty, any);
    `score`, a valid score's value as the metrics write it (-1, 0, 1); `state`, any of the units'
    states (`VIEW_STATES`); `reason`, an unscored unit's reason as the report tallies it;
    `versus`, another run (its index; with a `model`) whose units the outcomes against a counterpart (`paired_none`,
    `better_than_none`, ...) read, each unit against the one of the same item, probe, condition
    and repeat under `versus_model` (None: the unit's own model) and `versus_setting` (None: none)
    there, instead of the same unit under none in this run."""

    run: int = 0
    model: str | None = None
    setting: str | None = None
    condition: tuple[str, ...] = ()
    outcome: tuple[str, ...] = ()
    facets: tuple[tuple[str, str], ...] = ()
    q: str | None = None
    page: int = 1
    score: str | None = None
    state: tuple[str, ...] = ()
    scope: str = "unit"
    reason: str | None = None
    versus: int | None = None
    versus_model: str | None = None
    versus_setting: str | None = None

    def params(self, page: int | None = None, **changes: Any) -> list[tuple[str, str]]:
        """The query parameters of this filter (with changes), in the URL scheme's order."""
        me = replace(self, **changes) if changes else self
        out: list[tuple[str, str]] = [("run", str(me.run))]
        for k in ("model", "setting"):
            v = getattr(me, k)
            if v is not None:
                out.append((k, v))
        if me.condition:
            out.append(("condition", ",".join(me.condition)))
        out += [("outcome", o) for o in me.outcome]
        if me.score is not None:
            out.append(("score", me.score))
        if me.state:
            out.append(("state", ",".join(me.state)))
        if me.reason is not None:
            out.append(("reason", me.reason))
        out += list(me.facets)
        if me.versus is not None:
            out.append(("versus", str(me.versus)))
            out += [(k, v) for k in ("versus_model", "versus_setting") if (v := getattr(me, k)) is not None]
        if me.scope != "unit":
            out.append(("scope", me.scope))
        if me.q:
            out.append(("q", me.q))
        p = me.page if page is None else page
        if p != 1:
            out.append(("page", str(p)))
        return out

    def url(self, page: int | None = None, **changes: Any) -> str:
        return "/units?" + urlencode(self.params(page, **changes))

    def facet(self, name: str) -> str | None:
        return dict(self.facets).get(name)


#: the parameters that may be given several times or as a comma-separated list
LIST_PARAMS = ("outcome", "state", "condition")


def _split(params: Iterable[tuple[str, str]]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """(the parameters given once, each list parameter's values in order); a parameter given twice
    that is not a list is a QueryError."""
    single: dict[str, str] = {}
    lists: dict[str, list[str]] = {k: [] for k in LIST_PARAMS}
    for k, v in params:
        if k in lists:
            lists[k] += [x for x in v.split(",") if x]
        elif k in single:
            raise QueryError(f"parameter {k} given twice")
        else:
            single[k] = v
    return single, lists


def _facet_filters(single: dict[str, str], rv: RunView, run: int) -> list[tuple[str, str]]:
    """The facet filters among the parameters, in the order of the run's facets; a parameter that is
    neither a fixed one nor a facet of the run is a QueryError."""
    facets = []
    for k, v in single.items():
        if k in FIXED_PARAMS or v == "":
            continue
        if k not in rv.facets:
            raise QueryError(f"parameter {k!r}: not a filter of run {run} (facets: {', '.join(rv.facets) or 'none'})")
        facets.append((k, v))
    return sorted(facets, key=lambda kv: rv.facets.index(kv[0]))


def parse_query(params: Iterable[tuple[str, str]], runs: Sequence[RunView]) -> UnitQuery:
    """A UnitQuery from URL parameters; QueryError names the parameter that cannot be used."""
    single, lists = _split(params)
    outcome, state, condition = lists["outcome"], lists["state"], lists["condition"]
    try:
        run = int(single.get("run", "0"))
        page = int(single.get("page", "1"))
    except ValueError:
        raise QueryError("run and page must be whole numbers") from None
    if not 0 <= run < len(runs):
        raise QueryError(f"run {run}: the viewer serves runs 0..{len(runs) - 1}")
    if page < 1:
        raise QueryError("page must be 1 or more")
    rv = runs[run]
    # a page past the last a run's units can fill is refused (it also keeps the offset in SQLite's range)
    last = max(1, -(-rv.units // PAGE_SIZE))
    if page > last:
        raise QueryError(f"page {page}: run {run}'s units fill at most {last} page(s) of {PAGE_SIZE}")
    versus = _versus(single, runs, rv)
    known = rv.outcomes_of(UnitQuery(versus=versus[0]))
    for o in outcome:
        if o not in known:
            raise QueryError(f"outcome {o!r}: this run's family knows {', '.join(known)}")
    for x in state:
        if x not in VIEW_STATES:
            raise QueryError(f"state {x!r}: a unit's state is one of {', '.join(VIEW_STATES)}")
    scope = single.get("scope") or "unit"
    if scope not in SCOPES:
        raise QueryError(f"scope {scope!r}: the facets select {' or '.join(SCOPES)}")
    facets = _facet_filters(single, rv, run)
    blank = {k: (single.get(k) or None) for k in ("model", "setting", "q", "score", "reason")}
    return UnitQuery(
        run,
        blank["model"],
        blank["setting"],
        tuple(dict.fromkeys(condition)),
        tuple(dict.fromkeys(outcome)),
        tuple(facets),
        blank["q"],
        page,
        blank["score"],
        tuple(dict.fromkeys(state)),
        scope,
        blank["reason"],
        *versus,
    )


def _versus(single: dict[str, str], runs: Sequence[RunView], rv: RunView) -> tuple[int | None, str | None, str | None]:
    """The pairing a filter asks for (`versus`, `versus_model`, `versus_setting`), checked: another
    run the viewer serves, of the same family, with that model and setting, for the units of one
    model (`model`)."""
    if not single.get("versus"):
        if single.get("versus_model") or single.get("versus_setting"):
            raise QueryError("versus_model and versus_setting name the other side of a pairing: give versus=RUN too")
        return None, None, None
    try:
        j = int(single["versus"])
    except ValueError:
        raise QueryError("versus must be a run's number") from None
    if not 0 <= j < len(runs):
        raise QueryError(f"versus {j}: the viewer serves runs 0..{len(runs) - 1}")
    if not single.get("model"):
        # one model's units at a time: a pairing is made on first use, and stays under a second then
        raise QueryError("versus pairs one model's units with another run's: give model= too")
    other = runs[j]
    if rv.family is None or other.family is None or rv.family.name != other.family.name:
        mine, theirs = (x.family.name if x.family else "unknown" for x in (rv, other))
        raise QueryError(f"versus {j}: its units pair only with a run of the same family (run {rv.index} is {mine}, run {j} is {theirs})")
    model, setting = single.get("versus_model") or None, single.get("versus_setting") or None
    for key, v in (("model", model), ("setting", setting or NONE)):
        if v is not None and v not in other.values.get(key, []):
            raise QueryError(f"versus_{key} {v!r}: run {j} has {', '.join(map(str, other.values.get(key, []))) or 'none'}")
    return j, model, setting


def _read_config(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "run.json"
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise InputError(path, e.lineno, None, f"not valid JSON ({e.msg})") from None
    return data if isinstance(data, dict) else {}


def open_run(index: int, run_dir: Path | str) -> RunView:
    """Open one run directory read-only and index its latest run's units. InputError when it is
    not a run directory (no store.sqlite)."""
    d = Path(run_dir)
    if not (d / "store.sqlite").is_file():
        raise InputError(d, None, None, "not a run directory (no store.sqlite)")
    config = _read_config(d)
    notes: list[str] = []
    suite, _missing = find_run_suite(d, config)
    name = str(config.get("family") or (config.get("suite") or {}).get("family") or (suite.manifest.family if suite else ""))
    family = None
    try:
        family = get(name) if name else None
    except KeyError:
        notes.append(f"family {name!r} is not registered here: no outcomes against a reference")
    facets: tuple[str, ...] = ()
    item_facets: tuple[str, ...] = ()
    probe_rows: Iterable[tuple[str, Sequence[object]]] = ()
    item_rows: Iterable[tuple[str, Sequence[object]]] = ()
    if suite is None:
        notes.append("the run's suite was not found (or changed since the run): no facet filters")
    else:
        facets = tuple(facet_names(suite))
        # the items' source dataset, a stratum of every family's report, unless a probe facet names it
        item_facets = tuple(f for f in ITEM_FACETS if f not in facets)
        probe_rows = ((p.id, [p.facet_values().get(f) for f in facets]) for p in suite.iter_probes())
        item_rows = ((it.id, [getattr(it, f, None) for f in item_facets]) for it in suite.items.values())
    follows: dict[str, str] = {}
    keys = {} if suite is None else {it.id: k for it in suite.items.values() if (k := answer_key(it))}
    if suite is not None and family is not None:
        follows = {p.id: c for p in suite.iter_probes() if (c := family.evaluation.follows(p))}
    store = Store.read_only(d / "store.sqlite")
    try:
        run_id = store.latest_run()
        o = family.outcomes if family else Outcomes()
        unit_index = ViewIndex(store)
        n = unit_index.build(
            run_id,
            facets,
            probe_rows,
            reference=o.reference,
            target=o.target,
            unread_flips=o.unread_flips,
            item_facets=item_facets,
            item_rows=item_rows,
            baseline=NONE,
        )
        columns = (*item_facets, *facets)
        values = {c: unit_index.values(c) for c in ("model", "setting", "condition", "score", "reason")}
        values.update({f: unit_index.values(f"f{i}") for i, f in enumerate(columns)})
    except BaseException:
        store.close()
        raise
    return RunView(index, d, config, family, columns, store, unit_index, run_id, n, notes, values, follows=follows, answer_keys=keys)


def answer_key(item: Item) -> str | None:
    """What an item counts as right, as the viewer shows it: the gold option's letter and text, or
    its free-text reference; None for an item with neither (a patient question)."""
    if item.answer is not None and item.options:
        return f"{item.answer}. {item.options[item.answer]}" if item.answer in item.options else str(item.answer)
    return item.reference


def open_runs(run_dirs: Sequence[Path | str]) -> list[RunView]:
    """Open every run directory (the index of each is its place in the list); on a failure the ones
    opened are closed."""
    out: list[RunView] = []
    try:
        for i, d in enumerate(run_dirs):
            out.append(open_run(i, d))
    except BaseException:
        for rv in out:
            rv.close()
        raise
    names = model_names(
        RunModels(run, rv.family.name if rv.family else "", recorded_models(rv.config, [str(m) for m in rv.values.get("model") or []]))
        for rv, run in zip(out, distinct_run_names(rv.name for rv in out))
    )
    for rv, run in zip(out, distinct_run_names(rv.name for rv in out)):
        rv.peers = out
        rv.model_names = {str(m): names.name(run, str(m)) for m in rv.values.get("model") or []}
    return out


@contextlib.contextmanager
def paired(rv: RunView, q: UnitQuery) -> Iterator[None]:
    """Hold the lock of `rv` with its index holding the pairing `q` asks for (`versus`; none: the
    lock only): its units of the filter's model and setting, each against the unit of the same
    item, probe, condition and repeat of the other run under `versus_model` (None: its own model)
    and `versus_setting` (None: none), kept until another is asked for. The other run's units are
    read under its own lock, never while holding this one's."""
    key = (q.versus, q.versus_model, q.versus_setting or NONE, q.model, q.setting)
    while True:
        rows = None
        if q.versus is not None and rv.pairing != key:
            other = rv.peers[q.versus]
            with other.lock:
                rows = other.unit_index.counterparts(q.versus_model or str(q.model), q.versus_setting or NONE)
        with rv.lock:
            if q.versus is None or rv.pairing == key or rows is not None:
                if q.versus is not None and rv.pairing != key:
                    assert rows is not None  # read above for this pairing
                    unread = rv.family.outcomes.unread_flips if rv.family else True
                    rv.unit_index.pair(rows, model=str(q.model), setting=q.setting, unread_flips=unread)
                    rv.pairing = key
                yield
                return
        # another request paired the index otherwise since it was looked at: read again


def _filter(rv: RunView, q: UnitQuery, **over: Any) -> ViewFilter:
    return ViewFilter(
        model=q.model,
        setting=q.setting,
        condition=q.condition,
        facets=tuple((rv.facets.index(k), v) for k, v in q.facets),
        outcomes=q.outcome,
        q=q.q,
        score=q.score,
        states=q.state,
        by_item=q.scope == "item",
        reason=q.reason,
        paired=q.versus is not None,
        **over,
    )


def _outcomes_of(flags: int, names: Sequence[str]) -> list[str]:
    return [n for n in names if flags & Outcome[n]]


def _row(rv: RunView, row: Sequence[Any], names: Sequence[str] | None = None) -> dict[str, Any]:
    d = dict(zip(VIEW_COLUMNS, row))
    d.pop("n")
    d["run"] = rv.index
    d["outcomes"] = _outcomes_of(d.pop("flags"), rv.outcomes if names is None else names)
    d["facets"] = {f: row[len(VIEW_COLUMNS) + i] for i, f in enumerate(rv.facets)} if len(row) > len(VIEW_COLUMNS) else {}
    return d


def units_page(rv: RunView, q: UnitQuery, size: int = PAGE_SIZE) -> dict[str, Any]:
    """One page of the units a filter keeps, with the counts of everything it keeps: `total`,
    `pages`, `units` (run, model, unit_id, item_id, probe_id, condition, setting, epoch, state,
    label, value, outcomes, facets) and `counts` (by model, setting, condition, outcome, state,
    score, unscored reason, facet)."""
    flt = _filter(rv, q)
    with paired(rv, q):
        rows = rv.unit_index.page(flt, (q.page - 1) * size, size, len(rv.facets))
        grouped = rv.unit_index.counts(flt, len(rv.facets))
    counts: dict[str, dict[str, int]] = {
        "model": {},
        "setting": {},
        "condition": {},
        "outcome": dict.fromkeys(rv.outcomes_of(q), 0),
        "state": {},
        "score": {},
        "reason": {},
    }
    counts.update({f: {} for f in rv.facets})
    total = 0
    # the units per value of the outcome bits, named once per value (the groups are many, the values few)
    by_flags: dict[int, int] = {}
    for g in grouped:
        n = g[-1]
        total += n
        for key, v in zip(("model", "setting", "condition"), g[:3]):
            counts[key][v] = counts[key].get(v, 0) + n
        by_flags[g[3]] = by_flags.get(g[3], 0) + n
        for key, v in (("state", g[4]), ("score", g[5]), ("reason", g[6])):
            if v is not None:
                counts[key][v] = counts[key].get(v, 0) + n
        for i, f in enumerate(rv.facets):
            v = g[7 + i]
            if v is not None:
                counts[f][v] = counts[f].get(v, 0) + n
    names = rv.outcomes_of(q)
    for flags, n in by_flags.items():
        for o in _outcomes_of(flags, names):
            counts["outcome"][o] += n
    counts["state"] = {x: counts["state"][x] for x in VIEW_STATES if x in counts["state"]}
    counts["score"] = dict(sorted(counts["score"].items(), key=lambda kv: float(kv[0])))
    pages = max(1, -(-total // size))
    units = [_row(rv, r, names) for r in rows]
    loop = rv.family.evaluation.loop if rv.family else None
    if loop is not None:
        with rv.lock:
            for u in units:
                u["loop"] = loop_brief(loop, rv.store, u)
    return {"run": rv.index, "page": q.page, "pages": pages, "page_size": size, "total": total, "counts": counts, "units": units}


def loop_brief(loop: ProbeLoop, store: Store, unit: dict[str, Any]) -> dict[str, Any] | None:
    """A unit's loop in brief, as a page of units lists it (None: the unit holds none): each turn's
    number, outcome and label, the turn it flipped at, and the stress of that turn (else of the last
    turn shown to the answering model)."""
    d = store.unit_detail(unit["model"], unit["unit_id"])
    view = loop.view(d.linked) if d is not None else None
    if view is None:
        return None
    shown = [t for t in view.turns if t.used]
    last = next((t for t in shown if t.n == view.flipped_at), shown[-1] if shown else None)
    return {
        "turns": [{"n": t.n, "outcome": t.outcome, "label": t.label} for t in view.turns],
        "flipped_at": view.flipped_at,
        "proposal": None if last is None else last.proposal,
        "proposal_turn": None if last is None else last.n,
    }


def _evidence(rv: RunView, model: str, unit_id: str) -> dict[str, Any] | None:
    d = rv.store.unit_detail(model, unit_id)
    if d is None:
        return None
    score = d.score
    detail = score.get("detail") if score else None
    judged = str(d.unit.get("scoring", "")).startswith("judge:")
    # a judge's verdict names the call it was read from (runs made since the key was recorded)
    call_key = detail.get("call") if judged and isinstance(detail, dict) else None
    judge_reply = rv.store.ok_texts([call_key]).get(call_key) if isinstance(call_key, str) else None
    trail = trajectory(rv.store, d.linked, d.messages)
    loop = rv.family.evaluation.loop if rv.family else None
    attack = loop.view(d.linked) if loop is not None else None
    shown = set(trail["roles"]) if trail else set()
    shown |= set(attack.roles) if attack else set()
    return {
        "unit": d.unit,
        "messages": d.messages,
        "params": d.params,
        "call": d.call,
        "score": score,
        "reading": detail if isinstance(detail, dict) else ({} if detail is None else {"detail": detail}),
        "judged": judged,
        "judge_reply": judge_reply,
        "linked": [{"role": x["role"], "status": x["status"], "text": x["text"]} for x in d.linked if x["role"] not in shown],
        # the messages sent first (an agent's opening; every message otherwise)
        "opening": trail["opening"] if trail else len(d.messages or []),
        "trajectory": trail,
        "turns": None,
        # a loop family's unit: its loop turn by turn (`loop_turns` marks what each turn's stress changed)
        "loop": None if attack is None else asdict(attack),
    }


def loop_turns(rv: RunView, loop: dict[str, Any], clean: list[dict[str, Any]] | None) -> None:
    """Each turn of a unit's loop shown to the answering model gets `marked`: the messages of its
    request that differ from the clean request, with the stressed part marked (`diff`)."""
    keys = [t["request"] for t in loop["turns"] if t["request"]]
    sent = rv.store.request_messages(keys) if keys else {}
    for t in loop["turns"]:
        messages = sent.get(t["request"]) if t["request"] else None
        t["marked"] = [m for m in marked_messages(clean, messages) if m["changed"] or clean is None] if messages else []


def _turns(rv: RunView, r: dict[str, Any], siblings: Sequence[dict[str, Any]], ev: dict[str, Any]) -> Turns | None:
    """A second turn's two turns, with the turn-1 unit it continues (same item, model, setting and
    repeat, under the condition the family says it follows)."""
    cond = rv.follows[r["probe_id"]]
    earlier = next(
        (s for s in siblings if s["model"] == r["model"] and s["setting"] == r["setting"] and s["epoch"] == r["epoch"] and s["condition"] == cond),
        None,
    )
    d = rv.store.unit_detail(earlier["model"], earlier["unit_id"]) if earlier else None
    earlier_reply = (d.call or {}).get("text") if d and (d.call or {}).get("status") == "ok" else None
    return turns(ev["messages"], (ev["call"] or {}).get("text"), earlier, earlier_reply)


def unit_evidence(rv: RunView, unit_id: str) -> dict[str, Any] | None:
    """Everything about one unit id of a run, per model (None: no such unit): its evidence (the
    messages with the stressed part marked against the clean unit of the same model, setting and
    repeat; the reply; the score and how it was read; the call), its clean pair's evidence, its
    outcomes; `across`: the same probe and condition under every model and setting, with each
    reply; and its item's other units (every condition, model and setting)."""
    with rv.lock:
        rows = [_row(rv, r) for r in rv.unit_index.units_of_id(unit_id, len(rv.facets))]
        if not rows:
            return None
        item = rows[0]["item_id"]
        siblings = [_row(rv, r) for r in rv.unit_index.units_of_item(item, len(rv.facets))]
        ref = (rv.family.outcomes.reference if rv.family else None) or CLEAN
        per_model = []
        for r in rows:
            ev = _evidence(rv, r["model"], unit_id)
            pair = next(
                (
                    s
                    for s in siblings
                    if s["model"] == r["model"]
                    and s["setting"] == r["setting"]
                    and s["epoch"] == r["epoch"]
                    and s["condition"] == ref
                    and s["unit_id"] != unit_id
                ),
                None,
            )
            clean = _evidence(rv, pair["model"], pair["unit_id"]) if pair else None
            if ev is not None:
                ev["marked"] = marked_messages(clean["messages"][: clean["opening"]] if clean else None, (ev["messages"] or [])[: ev["opening"]])
                if r["probe_id"] in rv.follows:
                    ev["turns"] = _turns(rv, r, siblings, ev)
                if ev["loop"] is not None:
                    loop_turns(rv, ev["loop"], clean["messages"] if clean else None)
            per_model.append({"row": r, "evidence": ev, "clean_row": pair, "clean": clean})
        # the same probe and condition under every model and setting, each with its reply
        first = rows[0]
        across = []
        for s in siblings:
            if s["probe_id"] == first["probe_id"] and s["condition"] == first["condition"] and s["epoch"] == first["epoch"]:
                d = rv.store.unit_detail(s["model"], s["unit_id"])
                across.append({**s, "reply": (d.call or {}).get("text") if d else None})
    return {
        "run": rv.index,
        "unit_id": unit_id,
        "item_id": item,
        "answer_key": rv.answer_keys.get(item),
        "models": per_model,
        "across": across,
        "siblings": siblings,
        "facets": rows[0]["facets"],
    }


def close_all(runs: Sequence[RunView]) -> None:
    for rv in runs:
        rv.close()
