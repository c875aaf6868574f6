"""`compare_runs(run_a, run_b)`: two run directories of the same family, paired on shared items.
The one comparison page: this module loads the runs, checks they can be compared, pairs their
models, and builds the page as report parts (`parts`: its prose, each side's units, the figure, the
table of paired differences as cells, the methods), which the one renderer of each format writes
(`render_html` for compare.html, `render_markdown` for compare.md); the comparison's values are its
data table (tables/compare.csv, .parquet, .md) and its terminal summary. What is a family's own
comes from its `CompareSpec` (`Family.compare()`): the pairing and metrics of two sides, its table's
columns (each a cell from a row of values), its figure, its intro and its methods."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import pandas as pd

from ..family import Family, get
from ..models.names import model_names
from ..runtime.errors import ConfigError
from ..runtime.fileio import atomic_write
from ..runtime.seeding import stable_hash
from ..score import ANSWERED
from ..view.address import VIEWER_URL
from .html import page as html_page
from .html import pair_url, rate_units, run_facts, setting_name, sig_class, units_url, viewer_links
from .parts import Block, Cell, Column, DifferenceFigure, DifferencePanel, ItemList, Paragraph, Section, Table, count, num, p_value, rate, score, signed, text
from .parts import paired_test as test_cell
from .render_html import section_html
from .render_markdown import blocks_markdown
from .rundir import RunData, load_run, redact_url, run_models, scrub, secrets_of
from .tables import fmt_p, write_tables
from .templating import macros

#: model -> setting -> its block: what `match_models` pairs by name
Models = Mapping[str, Mapping[str, object]]
#: the columns of a paired comparison table, in order (a family keeps those its comparison fills)
PAIRED_COLUMNS = (
    "pair",
    "a",
    "b",
    "condition",
    "metric",
    "a_k",
    "a_n",
    "a_p",
    "a_lo",
    "a_hi",
    "b_k",
    "b_n",
    "b_p",
    "b_lo",
    "b_hi",
    "n",
    "items",
    "diff",
    "lo",
    "hi",
    "test",
    "test_b",
    "test_c",
    "p_test",
    "p_holm",
)


@dataclass
class CompareResult:
    table: pd.DataFrame
    comparisons: list[Comparison]
    out_dir: Path
    html: Path
    markdown: Path
    csv: Path
    parquet: Path
    #: what was compared ("B's ... against A's ...", one line per pair of sides) and what of either
    #: run was not (a model or setting with no partner on the other side, and how to compare it)
    compared: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)


@dataclass
class Side:
    """One side of a comparison: a run's frame restricted to one model and setting."""

    run: str
    model: str
    setting: str  # none, or a mitigation's name
    frame: pd.DataFrame
    #: the model's name over the two runs (model_names: run-qualified when both runs hold its label)
    name: str = ""

    def label(self, with_run: bool = False) -> str:
        """The side as the comparison names it: the model's name, and its setting other than none
        (`with_run` is kept for the families' calls: the name already says the run where the
        label alone would not)."""
        return (self.name or self.model) + ("" if self.setting == "none" else f" ({self.setting})")

    @property
    def scorers(self) -> list[str]:
        """The scorer names of its units (a judge's name carries its model and rubric hash)."""
        return sorted({str(s) for s in self.frame["scoring"].dropna().unique()}) if "scoring" in self.frame else []


class PairLinks(TypedDict, total=False):
    """The viewer's URLs of a comparison's counts (`pair_links`): `shared`, the units paired; `rows`,
    per table row the URLs of its paired test's `pairs`, `b` and `c` (None: no viewer links)."""

    shared: str | None
    rows: list[dict[str, str | None]]


@dataclass
class Comparison:
    """B against A (two sides' labels): the family's table of paired differences and its counts
    (units paired, units on one side only, ...)."""

    a: str
    b: str
    table: pd.DataFrame
    counts: dict[str, int] = field(default_factory=dict)
    #: viewer URLs of its counts (`pair_links`): `shared` (the units paired), `rows` (per table row,
    #: its paired test's `pairs`, `b` and `c`)
    units: PairLinks = field(default_factory=lambda: PairLinks())


@dataclass(frozen=True)
class CompareColumn:
    """One column of the comparison table: its key and header, its cell (`parts.Cell`) from a table
    row, and whether its cells are numbers (right-aligned)."""

    key: str
    header: str
    cell: Callable[[dict[str, Any]], Cell]
    numeric: bool = False

    @property
    def column(self) -> Column:
        return Column(self.key, self.header, self.numeric)


