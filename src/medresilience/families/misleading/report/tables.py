"""Tidy tables from results: one row per model x setting x stratum x metric, every rate with its
k, n, point estimate and 95% interval, every paired test with its p-value and the Holm-adjusted
p-value across the strata it was tested in. The HTML, the plots and the CSV / Parquet / Markdown
outputs are all drawn from these frames."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .... import stats
from ....models.names import ModelNames, RunModels, model_names
from ....report.parts import num
from ....report.tables import fmt_p, fmt_pct, markdown_table, usage_table, write_tables  # noqa: F401
from ....run.results import RateValue
from ..block import Accuracy, Attack, AttackSuccess, MisleadingBlock, Slice

STRATUM_KINDS = {"overall": "overall", "by_source": "source", "by_content_type": "content_type", "by_provenance": "provenance"}
STRATUM_TITLES = {"overall": "Overall", "source": "Source dataset", "content_type": "Content type", "provenance": "Provenance"}
SETTING_TITLES = {"none": "no mitigation"}
CONDITION_TITLES = {"clean": "Clean", "type1": "Type 1", "type2": "Type 2"}
METRIC_TITLES = {"accuracy": "accuracy", "asr": "ASR", "tasr": "TASR"}


@dataclass(frozen=True)
class ModelSetting:
    """One model in one setting (a named mitigation, or none) of one run."""

    run: str
    model: str  # its name in the views (model_names: "label [run]" where the label is ambiguous)
    label: str  # the model label in its run
    setting: str  # "none" or a mitigation's name
    block: dict[str, Any]  # as results.json holds it (the means across models read it)
    typed: MisleadingBlock  # the same, in its declared shape: every table reads this

    @property
    def name(self) -> str:
        """Row label in plots and tables: the model, plus the setting when it is a mitigation."""
        return self.model if self.setting == "none" else f"{self.model} ({self.setting})"


def model_settings(runs: Sequence[tuple[str, dict[str, Any]]], names: ModelNames | None = None) -> list[ModelSetting]:
    """Every (run, model, setting) of the given (run name, results) pairs, in run and result order,
    each model by its name among the runs shown together (`names`: the one rule of
    model_names; None: the rule over these runs)."""
    if names is None:
        names = model_names(RunModels(run, "", {label: "" for label in res.get("models", {})}) for run, res in runs)
    out = []
    for run, res in runs:
        for label, settings in res.get("models", {}).items():
            for setting in sorted(settings, key=lambda x: x != "none"):
                block = settings[setting]
                out.append(ModelSetting(run, names.name(run, label), label, setting, block, MisleadingBlock.model_validate(block)))
    return out


def strata(block: MisleadingBlock) -> Iterable[tuple[str, str, Slice]]:
    """(stratum kind, stratum, slice) for the overall slice and every stratum's."""
    yield "overall", "Overall", block.overall
    for kind, by in (("source", block.by_source), ("content_type", block.by_content_type), ("provenance", block.by_provenance)):
        for name, sub in by.items():
            yield kind, name, sub


def _rate_cols(r: RateValue | None) -> dict[str, int | float | None]:
    if r is None:
        return {"k": None, "n": None, "p": None, "lo": None, "hi": None}
    return {"k": r.k, "n": r.n, "p": r.p, "lo": r.lo, "hi": r.hi}


def _accuracy_row(base: dict[str, object], condition: str, acc: Accuracy) -> dict[str, object]:
    return {**base, "condition": condition, "metric": "accuracy", **_rate_cols(acc), "invalid": acc.invalid, "truncated": acc.truncated, "errors": acc.errors}


