"""The viewer's pages rendered from the query layer, for the app and for the static export alike:
the list of runs, one filtered page of a run's units, one unit's evidence."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from jinja2 import Environment

from .pages import CSP_META, CSS, Links
from .query import OUTCOME_TITLES, VIEW_STATES, RunView, UnitQuery, unit_evidence, units_page


def blank(run: int) -> UnitQuery:
    """The unfiltered first page of a run."""
    return UnitQuery(run=run)


def refined(q: UnitQuery, dim: str, value: Any) -> UnitQuery:
    """The filter with one more condition (a count's link): page 1 again."""
    if dim == "outcome":
        return replace(q, outcome=tuple(dict.fromkeys((*q.outcome, value))), page=1)
    if dim in ("model", "setting", "score", "reason"):
        return replace(q, page=1, **{dim: value})
    if dim == "state":
        return replace(q, page=1, state=(value,))
    if dim == "condition":
        return replace(q, page=1, condition=(value,))
    return replace(q, facets=(*((k, v) for k, v in q.facets if k != dim), (dim, str(value))), page=1)


def describe(q: UnitQuery, rv: RunView | None = None) -> str:
    """The filter in words (for the page's heading); a model by its label, and its name over the
    runs served where that differs (`RunView.model_name`: `label [run]`)."""
    parts = [f"{k} = {v}" for k, v in (("model", q.model), ("setting", q.setting)) if v is not None]
    if q.model is not None and rv is not None and rv.model_name(q.model) != str(q.model):
        parts[0] += f" (shown as {rv.model_name(q.model)} over these runs)"
    if q.condition:
        parts.append(f"condition {' or '.join(q.condition)}")
    parts += [f"{k} = {v}" for k, v in q.facets]
    if q.score is not None:
        parts.append(f"score = {q.score}")
    if q.state:
        parts.append(f"state {' or '.join(q.state)}")
    if q.reason is not None:
        parts.append(f"unscored for the reason {q.reason!r}")
    if q.facets and q.scope == "item":
        parts.append("every unit of the items with those facets")
    parts += [f"outcome {o}" for o in q.outcome]
    if q.versus is not None:
        parts.append(f"read against run {q.versus}'s units of {q.versus_model or 'the same model'} under {q.versus_setting or 'none'}")
    if q.q:
        parts.append(f"text contains {q.q!r}")
    return ", ".join(parts)


class Renderer:
    """The pages of a set of runs, linked by `links`."""

    def __init__(self, env: Environment, runs: Sequence[RunView], links: Links, cap_note: str | None = None):
        self.env, self.runs, self.links, self.cap_note = env, runs, links, cap_note

    def _page(self, template: str, **ctx: object) -> str:
        return self.env.get_template(template).render(
            css=CSS,
            csp_meta=CSP_META if self.links.static else None,
            runs=self.runs,
            links=self.links,
            blank=blank,
            refined=refined,
            cap_note=self.cap_note,
            outcome_titles=OUTCOME_TITLES,
            states=VIEW_STATES,
            **ctx,
        )

    def index(self) -> str:
        return self._page("index.html")

    def message(self, heading: str, message: str) -> str:
        return self._page("message.html", heading=heading, message=message)

    def units(self, q: UnitQuery, page: Mapping[str, object] | None = None) -> str:
        rv = self.runs[q.run]
        return self._page("units.html", rv=rv, q=q, page=page or units_page(rv, q), filters_text=describe(q, rv))

    def unit(self, run: int, unit_id: str, ev: Mapping[str, object] | None = None) -> str | None:
        rv = self.runs[run]
        ev = ev or unit_evidence(rv, unit_id)
        return None if ev is None else self._page("unit.html", rv=rv, ev=ev)
