"""The misleading family's key numbers as report parts: the lead sentence, the cards (one model's
rates, or the means across models), the Type 1 design note and the headline table, each rate
linked to the units behind it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ....models.names import ModelNames, entries_phrase
from ....report.html import items_url, rate_units, setting_name, units_url
from ....report.parts import Block, Card, Cards, Cell, Column, Heading, Paragraph, Table, count, num, rate, text, whole
from ....report.tables import fmt_pct

TITLE = "Misleading context"

#: a row of one of the section's frames (`DataFrame.to_dict("records")`)
Row = Mapping[Any, Any]
#: a mean across models of one rate: mean, min, max and how many models (`metrics.mean_across_models`)
Mean = Mapping[str, Any]

#: the rates of the headline table, in its column order
RATE_KEYS = ("clean_acc", "type1_acc", "type2_acc", "type1_asr", "type1_tasr", "type2_asr", "type1_asr_read", "type2_asr_read")
RATE_TITLES = (
    "Clean acc",
    "Type 1 acc",
    "Type 2 acc",
    "Type 1 ASR",
    "Type 1 TASR",
    "Type 2 ASR",
    "Type 1 ASR, unread left out",
    "Type 2 ASR, unread left out",
)

#: the cards of the opening: (label, rate key, shown as an alert)
CARDS = (
    ("Clean accuracy", "clean_acc", False),
    ("Type 1 accuracy (one misleading sentence)", "type1_acc", False),
    ("Type 2 accuracy (whole bundle)", "type2_acc", False),
    ("Type 1 attack success (ASR)", "type1_asr", True),
    ("Type 1 flips to the target (TASR)", "type1_tasr", True),
    ("Type 2 attack success (ASR)", "type2_asr", True),
)

#: what each Type 1 design is, for the design note
DESIGNS = {"sample": "one seeded target per item (the study's design)", "all": "one probe per wrong option (exhaustive)"}

#: the viewer's outcome of the units behind each metric (accuracy: every answered unit of the condition)
OUTCOMES = {"asr": "flip", "asr_read": "flip_read", "tasr": "flip_to_target"}

#: the key numbers' unit counts: (column, header, the viewer's outcome of the units each counts)
STATE_OUTCOMES = (("errors", "Errors", "error"), ("invalid", "Invalid", "unread"), ("truncated", "Truncated", "truncated"))

HEADLINE_NOTE = (
    "Rates with 95% Wilson intervals and n{clustered}. ASR: share of clean-correct (item, probe) pairs whose answer is no "
    "longer correct with the misleading context; TASR: share that moved to the injected wrong option. Errors (failed calls) "
    "are excluded from every rate and counted; unread replies (invalid: no readable answer; truncated: cut at the token "
    "budget before one) count as not correct, the study's rule; the ASR with unread replies left out stands beside it."
)
CLUSTERED_NOTE = '; "items:" is the item-clustered bootstrap interval of an ASR whose items give several pairs'


def units_of(r: Row, condition: str, metric: str, **facets: Any) -> str | None:
    """The viewer's URL of the units behind a rate of row r (run, model, setting)."""
    return rate_units(str(r.get("run") or ""), r["model"], r["setting"], condition, OUTCOMES.get(metric), **facets)


def linked_rate(p: object, lo: object, hi: object, n: object, href: str | None, metric: str, stacked: bool = True) -> Cell:
    """A rate linked to the units behind it: its k where an outcome names them (a flip), else its n."""
    fp, nn = num(p), whole(n)
    units = None if fp is None or nn is None else (round(fp * nn) if metric in OUTCOMES else nn)
    return rate(p, lo, hi, n, href, units, stacked)


def clustered(r: Row, key: str) -> str | None:
    """The item-clustered interval of rate `key` of row r ('items: [a, b]'), None without one."""
    lo, hi = num(r.get(f"{key}_cluster_lo")), num(r.get(f"{key}_cluster_hi"))
    return None if lo is None or hi is None else f"items: [{100 * lo:.1f}, {100 * hi:.1f}]"


def _rate_cell(r: Row, key: str) -> Cell:
    cond, _, metric = key.partition("_")
    cell = linked_rate(r.get(f"{key}_p"), r.get(f"{key}_lo"), r.get(f"{key}_hi"), r.get(f"{key}_n"), units_of(r, cond, metric), metric)
    items = clustered(r, key)
    if items is None or cell.value is None:
        return cell
    return Cell(cell.text, cell.value, cell.href, cell.units, cell.link_kind, note=(*cell.note, items), data=cell.data)


HEADLINE_COLUMNS = (
    Column("model", "Model"),
    Column("setting", "Setting"),
    Column("items", "Items", numeric=True),
    *(Column(k, t, numeric=True) for k, t in zip(RATE_KEYS, RATE_TITLES)),
    *(Column(k, t, numeric=True) for k, t, _ in STATE_OUTCOMES),
)


def headline_shown(headline: pd.DataFrame) -> Table:
    """One row per model and setting: its items (one clean unit each), every rate and the unit counts."""
    rows = []
    for r in headline.to_dict("records"):
        run = str(r.get("run") or "")
        rows.append(
            (
                text(r["model"], strong=True),
                Cell(setting_name(r["setting"]), r["setting"]),
                count(r.get("n_items"), items_url(run, r["model"], r["setting"], "clean")),
                *(_rate_cell(r, k) for k in RATE_KEYS),
                *(count(whole(r.get(f"units_{k}")) or 0, units_url(run, r["model"], r["setting"], None, o)) for k, _, o in STATE_OUTCOMES),
            )
        )
    return Table("misleading_headline_shown", HEADLINE_COLUMNS, tuple(rows))


