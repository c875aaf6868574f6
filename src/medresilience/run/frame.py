"""The results frame: the store's units, calls and scores joined with the suite's item and probe
facts, one row per unit, as a pandas DataFrame. Every later number is computed from this frame.

Columns: model, setting, scoring, item_id, probe_id, condition, epoch (the unit's repeat, 0 unless
the run asked for more than one); the item facts source, subject
and gold (the gold letter, where the item has one); one column per facet the suite's family
declares; label and value (the score), status, correct; prompt and completion tokens and cost.

`status` is one of: valid (a readable answer), invalid (a reply with no readable answer),
truncated (a reply cut at its token budget before a readable answer), unscored (the scorer could
not decide, e.g. a judge outage), error (the call failed after retries; excluded from every rate
and counted), missing (not run). `correct`: a valid score of
value 1 (the gold letter, a judge's top verdict); for scores stored without a value (older
stores), a label equal to the item's gold letter.

Only the units of the store's latest run are read: a run's results describe what it planned.

Built for millions of rows in bounded memory. The units x calls x scores join is read in chunks
with a narrow query (`Store.joined_text`); each chunk becomes integer codes at once (one chunk of
rows held at a time); string columns end as pandas categoricals; item and probe facts are looked up
by code, not merged row by row. The categories come in the order the run declared them (its
models, settings and scoring, the family's conditions, all of which `condition` keeps), then any
other value in the order it is first read; labels are sorted."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Generator, Hashable, Iterable, Sequence
from contextlib import closing
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..records import CLEAN
from ..store import SMALL, CallCode, ScoreCode, Store
from ..suite import Suite

if TYPE_CHECKING:  # pragma: no cover
    from ..family import Family

BASE_COLUMNS = ["model", "setting", "scoring", "item_id", "probe_id", "condition", "epoch", "source", "subject", "gold"]
SCORE_COLUMNS = ["label", "value", "status", "correct", "prompt_tokens", "completion_tokens", "cost"]
STATUSES = ["valid", "invalid", "unscored", "error", "missing", "truncated"]
# each status by its index in STATUSES (a unit's status code in the frame)
_VALID, _INVALID, _UNSCORED, _ERROR, _MISSING, _TRUNCATED = range(len(STATUSES))


def status_codes(call: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Each unit's `status` (an index into STATUSES) from its call and score codes (`CallCode`,
    `ScoreCode`)."""
    status_code = np.full(len(call), _MISSING, dtype=np.int8)
    status_code[call == CallCode.ERROR] = _ERROR
    ok = (call == CallCode.OK) | (call == CallCode.CUT)
    status_code[ok & (score == ScoreCode.VALID)] = _VALID
    status_code[ok & (score != ScoreCode.VALID)] = _INVALID  # an invalid reply, or no score row: nothing in it to score
    status_code[ok & (score == ScoreCode.UNSCORED)] = _UNSCORED
    status_code[ok & (score == ScoreCode.TRUNCATED)] = _TRUNCATED
    # cut at its budget with nothing in it to score (no final answer to judge)
    status_code[(call == CallCode.CUT) & (score == ScoreCode.NONE)] = _TRUNCATED
    return status_code


class _Codes:
    """A growing vocabulary: strings -> stable integer codes across chunks (None -> -1)."""

    def __init__(self, initial: Sequence[Hashable] = ()):
        self.index: dict[Hashable, int] = {}
        for v in initial:
            self.index.setdefault(v, len(self.index))

    def remap(self, local: np.ndarray, uniques: Sequence[Hashable]) -> np.ndarray:
        """Chunk-local factor codes (and their uniques) -> codes of this vocabulary."""
        if len(uniques) == 0:
            return np.full(len(local), -1, dtype=np.int32)
        lookup = np.fromiter((self.index.setdefault(u, len(self.index)) for u in uniques), dtype=np.int32, count=len(uniques))
        return np.where(local >= 0, lookup[np.maximum(local, 0)], -1).astype(np.int32, copy=False)

    @property
    def categories(self) -> list[Hashable]:
        return list(self.index)