def answered_counts(c: Comparison) -> Cell:
    """How many units paired, for families whose units are answered (or not) on each side (the
    shared ones linked to them in the viewer)."""
    n = c.counts
    tail = f" shared answered units (A answered {n['answered_a']} of {n['units_a']}, B {n['answered_b']} of {n['units_b']})"
    return count(n["shared"], c.units.get("shared"), tail)


@dataclass(frozen=True)
class CompareSpec:
    """What a family's comparison holds of its own (`Family.compare()` returns it); the page, the
    table's layout, the terminal summary and the files are this module's.

    - `sides(a, b)`: the paired differences B - A of two `Side`s (a `Comparison` whose table has
      the rows of `columns`: pair, a, b, condition, metric, a_p ... p_holm);
    - `table`: the page's table, one `CompareColumn` each (a cell from a row of values); rows
      shaded by their Holm p when `significance`; folded under `fold` (summary, rows shown open)
      when given;
    - `intro`: what is paired and asked (text after "Run B ... against run A ..., ");
    - `counts(comparison)`: its units paired and left out (a cell after "B vs A: ", its shared
      units linked);
    - `warning(comparison)`: a caution about one comparison (text), or None;
    - `figure(table)`: the panels of its difference figure (`parts.DifferencePanel`, B - A with
      its interval per compared pair), none for no figure; `figure_name` names the figure,
      `figure_title` is formatted with the runs' names `a` and `b`, `figure_caption` is its caption;
    - `methods`: its methods note (report parts: paragraphs, a list);
    - `heading`: the Markdown heading (formatted with `a` and `b`);
    - `empty`: what the page says with no shared units;
    - `versus_key(row)`: the key of a table row's measure in the family's `Outcomes.versus` (its
      paired test's pairs, b and c as viewer filters), None when none selects its units; a row's
      cells find their URLs in `row["units"]` (`pairs`, `b`, `c`), and `counts` its shared units'
      in `comparison.units["shared"]`."""

    sides: Callable[..., Comparison]
    columns: tuple[str, ...]
    table: tuple[CompareColumn, ...]
    intro: str
    figure: Callable[[pd.DataFrame], tuple[DifferencePanel, ...]]
    figure_caption: str
    figure_name: str
    methods: tuple[Block, ...]
    heading: str
    figure_title: str = "{b} minus {a}, paired"
    # a family's own Comparison (a subclass) comes in: the callables take any
    counts: Callable[..., Cell] = answered_counts
    warning: Callable[..., str | None] = lambda c: None
    significance: bool = True
    fold: tuple[str, int] | None = None
    empty: str = "No shared units."
    versus_key: Callable[[dict[str, Any]], str | None] = lambda r: None


def side(run: str, frame: pd.DataFrame, model: str, setting: str, name: str | None = None) -> Side:
    f = frame[(frame["model"].astype(str) == model).to_numpy() & (frame["setting"].astype(str) == setting).to_numpy()]
    return Side(run, model, setting, f, name or model)


def default_compare_dir(run_a: Path | str, run_b: Path | str, pairs: Sequence[str] = ()) -> Path:
    """RUN_B/compare-<name of RUN_A>, and the pairs when they are named (`--pair m1=m2` gives
    compare-<A>-m1=m2), so comparisons of different things do not share a folder."""
    name = f"compare-{Path(run_a).resolve().name}"
    if pairs:
        name += "-" + "+".join(re.sub(r"[^A-Za-z0-9._=:+-]", "_", p) for p in pairs).replace(":", "@")
    if len(name) > 120:
        name = f"{name[:100]}-{stable_hash(list(pairs))[:12]}"
    return Path(run_b) / name


def _compared(run_a: Path | str, run_b: Path | str, pairs: Sequence[str]) -> dict[str, str | list[str]]:
    return {"a": str(Path(run_a).resolve()), "b": str(Path(run_b).resolve()), "pairs": list(pairs)}


