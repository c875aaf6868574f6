"""The self-contained report's page: its inline CSS, the run facts and the page itself (through the
templates in templates/; every table and cell through the report's parts, `render_html`), and the
viewer links every report's cells carry (`units_url`, `rate_units`, `pair_url`, ...). No script,
no external resource (no fonts, images, stylesheets or favicons fetched)."""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

import numpy as np
import pandas as pd
from markupsafe import Markup

from ..mitigations import NONE
from ..models.names import ModelNames
from ..runtime.errors import ConfigError
from ..score import ANSWERED
from ..view.address import VIEWER_URL
from .parts import Cell, Column, Table, count, dash, text
from .render_html import table_html
from .rundir import names_of
from .templating import render

if TYPE_CHECKING:
    from .rundir import RunData

SETTING_TITLES = {"none": "no mitigation"}

CSS = """
:root { --ink:#1b1f24; --muted:#5b6470; --line:#d9dee5; --bg:#ffffff; --panel:#f5f7fa; --accent:#0072B2; --warn:#D55E00; }
* { box-sizing: border-box; }
html { font-size: 15px; }
body { margin: 0; color: var(--ink); background: var(--bg);
       font-family: "DejaVu Sans", "Liberation Sans", "Helvetica Neue", Arial, sans-serif; line-height: 1.5; }
main { max-width: 1180px; margin: 0 auto; padding: 0 28px 60px; }
header.top { background: #10324a; color: #fff; padding: 26px 0 20px; margin-bottom: 8px; }
header.top .inner { max-width: 1180px; margin: 0 auto; padding: 0 28px; }
header.top h1 { margin: 0 0 4px; font-size: 1.75rem; letter-spacing: .01em; }
header.top p { margin: 2px 0; color: #d6e4ef; font-size: .95rem; }
nav.toc { position: sticky; top: 0; background: rgba(255,255,255,.96); border-bottom: 1px solid var(--line);
          padding: 8px 0; margin-bottom: 14px; z-index: 2; font-size: .92rem; display: flex; flex-wrap: wrap; row-gap: 2px; }
nav.toc a { margin-right: 16px; color: var(--accent); text-decoration: none; white-space: nowrap; }
nav.toc a:hover { text-decoration: underline; }
h2 { font-size: 1.4rem; margin: 34px 0 8px; padding-top: 8px; border-top: 2px solid var(--line); }
section:first-of-type h2 { border-top: none; margin-top: 14px; }
h3 { font-size: 1.1rem; margin: 22px 0 6px; }
p.lead { font-size: 1.05rem; margin: 6px 0 14px; }
p.note, .muted { color: var(--muted); font-size: .9rem; }
.cards { display: grid; grid-template-columns: repeat(3, minmax(0, 1fr)); gap: 12px; margin: 14px 0 10px; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; }
.card .label { font-size: .85rem; color: var(--muted); }
.card .value { font-size: 1.9rem; font-weight: 700; line-height: 1.2; margin: 2px 0; }
.card .sub { font-size: .82rem; color: var(--muted); }
.card.alert .value { color: var(--warn); }
table { border-collapse: collapse; margin: 8px 0 14px; font-size: .86rem; width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: 5px 6px; text-align: left; vertical-align: top; }
th { background: var(--panel); font-weight: 600; }
.nowrap, td:first-child { white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
th.num { white-space: normal; hyphens: auto; }
.wrap { white-space: normal; }
@media (min-width: 1500px) { main, header.top .inner { max-width: 1440px; } }
td .n { color: var(--muted); font-size: .8rem; }
a.units { color: inherit; text-decoration: underline dotted; text-underline-offset: 2px; }
td.num .n { white-space: normal; }
.nb { white-space: nowrap; }
tr.sig td { background: #fff6ec; }
.scroll { overflow-x: auto; }
figure { margin: 14px 0 22px; }
figure svg { max-width: 100%; height: auto; display: block; }
figcaption { color: var(--muted); font-size: .88rem; margin-top: 4px; }
details { margin: 8px 0 12px; border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px; background: #fcfdfe; }
details > summary { cursor: pointer; font-weight: 600; }
pre { white-space: pre-wrap; word-break: break-word; background: var(--panel); padding: 10px; border-radius: 6px; font-size: .82rem; }
code { font-size: .88em; }
.badge { display: inline-block; font-size: .75rem; padding: 1px 7px; border-radius: 10px; background: #e6eef5; color: #10324a; margin-left: 6px; }
.warn { color: var(--warn); }
footer { color: var(--muted); font-size: .85rem; margin-top: 40px; border-top: 1px solid var(--line); padding-top: 10px; }
"""


