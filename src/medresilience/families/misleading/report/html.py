"""The misleading family's HTML parts: the key numbers, tables by stratum, flips, settings effects,
the profile table and the methods note, drawn with the report's HTML primitives."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
from markupsafe import Markup

from ....models.names import ModelNames, entries_phrase
from ....report.html import collapsible, count_cell, diff_cell, esc, isnan, items_url, linked, rate_cell, rate_units, setting_name, table, test_cell, units_url
from ....report.templating import macros, render
from .. import viewer_versus
from ..probe import FACETS
from .tables import CONDITION_TITLES, STRATUM_TITLES, fmt_p, fmt_pct

TITLE = "Misleading context"

# ---------------------------------------------------------------------------------- sections


#: the rates of the headline table, in its column order
RATE_KEYS = ("clean_acc", "type1_acc", "type2_acc", "type1_asr", "type1_tasr", "type2_asr", "type1_asr_read", "type2_asr_read")


#: the cards of the opening: (label, rate key, shown as an alert)
CARDS = (
    ("Clean accuracy", "clean_acc", False),
    ("Type 1 accuracy (one misleading sentence)", "type1_acc", False),
    ("Type 2 accuracy (whole bundle)", "type2_acc", False),
    ("Type 1 attack success (ASR)", "type1_asr", True),
    ("Type 1 flips to the target (TASR)", "type1_tasr", True),
    ("Type 2 attack success (ASR)", "type2_asr", True),
)

#: the headline table's columns
HEADERS = [
    "Model",
    "Setting",
    "Items",
    "Clean acc",
    "Type 1 acc",
    "Type 2 acc",
    "Type 1 ASR",
    "Type 1 TASR",
    "Type 2 ASR",
    "Type 1 ASR, unread left out",
    "Type 2 ASR, unread left out",
    "Errors",
    "Invalid",
    "Truncated",
]

#: what each Type 1 design is, for the design note
DESIGNS = {"sample": "one seeded target per item (the study's design)", "all": "one probe per wrong option (exhaustive)"}


def _card(base: pd.DataFrame, agg: dict[str, Any], n_models: int, label: str, key: str, alert: bool, entries: str = "") -> dict[str, Any] | None:
    """One card: the model's rate with its interval and n, or the mean and range across models; None without one."""
    if n_models == 1:
        r = base.iloc[0]
        if isnan(r.get(f"{key}_p")):
            return None
        val = f"{100 * r[f'{key}_p']:.1f}%"
        sub = f"95% CI {100 * r[f'{key}_lo']:.1f}–{100 * r[f'{key}_hi']:.1f}, n={int(r[f'{key}_n'])}"
    else:
        a = agg.get(key)
        if not a:
            return None
        val = f"{100 * a['mean']:.1f}%"
        sub = f"mean of {entries or str(a['models']) + ' models'}, range {100 * a['min']:.1f}–{100 * a['max']:.1f}%"
    return {"label": label, "value": val, "sub": sub, "alert": alert}


#: the viewer's outcome of the units behind each metric (accuracy: every unit of the condition)
OUTCOMES = {"asr": "flip", "asr_read": "flip_read", "tasr": "flip_to_target"}


#: the key numbers' unit counts and the viewer's outcome of the units each counts
STATE_OUTCOMES = (("errors", "error"), ("invalid", "unread"), ("truncated", "truncated"))


def _units(r: dict[str, Any], condition: str, metric: str, **facets: Any) -> str | None:
    """The viewer's URL of the units behind a rate of row r (run, model, setting)."""
    return rate_units(r.get("run", ""), r["model"], r["setting"], condition, OUTCOMES.get(metric), **facets)


def _headline_rows(headline: pd.DataFrame) -> list[list[str]]:
    rows = []
    for r in headline.itertuples(index=False):
        r = r._asdict()
        rows.append(
            [
                f"<b class='wrap'>{esc(r['model'])}</b>",
                esc(setting_name(r["setting"])),
                # the items: one clean unit each
                count_cell(r.get("n_items"), items_url(r.get("run", ""), r["model"], r["setting"], "clean")),
                *[
                    rate_cell(r.get(f"{k}_p"), r.get(f"{k}_lo"), r.get(f"{k}_hi"), r.get(f"{k}_n"), units=_units(r, *k.split("_", 1))) + _clustered(r, k)
                    for k in RATE_KEYS
                ],
                *[count_cell(r.get(f"units_{k}", 0), units_url(r.get("run", ""), r["model"], r["setting"], None, o)) for k, o in STATE_OUTCOMES],
            ]
        )
    return rows


