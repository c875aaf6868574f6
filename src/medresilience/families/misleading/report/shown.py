"""The misleading family's tables as report parts, written from its tidy frames (`tables`): rates
and tests per stratum (with the means across models), where flips go, the settings effect, the
resilience profile and the pooled tests; every count and rate linked to the units behind it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pandas as pd

from ....report.html import rate_units, setting_name, units_url
from ....report.parts import Cell, Column, Table, change, count, dash, num, p_value, paired_test, text, whole
from ....report.tables import fmt_p
from .. import viewer_versus
from ..probe import FACETS
from .key import OUTCOMES, Row, linked_rate, units_of
from .tables import CONDITION_TITLES, STRATUM_TITLES

RATES = (("clean", "accuracy"), ("type1", "accuracy"), ("type2", "accuracy"), ("type1", "asr"), ("type1", "tasr"), ("type2", "asr"))
MEAN_RATES = ("clean_acc", "type1_acc", "type2_acc", "type1_asr", "type1_tasr", "type2_asr")
STRATUM_NOTE = (
    "McNemar: exact test of clean vs stressed correctness on the same pairs; Holm: adjusted across the {kind} strata of one "
    "model, setting and condition. Highlighted rows: a Holm-adjusted p < 0.05."
)


def _setting(s: object) -> Cell:
    return Cell(setting_name(str(s)), str(s))


def _stratum_filters(kind: str, stratum: object, cond: str) -> dict[str, Any] | None:
    """The viewer's filters of a stratum's units (None: a stratum the viewer cannot select): a probe
    facet filters stressed units, and a stratum's clean accuracy is that of the clean units of the
    items its probes belong to (scope=item); the items' source dataset filters every unit."""
    if kind != "source" and kind not in FACETS:
        return None
    return {kind: stratum, **({"scope": "item"} if kind in FACETS and cond == "clean" else {})}


class _Strata:
    """The frames of the strata tables, indexed by their keys."""

    def __init__(self, metrics: pd.DataFrame, tests: pd.DataFrame, means: pd.DataFrame | None):
        self.rates = {(r["model"], r["setting"], r["stratum_kind"], r["stratum"], r["condition"], r["metric"]): r for r in metrics.to_dict("records")}
        self.tested = {(r["model"], r["setting"], r["stratum_kind"], r["stratum"], r["condition"]): r for r in tests.to_dict("records")}
        self.means: dict[tuple[Any, ...], Row] = {}
        if means is not None and not means.empty:
            self.means = {(r["type1"], r["setting"], r["stratum_kind"], r["stratum"], r["rate"]): r for r in means.to_dict("records")}
        self.metrics = metrics

    def rate(self, key: tuple[Any, ...], cond: str, metric: str) -> Cell:
        r = self.rates.get((*key, cond, metric))
        if r is None:
            return dash()
        flt = _stratum_filters(str(key[2]), key[3], cond)
        href = None if flt is None else units_of(r, cond, metric, **flt)
        return linked_rate(r["p"], r["lo"], r["hi"], r["n"], href, metric)

    def test(self, key: tuple[Any, ...], cond: str) -> tuple[Cell, bool]:
        r = self.tested.get((*key, cond))
        if r is None:
            return dash(), False
        return Cell(fmt_p(num(r["p"])), num(r["p"]), note=(f"Holm {fmt_p(num(r['p_holm']))}",), stacked=False, data={"p_holm": num(r["p_holm"])}), bool(
            r["significant"]
        )

    def mean(self, key: tuple[Any, ...], rate: str, per_run: bool) -> Cell:
        """A mean across models of a stratum's rate, linked (when its models are one run's) to the
        units the models' rates count: the same filter as each model's cell, without a model.
        `per_run`: some model is in several runs (model_names), each run one entry of the mean."""
        r = self.means.get((*key, rate))
        if r is None:
            return dash()
        cond, _, metric = rate.partition("_")
        metric = "accuracy" if metric == "acc" else metric
        kind, stratum = str(key[2]), key[3]
        href, units = None, None
        flt = _stratum_filters(kind, stratum, cond)
        if isinstance(r.get("run"), str) and flt is not None:
            href = rate_units(r["run"], None, r["setting"], cond, OUTCOMES.get(metric), **flt)
            units = self._units(r["run"], r["setting"], kind, stratum, cond, metric)
        n = int(r["models"])
        counted = ["entries", "(one per run of a model)"] if per_run else [f"model{'s' if n != 1 else ''}"]
        note = (f"range {100 * r['min']:.1f}–{100 * r['max']:.1f},", f"{n} {counted[0]}", *counted[1:])
        return Cell(
            f"{100 * r['mean']:.1f}%", float(r["mean"]), href, units if href else None, "mean", note=note, data={"min": r["min"], "max": r["max"], "models": n}
        )

    def _units(self, run: str, setting: str, kind: str, stratum: object, cond: str, metric: str) -> int:
        """How many units a mean's link names: the models' own cells' units, summed."""
        m = self.metrics
        rows = m[(m["run"] == run) & (m["setting"] == setting) & (m["stratum_kind"] == kind) & (m["stratum"] == stratum)]
        rows = rows[(rows["condition"] == cond) & (rows["metric"] == metric)]
        total = 0
        for r in rows.to_dict("records"):
            p, n = num(r["p"]), whole(r["n"])
            if p is not None and n is not None:
                total += round(p * n) if metric in OUTCOMES else n
        return total