def _factorize(values: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray]:
    codes, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=True)
    return codes.astype(np.int32, copy=False), uniques


def _declared_order(store: Store, run: str | None, suite: Suite, family: Family | None = None) -> dict[str, list[Hashable]]:
    """The order of the small vocabularies a run declared (its models, settings and scoring, and
    [clean, *the family's conditions]); the columns a run does not say are left out."""
    from ..family import get

    order: dict[str, list[Hashable]] = {}
    try:
        order["condition"] = [CLEAN, *(family or get(suite.manifest.family)).probes.conditions]
    except KeyError:
        order["condition"] = [CLEAN]
    cfg = store.run_config(run) if run is not None else None
    if cfg is None:
        return order
    opts = cfg.options
    if cfg.model_labels:
        order["model"] = list(cfg.model_labels)
    if opts.get("settings"):
        order["setting"] = list(opts["settings"])
    if opts.get("scoring"):
        order["scoring"] = [opts["scoring"]]
    return order


def _read_text(store: Store, run: str | None, chunk: int) -> list[dict[str, Any]]:
    def convert(rows: list[tuple]) -> dict[str, Any]:
        n = len(rows)
        tokens = np.fromiter((r[9] for r in rows), dtype=np.int64, count=n)
        out: dict[str, np.ndarray | tuple[np.ndarray, np.ndarray]] = {
            name: _factorize([r[i] for r in rows]) for i, name in enumerate((*SMALL, "item_id", "probe_id"))
        }
        out.update(
            {
                "label": _factorize([r[8] for r in rows]),
                "call": np.fromiter((r[6] for r in rows), dtype=np.int8, count=n),
                "score": np.fromiter((r[7] for r in rows), dtype=np.int8, count=n),
                "prompt_tokens": tokens >> 32,
                "completion_tokens": tokens & 0xFFFFFFFF,
                "cost": np.array([r[10] for r in rows], dtype=np.float64),
                "value": np.array([r[11] for r in rows], dtype=np.float64),
                "epoch": np.fromiter((r[12] for r in rows), dtype=np.int32, count=n),
            }
        )
        return out

    return _converted(store.joined_text(run, chunk), convert)


def _converted(chunks: Generator[list[tuple], None, None], convert: Callable[[list[tuple]], dict[str, Any]]) -> list[dict[str, Any]]:
    """Each chunk of rows converted as it arrives (one chunk of rows held at a time); the store's
    cursor closed however the reading ends."""
    out = []
    with closing(chunks):
        for rows in chunks:
            out.append(convert(rows))
            del rows
    return out


def _categorical(codes: np.ndarray, categories: Sequence[Hashable]) -> pd.Categorical:
    cats = list(categories)
    if len(cats) == 0:
        return pd.Categorical.from_codes(np.full(len(codes), -1, dtype=np.int8), categories=pd.Index([], dtype=object))
    return pd.Categorical.from_codes(codes, categories=pd.Index(cats, dtype=object))


def _facts(records: Iterable[tuple[Hashable, tuple[Hashable, ...]]], index: dict[Hashable, int], width: int) -> list[tuple[np.ndarray, list[Hashable]]]:
    """Each fact of the keys in `index` (key -> code), from (key, fact values) records streamed
    once: (per-key value code, -1 where the value is None or the key not among the records;
    the values)."""
    raw = np.full((width, len(index)), -1, dtype=np.int32)
    seen: list[dict[Hashable, int]] = [{} for _ in range(width)]
    for key, values in records:
        k = index.get(key)
        if k is None:
            continue
        for f, v in enumerate(values):
            if v is not None:
                raw[f, k] = seen[f].setdefault(v, len(seen[f]))
    return [(raw[f], list(seen[f])) for f in range(width)]


