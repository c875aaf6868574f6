"""Tidy tables from results: one row per model x setting x stratum x metric, every rate with its
k, n, point estimate and 95% interval, every paired test with its p-value and the Holm-adjusted
p-value across the strata it was tested in. The HTML, the plots and the CSV / Parquet / Markdown
outputs are all drawn from these frames."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .... import stats
from ....models.names import ModelNames, RunModels, model_names
from ....report.tables import fmt_p, fmt_pct, markdown_table, usage_table, write_tables  # noqa: F401
from ....runtime.heap import cheap_gc

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
    block: dict[str, Any]

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
                out.append(ModelSetting(run, names.name(run, label), label, setting, settings[setting]))
    return out


def strata(block: dict[str, Any]) -> Iterable[tuple[str, str, dict[str, Any]]]:
    """(stratum kind, stratum, block) for the overall block and every stratum block."""
    yield "overall", "Overall", block.get("overall", {})
    for key, kind in STRATUM_KINDS.items():
        if key == "overall":
            continue
        for name, sub in (block.get(key) or {}).items():
            yield kind, name, sub


def _rate_cols(r: dict[str, Any] | None) -> dict[str, Any]:
    r = r or {}
    return {"k": r.get("k"), "n": r.get("n"), "p": r.get("p"), "lo": r.get("lo"), "hi": r.get("hi")}


def holm_groups(df: pd.DataFrame, by: list[str], column: str = "p") -> pd.Series:
    """Holm-adjusted p-values of `column`, one family per group of `by` (stats.holm per group)."""
    out = pd.Series(np.nan, index=df.index, dtype="float64")
    if df.empty:
        return out
    with cheap_gc():
        for _, idx in df.groupby(by, sort=False).groups.items():
            out.loc[idx] = stats.holm(df.loc[idx, column].tolist())
    return out


def metrics_table(ms: Sequence[ModelSetting]) -> pd.DataFrame:
    """Every rate: run, model, setting, stratum, condition, metric, k, n, p, lo, hi (Wilson), and
    for ASR the item-clustered bootstrap interval and the invalid replies among the flips."""
    rows: list[dict[str, Any]] = []
    for m in ms:
        for kind, name, b in strata(m.block):
            base = {
                "run": m.run,
                "model": m.model,
                "setting": m.setting,
                "family": "misleading",
                "stratum_kind": kind,
                "stratum": name,
                "n_items": b.get("n_items"),
            }
            acc = b.get("clean_acc")
            if acc:
                rows.append(
                    {
                        **base,
                        "condition": "clean",
                        "metric": "accuracy",
                        **_rate_cols(acc),
                        "invalid": acc.get("invalid"),
                        "truncated": acc.get("truncated"),
                        "errors": acc.get("errors"),
                    }
                )
            for cond in ("type1", "type2"):
                acc = b.get(f"{cond}_acc")
                if acc:
                    rows.append(
                        {
                            **base,
                            "condition": cond,
                            "metric": "accuracy",
                            **_rate_cols(acc),
                            "invalid": acc.get("invalid"),
                            "truncated": acc.get("truncated"),
                            "errors": acc.get("errors"),
                        }
                    )
                att = b.get(cond)
                if not att:
                    continue
                asr = att.get("asr") or {}
                rows.append(
                    {
                        **base,
                        "condition": cond,
                        "metric": "asr",
                        **_rate_cols(asr),
                        "cluster_lo": asr.get("cluster_lo"),
                        "cluster_hi": asr.get("cluster_hi"),
                        "invalid": asr.get("invalid_flips"),
                        "truncated": asr.get("truncated_flips"),
                    }
                )
                if att.get("asr_read"):  # unread probe replies left out
                    r = att["asr_read"]
                    rows.append(
                        {
                            **base,
                            "condition": cond,
                            "metric": "asr_read",
                            **_rate_cols(r),
                            "cluster_lo": r.get("lo") if r.get("interval") else None,
                            "cluster_hi": r.get("hi") if r.get("interval") else None,
                        }
                    )
                if att.get("tasr"):
                    rows.append({**base, "condition": cond, "metric": "tasr", **_rate_cols(att["tasr"])})
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
    rows: list[dict[str, Any]] = []
    for m in ms:
        for kind, name, b in strata(m.block):
            for cond in ("type1", "type2"):
                mc = (b.get(cond) or {}).get("mcnemar")
                if not mc:
                    continue
                rows.append(
                    {
                        "run": m.run,
                        "model": m.model,
                        "setting": m.setting,
                        "family": "misleading",
                        "stratum_kind": kind,
                        "stratum": name,
                        "condition": cond,
                        "test": mc.get("test", "mcnemar_exact"),
                        "b": mc.get("b"),
                        "c": mc.get("c"),
                        "n": mc.get("n"),
                        "p": mc.get("p"),
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
        for kind, name, b in strata(m.block):
            for cond in ("type1", "type2"):
                att = b.get(cond)
                if not att:
                    continue
                asr = att.get("asr") or {}
                flips, pairs = int(asr.get("k") or 0), int(asr.get("n") or 0)
                invalid = int(asr.get("invalid_flips") or 0)
                truncated = int(asr.get("truncated_flips") or 0)
                to_target = int((att.get("tasr") or {}).get("k") or 0) if cond == "type1" else None
                elsewhere = flips - invalid - truncated - (to_target or 0)
                row = {
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
                for part in ("to_target", "elsewhere", "invalid", "truncated"):
                    v = row[part]
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
    for r in effects.itertuples(index=False):
        if r.metric != "asr" or pd.isna(r.diff):
            continue
        lo = None if pd.isna(r.hi) else -r.hi
        hi = None if pd.isna(r.lo) else -r.lo
        setting = getattr(r, "setting", "caution")
        rows.append(
            {
                "run": (run_of or {}).get(r.pair, ""),
                "model": r.pair,
                "setting": f"{setting} - none",
                "family": "misleading",
                "dimension": f"{setting}_delta_resilience_{r.condition}",
                "kind": "difference",
                "label": f"Effect of {setting} on {CONDITION_TITLES[r.condition]} resilience",
                "value": -r.diff,
                "lo": lo,
                "hi": hi,
                "n": r.n,
            }
        )
    return _profile_frame(rows)


def _profile_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
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
        ov = m.block.get("overall", {})
        for family, dim, label in PROFILE_DIMENSIONS:
            if dim == "clean_accuracy":
                r = ov.get("clean_acc")
                val = r and (r.get("p"), r.get("lo"), r.get("hi"), r.get("n"))
            else:
                cond = "type1" if dim.endswith("type1") else "type2"
                r = (ov.get(cond) or {}).get("asr")
                val = r and (
                    None if r.get("p") is None else 1 - r["p"],
                    None if r.get("hi") is None else 1 - r["hi"],
                    None if r.get("lo") is None else 1 - r["lo"],
                    r.get("n"),
                )
            if not val:
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


def headline_table(ms: Sequence[ModelSetting]) -> pd.DataFrame:
    """The headline numbers, one row per model and setting (wide: p, lo, hi, n per metric)."""
    from ..headline import headline

    rows = []
    for m in ms:
        h = headline(m.block.get("overall", {}))
        row: dict[str, Any] = {"run": m.run, "model": m.model, "setting": m.setting, "n_items": m.block.get("overall", {}).get("n_items")}
        for name, r in h.items():
            r = r or {}
            for part in ("p", "lo", "hi", "n"):
                row[f"{name}_{part}"] = r.get(part)
            if name.endswith("_asr"):  # the item-clustered bootstrap interval (several probes per item)
                row[f"{name}_cluster_lo"] = r.get("cluster_lo")
                row[f"{name}_cluster_hi"] = r.get("cluster_hi")
        counts = m.block.get("counts", {})
        row.update({f"units_{k}": v for k, v in counts.items()})
        rows.append(row)
    return pd.DataFrame(rows)