def check_compare_dir(out: Path, what: Mapping[str, object], force: bool = False) -> None:
    """A folder holding a comparison of something else (other runs or pairs, or one that does not
    say) is never overwritten unless forced: ConfigError naming what it holds."""
    if force or not (out / "compare.html").exists():
        return
    try:
        held = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        held = None
    if held == what:
        return
    says = (
        "a comparison it does not describe"
        if not isinstance(held, dict)
        else (f"the comparison of {held.get('b')} against {held.get('a')}" + (f" with --pair {' '.join(held['pairs'])}" if held.get("pairs") else ""))
    )
    raise ConfigError("--out", f"{out} already holds {says}; give another --out, or --force to overwrite it")


def compare_runs(
    run_a: Path | str,
    run_b: Path | str,
    out_dir: Path | str | None = None,
    pairs: Sequence[str] = (),
    force: bool = False,
    viewer_url: str | None = VIEWER_URL,
) -> CompareResult:
    """Compare two run directories on shared items; write compare.{html,md,csv,parquet} and
    compare.json (what was compared) to out_dir (default: `default_compare_dir`). A folder that
    holds another comparison is refused unless `force`. Each side's unit counts link to its units
    in the evidence viewer at `viewer_url` over both runs (A as run 0, B as run 1; None: no links).
    Returns the table and the paths written."""
    out = Path(out_dir) if out_dir else default_compare_dir(run_a, run_b, pairs)
    what = _compared(run_a, run_b, pairs)
    check_compare_dir(out, what, force)
    ra, rb = load_run(run_a), load_run(run_b)
    frames = []
    for r in (ra, rb):
        if r.frame is None:
            raise ValueError(f"{r.path}: cannot compare: the store and suite are needed ({'; '.join(r.notes) or 'no store'})")
        frames.append(r.frame)
    frame_a, frame_b = frames
    if ra.family != rb.family:
        raise ConfigError("compare", f"run A is family {ra.family}, run B is family {rb.family}: only runs of one family pair")
    family = get(ra.family)
    if family.report.compare is None:
        raise ConfigError("compare", f"family {family.name} has no paired comparison")
    same = Path(run_a).resolve() == Path(rb.path).resolve()
    if ra.name == rb.name:
        rb.name = f"{rb.name} (B)"
    # the one naming rule (model_names) over the two runs; one run on both sides is one run
    names = model_names([run_models(ra)] if same else [run_models(ra), run_models(rb)])
    ra.names = rb.names = names
    spec = family.report.compare()
    matched = pair_models(ra, rb, pairs)
    sides = [(side(ra.name, frame_a, ma, sa, names.name(ra.name, ma)), side(rb.name, frame_b, mb, sb, names.name(rb.name, mb))) for ma, sa, mb, sb in matched]
    comps = [spec.sides(a, b) for a, b in sides]
    compared = [f"B's {b.name} under {b.setting} against A's {a.name} under {a.setting}" for a, b in sides]
    left_out = unpaired(ra, rb, matched, explicit=bool(pairs))
    with viewer_links(viewer_url, [ra, rb]):
        for (a, b), comp in zip(sides, comps):
            comp.units = pair_links(family, spec, a, b, comp)
        res = write_compare(ra, rb, spec, comps, out, sides_table(sides), _viewer_line(ra, rb, viewer_url), left_out)
    res.compared, res.left_out = compared, left_out
    with atomic_write(out / "compare.json") as fh:
        fh.write(json.dumps(what, indent=2) + "\n")
    return res


