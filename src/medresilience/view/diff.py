"""The stressed prompt marked against the clean prompt of the same item: a word-level diff whose
inserted runs are what the stress added (an injected sentence, red herrings, abbreviations, a
rewrite) and whose deleted runs are what it took away."""

from __future__ import annotations

import difflib
import re
from typing import Any

_TOKENS = re.compile(r"\s+|\w+|[^\w\s]")
#: above this many words on either side the diff is not computed (the text is shown whole)
MAX_TOKENS = 20_000


def marked(clean: str, stressed: str) -> list[tuple[str, str]] | None:
    """(kind, text) runs of the stressed text, kind `same`, `added` or `removed` (text of the
    clean prompt that is gone); None when a side is too long to diff."""
    a, b = _TOKENS.findall(clean), _TOKENS.findall(stressed)
    if max(len(a), len(b)) > MAX_TOKENS:
        return None
    out: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(("same", "".join(b[j1:j2])))
            continue
        if i2 > i1:
            out.append(("removed", "".join(a[i1:i2])))
        if j2 > j1:
            out.append(("added", "".join(b[j1:j2])))
    return out


def marked_messages(clean: list[dict[str, Any]] | None, stressed: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Each message of the stressed request with its `runs` against the clean request's message at
    the same place and role (`runs` None: nothing to compare it with)."""
    out = []
    for i, m in enumerate(stressed or []):
        text = str(m.get("content") if isinstance(m, dict) else m)
        role = str(m.get("role", "")) if isinstance(m, dict) else ""
        other = clean[i] if clean and i < len(clean) and isinstance(clean[i], dict) and clean[i].get("role") == role else None
        runs = None if other is None else marked(str(other.get("content")), text)
        out.append({"role": role, "content": text, "runs": runs, "changed": bool(runs and any(k != "same" for k, _ in runs))})
    return out