STRATA_COLUMNS = (
    Column("model", "Model"),
    Column("setting", "Setting"),
    Column("stratum", "Stratum"),
    *(Column(f"{c}_{m}", f"{CONDITION_TITLES[c]} {'acc' if m == 'accuracy' else m.upper()}", numeric=True) for c, m in RATES),
    Column("p_type1", "McNemar p (T1)", numeric=True),
    Column("p_type2", "McNemar p (T2)", numeric=True),
)


def strata_tables(metrics: pd.DataFrame, tests: pd.DataFrame, means: pd.DataFrame | None = None, per_run: bool = False) -> list[Table]:
    """Per stratum kind (source, content type, provenance): one folded table of rates and tests,
    with a mean-across-models row per stratum (per setting and Type 1 design) when several models
    ran, as the study's tables show (`per_run`: a model in several runs is one entry per run)."""
    s = _Strata(metrics, tests, means)
    out = []
    for kind in ("source", "content_type", "provenance"):
        m = metrics[metrics["stratum_kind"] == kind]
        if m.empty:
            continue
        rows: list[tuple[Cell, ...]] = []
        classes: list[str] = []
        for model, setting, stratum in m[["model", "setting", "stratum"]].drop_duplicates().itertuples(index=False):
            key = (model, setting, kind, stratum)
            (t1, sig1), (t2, sig2) = s.test(key, "type1"), s.test(key, "type2")
            rows.append((text(model), _setting(setting), text(str(stratum).replace("_", " ")), *(s.rate(key, c, mt) for c, mt in RATES), t1, t2))
            classes.append("sig" if sig1 or sig2 else "")
        keys_m = sorted({k[:4] for k in s.means if k[2] == kind}, key=lambda k: (k[0], k[1] != "none", k[1], str(k[3])))
        for design, setting, _, stratum in keys_m:
            key = (design, setting, kind, stratum)
            if max((s.means[k]["models"] for k in s.means if k[:4] == key), default=0) < 2:
                continue
            label = Cell("Mean across models", "mean", strong=True, note=(f"Type 1 {design}",), stacked=False)
            rows.append((label, _setting(setting), text(str(stratum).replace("_", " ")), *(s.mean(key, r, per_run) for r in MEAN_RATES), text(""), text("")))
            classes.append("mean")
        title = STRATUM_TITLES[kind]
        columns = (STRATA_COLUMNS[0], STRATA_COLUMNS[1], Column("stratum", title), *STRATA_COLUMNS[3:])
        out.append(
            Table(
                f"misleading_{kind}_shown",
                columns,
                tuple(rows),
                tuple(classes),
                fold=f"By {title.lower()}: rates and tests",
                open_up_to=0,
                note=STRATUM_NOTE.format(kind=title.lower()),
            )
        )
    return out


