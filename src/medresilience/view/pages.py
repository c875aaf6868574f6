"""The viewer's pages: Jinja2 templates shipped as package data in view/templates/ (autoescaped:
every text from a suite, a run or a model is shown as text) and its one stylesheet
(templates/view.css), inlined and allowed by its hash in the Content-Security-Policy. No script,
no external resource; filters are a plain GET form, so every filtered page has a stable URL."""

from __future__ import annotations

import base64
import hashlib
from importlib import resources
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape

from .query import UnitQuery

CSS = (resources.files(__package__) / "templates" / "view.css").read_text(encoding="utf-8")
CSS_HASH = "sha256-" + base64.b64encode(hashlib.sha256(CSS.encode("utf-8")).digest()).decode("ascii")
#: no script at all, the one inline stylesheet by its hash, forms only to this site, never framed
CSP = f"default-src 'none'; style-src '{CSS_HASH}'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
#: the same policy in a static copy's <meta> (no header there; frame-ancestors is a header's only)
CSP_META = f"default-src 'none'; style-src '{CSS_HASH}'; form-action 'none'; base-uri 'none'"


class Links:
    """The served URLs: `/units?<filter>` and `/unit/<run>/<unit id>` (the stable URL scheme report
    cells link to), and the JSON API of a filter."""

    static = False

    def units(self, q: UnitQuery, page: int | None = None, **changes: object) -> str:
        return q.url(page, **changes)

    def unit(self, run: int, unit_id: str) -> str:
        return f"/unit/{run}/{quote(unit_id, safe='')}"

    def api(self, q: UnitQuery) -> str:
        return "/api/units?" + urlencode(q.params())

    def home(self) -> str:
        return "/"


def environment() -> Environment:
    """The pages' templates, every value autoescaped (only the stylesheet is marked safe)."""
    return Environment(loader=PackageLoader(__package__, "templates"), autoescape=select_autoescape(default=True, default_for_string=True))
