"""`build_report(run_dirs)`: read one or more run directories, recompute their numbers from the
store, and write one self-contained HTML report plus Markdown, CSV and Parquet tables.

Layout of the output directory (default: RUN_DIR/report for one run)::

    report.html           the report (inline CSS and SVG; opens with the headline numbers)
    report.md             the same key numbers and tables as Markdown
    tables/NAME.{csv,parquet,md}   headline, metrics, tests, flips, profile, usage[, defense]

Each stress family is a section that appears only when a run has its data (today: misleading
context). Secrets never reach the output: run.json holds none, endpoint credentials are masked,
and as a last guard the value of every API-key variable named by a model is scrubbed."""

from __future__ import annotations

import datetime as _dt
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .. import __version__
from ..metrics import mean_across_models
from ..records import atomic_write
from . import html as H
from . import plots
from .compare import Comparison, CompareResult, defense_effects
from .rundir import RunData, load_run, redact_url
from .tables import (
    ModelSetting,
    flips_table,
    headline_table,
    markdown_table,
    metrics_table,
    model_settings,
    profile_deltas,
    profile_table,
    tests_table,
    usage_table,
    write_tables,
)

#: Families the toolkit knows, in report order; a family's section appears only with data.
FAMILIES = {
    "misleading": "Misleading context",
    "presupposition": "False presuppositions",
    "noise": "Clinical noise",
}


@dataclass
class ReportResult:
    """What build_report wrote: paths, the headline table, and where the time went."""

    out_dir: Path
    html: Path
    markdown: Path
    tables: dict[str, dict[str, Path]]
    headline: pd.DataFrame
    families: list[str]
    runs: list[str]
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)


def default_out_dir(run_dirs: Sequence[Path]) -> Path:
    if len(run_dirs) == 1:
        return run_dirs[0] / "report"
    names = "+".join(p.resolve().name for p in run_dirs)
    return run_dirs[0].resolve().parent / f"report-{names}"[:120]


def _secrets(runs: Sequence[RunData]) -> list[str]:
    """Values of the API-key variables the runs name (scrubbed from every output as a last guard)."""
    vals = set()
    for r in runs:
        for m in (r.config or {}).get("models", []):
            var = m.get("api_key_env")
            v = os.environ.get(var) if var else None
            if v and len(v) >= 4:
                vals.add(v)
    return sorted(vals, key=len, reverse=True)


def _scrub(text: str, secrets: Sequence[str]) -> str:
    for s in secrets:
        text = text.replace(s, "[redacted]")
    return text


def _unique_names(runs: list[RunData]) -> None:
    seen: dict[str, int] = {}
    for r in runs:
        if r.name in seen:
            seen[r.name] += 1
            r.name = f"{r.name}#{seen[r.name]}"
        else:
            seen[r.name] = 1


