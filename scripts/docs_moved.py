"""Check that a documentation move lost nothing: every line of an older README (by git revision or
path) is found, whole, in the README or a page under docs/, and every section heading's text
begins a heading or a line somewhere. Prints, per section of the old README, how many of its lines were
found and which were not; exits 1 if any line is missing. A line edited on purpose in the move (a
cross-reference that now names another page) is listed too: read the list.

    .venv/bin/python scripts/docs_moved.py REV        # e.g. main, or a commit before the move
    .venv/bin/python scripts/docs_moved.py OLD_README.md
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _norm(line: str) -> str:
    """A line as compared: heading marks, spacing and a closing colon (a lead-in that became a
    heading) left out."""
    return " ".join(line.strip().lstrip("#").split()).removesuffix(":")


def old_readme(ref: str) -> str:
    path = Path(ref)
    if path.is_file():
        return path.read_text(encoding="utf-8")
    return subprocess.run(["git", "show", f"{ref}:README.md"], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def new_lines() -> set[str]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return {_norm(ln) for p in pages for ln in p.read_text(encoding="utf-8").splitlines()}


def sections(text: str) -> list[tuple[str, list[str]]]:
    """(heading, lines) of each section, headings outside code blocks only."""
    out: list[tuple[str, list[str]]] = [("(top)", [])]
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and re.match(r"#{1,4} ", line):
            out.append((line, []))
        out[-1][1].append(line)
    return out


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    have = new_lines()
    missing_total = 0
    for heading, lines in sections(old_readme(sys.argv[1])):
        wanted = [ln for ln in lines if _norm(ln) and _norm(ln) != "```"]
        # a heading may have become part of a page title ("Usage" -> "Usage: models, ...")
        missing = [ln for ln in wanted if _norm(ln) not in have and not (ln.startswith("#") and any(h.startswith(_norm(ln)) for h in have))]
        missing_total += len(missing)
        print(f"{len(wanted) - len(missing):4d}/{len(wanted):<4d} {heading}")
        for ln in missing:
            print(f"          missing: {ln}")
    print("nothing lost" if not missing_total else f"{missing_total} lines not found")
    return 1 if missing_total else 0


if __name__ == "__main__":
    sys.exit(main())
