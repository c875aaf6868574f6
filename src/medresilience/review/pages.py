"""The review app's pages: Jinja2 templates shipped as package data in review/templates/
(autoescaped: every text from a suite, a run or a reviewer is shown as text) and its one
stylesheet (templates/review.css), inlined and allowed by its hash in the Content-Security-Policy.
No script, no external resource; plain forms work with the keyboard."""

from __future__ import annotations

import base64
import hashlib
from importlib import resources

from jinja2 import Environment, PackageLoader, select_autoescape

CSS = (resources.files(__package__) / "templates" / "review.css").read_text(encoding="utf-8")

CSS_HASH = "sha256-" + base64.b64encode(hashlib.sha256(CSS.encode("utf-8")).digest()).decode("ascii")

#: no script at all, the one inline stylesheet by its hash, forms post only here, never framed
CSP = f"default-src 'none'; style-src '{CSS_HASH}'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"


def environment() -> Environment:
    """The pages' templates, every value autoescaped (only the stylesheet is marked safe)."""
    return Environment(
        loader=PackageLoader(__package__, "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=False,
        lstrip_blocks=False,
    )
