"""The folders the README's (and the docs') commands write into the working directory (runs/, suites/, reports/,
review/) are ignored by git in a checkout, so following the README leaves `git status` clean."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from conftest import ROOT


def _ignored(path: str) -> bool:
    return subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", "--no-index", path]).returncode == 0


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
def test_the_readmes_output_folders_are_ignored():
    readme = "\n".join(p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))] if p.is_file())
    tops = {m.split("/")[0] for m in re.findall(r"--out ([A-Za-z0-9_.-]+/[A-Za-z0-9_./-]*)", readme)}
    kept = {"runs", "suites", "reports", "review", "reviews", "abbreviations"}  # the folders the main commands write into
    assert {"runs", "suites"} <= tops
    for top in sorted(kept):
        assert _ignored(f"{top}/x"), top
    assert not _ignored("src/medresilience/__init__.py") and not _ignored("examples/my_questions.csv")