def _attack_rows(base: dict[str, object], condition: str, att: Attack) -> list[dict[str, object]]:
    """ASR (with its item-clustered interval and the unread replies among its flips), the ASR with
    unread probe replies left out, and TASR."""
    asr, read = att.asr, att.asr_read
    rows = [
        {
            **base,
            "condition": condition,
            "metric": "asr",
            **_rate_cols(asr),
            "cluster_lo": asr.cluster_lo,
            "cluster_hi": asr.cluster_hi,
            "invalid": asr.invalid_flips,
            "truncated": asr.truncated_flips,
        },
        {
            **base,
            "condition": condition,
            "metric": "asr_read",
            **_rate_cols(read),
            "cluster_lo": read.lo if read.interval else None,
            "cluster_hi": read.hi if read.interval else None,
        },
    ]
    if att.tasr is not None:
        rows.append({**base, "condition": condition, "metric": "tasr", **_rate_cols(att.tasr)})
    return rows


def holm_groups(df: pd.DataFrame, by: list[str], column: str = "p") -> pd.Series:
    """Holm-adjusted p-values of `column`, one family per group of `by` (stats.holm per group)."""
    out = pd.Series(np.nan, index=df.index, dtype="float64")
    if df.empty:
        return out
    for _, idx in df.groupby(by, sort=False).groups.items():
        out.loc[idx] = np.asarray(stats.holm(df.loc[idx, column].tolist()), dtype="float64")
    return out


def metrics_table(ms: Sequence[ModelSetting]) -> pd.DataFrame:
    """Every rate: run, model, setting, stratum, condition, metric, k, n, p, lo, hi (Wilson), and
    for ASR the item-clustered bootstrap interval and the invalid replies among the flips."""
    rows: list[dict[str, object]] = []
    for m in ms:
        for kind, name, b in strata(m.typed):
            base = {"run": m.run, "model": m.model, "setting": m.setting, "family": "misleading", "stratum_kind": kind, "stratum": name, "n_items": b.n_items}
            rows.append(_accuracy_row(base, "clean", b.clean_acc))
            for cond, acc, att in (("type1", b.type1_acc, b.type1), ("type2", b.type2_acc, b.type2)):
                if acc is not None:
                    rows.append(_accuracy_row(base, cond, acc))
                if att is not None:
                    rows += _attack_rows(base, cond, att)
    cols = [
        "run",
        "model",
        "setting",
        "family",
        "stratum_kind",
        "stratum",
        "condition",
        "metric",
        "k",
        "n",
        "p",
        "lo",
        "hi",
        "cluster_lo",
        "cluster_hi",
        "invalid",
        "truncated",
        "errors",
        "n_items",
    ]
    df = pd.DataFrame(rows, columns=cols)
    for c in ("k", "n", "invalid", "truncated", "errors", "n_items"):
        df[c] = df[c].astype("Int64")
    for c in ("p", "lo", "hi", "cluster_lo", "cluster_hi"):
        df[c] = df[c].astype("float64")
    return df


def tests_table(ms: Sequence[ModelSetting], alpha: float = 0.05) -> pd.DataFrame:
    """McNemar (clean vs stressed correctness on the same pairs; exact, or clustered where an item gives
    several pairs, as `test` says) per model, setting, stratum
    and condition, with Holm-adjusted p-values across the strata of one kind (all sources, all
    content types, all provenances) within one model, setting and condition."""
    rows: list[dict[str, object]] = []
    for m in ms:
        for kind, name, b in strata(m.typed):
            for cond, att in (("type1", b.type1), ("type2", b.type2)):
                if att is None:
                    continue
                mc = att.mcnemar
                rows.append(
                    {
                        "run": m.run,
                        "model": m.model,
                        "setting": m.setting,
                        "family": "misleading",
                        "stratum_kind": kind,
                        "stratum": name,
                        "condition": cond,
                        "test": mc.test,
                        "b": mc.b,
                        "c": mc.c,
                        "n": mc.n,
                        "p": mc.p,
                    }
                )
    cols = [
        "run",
        "model",
        "setting",
        "family",
        "stratum_kind",
        "stratum",
        "condition",
        "test",
        "b",
        "c",
        "n",
        "p",
        "p_holm",
        "holm_family_size",
        "significant",
    ]
    df = pd.DataFrame(rows, columns=cols[:-3])
    family = ["run", "model", "setting", "condition", "stratum_kind"]
    df["p"] = df["p"].astype("float64")
    df["p_holm"] = holm_groups(df, family)
    df["holm_family_size"] = df.groupby(family, sort=False)["p"].transform("count") if not df.empty else 0
    df["significant"] = df["p_holm"] < alpha
    for c in ("b", "c", "n", "holm_family_size"):
        df[c] = df[c].astype("Int64")
    return df[cols]