def build_report(run_dirs: Sequence[Path | str] | Path | str, out_dir: Path | str | None = None, title: str | None = None) -> ReportResult:
    """Write the report of one or more run directories; return what was written.

    Several run directories make one report (each model labelled by its run where two runs share a
    label). Raises InputError (a MedresError) for something that is not a run directory."""
    t_all = time.perf_counter()
    if isinstance(run_dirs, (str, Path)):
        run_dirs = [run_dirs]
    dirs = [Path(d) for d in run_dirs]
    if not dirs:
        raise ValueError("build_report needs at least one run directory")
    out = Path(out_dir) if out_dir is not None else default_out_dir(dirs)
    timings: dict[str, float] = {}

    t0 = time.perf_counter()
    runs = [load_run(d) for d in dirs]
    _unique_names(runs)
    for r in runs:
        for k, v in r.timings.items():
            timings[k] = timings.get(k, 0.0) + v
    timings["load"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    pairs = [(r.name, r.results) for r in runs]
    ms = model_settings(pairs)
    tables: dict[str, pd.DataFrame] = {
        "headline": headline_table(ms),
        "metrics": metrics_table(ms),
        "tests": tests_table(ms),
        "flips": flips_table(ms),
        "profile": profile_table(ms),
        "usage": usage_table(pairs),
    }
    defense: list[Comparison] = []
    for r in runs:
        if r.frame is not None:
            defense += defense_effects(r.name, r.frame)
    if defense:
        tables["defense"] = pd.concat([c.table for c in defense], ignore_index=True)
        run_of = {c.table["pair"].iloc[0]: c.run for c in defense if len(c.table)}
        deltas = profile_deltas(tables["defense"], run_of)
        if not deltas.empty:
            tables["profile"] = pd.concat([tables["profile"], deltas], ignore_index=True)
    merged_models = {m.model: {} for m in ms}
    for m in ms:
        merged_models[m.model][m.setting] = m.block
    mean = mean_across_models(merged_models)
    timings["tables"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    figs = _figures(tables)
    timings["plots"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    families = [f for f in FAMILIES if any(f in r.families for r in runs)]
    notes = [f"{r.name}: {n}" for r in runs for n in r.notes]
    secrets = _secrets(runs)
    page = _page(runs, ms, tables, figs, mean, families, notes, title)
    md = _markdown(runs, tables, mean, families, notes, title)
    out.mkdir(parents=True, exist_ok=True)
    with atomic_write(out / "report.html") as fh:
        fh.write(_scrub(page, secrets))
    with atomic_write(out / "report.md") as fh:
        fh.write(_scrub(md, secrets))
    table_paths = write_tables(tables, out / "tables")
    timings["write"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - t_all
    return ReportResult(out, out / "report.html", out / "report.md", table_paths, tables["headline"], families,
                        [r.name for r in runs], notes, timings)


def _figures(tables: dict[str, pd.DataFrame]) -> dict[str, str | None]:
    m, t = tables["metrics"], tables["tests"]
    figs = {
        "accuracy": plots.accuracy_figure(m),
        "attack_by_source": plots.attack_by_source_figure(m),
        "heatmap_content_type": plots.heatmap_figure(m, t, "content_type"),
        "heatmap_provenance": plots.heatmap_figure(m, t, "provenance"),
        "flips": plots.flips_figure(tables["flips"]),
        "profile": plots.profile_figure(tables["profile"][tables["profile"]["kind"] == "rate"]),
    }
    if "defense" in tables:
        figs["defense"] = plots.diff_figure(tables["defense"], "Defense effect: with the defensive instruction minus without", "defense")
    return figs


def _subtitle(runs: Sequence[RunData]) -> list[str]:
    suites = sorted({str((r.config.get("suite") or {}).get("name") or r.results.get("run", {}).get("suite") or "?") for r in runs})
    now = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    return [
        f"Run{'s' if len(runs) > 1 else ''}: {', '.join(H.esc(r.name) for r in runs)} &middot; suite{'s' if len(suites) > 1 else ''}: "
        f"{', '.join(H.esc(s) for s in suites)}",
        f"Generated {H.esc(now)} by medresilience {H.esc(__version__)}",
    ]


def _page(runs, ms: list[ModelSetting], tables, figs, mean, families, notes, title) -> str:
    title = title or "medresilience report"
    sections: list[tuple[str, str, str]] = []
    key = H.key_numbers(tables["headline"], mean)
    if notes:
        key += "".join(f"<p class='warn'>{H.esc(n)}</p>" for n in notes)
    sections.append(("key", "Key numbers", key))
    if "misleading" in families:
        body = [
            "<p>Each question is asked clean, with one misleading sentence for one wrong option (Type 1), and with the "
            "whole option-aligned bundle (Type 2: one true sentence for the gold option, one false sentence per wrong "
            "option).</p>",
            H.figure(figs.get("accuracy"), "Accuracy per model under each condition; error bars: 95% Wilson intervals. "
                     "The drop from clean to Type 1 / Type 2 is what the misleading context costs."),
            "<h3>Attack success per source dataset</h3>",
            H.figure(figs.get("attack_by_source"), "ASR (share of clean-correct pairs flipped) and TASR (share flipped to "
                     "the injected option) per model, pooled (diamond) and per source dataset (dots); 95% Wilson intervals."),
            "<h3>By content type and provenance</h3>",
            H.figure(figs.get("heatmap_content_type"), "ASR per model and content corruption (what is false). Cells: ASR "
                     "and the number of clean-correct pairs; * marks a Holm-adjusted McNemar p < 0.05 across content types."),
            H.figure(figs.get("heatmap_provenance"), "ASR per model and provenance (who says it: a neutral statement, the "
                     "patient, or an authority)."),
            "<h3>Where flips go</h3>",
            H.figure(figs.get("flips"), "Type 1 flips split into answers that moved to the injected target, to another "
                     "wrong option, or to an unreadable reply."),
            H.flips_table_html(tables["flips"]),
            "<h3>Tables by stratum</h3>",
            H.strata_tables(tables["metrics"], tables["tests"]),
        ]
        sections.append(("misleading", FAMILIES["misleading"], "".join(body)))
    missing = [FAMILIES[f] for f in FAMILIES if f not in families]
    prof = [
        "<p>Per model, clean accuracy beside a resilience score for every stress family with data in these runs "
        "(resilience = 1 - ASR: the share of clean-correct answers that survive). A model can be accurate and "
        "fragile at once: clean accuracy does not predict resilience.</p>",
        H.figure(figs.get("profile"), "Left: profile per model (95% Wilson intervals). Right: clean accuracy against "
                 "resilience; the dotted line is equality."),
        H.profile_table_html(tables["profile"]),
    ]
    if missing:
        prof.append(f"<p class='note'>Not in these runs (no data, so not shown): {H.esc(', '.join(missing))}.</p>")
    sections.append(("profile", "Resilience profile", "".join(prof)))
    if "defense" in tables:
        sections.append(("defense", "Defense effect", "".join([
            "<p>The same model and items with and without the defensive instruction (a warning that added context may "
            "be false). Differences are defense minus no defense on the pairs both settings answered; ASR is taken on "
            "items answered correctly clean in both settings.</p>",
            H.figure(figs.get("defense"), "Paired differences in percentage points with item-clustered bootstrap 95% intervals."),
            H.diff_table_html(tables["defense"], "Model", "No defense", "Defense"),
        ])))
    t = tables["tests"]
    if not t.empty:
        ov = t[t["stratum_kind"] == "overall"]
        rows = [[H.esc(r.model), H.esc(H.setting_name(r.setting)), H.esc({"type1": "Type 1", "type2": "Type 2"}[r.condition]),
                 str(r.b), str(r.c), str(r.n), H.fmt_p(r.p)] for r in ov.itertuples(index=False)]
        n_sig = int(t["significant"].sum())
        sections.append(("tests", "Statistical tests", "".join([
            "<p>Exact McNemar tests of clean vs stressed correctness on the same (item, probe) pairs: b = correct clean "
            "and wrong with context, c = the reverse. Pooled over each model's pairs:</p>",
            H.table(rows, ["Model", "Setting", "Condition", "b (correct → wrong)", "c (wrong → correct)", "Pairs", "p"], numeric=range(3, 7)),
            f"<p>Per stratum, {len(t) - len(ov)} tests with Holm's correction across the strata of one kind; "
            f"{n_sig} of all {len(t)} tests have a Holm-adjusted p &lt; 0.05 (see the tables by stratum and "
            "<code>tables/tests.csv</code>).</p>",
            "<h3>Methods</h3>", H.METHODS,
        ])))
    sections.append(("facts", "Run facts", H.run_facts(runs, redact_url)))
    footer = ("Self-contained report: no scripts, no network. Tables as CSV / Parquet / Markdown in <code>tables/</code>: "
              + ", ".join(f"<code>{H.esc(n)}</code>" for n in tables) + ".")
    return H.page(title, _subtitle(runs), sections, footer)


def _markdown(runs, tables, mean, families, notes, title) -> str:
    from .tables import fmt_pct

    lines = [f"# {title or 'medresilience report'}", ""]
    lines.append(f"Runs: {', '.join(r.name for r in runs)}. Rates: 95% Wilson intervals and n.")
    lines.append("")
    for n in notes:
        lines.append(f"> {n}")
    h = tables["headline"]
    if not h.empty:
        lines += ["## Key numbers", ""]
        for setting, agg in mean.items():
            if agg:
                lines.append(f"- Mean across models ({setting}): " + ", ".join(
                    f"{k} {100 * v['mean']:.1f}% (range {100 * v['min']:.1f}–{100 * v['max']:.1f}%, {v['models']} models)"
                    for k, v in agg.items()))
        lines.append("")
        lines.append("| Model | Setting | Clean acc | Type 1 acc | Type 2 acc | Type 1 ASR | Type 1 TASR | Type 2 ASR |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for r in h.to_dict("records"):
            cells = [fmt_pct(r.get(f"{k}_p"), r.get(f"{k}_lo"), r.get(f"{k}_hi"), r.get(f"{k}_n"))
                     for k in ("clean_acc", "type1_acc", "type2_acc", "type1_asr", "type1_tasr", "type2_asr")]
            lines.append(f"| {r['model']} | {r['setting']} | " + " | ".join(cells) + " |")
        lines.append("")
    if "misleading" in families:
        f = tables["flips"]
        ov = f[f["stratum_kind"] == "overall"]
        if not ov.empty:
            lines += ["## Where flips go (overall)", "", markdown_table(ov, ["model", "setting", "condition", "clean_correct_pairs",
                      "flips", "to_target", "elsewhere", "invalid"]), ""]
        t = tables["tests"]
        if not t.empty:
            sig = t[t["significant"] & (t["stratum_kind"] != "overall")]
            lines += ["## Strata with a significant McNemar test (Holm-adjusted p < 0.05)", ""]
            lines.append(markdown_table(sig, ["model", "setting", "stratum_kind", "stratum", "condition", "b", "c", "p", "p_holm"], max_rows=60)
                         if not sig.empty else "None.")
            lines.append("")
    p = tables["profile"]
    if not p.empty:
        lines += ["## Resilience profile", "", markdown_table(p, ["model", "setting", "dimension", "value", "lo", "hi", "n"]), ""]
    if "defense" in tables:
        lines += ["## Defense effect (defense - no defense, paired)", "",
                  markdown_table(tables["defense"], ["pair", "condition", "metric", "a_p", "b_p", "diff", "lo", "hi", "p_boot", "p_holm", "test", "p_test", "n", "items"]), ""]
    lines += ["## Run facts", ""]
    for r in runs:
        cfg = r.config or {}
        lines.append(f"- **{r.name}** ({r.path}): suite {(cfg.get('suite') or {}).get('name')}, prompt hash "
                     f"{(cfg.get('prompts') or {}).get('hash')}, numbers from {r.source}; models: "
                     + ", ".join(f"{m.get('label')} ({m.get('kind')}:{m.get('model')}, temperature {m.get('temperature')}, "
                                 f"max_tokens {m.get('max_tokens')}, key variable {m.get('api_key_env') or '—'})" for m in cfg.get("models", [])))
        if r.counts:
            c = r.counts
            lines.append(f"  - calls ok {c['calls_ok']}, errors {c['calls_error']}; scores valid {c['scores_valid']}, "
                         f"invalid {c['scores_invalid']}, unscored {c['scores_unscored']}")
    u = tables["usage"]
    if not u.empty:
        lines += ["", markdown_table(u)]
    lines += ["", "Tables: " + ", ".join(f"tables/{n}.csv" for n in tables), ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- compare


def write_compare(ra: RunData, rb: RunData, comps: list[Comparison], out: Path) -> CompareResult:
    table = pd.concat([c.table for c in comps], ignore_index=True) if comps else pd.DataFrame()
    out.mkdir(parents=True, exist_ok=True)
    fig = plots.diff_figure(table, f"{rb.name} minus {ra.name} on shared items", "compare")
    counts = "".join(f"<li>{H.esc(c.b)} vs {H.esc(c.a)}: {c.counts['shared']} shared answered units "
                     f"(A answered {c.counts['answered_a']} of {c.counts['units_a']}, B {c.counts['answered_b']} of {c.counts['units_b']})</li>"
                     for c in comps)
    sections = [
        ("compare", "Paired differences", "".join([
            f"<p>Run B <code>{H.esc(rb.name)}</code> against run A <code>{H.esc(ra.name)}</code>, paired on shared "
            "(item, probe, condition) units that both answered. ASR / TASR on items answered correctly clean in both.</p>",
            f"<ul>{counts}</ul>",
            H.figure(fig, "B - A in percentage points, item-clustered paired bootstrap 95% intervals."),
            H.diff_table_html(table, "Comparison", "A", "B"),
            H.METHODS,
        ])),
        ("facts", "Run facts", H.run_facts([ra, rb], redact_url)),
    ]
    page = H.page("medresilience comparison", [f"B: {H.esc(rb.name)} &middot; A: {H.esc(ra.name)}"], sections,
                  "Self-contained: no scripts, no network.")
    secrets = _secrets([ra, rb])
    with atomic_write(out / "compare.html") as fh:
        fh.write(_scrub(page, secrets))
    md = "\n".join([f"# {rb.name} vs {ra.name} (B - A, paired on shared items)", "",
                    markdown_table(table, ["pair", "condition", "metric", "a_p", "b_p", "diff", "lo", "hi", "p_boot", "p_holm",
                                           "test", "p_test", "n", "items"]) if not table.empty else "No shared units.", ""])
    with atomic_write(out / "compare.md") as fh:
        fh.write(_scrub(md, secrets))
    paths = write_tables({"compare": table}, out)
    return CompareResult(table, comps, out, out / "compare.html", out / "compare.md", paths["compare"]["csv"], paths["compare"]["parquet"])


def summary_table(result: ReportResult):
    """A rich Table of the headline numbers (for the command line)."""
    from rich.table import Table

    from .tables import fmt_pct

    t = Table(title="medresilience report (95% Wilson CI; n in the report)")
    for col in ("Model", "Setting", "Clean acc", "Type 1 acc", "Type 2 acc", "Type 1 ASR", "Type 1 TASR", "Type 2 ASR"):
        t.add_column(col, justify="left" if col in ("Model", "Setting") else "right")
    for r in result.headline.to_dict("records"):
        t.add_row(str(r["model"]), str(r["setting"]).replace("_", " "), *[
            fmt_pct(r.get(f"{k}_p"), r.get(f"{k}_lo"), r.get(f"{k}_hi"))
            for k in ("clean_acc", "type1_acc", "type2_acc", "type1_asr", "type1_tasr", "type2_asr")])
    return t
