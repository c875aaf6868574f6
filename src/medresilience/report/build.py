"""`build_report(run_dirs)`: read one or more run directories, recompute their numbers from the
store, and write one self-contained HTML report plus Markdown, CSV and Parquet tables.

Layout of the output directory (default: RUN_DIR/report for one run)::

    report.html           the report (inline CSS and SVG; opens with the headline numbers)
    report.md             the same key numbers and tables as Markdown
    tables/NAME.{csv,parquet,md}   each family's tables, and usage

This module is the page skeleton: it loads the runs, asks the family of each (through the
registry) for its section, and lays out key numbers, the family sections and the run facts. It
names no family. Secrets never reach the output: run.json holds none, endpoint credentials are
masked, and as a last guard the value of every API-key variable named by a model is scrubbed."""

from __future__ import annotations

import datetime as _dt
import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pandas as pd

from .. import __version__
from ..family import families as registered_families
from ..family import get
from ..models.names import distinct_run_names
from ..run.stopping import stopping_lines
from ..runtime.fileio import atomic_write
from ..view.address import VIEWER_URL
from .agent import ANCHOR as AGENT
from .agent import section as agent_section
from .audit import ANCHOR as AUDIT
from .audit import section as audit_section
from .html import page as html_page
from .html import run_facts, sent_text, viewer_links
from .parts import Section
from .profile import RADAR_MIN_AXES, profile_frame, profile_section, radar_frame, radar_section
from .reading import ANCHOR as READING
from .reading import section as reading_section
from .render_html import blocks_html, section_html
from .render_markdown import blocks_markdown, section_markdown
from .rundir import RunData, load_run, name_models, names_of, redact_url, scrub, secrets_of
from .section import FamilySection
from .tables import markdown_table, usage_table, write_tables
from .team import ANCHOR as TEAM
from .team import section as team_section
from .templating import macros
from .tradeoff import section as tradeoff_section


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
    sections: list[FamilySection] = field(default_factory=list)
    parts: list[Section] = field(default_factory=list)  # the report's sections written from parts


def default_out_dir(run_dirs: Sequence[Path]) -> Path:
    if len(run_dirs) == 1:
        return run_dirs[0] / "report"
    names = "+".join(p.resolve().name for p in run_dirs)
    return run_dirs[0].resolve().parent / f"report-{names}"[:120]


def build_report(
    run_dirs: Sequence[Path | str] | Path | str,
    out_dir: Path | str | None = None,
    title: str | None = None,
    viewer_url: str | None = VIEWER_URL,
    frames: Mapping[Path, pd.DataFrame] | None = None,
) -> ReportResult:
    """Write the report of one or more run directories; return what was written.

    Several run directories make one report (each model labelled by its run where two runs share a
    label). Its rates link to the units behind them in the evidence viewer at `viewer_url` (None:
    no links). `frames`: results frames the caller already holds, by run directory (`load_run`).
    Raises InputError (a MedresError) for something that is not a run directory."""
    t_all = time.perf_counter()
    if isinstance(run_dirs, (str, Path)):
        run_dirs = [run_dirs]
    dirs = [Path(d) for d in run_dirs]
    if not dirs:
        raise ValueError("build_report needs at least one run directory")
    out = Path(out_dir) if out_dir is not None else default_out_dir(dirs)
    timings: dict[str, float] = {}

    t0 = time.perf_counter()
    runs = [load_run(d, frame=(frames or {}).get(d)) for d in dirs]
    for r, name in zip(runs, distinct_run_names(r.name for r in runs)):
        r.name = name
    name_models(runs)  # the one rule for a model in several runs: every view names models by it
    for r in runs:
        for k, v in r.timings.items():
            timings[k] = timings.get(k, 0.0) + v
    timings["load"] = time.perf_counter() - t0
    with viewer_links(viewer_url, runs):
        return _write(runs, out, title, viewer_url, timings, t_all)