def _sorted(values: pd.Categorical) -> pd.Categorical:
    """The same values with their categories sorted."""
    return values.reorder_categories(sorted(values.categories))


def _lookup(codes: np.ndarray, fact: tuple[np.ndarray, list[Hashable]]) -> pd.Categorical:
    """Map per-key values (`_facts`) onto rows, as a categorical (-1 -> missing) whose categories
    are in the order the keys first show them."""
    key_codes, values = fact
    present = key_codes[key_codes >= 0]
    uniq, first = np.unique(present, return_index=True)
    order = uniq[np.argsort(first, kind="stable")]
    remap = np.full(len(values) + 1, -1, dtype=np.int32)  # the last slot: -1 stays missing
    remap[order] = np.arange(len(order), dtype=np.int32)
    per_key = np.append(remap[key_codes], -1).astype(np.int32)  # index -1 (missing key) -> missing
    return _categorical(per_key[codes], [values[i] for i in order])


def _same(a: pd.Categorical, b: pd.Categorical) -> np.ndarray:
    """Element-wise a == b for two categoricals with different vocabularies (missing != anything)."""
    union = list(dict.fromkeys([*a.categories, *b.categories]))
    ca = a.set_categories(union).codes
    cb = b.set_categories(union).codes
    return (ca == cb) & (ca >= 0)


TEXT_COLUMNS = ("model", "condition", "setting", "scoring", "item_id", "probe_id", "label")
NUMERIC = ("call", "score", "prompt_tokens", "completion_tokens", "cost", "value", "epoch")


def epochs_of(df: pd.DataFrame) -> np.ndarray:
    """The frame's `epoch` column as an array; all 0 for a frame without one (a hand-made frame,
    or rows from before `--epochs`: one answer per unit)."""
    return df["epoch"].to_numpy() if "epoch" in df else np.zeros(len(df), dtype=np.int32)


def facet_names(suite: Suite, family: Family | None = None) -> list[str]:
    """The probe facets of a suite: those its family (`family`, else the suite's by name) declares,
    else those its probes carry."""
    from ..family import get

    try:
        return list((family or get(suite.manifest.family)).probes.facets)
    except KeyError:
        return list(dict.fromkeys(k for p in suite.iter_probes() for k in p.facet_values()))


LATEST = "latest"  # read the units of the store's latest run