def isnan(v: object) -> bool:
    return v is None or v is pd.NA or (isinstance(v, (float, np.floating)) and np.isnan(v))


@dataclass(frozen=True)
class ViewerLinks:
    """Where the report's counts link to: the viewer's base URL and each run of the report by its
    name, as (its index among the runs given to the report, its model labels); `repeated`, the runs
    that asked each unit more than once (epochs)."""

    base: str
    runs: dict[str, tuple[int, frozenset[str]]]
    repeated: frozenset[str] = frozenset()
    names: ModelNames = field(default_factory=ModelNames)

    def label(self, run: str, model: str | None) -> str | None:
        """A model's label in its run: a model's name in the report (`model_names`: run-qualified
        where the label is ambiguous among the report's runs) read back to its label."""
        if model is None or model in self.runs[run][1]:
            return model
        return self.names.label_of(model)

    def url(
        self, run: str, model: str | None, setting: str | None, condition: str | Sequence[str] | None, outcome: str | None, facets: Mapping[str, object]
    ) -> str | None:
        if run not in self.runs:
            return None
        index = self.runs[run][0]
        model = self.label(run, model)
        if condition is not None and not isinstance(condition, str):
            condition = ",".join(condition)  # any of several conditions (a rate pooled over them)
        query: dict[str, object] = {"run": index, "model": model, "setting": setting, "condition": condition, "outcome": outcome}
        query.update(facets)
        return f"{self.base.rstrip('/')}/units?" + urlencode({k: v for k, v in query.items() if v is not None and not isnan(v)})


_links: ContextVar[ViewerLinks | None] = ContextVar("viewer_links", default=None)


@contextlib.contextmanager
def viewer_links(base: str | None, runs: Sequence[RunData]) -> Iterator[None]:
    """Within: `units_url` links to the viewer at `base` (None: no links), the runs (RunData) by
    their names in the order given to the report."""
    if base is not None and not re.fullmatch(r"https?://[^\s/?#]+/?", base):
        raise ConfigError("--viewer-url", f"{base!r} is not the viewer's address, e.g. {VIEWER_URL} (or none: no links)")
    links = None
    if base is not None:
        repeated = frozenset(r.name for r in runs if int(((r.config or {}).get("options") or {}).get("epochs") or 1) > 1)
        links = ViewerLinks(base, {r.name: (i, frozenset(r.blocks)) for i, r in enumerate(runs)}, repeated, names_of(runs))
    token = _links.set(links)
    try:
        yield
    finally:
        _links.reset(token)


def units_url(
    run: str, model: str | None, setting: str | None = None, condition: str | Sequence[str] | None = None, outcome: str | None = None, **facets: object
) -> str | None:
    """The viewer's URL of the units behind a count (`/units?run=..&model=..&setting=..&condition=..
    &outcome=..&<facet>=..`; a filter that is None is left out: no model, every model of the run;
    several conditions, any of them), or None when the report is built without viewer links or the
    run is not one of the report's."""
    links = _links.get()
    return None if links is None else links.url(run, model, setting, condition, outcome, facets)


def unit_url(run: str, unit_id: str) -> str | None:
    """The viewer's page of one unit of a run (`/unit/<run index>/<unit id>`), or None when the
    report is built without viewer links or the run is not one of the report's."""
    links = _links.get()
    if links is None or run not in links.runs:
        return None
    return f"{links.base.rstrip('/')}/unit/{links.runs[run][0]}/{quote(unit_id, safe='')}"


def pair_url(
    run: str,
    model: str,
    setting: str,
    other: tuple[str, str, str],
    condition: str | Sequence[str] | None = None,
    outcome: str | None = None,
    **filters: object,
) -> str | None:
    """The viewer's URL of the units of (run, model, setting) read against their counterparts in
    `other`, (run, model, setting): the same item, probe, condition and repeat there (`versus=`,
    with `versus_model` and `versus_setting` where they differ from the unit's model and none), as
    `filters` (condition, outcome, facets) select them; None when a run is not the report's. The
    same model under none in the same run is the index's own reading (no `versus`)."""
    links = _links.get()
    o_run, o_name, o_setting = other
    if links is None or o_run not in links.runs or run not in links.runs:
        return None
    o_model, same = links.label(o_run, o_name), links.label(run, model)
    if (o_run, o_model, o_setting) != (run, same, NONE):
        filters["versus"] = links.runs[o_run][0]
        if o_model != same:
            filters["versus_model"] = o_model
        if o_setting != NONE:
            filters["versus_setting"] = o_setting
    return units_url(run, model, setting, condition, outcome, **filters)