def match_models(ma: Models, mb: Models, pairs: Sequence[str] = ()) -> list[tuple[str, str, str, str]]:
    """(model A, setting A, model B, setting B) to compare. Explicit ``pairs`` ("MODEL_A=MODEL_B",
    each optionally "MODEL:SETTING") win; otherwise each model label in both runs is matched with
    itself, and with no label shared and one model on each side, those two are compared. A matched
    model's settings pair by name: each setting both sides hold, none first (the settings of one
    side with no partner are left out: `unpaired` names them); with no setting in common, the one
    setting of each side, and with several on a side and none shared, a ValueError lists them and
    asks for --pair. Family-neutral: it reads only the model and setting names of two runs' results
    (model -> setting -> block, `RunData.blocks`)."""

    def parse(text: str, models: Models, which: str) -> tuple[str, str | None]:
        label, _, setting = text.partition(":")
        if label not in models:
            raise ValueError(f"--pair: model '{label}' is not in run {which} (models: {', '.join(models) or 'none'})")
        if setting and setting not in models[label]:
            raise ValueError(f"--pair: model '{label}' has no setting '{setting}' in run {which} (settings: {', '.join(models[label])})")
        return label, setting or None

    def settings(la: str, va: Mapping[str, object], lb: str, vb: Mapping[str, object], sa: str | None, sb: str | None) -> list[tuple[str, str, str, str]]:
        if sa or sb:
            return [(la, sa or ("none" if "none" in va else next(iter(va))), lb, sb or ("none" if "none" in vb else next(iter(vb))))]
        common = sorted((s for s in va if s in vb), key=lambda s: s != "none")
        if common:
            return [(la, s, lb, s) for s in common]
        if len(va) == 1 and len(vb) == 1:
            return [(la, next(iter(va)), lb, next(iter(vb)))]
        raise ValueError(
            f"no setting to pair: model '{la}' has {', '.join(va)} in run A and '{lb}' has {', '.join(vb)} in run B, none in "
            f"common; name the settings to compare with --pair {la}:SETTING_A={lb}:SETTING_B (repeat it for each pair)"
        )

    if pairs:
        out: list[tuple[str, str, str, str]] = []
        for p in pairs:
            left, eq, right = p.partition("=")
            if not eq:
                raise ValueError(f"--pair '{p}' is not MODEL_A=MODEL_B")
            (la, sa), (lb, sb) = parse(left, ma, "A"), parse(right, mb, "B")
            out += settings(la, ma[la], lb, mb[lb], sa, sb)
        return out
    shared = [m for m in ma if m in mb]
    if not shared and len(ma) == 1 and len(mb) == 1:
        (la, va), (lb, vb) = next(iter(ma.items())), next(iter(mb.items()))
        return settings(la, va, lb, vb, None, None)
    return [t for m in shared for t in settings(m, ma[m], m, mb[m], None, None)]


def pair_models(ra: RunData, rb: RunData, pairs: Sequence[str] = ()) -> list[tuple[str, str, str, str]]:
    """`match_models` on two loaded runs; ValueError naming both runs' models when nothing pairs."""
    matched = match_models(ra.blocks, rb.blocks, pairs)
    if not matched:
        raise ValueError(
            f"no model to compare: run A has {', '.join(ra.blocks) or 'none'}, run B has "
            f"{', '.join(rb.blocks) or 'none'}; name pairs with --pair MODEL_A=MODEL_B"
        )
    return matched


def unpaired(ra: RunData, rb: RunData, matched: Sequence[tuple[str, str, str, str]], explicit: bool = False) -> list[str]:
    """What of either run a comparison leaves out: each model and setting on no side of `matched`,
    with why (`explicit`: the pairs were named with --pair) and, where its model was matched, the
    --pair that would compare it against the other run's partner of its model."""
    out = []
    for which, run, other, own, theirs in (("A", ra, "B", 0, 2), ("B", rb, "A", 2, 0)):
        used = {(t[own], t[own + 1]) for t in matched}
        for model, settings in run.blocks.items():
            for setting in settings:
                if (model, setting) in used:
                    continue
                partner = next(((t[theirs], t[theirs + 1]) for t in matched if t[own] == model), None)
                if explicit:
                    why = "not named by --pair"
                elif partner is None:
                    why = f"no model of run {other} is paired with it; name one with --pair MODEL_A=MODEL_B"
                else:
                    pair = {which: f"{model}:{setting}", other: f"{partner[0]}:{partner[1]}"}
                    why = f"run {other} has no {setting} to pair it with; to compare it with {other}'s {partner[0]} under {partner[1]}: --pair {pair['A']}={pair['B']}"
                out.append(f"{which}'s {run.model_name(model)} under {setting} ({why})")
    return out


def pair_links(family: Family, spec: CompareSpec, a: Side, b: Side, comp: Comparison) -> PairLinks:
    """The viewer's URLs of a comparison's counts (within `viewer_links`): B's units read against
    A's (`pair_url`: the same item, probe, condition and repeat under A's model and setting):
    `shared`, those answered on both sides (`paired_none`, as the family counts an answer), and
    per table row its paired test's `pairs`, `b` and `c`, as the family's `Outcomes.versus` names
    them for the row's measure (`CompareSpec.versus_key`)."""
    other = (a.run, a.model, a.setting)
    rows = []
    for r in records(comp.table):
        key = spec.versus_key(r)
        flt = (family.outcomes.versus(key) or {}) if key is not None else {}
        rows.append({part: pair_url(b.run, b.model, b.setting, other, **f) for part, f in flt.items()})
    return {"shared": pair_url(b.run, b.model, b.setting, other, outcome="paired_none"), "rows": rows}


