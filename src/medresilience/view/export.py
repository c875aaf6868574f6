"""`medres view RUN ... --export DIR`: the viewer's pages as static files for sharing without a
server: the list of runs; per run, the paged list of its units and one paged list per outcome
that has units (not the pairs a test counts, nor the readings against none); and the page of every unit those lists show. Files are flat in DIR, named by run,
list and page (units-r0-all-p1.html, units-r0-flip-p1.html) and by a hash of the unit id
(unit-r0-<hash>.html), linked relatively, so DIR opens from disk or any static host.

A size cap (`max_units` per list) keeps a large run shareable: each list stops at the pages that
hold its first `max_units` units (so a run writes at most `max_units` unit pages per list), and
every page says so when it applies; a link to a unit or page beyond the cap leads to a page that
explains it. The export is written beside DIR and moved
into place whole: an interrupted export leaves no half-written DIR."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..runtime.errors import ConfigError, InputError
from ..runtime.fileio import temp_dir
from .pages import Links, environment
from .query import PAGE_SIZE, PAIR_OUTCOMES, VERSUS_OUTCOMES, RunView, UnitQuery, unit_evidence, units_page
from .render import Renderer

MARKER = ".medres-view-export"
NOT_EXPORTED = "not-exported.html"


def unit_file(run: int, unit_id: str) -> str:
    return f"unit-r{run}-{hashlib.sha256(unit_id.encode('utf-8')).hexdigest()[:20]}.html"


def list_file(q: UnitQuery, page: int) -> str:
    return f"units-r{q.run}-{q.outcome[0] if q.outcome else 'all'}-p{page}.html"


@dataclass
class StaticLinks(Links):
    """Relative links between the exported files; a unit or list page not exported links to the
    note that explains the cap."""

    units_done: set[tuple[int, str]] = field(default_factory=set)
    lists_done: set[str] = field(default_factory=set)
    static = True

    def units(self, q: UnitQuery, page: int | None = None, **changes: Any) -> str:  # UnitQuery's fields, as a template names them
        q = replace(q, **changes) if changes else q
        name = list_file(q, q.page if page is None else page)
        return name if name in self.lists_done else NOT_EXPORTED

    def unit(self, run: int, unit_id: str) -> str:
        return unit_file(run, unit_id) if (run, unit_id) in self.units_done else NOT_EXPORTED

    def api(self, q: UnitQuery) -> str:
        return NOT_EXPORTED

    def home(self) -> str:
        return "index.html"


@dataclass
class ExportResult:
    out: Path
    files: int
    units: int
    capped: list[str]


def _lists(rv: RunView, max_units: int, size: int) -> list[tuple[UnitQuery, int, int]]:
    """(filter, pages written, units it keeps) of each exported list of a run."""
    out = []
    first = units_page(rv, UnitQuery(run=rv.index), size)
    # no list of the pairs a test counts, nor of the units read against none (the report's
    # trade-off links them in the served viewer)
    listed = [o for o, n in first["counts"]["outcome"].items() if n and o not in PAIR_OUTCOMES and o not in VERSUS_OUTCOMES]
    queries = [UnitQuery(run=rv.index)] + [UnitQuery(run=rv.index, outcome=(o,)) for o in listed]
    for q in queries:
        total = first["total"] if not q.outcome else first["counts"]["outcome"][q.outcome[0]]
        out.append((q, min(-(-total // size), -(-max_units // size)) or 1, total))
    return out


def export_site(runs: Sequence[RunView], out: Path | str, max_units: int = 1000, size: int = PAGE_SIZE) -> ExportResult:
    """Write the static pages of `runs` into `out` (a new directory, or an earlier export, which is
    replaced). InputError when `out` is another non-empty directory, a file or a symbolic link."""
    if max_units < 1:
        raise ConfigError("--max-units", f"must be 1 or more, not {max_units}")
    out = Path(out)
    if out.is_symlink():  # replacing it would put the pages where the link was, not where it points
        raise InputError(out, None, None, "is a symbolic link; not replaced (give the directory itself, or a new one)")
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / MARKER).exists())):
        raise InputError(out, None, None, "exists and is not an earlier viewer export (choose a new directory)")
    links = StaticLinks()
    plan = {rv.index: _lists(rv, max_units, size) for rv in runs}
    capped = []
    for rv in runs:
        for q, pages, total in plan[rv.index]:
            links.lists_done.update(list_file(q, p) for p in range(1, pages + 1))
            if pages * size < total:
                capped.append(f"run {rv.index} ({rv.name}), {'outcome ' + q.outcome[0] if q.outcome else 'all units'}: {min(total, pages * size)} of {total}")
    note = f"Capped: each list stops at the page holding its {max_units}th unit (--max-units): " + "; ".join(capped) + "." if capped else None
    pages_r = Renderer(environment(), runs, links, cap_note=note)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_dir(out.parent, f".{out.name}.")
    try:
        files = _write(runs, plan, links, pages_r, tmp, size, max_units)
        (tmp / MARKER).write_text("written by medres view --export\n", encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return ExportResult(out, files, len(links.units_done), capped)


def _write(runs: Sequence[RunView], plan: dict, links: StaticLinks, pages_r: Renderer, tmp: Path, size: int, max_units: int) -> int:
    files = 0
    listed: dict[int, list[str]] = {}
    # a unit's page is written when an exported list page shows it
    for rv in runs:
        order = listed.setdefault(rv.index, [])
        for q, pages, _total in plan[rv.index]:
            for p in range(1, pages + 1):
                for u in units_page(rv, replace(q, page=p), size)["units"]:
                    if (rv.index, u["unit_id"]) not in links.units_done:
                        order.append(u["unit_id"])
                        links.units_done.add((rv.index, u["unit_id"]))
    for rv in runs:
        for q, pages, _total in plan[rv.index]:
            for p in range(1, pages + 1):
                (tmp / list_file(q, p)).write_text(pages_r.units(replace(q, page=p), units_page(rv, replace(q, page=p), size)), encoding="utf-8")
                files += 1
        for uid in listed[rv.index]:
            html = pages_r.unit(rv.index, uid, unit_evidence(rv, uid))
            if html is not None:
                (tmp / unit_file(rv.index, uid)).write_text(html, encoding="utf-8")
                files += 1
    (tmp / "index.html").write_text(pages_r.index(), encoding="utf-8")
    (tmp / NOT_EXPORTED).write_text(
        pages_r.message(
            "Not in this copy",
            f"This page was left out of the static copy: it holds a filter, a search or a unit beyond the size cap ({max_units} units per "
            "list). Serve the runs with medres view RUN ... to see every unit.",
        ),
        encoding="utf-8",
    )
    return files + 2
