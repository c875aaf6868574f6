"""A finished run on read-only storage is read (issue #49, item 11): `medres report`, `export`,
`view --export` and `compare` each read the run and write their outputs to --out.

What this proves, and how: the tests run as root, and root ignores a directory's write bits, so
`chmod -R a-w` would prove nothing. Instead each command runs inside a new user and mount
namespace (`unshare -rm`, no privileges needed) where the run directory is bind-mounted
read-only: there any write into it, even by root, fails with EROFS, exactly as on a read-only
disk or share. The script first shows that a write into the run fails, then runs the commands. The
test is skipped, saying why, where such namespaces are not allowed."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROOF = "write refused: read-only"


def _namespaces_work(tmp: Path) -> str | None:
    """None when a read-only bind mount can be made here, else why not."""
    if shutil.which("unshare") is None:
        return "no unshare command"
    d = tmp / "probe"
    d.mkdir()
    script = f"mount --bind {d} {d} && mount -o remount,bind,ro {d} && ! touch {d}/x 2>/dev/null"
    p = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True)
    return None if p.returncode == 0 else f"cannot make a read-only bind mount in a user namespace: {p.stderr.strip()}"


def _on_read_only(run: Path, commands: list[list[str]]) -> list[subprocess.CompletedProcess]:
    """Run each `medres` command with `run` mounted read-only (see the module's docstring); the
    first line of each output says the write probe was refused."""
    out = []
    for args in commands:
        cmd = shlex.join([sys.executable, "-m", "medresilience.cli", *args])
        script = (
            f"mount --bind {run} {run} && mount -o remount,bind,ro {run} && "
            f"if touch {run}/probe 2>/dev/null; then echo 'write allowed'; exit 9; fi; echo '{PROOF}'; exec {cmd}"
        )
        out.append(subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=300))
    return out


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, oracle_run) -> Path:
    """The shared oracle run, where this machine lets a user namespace mount it read-only."""
    why = _namespaces_work(tmp_path_factory.mktemp("read-only-run"))
    if why:
        pytest.skip(why)
    return oracle_run


def test_the_readers_work_on_a_read_only_run(run_dir, tmp_path):
    before = sorted(p.name for p in run_dir.iterdir())
    out = tmp_path / "out"
    out.mkdir()
    run = str(run_dir)
    commands = [
        ["report", run, "--out", str(out / "report")],
        ["export", run, "--format", "jsonl", "--out", str(out / "units.jsonl")],
        ["view", run, "--export", str(out / "site")],
        ["compare", run, run, "--out", str(out / "compare")],
    ]
    for args, p in zip(commands, _on_read_only(run_dir, commands), strict=True):
        assert p.stdout.startswith(PROOF), (args, p.stdout, p.stderr)
        assert p.returncode == 0, (args, p.stdout, p.stderr)
    assert (out / "report" / "report.html").is_file() and (out / "site" / "index.html").is_file()
    assert len((out / "units.jsonl").read_text().splitlines()) == 12 and (out / "compare" / "compare.html").is_file()
    assert sorted(p.name for p in run_dir.iterdir()) == before  # and nothing was left beside the store


def test_a_default_output_inside_a_read_only_run_says_to_give_out(run_dir):
    [p] = _on_read_only(run_dir, [["report", str(run_dir)]])
    assert p.stdout.startswith(PROOF)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and "--out" in lines[0] and "Read-only file system" in lines[0], p.stderr