def items_url(run: str, model: str | None, setting: str | None, condition: str) -> str | None:
    """The viewer's URL of the units behind an items count: the units of `condition`, which a family
    plans once per item (misleading's and noise's clean units); None when the run asked each unit
    more than once (its units of the condition are the items times the repeats)."""
    links = _links.get()
    if links is None or run in links.repeated:
        return None
    return units_url(run, model, setting, condition)


#: the states of the units a rate counts when no outcome names them: the answered ones (read,
#: unread or cut; an error, an unscored or a missing unit enters no rate)
ANSWERED_STATES = ",".join(ANSWERED)


def rate_units(
    run: str, model: str | None, setting: str | None, condition: str | Sequence[str] | None = None, outcome: str | None = None, **filters: object
) -> str | None:
    """The viewer's URL of the units a rate counts: with an outcome (or a score or state among
    `filters`), the units it names (a rate's k); else the answered units of the condition (its n)."""
    if outcome is None and "score" not in filters and "state" not in filters:
        filters["state"] = ANSWERED_STATES
    return units_url(run, model, setting, condition, outcome, **filters)


def sig_class(p_holm: float | None, alpha: float = 0.05) -> str:
    """The row class of a row whose Holm-adjusted p is below alpha."""
    return "sig" if p_holm is not None and not isnan(p_holm) and float(p_holm) < alpha else ""


def setting_name(s: str) -> str:
    return SETTING_TITLES.get(s, s)


def sent_text(params: Mapping[str, object]) -> str:
    """Decoding parameters as sent, 'max_tokens=1024, temperature=0.0' (sorted by name)."""
    return ", ".join(f"{k}={json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v}" for k, v in sorted(params.items())) or "—"


def shown_path(path: object, run_dir: object) -> str:
    """A path as a reader can use it: relative to the working directory when it lies below it,
    else relative to the run directory; a relative path as recorded."""
    if not path:
        return "—"
    p = Path(str(path))
    if not p.is_absolute():
        return str(p)
    try:
        return str(p.relative_to(Path.cwd().resolve()))
    except ValueError:
        return os.path.relpath(p, Path(str(run_dir)).resolve())


def _columns(headers: Sequence[str], numeric: Sequence[int] = ()) -> tuple[Column, ...]:
    return tuple(Column(f"c{i}", h, numeric=i in numeric) for i, h in enumerate(headers))


def _model_table(run: RunData, redact_url: Callable[[str], str]) -> Markup:
    """The run's models: endpoints (credentials masked), the key's variable, the decoding the spec asks
    (when the stored requests cannot say what was sent), the client's limits and the price."""
    mrows = []
    for m in (run.config or {}).get("models", []):
        urls = ", ".join(redact_url(u) for u in m.get("base_urls") or []) or ("embedded (local)" if m.get("kind") == "embedded" else "—")
        dec = f"temperature={m.get('temperature')}, top_p={m.get('top_p')}, max_tokens={m.get('max_tokens')}, seed={m.get('seed')}"
        if m.get("extra_body"):
            dec += f", extra_body={json.dumps(m.get('extra_body'), sort_keys=True)}"
        price = (
            "—" if m.get("price_input") is None and m.get("price_output") is None else f"${m.get('price_input') or 0}/M in, ${m.get('price_output') or 0}/M out"
        )
        row = [text(m.get("label")), text(f"{m.get('kind')}:{m.get('model')}"), text(urls), text(m.get("api_key_env") or "—")]
        # what the spec asks is shown only when the stored requests cannot say what was sent (a
        # family or a judge sets its own budget, so the spec's max_tokens is not what was sent)
        row += [] if run.sent else [text(dec)]
        row += [text(f"concurrency={m.get('concurrency')}, rpm={m.get('rpm')}, timeout={m.get('timeout')}s, retries={m.get('max_retries')}"), text(price)]
        mrows.append(tuple(row))
    if not mrows:
        return Markup("")
    headers = ["Label", "Model", "Endpoints", "API key variable", *([] if run.sent else ["Decoding (model spec)"]), "Client", "Price"]
    return table_html(Table("models", _columns(headers), tuple(mrows)))