def records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame's rows, each a dict by column name."""
    return [{str(k): v for k, v in r.items()} for r in table.to_dict("records")]


def compare_table(spec: CompareSpec, table: pd.DataFrame, units: Sequence[Mapping[str, str | None]] = ()) -> Table:
    """The comparison's table as cells: the family's columns, one row per compared measure (its
    cells from the row's values; `units`, each row's viewer URLs (`pair_links`), given to its cells
    as `row["units"]`), each row's class by its Holm p when the family asks."""
    rows_of = records(table)
    for r, u in zip(rows_of, units or [{}] * len(rows_of)):
        r["units"] = u
    rows = tuple(tuple(c.cell(r) for c in spec.table) for r in rows_of)
    classes = tuple(sig_class(r["p_holm"]) for r in rows_of) if spec.significance else ()
    fold, open_up_to = spec.fold or (None, 12)
    return Table("compare", tuple(c.column for c in spec.table), rows, classes, fold, open_up_to)


def paired_test(r: dict[str, Any]) -> Cell:
    """A row's paired test: 'mcnemar_exact: 12 / 4, p 0.046', the discordant counts b / c when the
    test has them, each linked to its units (`row["units"]`: `b`, `c`); '—' for a row with no test."""
    return test_cell(r["test"], r["p_test"], r["test_b"], r["test_c"], r["units"].get("b"), r["units"].get("c"))


def holm_p(r: dict[str, Any]) -> Cell:
    """A row's Holm-adjusted p."""
    return p_value(r["p_holm"])


SIDES_COLUMNS = (
    Column("side", "Side"),
    Column("run", "Run"),
    Column("model", "Model"),
    Column("setting", "Setting"),
    Column("units", "Units", numeric=True),
    Column("answered", "Answered", numeric=True),
)


def sides_table(sides: Sequence[tuple[Side, Side]]) -> Table:
    """Each side's units (its model and setting in its run) and the answered ones, each count linked
    to those units in the viewer (`viewer_links` over the two runs); folded, no row with no sides."""
    rows = []
    for pair in sides:
        for which, s in zip("AB", pair):
            status = s.frame["status"].astype(str) if "status" in s.frame else pd.Series([], dtype=str)
            answered = int(status.isin(ANSWERED).sum())
            rows.append(
                (
                    text(which),
                    text(s.run),
                    text(s.name or s.model),
                    Cell(setting_name(s.setting), s.setting),
                    count(len(s.frame), units_url(s.run, s.model, s.setting)),
                    count(answered, rate_units(s.run, s.model, s.setting)),
                )
            )
    return Table("sides", SIDES_COLUMNS, tuple(rows), fold="Each side's units", open_up_to=0)


def _viewer_line(ra: RunData, rb: RunData, viewer_url: str | None) -> str | None:
    if viewer_url is None:
        return None
    view = "medres view " + " ".join(shlex.quote(str(r.path)) for r in (ra, rb))
    return f"Each side's counts link to its units: start the viewer with {view} (at {viewer_url}) before following a link."


def page_blocks(
    ra: RunData,
    rb: RunData,
    spec: CompareSpec,
    comps: Sequence[Comparison],
    table: pd.DataFrame,
    sides: Table | None = None,
    viewer_line: str | None = None,
    left_out: Sequence[str] = (),
) -> tuple[Block, ...]:
    """The comparison page's parts, in order: what is compared and how many units each pair shares,
    what was not compared, each side's units, the cautions, the figure, the table of paired
    differences (each row's URLs in its comparison's `units["rows"]`) and the methods."""
    names = {"a": ra.name, "b": rb.name}
    blocks: list[Block] = [
        Paragraph(f"Run B `{rb.name}` against run A `{ra.name}`, {spec.intro}", "plain"),
        ItemList(tuple(Cell(f"{c.b} vs {c.a}: ", after=(spec.counts(c),)) for c in comps)),
        *(Paragraph(f"Not compared: {w}", "warn") for w in left_out),
    ]
    if sides is not None and sides.rows:
        blocks += [*([Paragraph(viewer_line, "plain")] if viewer_line else []), sides]
    blocks += [Paragraph(w, "warn") for c in comps if (w := spec.warning(c))]
    panels = spec.figure(table) if not table.empty else ()
    if any(pt.diff is not None and pt.diff == pt.diff for p in panels for pt in p.points):
        blocks.append(DifferenceFigure(spec.figure_name, spec.figure_title.format(**names), spec.figure_caption, panels))
    if table.empty:
        blocks.append(Paragraph(spec.empty, "plain"))
    else:
        blocks.append(compare_table(spec, table, [u for c in comps for u in c.units.get("rows") or [{}] * len(c.table)]))
    return (*blocks, *spec.methods)