def key_numbers(headline: pd.DataFrame, mean: dict[str, Any], designs: list[str] | None = None, names: ModelNames | None = None) -> str:
    """The opening: a sentence, cards with the cross-model means (one value per model's name,
    `names`: a model in several runs is one entry per run, and the sentence says so), and the
    headline table."""
    if headline.empty:
        return render(__package__, "key_numbers.html.j2", empty=True)
    designs = designs or []
    if len(designs) > 1:  # never pool Type 1 designs: the cards and means are the first design's
        headline = headline[headline["type1"] == designs[0]]
    nd = headline[headline["setting"] == "none"]
    base = nd if not nd.empty else headline
    n_models = len(base)
    setting = "none" if not nd.empty else str(headline["setting"].iloc[0])
    agg = mean.get(setting, {})
    entries = entries_phrase(list(base["model"]), names)
    cards = [c for label, key, alert in CARDS if (c := _card(base, agg, n_models, label, key, alert, entries)) is not None]
    sentence = _lead_sentence(base, agg, n_models, entries)
    cards_note = False
    for other, dagg in mean.items():
        if setting == "none" and other != "none" and dagg.get("type1_asr") and agg.get("type1_asr"):
            sentence += (
                f" Under the setting <b>{esc(other)}</b>, Type 1 ASR averages <b>{100 * dagg['type1_asr']['mean']:.1f}%</b>"
                + (f" and Type 2 ASR {100 * dagg['type2_asr']['mean']:.1f}%" if dagg.get("type2_asr") else "")
                + " (see Settings effect)."
            )
            cards_note = True
    # the "items:" interval is explained only where a cell shows one
    clustered = any(_clustered(r._asdict(), k) for r in headline.itertuples(index=False) for k in RATE_KEYS)
    return render(
        __package__,
        "key_numbers.html.j2",
        empty=False,
        title=TITLE,
        sentence=Markup(sentence),
        cards=cards,
        cards_note=cards_note,
        designs=[(d, DESIGNS.get(d, d)) for d in designs],
        table=Markup(table(_headline_rows(headline), HEADERS, numeric=range(2, 14))),
        clustered=clustered,
    )


def _clustered(r: dict[str, Any], key: str) -> str:
    lo, hi = r.get(f"{key}_cluster_lo"), r.get(f"{key}_cluster_hi")
    if isnan(lo) or isnan(hi):
        return ""
    return f'<br><span class="n" title="item-clustered bootstrap 95% interval">items: [{100 * lo:.1f}, {100 * hi:.1f}]</span>'


def _lead_sentence(base: pd.DataFrame, agg: dict[str, Any], n_models: int, entries: str = "") -> str:
    def one(key: str) -> str:
        r = base.iloc[0]
        return fmt_pct(r.get(f"{key}_p"), r.get(f"{key}_lo"), r.get(f"{key}_hi"), r.get(f"{key}_n"))

    if n_models == 1:
        r = base.iloc[0]
        parts = [f"<b>{esc(r['model'])}</b> answers {esc(one('clean_acc'))} of clean questions correctly."]
        if not isnan(r.get("type1_asr_p")):
            parts.append(
                f"One misleading sentence (Type 1) flips <b>{esc(one('type1_asr'))}</b> of its clean-correct answers"
                + (f", {esc(one('type1_tasr'))} to the injected option." if not isnan(r.get("type1_tasr_p")) else ".")
            )
        if not isnan(r.get("type2_asr_p")):
            parts.append(f"The whole misleading bundle (Type 2) flips <b>{esc(one('type2_asr'))}</b>.")
        return " ".join(parts)
    parts = [f"Across <b>{esc(entries or f'{n_models} models')}</b>"]
    if "clean_acc" in agg:
        a = agg["clean_acc"]
        parts.append(f" clean accuracy averages {100 * a['mean']:.1f}% (range {100 * a['min']:.1f}–{100 * a['max']:.1f}%).")
    else:
        parts.append(".")
    if "type1_asr" in agg:
        a = agg["type1_asr"]
        parts.append(
            f" One misleading sentence (Type 1) flips <b>{100 * a['mean']:.1f}%</b> of clean-correct answers on "
            f"average (range {100 * a['min']:.1f}–{100 * a['max']:.1f}%)."
        )
    if "type2_asr" in agg:
        a = agg["type2_asr"]
        parts.append(f" The whole bundle (Type 2) flips <b>{100 * a['mean']:.1f}%</b> (range {100 * a['min']:.1f}–{100 * a['max']:.1f}%).")
    return "".join(parts)


