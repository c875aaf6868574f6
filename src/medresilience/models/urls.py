"""Endpoints as they may be stored or shown: no user:password@, no query string. The one place
this rule lives; the client, the model spec's public form and the report use it."""

from __future__ import annotations

import re

_URL_USERINFO = re.compile(r"(?<=://)[^/@\s]*@")
_URL_QUERY = re.compile(r"\?.*$")


def redact_url(url: str) -> str:
    url = _URL_USERINFO.sub("***@", str(url))
    return _URL_QUERY.sub("?***", url) if "?" in url else url