def write_compare(
    ra: RunData,
    rb: RunData,
    spec: CompareSpec,
    comps: list[Comparison],
    out: Path,
    sides: Table | None = None,
    viewer_line: str | None = None,
    left_out: Sequence[str] = (),
) -> CompareResult:
    """The comparison page and its Markdown, both from its parts (`page_blocks`: with each side's
    unit counts, `sides_table`, how to start the viewer they link to, and what of either run was not
    compared, `unpaired`), and its table's values as data files."""
    table = pd.concat([c.table for c in comps], ignore_index=True) if comps else pd.DataFrame(columns=list(spec.columns))
    section = Section("compare", "Paired differences", page_blocks(ra, rb, spec, comps, table, sides, viewer_line, left_out))
    md = "# " + spec.heading.format(a=ra.name, b=rb.name) + "\n\n" + blocks_markdown(section.blocks) + "\n"
    paths = finish_compare(ra, rb, section, md, table, out)
    return CompareResult(table, comps, out, paths["html"], paths["md"], paths["csv"], paths["parquet"])


SUMMARY_HEADERS = ["B", "A", "Metric", "A", "B", "B - A", "95% CI", "p (test)", "p (Holm)", "pairs"]


def _level(r: Mapping[str, object], which: str, unit: str) -> str:
    """One side's value in the terminal with its 95% interval and n: a rate in percent
    ('71.2% [65.4, 76.4] n=250'), a mean score signed in its own numbers. A family whose rows hold
    no side n (each side's rate is over the row's paired units) gives the row's pairs as its n."""
    n = r.get(f"{which}_n")
    if num(n) is None:
        n = r.get("n")
    cell = score if unit == "score" else rate
    return cell(r[f"{which}_p"], r.get(f"{which}_lo"), r.get(f"{which}_hi"), n).shown


def summary_rows(table: pd.DataFrame) -> list[list[str]]:
    """The comparison in the terminal: one row per compared metric (`SUMMARY_HEADERS`); a rate in
    percent, a mean score (a row whose `unit` is "score") in its own numbers."""
    rows = []
    for r in records(table):
        unit = "score" if r.get("unit") == "score" else "rate"  # a mean score (e.g. on -1..1), not a share
        lo, hi = num(r["lo"]), num(r["hi"])
        rows.append(
            [
                str(r["b"]),
                str(r["a"]),
                f"{r['condition']} {r['metric']}",
                _level(r, "a", unit),
                _level(r, "b", unit),
                signed(r["diff"], unit),
                "—" if lo is None or hi is None else f"[{signed(lo, unit, False)}, {signed(hi, unit, False)}]",
                fmt_p(num(r["p_test"])),
                fmt_p(num(r["p_holm"])),
                str(r["n"]),
            ]
        )
    return rows


def finish_compare(ra: RunData, rb: RunData, section: Section, markdown: str, table: pd.DataFrame, out: Path) -> dict[str, Path]:
    """Write a comparison page (its section, then both runs' facts), its Markdown, and the table's
    values as CSV / Parquet / Markdown under tables/."""
    out.mkdir(parents=True, exist_ok=True)
    sections = [(section.anchor, section.title, section_html(section)), ("facts", "Run facts", run_facts([ra, rb], redact_url))]
    subtitle = str(macros(__package__, "compare.html.j2").subtitle(ra.name, rb.name))
    page = html_page("medresilience comparison", [subtitle], sections, "Self-contained: no scripts, no network.")
    secrets = secrets_of([ra, rb])
    with atomic_write(out / "compare.html") as fh:
        fh.write(scrub(page, secrets))
    with atomic_write(out / "compare.md") as fh:
        fh.write(scrub(markdown, secrets))
    paths = write_tables({"compare": table}, out / "tables")  # beside, not over, compare.md
    return {"html": out / "compare.html", "md": out / "compare.md", "csv": paths["compare"]["csv"], "parquet": paths["compare"]["parquet"]}
