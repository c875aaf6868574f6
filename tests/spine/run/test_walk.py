"""The walk of one `medres eval` from the command to the report (issue 42's done-when): the calls
that carry the run (the resolved run, its suite, family or results, or the suite or run directory as
given, among their arguments) stay in at most 25 source files and enter family.py at most 3 times.
The walk is recorded by bench/bench_walk.py (its docstring defines it; it prints the numbers for
BENCHMARKS.md): one real `medres eval` on the stub server, in this process, under sys.setprofile.
No timing: the counts depend only on the code path."""

from __future__ import annotations

import importlib.util
import sys

from conftest import ROOT


def _bench():
    spec = importlib.util.spec_from_file_location("bench_walk", ROOT / "bench" / "bench_walk.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_walk"] = module
    spec.loader.exec_module(module)
    return module


def test_one_eval_walks_through_at_most_25_files_and_enters_family_py_at_most_3_times(tmp_path):
    bench = _bench()
    walk = bench.walk_one_eval(tmp_path)
    stays = walk.stays()
    # the walk is the whole path: from the command, through resolving and running, to the report
    assert stays[0][0].startswith("cli/") and "run/resolved.py" in walk.files and "run/runner.py" in walk.files
    assert any(p.startswith("report/") for p in walk.files), walk.files
    assert 1 <= walk.entries("family.py") <= bench.MAX_FAMILY_ENTRIES, walk.summary() + "\n" + "\n".join(f"{p}: {fns}" for p, fns in stays)
    assert len(walk.files) <= bench.MAX_FILES, walk.summary() + "\n" + "\n".join(walk.files)


def test_the_walk_counts_a_call_that_carries_the_run_once_and_passes_the_others(tmp_path):
    """A carrying call is counted when it starts (a generator's resumptions are not new calls); a
    call without the run among its arguments is not counted."""
    bench = _bench()
    from medresilience.runtime import fileio

    given = tmp_path / "lines.txt"
    given.write_text("a\nb\nc\n")
    with bench.watched(given) as walk:
        lines = [text for _, text in fileio.text_lines(given)]  # a generator resumed once per line
        fileio.storable_text("no run here")
    assert lines == ["a\n", "b\n", "c\n"]
    assert [fn for _, fn in walk.calls].count("text_lines") == 1, walk.calls
    assert {p for p, _ in walk.calls} == {"runtime/fileio.py"} and "storable_text" not in {fn for _, fn in walk.calls}