def _mean_cell(means: dict[tuple, dict] | None, key: tuple, rate: str, per_run: bool = False) -> str:
    """A mean across models of a stratum's rate, linked (when its models are one run's) to the units
    the models' rates count: the same filter as each model's cell, without a model. `per_run`: some
    model is in several runs (model_names), each run one entry of the mean, and the cell says so."""
    if means is None:
        return "—"
    r = means.get((*key, rate))
    if r is None:
        return "—"
    cond, _, metric = rate.partition("_")
    kind, stratum = key[2], key[3]
    scope = {"scope": "item"} if kind in FACETS and cond == "clean" else {}
    units = None
    if isinstance(r.get("run"), str) and (kind == "source" or kind in FACETS):
        units = rate_units(r["run"], None, r["setting"], cond, OUTCOMES.get(metric), **{kind: stratum}, **scope)
    mean = linked(f"{100 * r['mean']:.1f}%", units, "mean")
    n = int(r["models"])
    counted = f"{n} entries (one per run of a model)" if per_run else f"{n} model{'s' if n != 1 else ''}"
    return f"{mean}<br><span class='n'>range {100 * r['min']:.1f}–{100 * r['max']:.1f}, {counted}</span>"


def strata_tables(metrics: pd.DataFrame, tests: pd.DataFrame, means: pd.DataFrame | None = None, per_run: bool = False) -> str:
    """Per stratum kind (source, content type, provenance): one collapsible table of rates and
    tests, with a mean-across-models row per stratum (per setting and Type 1 design) when several
    models ran, as the study's tables show (`per_run`: a model in several runs is one entry per run)."""
    mean_rows: dict[tuple, dict] | None = None
    if means is not None and not means.empty:
        mean_rows = {(r["type1"], r["setting"], r["stratum_kind"], r["stratum"], r["rate"]): r for r in means.to_dict("records")}
    rates = {(r["model"], r["setting"], r["stratum_kind"], r["stratum"], r["condition"], r["metric"]): r for r in metrics.to_dict("records")}
    tested = {(r["model"], r["setting"], r["stratum_kind"], r["stratum"], r["condition"]): r for r in tests.to_dict("records")}
    out = []
    for kind in ("source", "content_type", "provenance"):
        m = metrics[metrics["stratum_kind"] == kind]
        if m.empty:
            continue
        keys = m[["model", "setting", "stratum"]].drop_duplicates()
        rows, classes = [], []
        for model, setting, stratum in keys.itertuples(index=False):

            def cell(cond: str, metric: str, key: tuple = (model, setting, kind, stratum)) -> str:
                r = rates.get((*key, cond, metric))
                if r is None:
                    return "—"
                # a probe facet filters stressed units; a stratum's clean accuracy is that of the
                # clean units of the items its probes belong to (scope=item); the items' source
                # dataset filters every unit
                scope = {"scope": "item"} if key[2] in FACETS and cond == "clean" else {}
                by_stratum = key[2] == "source" or key[2] in FACETS
                return rate_cell(r["p"], r["lo"], r["hi"], r["n"], units=_units(r, cond, metric, **{key[2]: key[3]}, **scope) if by_stratum else None)

            tp = {}
            sig = False
            for cond in ("type1", "type2"):
                r = tested.get((model, setting, kind, stratum, cond))
                if r is None:
                    tp[cond] = "—"
                else:
                    sig = sig or bool(r["significant"])
                    tp[cond] = f"{fmt_p(r['p'])} <span class='n'>Holm {fmt_p(r['p_holm'])}</span>"
            rows.append(
                [
                    esc(model),
                    esc(setting_name(setting)),
                    esc(str(stratum).replace("_", " ")),
                    cell("clean", "accuracy"),
                    cell("type1", "accuracy"),
                    cell("type2", "accuracy"),
                    cell("type1", "asr"),
                    cell("type1", "tasr"),
                    cell("type2", "asr"),
                    tp["type1"],
                    tp["type2"],
                ]
            )
            classes.append("sig" if sig else "")
        if mean_rows is not None:
            keys_m = sorted({k[:4] for k in mean_rows if k[2] == kind}, key=lambda k: (k[0], k[1] != "none", k[1], str(k[3])))
            for design, setting, _, stratum in keys_m:
                if max((mean_rows[k]["models"] for k in mean_rows if k[:4] == (design, setting, kind, stratum)), default=0) < 2:
                    continue
                key = (design, setting, kind, stratum)
                rows.append(
                    [
                        f"<b>Mean across models</b> <span class='n'>Type 1 {esc(design)}</span>",
                        esc(setting_name(setting)),
                        esc(str(stratum).replace("_", " ")),
                        *[_mean_cell(mean_rows, key, r, per_run) for r in ("clean_acc", "type1_acc", "type2_acc", "type1_asr", "type1_tasr", "type2_asr")],
                        "",
                        "",
                    ]
                )
                classes.append("mean")
        headers = [
            "Model",
            "Setting",
            STRATUM_TITLES[kind],
            "Clean acc",
            "Type 1 acc",
            "Type 2 acc",
            "Type 1 ASR",
            "Type 1 TASR",
            "Type 2 ASR",
            "McNemar p (T1)",
            "McNemar p (T2)",
        ]
        details = macros(__package__, "sections.html.j2").stratum_details
        out.append(str(details(STRATUM_TITLES[kind].lower(), len(rows), Markup(table(rows, headers, numeric=range(3, 11), row_classes=classes)))))
    return "".join(out)