def _units_table(models: Mapping[str, Mapping[str, Mapping[str, object]]]) -> Markup:
    """Units, errors, invalid, truncated and missing replies per model and setting (`models`: the
    results' model -> setting -> block)."""
    crow = []
    for model, settings in models.items():
        for setting, block in settings.items():
            c = block.get("counts")
            c = c if isinstance(c, Mapping) else {}
            crow.append(
                (
                    text(model),
                    Cell(setting_name(setting), setting),
                    *(count(c[k]) if k in c else dash() for k in ("units", "errors", "invalid", "truncated", "missing")),
                )
            )
    if not crow:
        return Markup("")
    headers = ["Model", "Setting", "Units", "Errors", "Invalid", "Truncated", "Missing (not run)"]
    return table_html(Table("units", _columns(headers, range(2, 7)), tuple(crow)))


def _usage_table(usage: Mapping[str, Mapping[str, object]]) -> Markup:
    """Calls, errors, tokens and cost per model: the replies made through a batch and live, what
    they cost at the price each was made at, and what every reply would have cost live or as a batch."""
    if not usage:
        return Markup("")

    def money(v: object) -> Cell:
        return dash() if not isinstance(v, (int, float)) else Cell(f"${v:.4f}", float(v))

    def tokens(v: object) -> Cell:  # a count of tokens, 0 where none was recorded
        n = int(v) if isinstance(v, (int, float)) else 0
        return Cell(f"{n:,}", n)

    urows = tuple(
        (
            text(m),
            text(u.get("calls")),
            text(u.get("errors")),
            text(u.get("batch_calls", 0)),
            text(u.get("live_calls", "—")),
            tokens(u.get("prompt_tokens")),
            tokens(u.get("completion_tokens")),
            money(u.get("cost")),
            money(u.get("cost_live")),
            money(u.get("cost_batch")),
        )
        for m, u in usage.items()
    )
    headers = [
        "Model",
        "Calls",
        "Errors",
        "Batch replies",
        "Live replies",
        "Prompt tokens",
        "Completion tokens",
        "Cost as made",
        "Cost all live",
        "Cost all as a batch",
    ]
    return table_html(Table("usage", _columns(headers, range(1, 10)), urows))


def _facts(run: RunData, redact_url: Callable[[str], str]) -> dict[str, object]:
    """What the run facts template shows of one run; tables come as HTML."""
    cfg = run.config or {}
    suite = cfg.get("suite")
    sent = Markup("")
    if run.sent:
        srows = tuple((text(r["kind"]), text(r["model"]), text(sent_text(r["params"])), count(r["calls"])) for r in run.sent)
        sent = table_html(Table("sent", _columns(["Call", "Model", "Parameters (from the stored requests)", "Requests"], [3]), srows))
    return {
        "name": run.name,
        "path": run.path,
        "source": "recomputed from the store" if run.source == "store" else "read from results.json",
        "medresilience": cfg.get("medresilience", "?"),
        "python": cfg.get("python", "?"),
        "notes": run.notes,
        "models": _model_table(run, redact_url),
        "sent": sent,
        "options": json.dumps(cfg["options"], sort_keys=True) if cfg.get("options") else "",
        "units": _units_table(run.results.get("models") or {}),
        "counts": run.counts,
        "usage": _usage_table(run.results.get("usage") or {}),
        "last_execution": run.last_execution,
        "prompts": cfg.get("prompts") or {},
        "suite": suite,
        "suite_path": shown_path(suite.get("path"), run.path) if suite else "",
        "manifest": json.dumps({**suite, "path": shown_path(suite.get("path"), run.path)}, indent=2, sort_keys=True) if suite else "",
    }


def run_facts(runs: Sequence[RunData], redact_url: Callable[[str], str]) -> str:
    """Each run's facts: where it is, what ran and with what, its units, counts, cost, prompts and suite."""
    return render(__package__, "run_facts.html.j2", runs=[_facts(run, redact_url) for run in runs])


def page(title: str, subtitle: Sequence[str], sections: Sequence[tuple[str, str, str]], footer: str) -> str:
    """sections: (id, heading, body html); subtitle lines and the footer are HTML. The first section
    is shown without a rule above it."""
    return render(
        __package__,
        "page.html.j2",
        title=title,
        subtitle=[Markup(s) for s in subtitle],
        sections=[(sid, h, Markup(b)) for sid, h, b in sections],
        footer=Markup(footer),
        css=Markup(CSS),
    )