FLIPS_COLUMNS = (
    Column("model", "Model"),
    Column("setting", "Setting"),
    Column("condition", "Condition"),
    Column("clean_correct_pairs", "Clean-correct pairs", numeric=True),
    Column("flips", "Flips", numeric=True),
    Column("to_target", "To target", numeric=True),
    Column("elsewhere", "Elsewhere", numeric=True),
    Column("invalid", "Invalid", numeric=True),
    Column("truncated", "Truncated", numeric=True),
)


def _share(r: Row, part: str, outcome: str) -> Cell:
    """The flips of one kind, linked to them, with their share of all flips beside."""
    c = count(r[part], units_url(r["run"], r["model"], r["setting"], r["condition"], outcome))
    share = num(r[f"share_{part}"])
    return c if c.value is None or share is None else replace(c, note=(f"({100 * share:.0f}%)",), stacked=False, data={"share": share})


def flips_shown(flips: pd.DataFrame) -> Table | None:
    """Where flips go, overall: to the injected target, elsewhere, to an unread or a cut reply."""
    d = flips[flips["stratum_kind"] == "overall"]
    if d.empty:
        return None
    rows = []
    for r in d.to_dict("records"):

        def url(outcome: str, r: Row = r) -> str | None:
            return units_url(r["run"], r["model"], r["setting"], r["condition"], outcome)

        rows.append(
            (
                text(r["model"]),
                _setting(r["setting"]),
                Cell(CONDITION_TITLES[r["condition"]], r["condition"]),
                count(r["clean_correct_pairs"], url("reference_right")),
                count(r["flips"], url("flip")),
                _share(r, "to_target", "flip_to_target"),
                _share(r, "elsewhere", "flip_elsewhere"),
                _share(r, "invalid", "flip,unread"),
                _share(r, "truncated", "flip,truncated"),
            )
        )
    return Table("misleading_flips_shown", FLIPS_COLUMNS, tuple(rows), fold="Flips table")


def _metric_title(condition: str, metric: str) -> str:
    return f"{CONDITION_TITLES[condition]} {'accuracy' if metric == 'accuracy' else metric.upper()}"


def effects_shown(t: pd.DataFrame, run_of: Mapping[str, str]) -> Table | None:
    """The paired differences of each setting against none, one row per model, condition and metric:
    each side's rate linked to its units (the model's run: `run_of`), the difference, the paired test
    (b / c linked to the pairs read against none) and its pairs."""
    if t.empty:
        return None
    rows = []
    for r in t.to_dict("records"):
        run = run_of.get(r["pair"], "")
        flt = viewer_versus(f"{r['condition']}_{'acc' if r['metric'] == 'accuracy' else r['metric']}") or {}

        def versus(part: str, r: Row = r, run: str = run, flt: Mapping[str, Mapping[str, str]] = flt) -> str | None:
            return None if part not in flt else units_url(run, r["pair"], r["setting"], **flt[part])

        sides = [
            linked_rate(
                r[f"{s}_p"], r[f"{s}_lo"], r[f"{s}_hi"], None, units_of({**r, "run": run, "model": r["pair"], "setting": st}, r["condition"], r["metric"]), ""
            )
            for s, st in (("a", "none"), ("b", r["setting"]))
        ]
        # a side's link names the units of its rate: its k of the pairs for a rate of an outcome, else the pairs
        n, outcome = whole(r["n"]), OUTCOMES.get(r["metric"])
        sides = [c if c.href is None or n is None or c.value is None else replace(c, units=round(float(c.value) * n) if outcome else n) for c in sides]
        pairs = count(r["n"], versus("pairs"))
        rows.append(
            (
                text(r["pair"]),
                Cell(_metric_title(r["condition"], r["metric"]), f"{r['condition']}_{r['metric']}"),
                *sides,
                change(r["diff"], r["lo"], r["hi"], strong=True),
                paired_test(r["test"], r["p_test"], r["test_b"], r["test_c"], versus("b"), versus("c")),
                p_value(r["p_holm"]),
                replace(pairs, note=(f"{r['items']} items",)),
            )
        )
    columns = (
        Column("pair", "Model"),
        Column("metric", "Metric"),
        Column("none", "None", numeric=True),
        Column("setting", "Setting", numeric=True),
        Column("diff", "Setting − None", numeric=True),
        Column("test", "Paired test (b / c)", numeric=True),
        Column("p_holm", "Holm p", numeric=True),
        Column("pairs", "Pairs", numeric=True),
    )
    return Table("misleading_setting_effects_shown", columns, tuple(rows), fold="Differences table", open_up_to=24)