def _pct(v: object) -> str:
    return f"{100 * float(v):.1f}"  # type: ignore[arg-type]  # a mean's number


def _card(base: pd.DataFrame, agg: Mapping[str, Mean], label: str, key: str, alert: bool, entries: str) -> Card | None:
    """One card: the model's rate with its interval and n, or the mean and range across models; None without one."""
    if len(base) == 1:
        r = base.iloc[0]
        p, lo, hi, n = (num(r.get(f"{key}_{x}")) for x in ("p", "lo", "hi", "n"))
        if p is None or lo is None or hi is None or n is None:
            return None
        return Card(label, f"{100 * p:.1f}%", f"95% CI {100 * lo:.1f}–{100 * hi:.1f}, n={int(n)}", alert)
    a = agg.get(key)
    if not a:
        return None
    return Card(label, f"{_pct(a['mean'])}%", f"mean of {entries or str(a['models']) + ' models'}, range {_pct(a['min'])}–{_pct(a['max'])}%", alert)


def _lead(base: pd.DataFrame, agg: Mapping[str, Mean], entries: str) -> str:
    """The lead sentence: one model's clean accuracy and what one sentence and the bundle flip, or the
    means across models."""
    if len(base) == 1:
        r = base.iloc[0]

        def one(key: str) -> str:
            return fmt_pct(num(r.get(f"{key}_p")), num(r.get(f"{key}_lo")), num(r.get(f"{key}_hi")), whole(r.get(f"{key}_n")))

        parts = [f"**{r['model']}** answers {one('clean_acc')} of clean questions correctly."]
        if num(r.get("type1_asr_p")) is not None:
            tasr = f", {one('type1_tasr')} to the injected option." if num(r.get("type1_tasr_p")) is not None else "."
            parts.append(f"One misleading sentence (Type 1) flips **{one('type1_asr')}** of its clean-correct answers{tasr}")
        if num(r.get("type2_asr_p")) is not None:
            parts.append(f"The whole misleading bundle (Type 2) flips **{one('type2_asr')}**.")
        return " ".join(parts)
    parts = [f"Across **{entries or f'{len(base)} models'}**"]
    if "clean_acc" in agg:
        a = agg["clean_acc"]
        parts.append(f" clean accuracy averages {_pct(a['mean'])}% (range {_pct(a['min'])}–{_pct(a['max'])}%).")
    else:
        parts.append(".")
    if "type1_asr" in agg:
        a = agg["type1_asr"]
        parts.append(
            f" One misleading sentence (Type 1) flips **{_pct(a['mean'])}%** of clean-correct answers on average (range {_pct(a['min'])}–{_pct(a['max'])}%)."
        )
    if "type2_asr" in agg:
        a = agg["type2_asr"]
        parts.append(f" The whole bundle (Type 2) flips **{_pct(a['mean'])}%** (range {_pct(a['min'])}–{_pct(a['max'])}%).")
    return "".join(parts)


def key_parts(headline: pd.DataFrame, mean: Mapping[str, Mapping[str, Mean]], designs: list[str], names: ModelNames | None = None) -> tuple[Block, ...]:
    """The opening: a sentence, cards with the cross-model means (one value per model's name,
    `names`: a model in several runs is one entry per run, and the sentence says so), the Type 1
    design and the headline table."""
    if headline.empty:
        return (Paragraph("No scored results in these runs yet.", "lead"),)
    shown = headline[headline["type1"] == designs[0]] if len(designs) > 1 else headline  # never pool Type 1 designs
    nd = shown[shown["setting"] == "none"]
    base = nd if not nd.empty else shown
    setting = "none" if not nd.empty else str(shown["setting"].iloc[0])
    agg = mean.get(setting, {})
    entries = entries_phrase(list(base["model"]), names)
    cards = tuple(c for label, key, alert in CARDS if (c := _card(base, agg, label, key, alert, entries)) is not None)
    sentence = _lead(base, agg, entries)
    cards_note = False
    for other, dagg in mean.items():
        if setting == "none" and other != "none" and dagg.get("type1_asr") and agg.get("type1_asr"):
            type2 = f" and Type 2 ASR {_pct(dagg['type2_asr']['mean'])}%" if dagg.get("type2_asr") else ""
            sentence += f" Under the setting **{other}**, Type 1 ASR averages **{_pct(dagg['type1_asr']['mean'])}%**{type2} (see Settings effect)."
            cards_note = True
    blocks: list[Block] = [Heading(TITLE), Paragraph(sentence, "lead"), Cards(cards)]
    if cards_note:
        blocks.append(Paragraph("Cards: without a mitigation (setting none)."))
    if designs:
        what = "; ".join(f"**{d}**: {DESIGNS.get(d, d)}" for d in designs)
        pooled = f". Runs of different designs are reported apart and never pooled; these numbers are the **{designs[0]}** runs'." if len(designs) > 1 else "."
        blocks.append(Paragraph(f"Type 1 design: {what}{pooled}"))
    # the "items:" interval is explained only where a cell shows one
    items = any(clustered(r, k) for r in shown.to_dict("records") for k in RATE_KEYS)
    blocks += [headline_shown(shown), Paragraph(HEADLINE_NOTE.format(clustered=CLUSTERED_NOTE if items else ""))]
    return tuple(blocks)
