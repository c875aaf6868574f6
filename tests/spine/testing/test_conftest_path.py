"""`import conftest` names this suite's root conftest from the path alone, as a child process started
by spawn resolves it (it has no pytest to preload the module): a test module pickled into such a child
imports its helpers from the root conftest, never from a folder's own conftest."""

from __future__ import annotations

import subprocess
import sys
from importlib.machinery import PathFinder

from conftest import ROOT, TESTS


def test_the_path_resolves_conftest_to_the_root_one():
    spec = PathFinder.find_spec("conftest", sys.path)
    assert spec is not None and spec.origin == str(TESTS / "conftest.py")
    folders = [d for d in TESTS.rglob("conftest.py") if d.parent != TESTS]
    assert folders, "the check means something only while a folder has its own conftest"
    assert all((d.parent / "__init__.py").exists() for d in folders), "a folder with its own conftest must be a package"


def test_a_fresh_interpreter_on_this_path_imports_the_root_conftest():
    code = "import sys; sys.path[:0] = sys.argv[1:]; import conftest; print(conftest.__file__)"
    out = subprocess.run([sys.executable, "-c", code, *sys.path], capture_output=True, text=True, cwd=ROOT, timeout=120, check=True)
    assert out.stdout.strip() == str(TESTS / "conftest.py")
