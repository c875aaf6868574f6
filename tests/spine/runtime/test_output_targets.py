"""Where an output may go (issue #49, item 8): a path that exists and is not a regular file (a
symbolic link, a named pipe, a device, a directory) is refused with one line naming it and left as
it was, and no temporary file is left behind on any failure: fileio's atomic writer (every file
the toolkit writes goes through it), `medres export` in each format, the static viewer export and
the corpus index. The nodes are real (os.mkfifo, os.mknod, os.symlink) in the test's directory."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from medresilience.cli import app as cli_app
from medresilience.runtime.fileio import OutputError, atomic_write, write_parquet_batches

runner = CliRunner()


def _nodes(d: Path) -> dict[str, int]:
    """Each entry of `d` and its file type (lstat: a link is a link)."""
    return {p.name: stat.S_IFMT(os.lstat(p).st_mode) for p in d.iterdir()}


def _targets(d: Path, suffix: str = "") -> dict[str, Path]:
    """A symbolic link to a regular file, a dangling one, a named pipe, a directory and, where this
    process may make one, a character device (the null device's numbers, in the test's directory)."""
    d.mkdir()
    (d / "real.txt").write_text("keep me\n")
    out = {k: d / f"{k}{suffix}" for k in ("link", "dangling", "fifo", "dir")}
    os.symlink(d / "real.txt", out["link"])
    os.symlink(d / "nowhere", out["dangling"])
    os.mkfifo(out["fifo"])
    out["dir"].mkdir()
    try:
        os.mknod(d / f"dev{suffix}", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        out["dev"] = d / f"dev{suffix}"
    except OSError:  # no CAP_MKNOD here: the other kinds are still checked
        pass
    return out


@pytest.fixture(scope="module")
def oracle_run(oracle_run) -> Path:
    return oracle_run


def test_the_atomic_writer_refuses_what_is_not_a_regular_file(tmp_path):
    d = tmp_path / "t"
    targets = _targets(d)
    before = _nodes(d)
    for name, path in targets.items():
        for mode, body in (("w", "new\n"), ("wb", b"new\n")):
            with pytest.raises(OutputError, match="not a regular file") as e, atomic_write(path, mode) as fh:
                fh.write(body)
            assert str(path) in str(e.value), name
    assert _nodes(d) == before  # every node as it was, no temporary file left
    assert (d / "real.txt").read_text() == "keep me\n"
    # a regular file is still replaced, and a failure inside the block leaves neither file nor temp
    (d / "plain.txt").write_text("old")
    with atomic_write(d / "plain.txt") as fh:
        fh.write("new")
    assert (d / "plain.txt").read_text() == "new"
    with pytest.raises(RuntimeError), atomic_write(d / "never.txt") as fh:
        fh.write("x")
        raise RuntimeError("stop")
    assert not (d / "never.txt").exists() and not any(n.startswith(".") for n in os.listdir(d))


def test_a_node_made_while_writing_is_not_replaced_either(tmp_path):
    """The check runs again just before the rename: a FIFO made at the path meanwhile stays."""
    path = tmp_path / "out.jsonl"
    with pytest.raises(OutputError, match="named pipe"), atomic_write(path) as fh:
        fh.write("x\n")
        os.mkfifo(path)
    assert stat.S_ISFIFO(os.lstat(path).st_mode) and os.listdir(tmp_path) == ["out.jsonl"]


def test_parquet_onto_a_directory_leaves_no_temp(tmp_path):
    import pyarrow as pa

    (tmp_path / "dir").mkdir()
    schema = pa.schema([("x", pa.int64())])
    with pytest.raises(OutputError, match="a directory"):
        write_parquet_batches(tmp_path / "dir", schema, [pa.table({"x": [1, 2]})])
    assert sorted(os.listdir(tmp_path)) == ["dir"] and os.listdir(tmp_path / "dir") == []


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "inspect"])
def test_medres_export_refuses_each_node_and_leaves_nothing(oracle_run, tmp_path, fmt):
    d = tmp_path / "t"
    targets = _targets(d, ".eval" if fmt == "inspect" else "")
    before = _nodes(d)
    for name, path in targets.items():
        res = runner.invoke(cli_app, ["export", str(oracle_run), "--format", fmt, "--out", str(path)])
        lines = res.output.strip().splitlines()
        assert res.exit_code == 2 and len(lines) == 1 and str(path) in lines[0] and "not a regular file" in lines[0], (name, res.output)
    assert _nodes(d) == before and os.listdir(targets["dir"]) == []
    res = runner.invoke(cli_app, ["export", str(oracle_run), "--format", fmt, "--out", str(d / "ok.eval")])
    assert res.exit_code == 0 and (d / "ok.eval").is_file()


def test_the_static_export_refuses_a_link_to_a_directory(oracle_run, tmp_path):
    site = tmp_path / "site"
    assert runner.invoke(cli_app, ["view", str(oracle_run), "--export", str(site)]).exit_code == 0
    (tmp_path / "elsewhere").mkdir()
    for name, target in (("link-site", site), ("link-dir", tmp_path / "elsewhere"), ("dangling", tmp_path / "nowhere")):
        os.symlink(target, tmp_path / name)
        res = runner.invoke(cli_app, ["view", str(oracle_run), "--export", str(tmp_path / name)])
        assert res.exit_code == 2 and "symbolic link" in res.output, (name, res.output)
        assert (tmp_path / name).is_symlink()
    assert (site / "index.html").is_file() and sorted(os.listdir(tmp_path)) == ["dangling", "elsewhere", "link-dir", "link-site", "site"]


def test_the_corpus_index_refuses_a_link_to_an_index(tmp_path):
    from medresilience.corpus import build_index
    from medresilience.runtime.errors import InputError

    src = tmp_path / "docs"
    src.mkdir()
    (src / "a.txt").write_text("Aspirin is an antiplatelet drug used after a heart attack. " * 5)
    build_index(src, tmp_path / "real.idx")
    os.symlink(tmp_path / "real.idx", tmp_path / "link.idx")
    with pytest.raises(InputError, match="symbolic link"):
        build_index(src, tmp_path / "link.idx")
    assert (tmp_path / "link.idx").is_symlink() and sorted(os.listdir(tmp_path)) == ["docs", "link.idx", "real.idx"]