def _write(runs: list[RunData], out: Path, title: str | None, viewer_url: str | None, timings: dict[str, float], t_all: float) -> ReportResult:
    """The sections, tables and pages of the loaded runs, written to `out`."""
    t0 = time.perf_counter()
    order = [f.name for f in registered_families()]
    present = sorted({r.family for r in runs if r.families}, key=lambda f: order.index(f) if f in order else len(order))
    parts = [part for name in present if (part := _family_section(name, runs)) is not None]
    tables: dict[str, pd.DataFrame] = {}
    for part in parts:
        for tname, df in part.tables.items():
            tables[tname if len(parts) == 1 else f"{part.family}_{tname}"] = df
    tables["usage"] = usage_table([(r.name, r.results) for r in runs])
    timings["tables"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    notes = names_of(runs).notes() + [f"{r.name}: {n}" for r in runs for n in r.notes]
    notes += [f"{r.name}: {w}" for r in runs for w in (r.config or {}).get("warnings", [])]
    notes += [f"{r.name}: {w}" for r in runs for w in (r.results or {}).get("warnings", [])]
    notes += [f"{r.name}: {n}" for r in runs if (n := missing_note(r))]
    notes += [f"{r.name}: {n}" for r in runs for n in stopping_lines((r.config or {}).get("stopping"))]  # run.json: a stopping rule's outcome
    secrets = secrets_of(runs)
    profile = profile_frame(runs)
    shown_profile = profile_section(profile)
    if shown_profile is not None:
        tables["profile_all"] = profile
    # the radar (MedMisBench Fig. 14) of three dimensions or more: in the cross-family section, else alone
    radar = radar_section(profile) if shown_profile is None else None
    if not profile.empty and profile["dimension"].nunique() >= RADAR_MIN_AXES:
        tables["profile_radar"] = radar_frame(profile)
    t0 = time.perf_counter()
    traded = tradeoff_section(runs)  # None unless some run has a setting other than none
    trade = None if traded is None else traded[0]
    if traded is not None:
        tables.update(traded[1])
    timings["tradeoff"] = time.perf_counter() - t0
    reading = reading_section(runs)
    audit = audit_section(runs)  # None unless some run holds a label audit
    agents = agent_section(runs)  # None unless some run has an agent setting
    # the team section is None unless some run has a team setting
    converted = [found for found in (agents, team_section(runs), reading, audit) if found is not None]
    for _, frames in converted:
        tables.update(frames)
    shown = {sec.anchor: sec for sec, _ in converted}
    loops = tuple(shown[a] for a in (AGENT, TEAM) if a in shown)  # the answer loops' sections (agents, teams)
    page = _page(runs, parts, tables, notes, title, shown_profile, trade, shown.get(READING), viewer_url, loops, shown.get(AUDIT), radar)
    md = _markdown(runs, parts, tables, notes, title, shown_profile, trade, shown.get(READING), loops, shown.get(AUDIT), radar)
    out.mkdir(parents=True, exist_ok=True)
    with atomic_write(out / "report.html") as fh:
        fh.write(scrub(page, secrets))
    with atomic_write(out / "report.md") as fh:
        fh.write(scrub(md, secrets))
    table_paths = write_tables(tables, out / "tables")
    timings["write"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - t_all
    headline = pd.concat([p.headline for p in parts], ignore_index=True) if parts else pd.DataFrame()
    return ReportResult(
        out,
        out / "report.html",
        out / "report.md",
        table_paths,
        headline,
        present,
        [r.name for r in runs],
        notes,
        timings,
        parts,
        [*(s for s in (shown_profile, radar, trade) if s is not None), *shown.values(), *(sec for p in parts for sec in p.parts)],
    )


def _family_section(name: str, runs: list[RunData]) -> FamilySection | None:
    """The section of family `name` over its runs (and the other runs, where it reads them)."""
    fam = get(name)
    if fam.report.section is None:
        return None
    others = {"others": [r for r in runs if r.family != name]} if fam.report.others else {}
    section: FamilySection = fam.report.section([r for r in runs if r.family == name], **others)
    return section


def missing_note(run: RunData) -> str | None:
    """The banner of a half-finished run: how many of its planned units have no call stored (the
    frame's status `missing`), or None when none is missing."""
    df = run.frame
    if df is None or len(df) == 0 or "status" not in df:
        return None
    missing = int((df["status"] == "missing").sum())
    if not missing:
        return None
    total = len(df)
    return (
        f"{missing} of {total} planned units ({missing / total:.0%}) are missing (not run, or the run was stopped before them): "
        "the rates cover only the units answered so far; rerun the same command to finish the run"
    )


def _subtitle(runs: Sequence[RunData], viewer_url: str | None = None) -> list[str]:
    """The header's lines (templates/report.html.j2 `subtitle`): the runs and suites, when and by
    what the report was made, and how to start the viewer its links open."""
    suites = sorted({str((r.config.get("suite") or {}).get("name") or r.results.get("run", {}).get("suite") or "?") for r in runs})
    now = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    view = None
    if viewer_url is not None:
        port = urlsplit(viewer_url).port
        view = "medres view " + " ".join(shlex.quote(str(r.path)) for r in runs) + (f" --port {port}" if port and port != urlsplit(VIEWER_URL).port else "")
    lines = macros(__package__, "report.html.j2").subtitle([r.name for r in runs], suites, now, __version__, view, viewer_url)
    return [line for line in str(lines).split("\n") if line]


def _page(
    runs: Sequence[RunData],
    parts: Sequence[FamilySection],
    tables: dict[str, pd.DataFrame],
    notes: Sequence[str],
    title: str | None,
    profile: Section | None = None,
    trade: Section | None = None,
    reading: Section | None = None,
    viewer_url: str | None = None,
    loops: Sequence[Section] = (),
    audit: Section | None = None,
    radar: Section | None = None,
) -> str:
    title = title or "medresilience report"
    parts_of = macros(__package__, "report.html.j2")
    # warnings first, above the numbers they qualify
    key = str(parts_of.key_numbers(notes, [blocks_html(p.key_parts) for p in parts if p.key_parts]))
    sections: list[tuple[str, str, str]] = [("key", "Key numbers", key)]
    if profile is not None:
        sections.append((profile.anchor, profile.title, str(section_html(profile))))
    if radar is not None:
        sections.append((radar.anchor, radar.title, str(section_html(radar))))
    if trade is not None:
        sections.append((trade.anchor, trade.title, str(section_html(trade))))
    sections += [(sec.anchor, sec.title, str(section_html(sec))) for sec in loops]
    for p in parts:
        sections += [(sec.anchor, sec.title, str(section_html(sec))) for sec in p.parts]
    if reading is not None:
        sections.append((reading.anchor, reading.title, str(section_html(reading))))
    if audit is not None:
        sections.append((audit.anchor, audit.title, str(section_html(audit))))
    shown = {p.family for p in parts}
    missing = [f.title for f in registered_families() if f.name not in shown]
    if missing:
        sections.append(("others", "Other families", str(parts_of.others(missing))))
    sections.append(("facts", "Run facts", run_facts(runs, redact_url)))
    return html_page(title, _subtitle(runs, viewer_url), sections, str(parts_of.footer(list(tables))))


# What the numbers carry, said once above every family's section; each section names its own.
INTERVALS = (
    "Every number carries a 95% interval and its n: a Wilson interval for a rate of independent units, a bootstrap "
    "interval for a mean score (such as PCS) and, where one item gives several units, an item-clustered one; each "
    "section says which. p-values come only from exact or clustered tests, Holm-adjusted where several are read "
    "together."
)


def _markdown(
    runs: Sequence[RunData],
    parts: Sequence[FamilySection],
    tables: dict[str, pd.DataFrame],
    notes: Sequence[str],
    title: str | None,
    profile: Section | None = None,
    trade: Section | None = None,
    reading: Section | None = None,
    loops: Sequence[Section] = (),
    audit: Section | None = None,
    radar: Section | None = None,
) -> str:
    lines = [f"# {title or 'medresilience report'}", ""]
    lines.append(f"Runs: {', '.join(r.name for r in runs)}. {INTERVALS}")
    lines.append("")
    for n in notes:
        lines.append(f"> {n}")
    # the key numbers of the families written from parts, as the page opens with them
    keys = [blocks_markdown(p.key_parts) for p in parts if p.key_parts]
    if keys:
        lines += ["", "## Key numbers", "", *(k + "\n" for k in keys)]
    if profile is not None:
        lines += [section_markdown(profile), ""]
    if radar is not None:
        lines += [section_markdown(radar), ""]
    if trade is not None:
        lines += [section_markdown(trade), ""]
    for sec in loops:
        lines += [section_markdown(sec), ""]
    for p in parts:
        lines += ["\n\n".join(section_markdown(sec) for sec in p.parts), ""]
    if reading is not None:
        lines += [section_markdown(reading), ""]
    if audit is not None:
        lines += [section_markdown(audit), ""]
    lines += ["## Run facts", ""]
    for r in runs:
        cfg = r.config or {}
        lines.append(
            f"- **{r.name}** ({r.path}): family {r.family or '?'}, suite {(cfg.get('suite') or {}).get('name')}, prompt hash "
            f"{(cfg.get('prompts') or {}).get('hash')}, numbers from {r.source}; models: "
            + ", ".join(
                f"{m.get('label')} ({m.get('kind')}:{m.get('model')}, key variable {m.get('api_key_env') or '—'}"
                + ("" if r.sent else f", temperature {m.get('temperature')}, max_tokens {m.get('max_tokens')}")
                + ")"
                for m in cfg.get("models", [])
            )
        )
        for s in r.sent:
            lines.append(f"  - sent, {s['kind']} calls of {s['model']} ({s['calls']}): {sent_text(s['params'])}")
        if r.counts:
            c = r.counts
            lines.append(
                f"  - calls ok {c['calls_ok']}, errors {c['calls_error']}; scores valid {c['scores_valid']}, "
                f"invalid {c['scores_invalid']}, truncated {c.get('scores_truncated', 0)}, unscored {c['scores_unscored']}"
            )
    u = tables["usage"]
    if not u.empty:
        lines += ["", markdown_table(u)]
    lines += ["", "Tables: " + ", ".join(f"tables/{n}.csv" for n in tables), ""]
    return "\n".join(lines)


def summary_rows(result: ReportResult) -> list[tuple[str, list[str], list[list[str]]]]:
    """The headline numbers for the command line, one (title, headers, rows) per family."""
    from .tables import fmt_pct, fmt_score

    out = []
    for part in result.sections:
        headers = ["Model", "Setting", *[title for _, title in part.summary_columns]]
        rows = [
            [
                str(r["model"]),
                str(r["setting"]),
                *[
                    fmt_score(r.get(f"{k}_p"), r.get(f"{k}_lo"), r.get(f"{k}_hi"))
                    if r.get(f"{k}_unit") == "score"
                    else fmt_pct(r.get(f"{k}_p"), r.get(f"{k}_lo"), r.get(f"{k}_hi"))
                    for k, _ in part.summary_columns
                ],
            ]
            for r in part.headline.to_dict("records")
        ]
        out.append((f"{part.title} (95% CI; the report names each interval and gives n)", headers, rows))
    return out