def flips_table(ms: Sequence[ModelSetting]) -> pd.DataFrame:
    """Where flips go, among clean-correct pairs: to the injected target (Type 1 only), to another
    wrong option ("elsewhere"), to an unreadable reply ("invalid"), or to a reply cut at its token
    budget before an answer ("truncated")."""
    rows = []
    for m in ms:
        for kind, name, b in strata(m.typed):
            for cond, att in (("type1", b.type1), ("type2", b.type2)):
                if att is None:
                    continue
                flips, pairs = att.asr.k, att.asr.n
                invalid, truncated = att.asr.invalid_flips, att.asr.truncated_flips
                to_target = (att.tasr.k if att.tasr is not None else 0) if cond == "type1" else None
                elsewhere = flips - invalid - truncated - (to_target or 0)
                row: dict[str, object] = {
                    "run": m.run,
                    "model": m.model,
                    "setting": m.setting,
                    "stratum_kind": kind,
                    "stratum": name,
                    "condition": cond,
                    "clean_correct_pairs": pairs,
                    "flips": flips,
                    "to_target": to_target,
                    "elsewhere": elsewhere,
                    "invalid": invalid,
                    "truncated": truncated,
                }
                for part, v in (("to_target", to_target), ("elsewhere", elsewhere), ("invalid", invalid), ("truncated", truncated)):
                    row[f"share_{part}"] = (v / flips) if (flips and v is not None) else None
                rows.append(row)
    df = pd.DataFrame(
        rows,
        columns=[
            "run",
            "model",
            "setting",
            "stratum_kind",
            "stratum",
            "condition",
            "clean_correct_pairs",
            "flips",
            "to_target",
            "elsewhere",
            "invalid",
            "truncated",
            "share_to_target",
            "share_elsewhere",
            "share_invalid",
            "share_truncated",
        ],
    )
    for c in ("clean_correct_pairs", "flips", "to_target", "elsewhere", "invalid", "truncated"):
        df[c] = df[c].astype("Int64")
    for c in ("share_to_target", "share_elsewhere", "share_invalid", "share_truncated"):
        df[c] = df[c].astype("float64")
    return df


# Resilience dimensions per family: (family, dimension, label, how to read it from an overall block).
PROFILE_DIMENSIONS: list[tuple[str, str, str]] = [
    ("baseline", "clean_accuracy", "Clean accuracy"),
    ("misleading", "resilience_type1", "Misleading context, Type 1: 1 - ASR"),
    ("misleading", "resilience_type2", "Misleading context, Type 2: 1 - ASR"),
]


PROFILE_COLUMNS = ["run", "model", "setting", "family", "dimension", "kind", "label", "value", "lo", "hi", "n"]


def profile_deltas(effects: pd.DataFrame, run_of: dict[str, str] | None = None) -> pd.DataFrame:
    """Profile rows for each mitigation's effect on resilience (kind "difference"): the change in
    1 - ASR under the setting, i.e. minus the paired ASR difference, with its item-clustered
    bootstrap interval."""
    rows = []
    for r in effects.to_dict("records"):
        diff, d_lo, d_hi = (num(r[k]) for k in ("diff", "lo", "hi"))
        if r["metric"] != "asr" or diff is None:
            continue
        setting, pair, cond = str(r.get("setting", "caution")), str(r["pair"]), str(r["condition"])
        rows.append(
            {
                "run": (run_of or {}).get(pair, ""),
                "model": pair,
                "setting": f"{setting} - none",
                "family": "misleading",
                "dimension": f"{setting}_delta_resilience_{cond}",
                "kind": "difference",
                "label": f"Effect of {setting} on {CONDITION_TITLES[cond]} resilience",
                "value": -diff,
                "lo": None if d_hi is None else -d_hi,
                "hi": None if d_lo is None else -d_lo,
                "n": r["n"],
            }
        )
    return _profile_frame(rows)