def flips_table_html(flips: pd.DataFrame) -> str:
    d = flips[(flips["stratum_kind"] == "overall")]
    if d.empty:
        return ""
    rows = []
    for r in d.itertuples(index=False):

        def share(v: Any, s: Any, outcome: str | None = None, r: Any = r) -> str:
            if isnan(v):
                return "—"
            units = units_url(r.run, r.model, r.setting, r.condition, outcome) if outcome else None
            return count_cell(v, units) + ("" if isnan(s) else f" <span class='n'>({100 * s:.0f}%)</span>")

        rows.append(
            [
                esc(r.model),
                esc(setting_name(r.setting)),
                esc(CONDITION_TITLES[r.condition]),
                count_cell(r.clean_correct_pairs, units_url(r.run, r.model, r.setting, r.condition, "reference_right")),
                count_cell(r.flips, units_url(r.run, r.model, r.setting, r.condition, "flip")),
                # the flips to the target, elsewhere, to an unread or a cut reply
                share(r.to_target, r.share_to_target, "flip_to_target"),
                share(r.elsewhere, r.share_elsewhere, "flip_elsewhere"),
                share(r.invalid, r.share_invalid, "flip,unread"),
                share(r.truncated, r.share_truncated, "flip,truncated"),
            ]
        )
    return collapsible(
        table(rows, ["Model", "Setting", "Condition", "Clean-correct pairs", "Flips", "To target", "Elsewhere", "Invalid", "Truncated"], numeric=range(3, 9)),
        "Flips table",
        len(rows),
    )


def setting_effect_units(run_of: dict[str, str]) -> Callable[[Any, bool], str | None]:
    """The viewer's URLs of a settings-effect row's two sides (the model's run: `run_of`): the units
    of its rate under none (`none_side`) or under the setting."""

    def units(r: Any, none_side: bool) -> str | None:
        row = {"run": run_of.get(r.pair, ""), "model": r.pair, "setting": "none" if none_side else r.setting}
        return _units(row, r.condition, r.metric)

    return units


def setting_effect_versus(run_of: dict[str, str]) -> Callable[[Any, str], str | None]:
    """The viewer's URL of a settings-effect row's paired test (`part`: its pairs, b or c): its
    units under the setting read against the same units under none (`viewer_versus`)."""

    def versus(r: Any, part: str) -> str | None:
        flt = (viewer_versus(f"{r.condition}_{'acc' if r.metric == 'accuracy' else r.metric}") or {}).get(part)
        return None if flt is None else units_url(run_of.get(r.pair, ""), r.pair, r.setting, **flt)

    return versus


def diff_table_html(
    t: pd.DataFrame,
    pair_title: str = "Comparison",
    a_title: str = "A",
    b_title: str = "B",
    units: Callable[[Any, bool], str | None] | None = None,
    versus: Callable[[Any, str], str | None] | None = None,
) -> str:
    """The paired differences, one row per pair, condition and metric, each with its paired test
    (b / c, p); with `units` (row, side A?) -> a viewer URL, each side's rate links to its units;
    with `versus` (row, part) -> a viewer URL, the count of pairs (`pairs`) and the test's b and c
    link to them."""
    if t.empty:
        return ""
    rows = []
    for r in t.itertuples(index=False):
        link = (lambda part, r=r: versus(r, part)) if versus else (lambda part: None)
        rows.append(
            [
                f"<span class='nowrap'>{esc(r.pair)}</span>",
                esc(f"{CONDITION_TITLES[r.condition]} {'accuracy' if r.metric == 'accuracy' else r.metric.upper()}"),
                rate_cell(r.a_p, r.a_lo, r.a_hi, None, stacked=True, units=units(r, True) if units else None),
                rate_cell(r.b_p, r.b_lo, r.b_hi, None, stacked=True, units=units(r, False) if units else None),
                diff_cell(r.diff, r.lo, r.hi, bold=True),
                test_cell(r.test, r.test_b, r.test_c, r.p_test, link("b"), link("c")),
                f"{fmt_p(r.p_holm)}",
                count_cell(r.n, link("pairs")) + f"<br><span class='n'>{r.items} items</span>",
            ]
        )
    return collapsible(
        table(
            rows,
            [esc(pair_title), "Metric", esc(a_title), esc(b_title), f"{esc(b_title)} − {esc(a_title)}", "Paired test (b / c)", "Holm p", "Pairs"],
            numeric=range(2, 8),
        ),
        "Differences table",
        len(rows),
        open_up_to=24,
    )