def results_frame(store: Store, suite: Suite, chunk: int = 100_000, run: str | None = LATEST, family: Family | None = None) -> pd.DataFrame:
    """One row per unit of the store's latest run (or of `run`; None: every unit), with the suite's
    facts; the store is streamed in pieces of ``chunk`` rows. (Reading with several threads or
    loading the suite beside the read was tried and measured: both are slower, the per-row Python
    work contends for the GIL.)"""
    if run == LATEST:
        run = store.latest_run()
    parts = _read_text(store, run, chunk)
    facets = facet_names(suite, family)
    vocab = {name: _Codes(order) for name, order in _declared_order(store, run, suite, family).items()}
    vocab.update({name: _Codes() for name in TEXT_COLUMNS if name not in vocab})
    cols: dict[str, list[np.ndarray]] = {k: [] for k in (*TEXT_COLUMNS, *NUMERIC)}
    for part in parts:
        for name in TEXT_COLUMNS:
            cols[name].append(vocab[name].remap(*part[name]))
        for name in NUMERIC:
            cols[name].append(part[name])
    del parts
    dtypes = {
        "call": np.int8,
        "score": np.int8,
        "prompt_tokens": np.int64,
        "completion_tokens": np.int64,
        "cost": np.float64,
        "value": np.float64,
        "epoch": np.int32,
    }
    cat = {k: (np.concatenate(v) if v else np.array([], dtype=dtypes.get(k, np.int32))) for k, v in cols.items()}

    # item and probe facts, looked up by code; the suite's records streamed once each
    item_keys = vocab["item_id"].categories
    source, subject, gold = _facts(((it.id, (it.source, it.subject, it.answer)) for it in suite.iter_items()), vocab["item_id"].index, 3)
    probe_keys = vocab["probe_id"].categories
    facet_cols = (
        _facts(((p.id, tuple(p.facet_values().get(f) for f in facets)) for p in suite.iter_probes()), vocab["probe_id"].index, len(facets)) if facets else []
    )

    status_code = status_codes(cat["call"], cat["score"])

    icode, pcode = cat["item_id"], cat["probe_id"]
    data: dict[str, object] = {
        "model": _categorical(cat["model"], vocab["model"].categories).remove_unused_categories(),
        "setting": _categorical(cat["setting"], vocab["setting"].categories).remove_unused_categories(),
        "scoring": _categorical(cat["scoring"], vocab["scoring"].categories).remove_unused_categories(),
        "item_id": _categorical(icode, item_keys),
        "probe_id": _categorical(pcode, probe_keys),
        "condition": _categorical(cat["condition"], vocab["condition"].categories),
        "epoch": cat["epoch"],
        "source": _lookup(icode, source),
        "subject": _lookup(icode, subject),
        "gold": _lookup(icode, gold),
    }
    for name, values in zip(facets, facet_cols):
        data[name] = _lookup(pcode, values)
    data.update(
        {
            "label": _sorted(_categorical(cat["label"], vocab["label"].categories).remove_unused_categories()),
            "value": cat["value"],
            "status": _categorical(status_code, STATUSES),
            "prompt_tokens": cat["prompt_tokens"],
            "completion_tokens": cat["completion_tokens"],
            "cost": cat["cost"],
        }
    )
    df = pd.DataFrame(data)
    valid = status_code == _VALID
    has_value = ~np.isnan(cat["value"])
    by_value = np.nan_to_num(cat["value"], nan=0.0) >= 1.0
    by_letter = _same(df["label"].array, df["gold"].array)  # stores written before scores had values
    df["correct"] = valid & np.where(has_value, by_value, by_letter)
    return df[[*BASE_COLUMNS, *facets, *SCORE_COLUMNS]]


#: (the frame, its family's name, its metrics) of the frame last measured (`frame_metrics`)
_LAST_METRICS: list[tuple[weakref.ref, str, dict[str, Any]]] = []


def frame_metrics(family: Family, df: pd.DataFrame) -> dict[str, Any]:
    """`family.metrics(df)`, computed once for the frame last measured: `medres eval`'s results and
    then its report read the same frame. The dict is shared: a caller adding to it copies it first."""
    if _LAST_METRICS:
        ref, name, metrics = _LAST_METRICS[0]
        if ref() is df and name == family.name:
            return metrics
    metrics = family.measures.metrics(df)
    _LAST_METRICS[:] = [(weakref.ref(df), family.name, metrics)]
    return metrics


def with_loop_measures(family: Family, metrics: dict[str, Any], loop: dict[str, Any] | None) -> dict[str, Any]:
    """`metrics` with the measures a family's probe loop adds to each model and setting's block from
    the run's `loop` block (`ProbeLoop.measures`); a copy, the shared dict untouched."""
    if family.evaluation.loop is None or not loop:
        return metrics
    added = family.evaluation.loop.measures(loop)
    models = {m: {st: {**block, **added.get(m, {}).get(st, {})} for st, block in by_setting.items()} for m, by_setting in metrics.get("models", {}).items()}
    return {**metrics, "models": models}


def metrics_with_loop(family: Family, df: pd.DataFrame, store: Store) -> dict[str, Any]:
    """The family's metrics of the frame with its probe loop's measures, and the loop's record of the
    store's latest run as `loop` (a family with no probe loop: its metrics alone); a new dict."""
    loop = None if family.evaluation.loop is None else family.evaluation.loop.record(store)
    res = dict(with_loop_measures(family, frame_metrics(family, df), loop))
    if loop is not None:
        res["loop"] = loop
    return res