PROFILE_TITLES = {"clean_accuracy": "Clean accuracy", "resilience_type1": "Resilience, Type 1", "resilience_type2": "Resilience, Type 2"}


def _profile_rate(r: Row) -> Cell:
    """Clean accuracy linked to the clean units, a resilience (1 - ASR) to the flips it counts."""
    if r["dimension"] == "clean_accuracy":
        href, units = rate_units(r["run"], r["model"], r["setting"], "clean"), whole(r["n"])
    else:
        cond = "type1" if str(r["dimension"]).endswith("type1") else "type2"
        href = units_url(r["run"], r["model"], r["setting"], cond, "flip")
        v, n = num(r["value"]), whole(r["n"])
        units = None if v is None or n is None else n - round(v * n)
    cell = linked_rate(r["value"], r["lo"], r["hi"], r["n"], href, "")
    return replace(cell, units=units if cell.href else None)


def profile_shown(profile: pd.DataFrame) -> Table | None:
    """One row per model and setting: clean accuracy, resilience, and each mitigation's effect on
    resilience (percentage points, paired bootstrap CI) where it ran beside setting none."""
    if profile.empty:
        return None
    rates = profile[profile["kind"] == "rate"]
    deltas = profile[profile["kind"] == "difference"]
    dims = list(dict.fromkeys(rates["dimension"]))
    ddims = list(dict.fromkeys(deltas["dimension"]))
    rows = []
    for (model, setting), g in rates.groupby(["model", "setting"], sort=False):
        by = {r["dimension"]: r for r in g.to_dict("records")}
        cells = [text(model, strong=True), _setting(setting)]
        cells += [_profile_rate(by[d]) if d in by else dash() for d in dims]
        dd = {r["dimension"]: r for r in deltas[deltas["model"] == model].to_dict("records")}
        for d in ddims:
            r = dd.get(d)
            cells.append(dash() if r is None or setting != "none" else change(r["value"], r["lo"], r["hi"]))
        rows.append(tuple(cells))
    columns = (
        Column("model", "Model"),
        Column("setting", "Setting"),
        *(Column(d, PROFILE_TITLES.get(d, d), numeric=True) for d in dims),
        *(Column(d, f"{d.split('_delta_')[0]} Δ, {d.rsplit('_', 1)[-1].replace('type', 'Type ')}", numeric=True) for d in ddims),
    )
    return Table("misleading_profile_shown", columns, tuple(rows), fold="Profile table")


TESTS_COLUMNS = (
    Column("model", "Model"),
    Column("setting", "Setting"),
    Column("condition", "Condition"),
    Column("b", "b (correct → wrong)", numeric=True),
    Column("c", "c (wrong → correct)", numeric=True),
    Column("n", "Pairs", numeric=True),
    Column("p", "p", numeric=True),
)


def tests_shown(tests: pd.DataFrame) -> Table:
    """The McNemar tests pooled over each model's pairs: b (the flips), c (the recoveries), the pairs."""
    rows = []
    for r in tests[tests["stratum_kind"] == "overall"].to_dict("records"):
        run, model, setting, cond = r["run"], r["model"], r["setting"], r["condition"]
        rows.append(
            (
                text(model),
                _setting(setting),
                Cell({"type1": "Type 1", "type2": "Type 2"}[cond], cond),
                count(r["b"], units_url(run, model, setting, cond, "flip")),
                count(r["c"], units_url(run, model, setting, cond, "recovered")),
                count(r["n"], units_url(run, model, setting, cond, "paired")),
                p_value(r["p"]),
            )
        )
    return Table("misleading_tests_shown", TESTS_COLUMNS, tuple(rows))