def _profile_frame(rows: Sequence[Mapping[str, object]]) -> pd.DataFrame:
    """Profile rows as a frame with stable column types (empty frames included)."""
    df = pd.DataFrame(rows, columns=PROFILE_COLUMNS)
    df["n"] = df["n"].astype("Int64")
    for c in ("value", "lo", "hi"):
        df[c] = df[c].astype("float64")
    return df


def profile_table(ms: Sequence[ModelSetting]) -> pd.DataFrame:
    """Per model and setting: clean accuracy next to a resilience score per stress family that has
    data (now: misleading context, 1 - ASR for Type 1 and Type 2; 1 means no clean-correct answer
    was flipped). Intervals are the Wilson intervals of the underlying rates."""
    rows = []
    for m in ms:
        ov = m.typed.overall
        for family, dim, label in PROFILE_DIMENSIONS:
            val: tuple[float | None, float | None, float | None, int] | None
            if dim == "clean_accuracy":
                r = ov.clean_acc
                val = (r.p, r.lo, r.hi, r.n)
            else:
                att = ov.type1 if dim.endswith("type1") else ov.type2
                a = None if att is None else att.asr
                val = None if a is None else (None if a.p is None else 1 - a.p, None if a.hi is None else 1 - a.hi, None if a.lo is None else 1 - a.lo, a.n)
            if val is None:
                continue
            rows.append(
                {
                    "run": m.run,
                    "model": m.model,
                    "setting": m.setting,
                    "family": family,
                    "dimension": dim,
                    "kind": "rate",
                    "label": label,
                    "value": val[0],
                    "lo": val[1],
                    "hi": val[2],
                    "n": val[3],
                }
            )
    return _profile_frame(rows)


def headline_rates(s: Slice) -> dict[str, RateValue | None]:
    """The headline rates of one slice, keyed clean_acc .. type2_asr, then the two ASRs with unread
    replies left out (type1_asr_read, type2_asr_read), as `headline.headline` orders them."""
    t1, t2 = s.type1, s.type2
    return {
        "clean_acc": s.clean_acc,
        "type1_acc": s.type1_acc,
        "type2_acc": s.type2_acc,
        "type1_asr": None if t1 is None else t1.asr,
        "type1_tasr": None if t1 is None else t1.tasr,
        "type2_asr": None if t2 is None else t2.asr,
        "type1_asr_read": None if t1 is None else t1.asr_read,
        "type2_asr_read": None if t2 is None else t2.asr_read,
    }


def headline_table(ms: Sequence[ModelSetting]) -> pd.DataFrame:
    """The headline numbers, one row per model and setting (wide: p, lo, hi, n per metric)."""

    rows = []
    for m in ms:
        ov = m.typed.overall
        row: dict[str, object] = {"run": m.run, "model": m.model, "setting": m.setting, "n_items": ov.n_items}
        for name, r in headline_rates(ov).items():
            for part in ("p", "lo", "hi", "n"):
                row[f"{name}_{part}"] = None if r is None else getattr(r, part)
            if name.endswith("_asr"):  # the item-clustered bootstrap interval (several probes per item)
                a = r if isinstance(r, AttackSuccess) else None
                row[f"{name}_cluster_lo"] = None if a is None else a.cluster_lo
                row[f"{name}_cluster_hi"] = None if a is None else a.cluster_hi
        row.update({f"units_{k}": v for k, v in m.typed.counts.model_dump().items()})
        rows.append(row)
    return pd.DataFrame(rows)