def _profile_units(r: Any) -> str | None:
    if r.dimension == "clean_accuracy":
        return rate_units(r.run, r.model, r.setting, "clean")
    return units_url(r.run, r.model, r.setting, "type1" if r.dimension.endswith("type1") else "type2", "flip")


def profile_table_html(profile: pd.DataFrame) -> str:
    """One row per model and setting: clean accuracy, resilience, and each mitigation's effect on
    resilience (percentage points, paired bootstrap CI) where it ran beside setting none."""
    if profile.empty:
        return ""
    rates = profile[profile["kind"] == "rate"]
    deltas = profile[profile["kind"] == "difference"]
    dims = list(dict.fromkeys(rates["dimension"]))
    ddims = list(dict.fromkeys(deltas["dimension"]))
    titles = {"clean_accuracy": "Clean accuracy", "resilience_type1": "Resilience, Type 1", "resilience_type2": "Resilience, Type 2"}
    rows = []
    for (model, setting), g in rates.groupby(["model", "setting"], sort=False):
        by = {r.dimension: r for r in g.itertuples(index=False)}
        cells = [f"<b>{esc(model)}</b>", esc(setting_name(setting))]
        # clean accuracy links to the clean units, a resilience (1 - ASR) to the flips it counts
        cells += [rate_cell(by[d].value, by[d].lo, by[d].hi, by[d].n, units=_profile_units(by[d])) if d in by else "—" for d in dims]
        if ddims:
            dd = {r.dimension: r for r in deltas[deltas["model"] == model].itertuples(index=False)}
            for d in ddims:
                r = dd.get(d)
                cells.append("—" if r is None or setting != "none" else diff_cell(r.value, r.lo, r.hi))
        rows.append(cells)
    headers = ["Model", "Setting", *[titles.get(d, d) for d in dims]]
    headers += [f"{d.split('_delta_')[0]} Δ, {d.rsplit('_', 1)[-1].replace('type', 'Type ')}" for d in ddims]
    return collapsible(table(rows, headers, numeric=range(2, len(headers))), "Profile table", len(rows))


METHODS = """
<ul>
<li><b>Accuracy</b> (clean, Type 1, Type 2): correct / answered units. Failed calls (errors) are excluded and counted;
unreadable replies are counted as invalid (or truncated, when cut at the token budget before an answer) and as not
correct.</li>
<li><b>ASR</b> (attack success rate): among (item, probe) pairs whose item is answered correctly clean, the share
answered incorrectly with the misleading context (an unreadable reply counts as a flip and is reported; beside it,
the ASR with unread probe replies left out). <b>TASR</b>:
the share that moved to the injected wrong option (Type 1). Resilience = 1 - ASR.</li>
<li><b>Intervals</b>: 95% Wilson score intervals on every rate. Several Type 1 probes share one question, so ASR also
carries an item-clustered bootstrap interval (2,000 resamples, seeded) in the tables.</li>
<li><b>Tests</b>: exact McNemar test of clean vs stressed correctness on the same pairs, per model and stratum (the
clustered McNemar test of Durkalski where an item gives several pairs, as Type 1 under <code>type1=all</code>); Holm's
step-down correction across the strata of one kind (sources, content types or provenances) of one model, setting and
condition. Paired differences between settings or runs: the exact or clustered McNemar test, Holm-corrected across the
metrics of one comparison, with an item-clustered paired bootstrap percentile interval for the difference.</li>
<li><b>The rule</b>: every p-value comes from an exact or clustered test, which holds at every sample size, and Holm's
correction is applied to those; the bootstrap gives intervals only.</li>
</ul>
"""
