"""Outputs follow the umask (a report can be shared or served), whatever temporary file or folder
they were written through; a file holding a secret stays private. Each case runs the real writers
under a set umask and reads the modes back."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from medresilience.models.spec import parse_model_spec
from medresilience.run.bundled_suite import sample_suite
from medresilience.run.evaluation import evaluate
from medresilience.run.runner import EvalOptions
from medresilience.runtime.fileio import atomic_write, umask
from medresilience.testing.stub import StubServer


@pytest.fixture(params=[0o022, 0o027, 0o002])
def set_umask(request):
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def _modes(root: Path) -> dict[str, int]:
    out = {".": stat.S_IMODE(root.stat().st_mode)}
    for p in root.rglob("*"):
        out[str(p.relative_to(root))] = stat.S_IMODE(p.lstat().st_mode)
    return out


def test_the_umask_is_read_without_changing_it(set_umask):
    assert umask() == set_umask and umask() == set_umask


def test_a_run_its_report_and_a_suite_follow_the_umask(tmp_path, set_umask):
    suite = sample_suite()
    suite.save(tmp_path / "suite")
    with StubServer() as srv:
        evaluate(suite, [parse_model_spec(f"openai:m,base_url={srv.base_url}")], tmp_path / "run", EvalOptions(limit=2))
    from medresilience.report import build_report
    from medresilience.view.export import export_site
    from medresilience.view.query import close_all, open_runs

    build_report([tmp_path / "run"], tmp_path / "report")
    runs = open_runs([tmp_path / "run"])
    try:
        export_site(runs, tmp_path / "site", max_units=5)
    finally:
        close_all(runs)
    with atomic_write(tmp_path / "one.txt") as fh:
        fh.write("x")
    modes = {f"{top}/{k}": v for top in ("suite", "run", "report", "site") for k, v in _modes(tmp_path / top).items()}
    modes["one.txt"] = stat.S_IMODE((tmp_path / "one.txt").stat().st_mode)
    assert len(modes) > 10
    want_file, want_dir = 0o666 & ~set_umask, 0o777 & ~set_umask
    want_db = 0o644 & ~set_umask  # SQLite's own rule for the files it creates

    def want(name: str) -> int:
        if (tmp_path / name.replace("/.", "")).is_dir():
            return want_dir
        return want_db if ".sqlite" in name else want_file

    wrong = {name: oct(mode) for name, mode in modes.items() if mode != want(name)}
    assert wrong == {}


def test_a_private_file_is_0600_whatever_the_umask(tmp_path, set_umask):
    with atomic_write(tmp_path / "secret.json", private=True) as fh:
        fh.write("{}")
    assert stat.S_IMODE((tmp_path / "secret.json").stat().st_mode) == 0o600
