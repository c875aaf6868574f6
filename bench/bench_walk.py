"""The walk of one `medres eval` from the command to the report, counted (issue 42's done-when: the
walk "stays in at most 25 files and enters family.py at most 3 times").

    .venv/bin/python bench/bench_walk.py [--show]

What is counted. One `medres eval` of the tiny hand-made suite (tests/conftest.py's
`make_tiny_suite`: the misleading family, every Type 1 probe) by one model of the stub
OpenAI-compatible server, run in this process by typer's runner with the results worker off
(MEDRES_RESULTS_WORKER=0: the results and the report are made in this process by the code the worker
would run). Under `sys.setprofile`, the main thread's calls into src/medresilience are watched. A
call *carries the run* when one of its arguments (`self` included, and the members of `*args` and
`**kwargs`) is the run: the `ResolvedRun`, its `Suite` or its `Family` (one of each per run, known by
type), or the suite directory as the command was given it (a str or Path equal to it). The walk is
the source files of the carrying calls, in the order the calls start (a generator or coroutine counts
when it starts, not each time it resumes). Of the walk:
- files: the distinct files it is in;
- stays: its maximal runs of consecutive calls in one file;
- returns: the stays in a file it was in before;
- family.py entries: the stays in family.py.
No timing: the numbers depend only on the code path. tests/spine/run/test_walk.py holds them to the
bounds."""

from __future__ import annotations

import argparse
import dis
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parents[1]
#: the bounds of issue 42's done-when
MAX_FILES = 25
MAX_FAMILY_ENTRIES = 3
_RESUME = dis.opmap["RESUME"]
_VARARGS, _VARKW = 0x04, 0x08


@dataclass
class Walk:
    """The walk: (file relative to the package, function) of each carrying call, in order."""

    calls: list[tuple[str, str]] = field(default_factory=list)

    def stays(self) -> list[tuple[str, list[str]]]:
        """(file, functions called in it) per maximal run of consecutive calls in one file."""
        out: list[tuple[str, list[str]]] = []
        for path, fn in self.calls:
            if out and out[-1][0] == path:
                out[-1][1].append(fn)
            else:
                out.append((path, [fn]))
        return out

    @property
    def files(self) -> list[str]:
        return sorted({p for p, _ in self.calls})

    @property
    def returns(self) -> int:
        seen: set[str] = set()
        n = 0
        for path, _ in self.stays():
            n += path in seen
            seen.add(path)
        return n

    def entries(self, path: str) -> int:
        return sum(p == path for p, _ in self.stays())

    def summary(self) -> str:
        stays = self.stays()
        return (
            f"{len(self.calls)} carrying calls; {len(stays)} stays in {len(self.files)} files, {self.returns} returns, "
            f"family.py entered {self.entries('family.py')} times"
        )


def _arguments(frame: FrameType) -> Iterator[object]:
    """The values a call was given: its parameters as they are when it starts (`*args`, `**kwargs`
    opened up)."""
    code = frame.f_code
    n = code.co_argcount + code.co_kwonlyargcount
    names = list(code.co_varnames[:n])
    if code.co_flags & _VARARGS:
        names.append(code.co_varnames[n])
        n += 1
    if code.co_flags & _VARKW:
        names.append(code.co_varnames[n])
    values = frame.f_locals
    for i, name in enumerate(names):
        v = values.get(name)
        if i >= code.co_argcount + code.co_kwonlyargcount and isinstance(v, tuple | dict):
            yield from v.values() if isinstance(v, dict) else v
        else:
            yield v


@contextmanager
def watched(*given: object) -> Iterator[Walk]:
    """Record the walk of the calls made in this thread while the block runs that carry the run: an
    argument is a ResolvedRun, a Suite, a Family or a Results, or equals one of `given` (the suite
    directory and the run directory, as given to the command)."""
    import medresilience
    from medresilience.family import Family
    from medresilience.run.resolved import ResolvedRun
    from medresilience.run.results import Results
    from medresilience.suite import Suite

    pkg = str(Path(medresilience.__file__).parent) + os.sep
    carriers = (ResolvedRun, Suite, Family, Results)
    values = {str(v) for v in given}
    walk = Walk()
    ours: dict[str, str | None] = {}  # filename -> path relative to the package, None outside it

    def relative(filename: str) -> str | None:
        if filename not in ours:
            ours[filename] = filename[len(pkg) :].replace(os.sep, "/") if filename.startswith(pkg) else None
        return ours[filename]

    def carries(v: object) -> bool:
        if isinstance(v, carriers):
            return True
        try:
            return isinstance(v, str | Path) and str(v) in values
        except TypeError:
            return False

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event != "call":
            return
        rel = relative(frame.f_code.co_filename)
        if rel is None:
            return
        code = frame.f_code.co_code
        if code[frame.f_lasti] == _RESUME and code[frame.f_lasti + 1] != 0:
            return  # a generator or coroutine resuming, not starting
        if any(carries(v) for v in _arguments(frame)):
            walk.calls.append((rel, frame.f_code.co_qualname))

    assert threading.current_thread() is threading.main_thread()
    sys.setprofile(profile)
    try:
        yield walk
    finally:
        sys.setprofile(None)


def walk_one_eval(tmp: Path) -> Walk:
    """One `medres eval` of the tiny suite on the stub server, watched; fails when the command does."""
    sys.path[:0] = [str(ROOT / "tests")]
    from typer.testing import CliRunner

    from conftest import eval_args, make_tiny_suite, oracle_policy
    from medresilience.cli import app
    from medresilience.testing.stub import StubServer

    suite_dir = tmp / "suite"
    make_tiny_suite().save(suite_dir)
    before = os.environ.get("MEDRES_RESULTS_WORKER")
    os.environ["MEDRES_RESULTS_WORKER"] = "0"
    try:
        out = tmp / "run"
        with StubServer(policy=oracle_policy) as srv, watched(suite_dir, out) as walk:
            r = CliRunner().invoke(app, eval_args(suite_dir, out, srv.base_url))
    finally:
        if before is None:
            os.environ.pop("MEDRES_RESULTS_WORKER", None)
        else:
            os.environ["MEDRES_RESULTS_WORKER"] = before
    if r.exit_code != 0:
        raise RuntimeError(f"medres eval failed ({r.exit_code}):\n{r.output}")
    if not list(tmp.rglob("report.html")):
        raise RuntimeError(f"medres eval wrote no report.html under {tmp}:\n{r.output}")
    return walk


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--show", action="store_true", help="print every stay (file: functions)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        walk = walk_one_eval(Path(d))
    if args.show:
        for path, fns in walk.stays():
            print(f"{path}: {', '.join(fns)}")
        print()
    print(walk.summary())
    print("files:", ", ".join(walk.files))
    print(f"bounds: at most {MAX_FILES} files, family.py entered at most {MAX_FAMILY_ENTRIES} times")


if __name__ == "__main__":
    main()
