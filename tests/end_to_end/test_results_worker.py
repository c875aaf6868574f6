"""`medres eval` computes its results and report in a low-priority worker process that loaded their
libraries during the calls (results_worker): the same numbers and tables as the command's own
process, a fallback when the worker is gone, and a command that never loads pandas itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from medresilience.cli.results_worker import ResultsWorker, enabled
from medresilience.models.spec import parse_model_spec
from medresilience.report import build_report
from medresilience.run.bundled_suite import sample_suite
from medresilience.run.evaluation import evaluate
from medresilience.run.runner import EvalOptions
from medresilience.testing.stub import StubServer
from toy_family import make_toy_suite

pytestmark = pytest.mark.skipif(not enabled(), reason="the worker forks: Linux only")


def _tables(report_dir):
    return {p.name: p.read_text() for p in sorted((report_dir / "tables").glob("*.csv"))}


def _numbers(results) -> dict:
    return json.loads(results.model_dump_json(include={"models", "mean_across_models", "mean_by_stratum", "usage", "reading"}))


def test_the_workers_results_and_report_are_the_commands_own(tmp_path, toy_family):
    suite = make_toy_suite()
    a_run, b_run = tmp_path / "a" / "run", tmp_path / "b" / "run"  # one name: the tables name their run
    with StubServer() as srv:
        spec = parse_model_spec(f"openai:stub-model,base_url={srv.base_url},concurrency=8")
        with ResultsWorker(suite) as worker:
            a = evaluate(suite, [spec], a_run, EvalOptions(), summarise=worker.summarise)
            html = worker.report(a_run, a.frame, out_dir=tmp_path / "a" / "report")
            assert worker.used and a.frame is None  # the frame stayed in the worker
        b = evaluate(suite, [spec], b_run, EvalOptions())
    build_report([b_run], tmp_path / "b" / "report", frames={b_run: b.frame})
    assert html == tmp_path / "a" / "report" / "report.html" and html.exists()
    assert _numbers(a.results) == _numbers(b.results)
    assert _tables(tmp_path / "a" / "report") == _tables(tmp_path / "b" / "report")
    assert json.loads((a_run / "results.json").read_text())["models"] == json.loads((b_run / "results.json").read_text())["models"]


def test_a_dead_worker_leaves_the_command_to_compute_them(tmp_path, toy_family):
    suite = make_toy_suite()
    with StubServer() as srv:
        spec = parse_model_spec(f"openai:stub-model,base_url={srv.base_url},concurrency=8")
        with ResultsWorker(suite) as worker:
            worker._proc.kill()
            worker._proc.join()
            a = evaluate(suite, [spec], tmp_path / "a", EvalOptions(), summarise=worker.summarise)
            html = worker.report(tmp_path / "a", a.frame, out_dir=tmp_path / "a-report")
            assert not worker.used and a.frame is not None
        b = evaluate(suite, [spec], tmp_path / "b", EvalOptions())
    assert _numbers(a.results) == _numbers(b.results) and html.exists()


def test_the_command_leaves_the_results_libraries_to_the_worker(tmp_path):
    """`medres eval` in a fresh process: the run, results.json and the report are written, and the
    command's own process never imported pandas (the worker did); with MEDRES_RESULTS_WORKER=0 it does.
    The suite is read lazily from its directory (as `--suite` reads it), and without numpy; it is
    checked once, by the command before the fork (the worker shares its index)."""
    code = (
        "import os, sys\n"
        "from medresilience import suite as S\n"
        "build = S.SuiteIndex.build.__func__\n"
        "def counted(cls, *a, **k):\n"
        "    open(os.environ['BUILDS'], 'a').write(f'{os.getpid()}\\n')\n"
        "    return build(cls, *a, **k)\n"
        "S.SuiteIndex.build = classmethod(counted)\n"
        "from medresilience.cli import main\n"
        "sys.argv = ['medres', *sys.argv[1:]]\n"
        "try:\n"
        "    main()\n"
        "finally:\n"
        "    print('PANDAS', 'pandas' in sys.modules, 'NUMPY', 'numpy' in sys.modules, file=sys.stderr)\n"
    )
    suite = sample_suite().save(tmp_path / "suite")
    with StubServer() as srv:
        for worker, expect in (("1", "False NUMPY False"), ("0", "True NUMPY True")):
            out = tmp_path / f"run-{worker}"
            builds = tmp_path / f"builds-{worker}"
            env = dict(os.environ, MEDRES_RESULTS_WORKER=worker, BUILDS=str(builds))
            args = ["eval", "--suite", str(suite), "--model", f"openai:stub-model,base_url={srv.base_url}", "--out", str(out), "--limit", "4"]
            p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=300)
            assert p.returncode == 0, p.stderr[-2000:]
            assert f"PANDAS {expect}" in p.stderr
            assert (out / "results.json").exists() and (out / "report" / "report.html").exists()
            assert "report:" in p.stdout
            assert len(builds.read_text().split()) == 1  # one process built the suite's index


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return any(line.startswith("State:") and "Z" in line.split()[1] for line in fh)  # a zombie has exited
    except FileNotFoundError:
        return True


def test_the_worker_exits_when_the_command_is_killed(tmp_path):
    """kill -9 of the command (the resume tests' fault) leaves no worker behind: it sees its pipe close."""
    import signal
    import time

    code = (
        "import sys, time\n"
        "from medresilience.run.bundled_suite import sample_suite\n"
        "from medresilience.cli.results_worker import ResultsWorker\n"
        "w = ResultsWorker(sample_suite()).__enter__()\n"
        "print(w._proc.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    worker = int(proc.stdout.readline())
    assert not _gone(worker)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 30  # it may be importing first
    while not _gone(worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(worker)


def test_a_runs_results_and_its_report_measure_the_frame_once(tmp_path, toy_family):
    """The family's metrics of a run's frame are computed for its results and read again by its
    report from the same frame (frame_metrics); a report that builds its own frame computes them."""
    import dataclasses

    from medresilience.family import register, unregister

    calls: list[int] = []

    def counted(df):
        calls.append(len(df))
        return toy_family.measures.metrics(df)

    unregister(toy_family.name)
    register(dataclasses.replace(toy_family, measures=dataclasses.replace(toy_family.measures, metrics=counted)))
    from medresilience.suite import Suite

    suite = Suite.load(make_toy_suite().save(tmp_path / "suite"))  # on disk: a report finds it to read the store
    with StubServer() as srv:
        spec = parse_model_spec(f"openai:stub-model,base_url={srv.base_url},concurrency=8")
        res = evaluate(suite, [spec], tmp_path / "run", EvalOptions())
    assert len(calls) == 1
    build_report([tmp_path / "run"], tmp_path / "report", frames={tmp_path / "run": res.frame})
    assert len(calls) == 1 and (tmp_path / "report" / "report.html").exists()
    build_report([tmp_path / "run"], tmp_path / "report2")  # no frame given: read from the store
    assert len(calls) == 2
    assert _tables(tmp_path / "report") == _tables(tmp_path / "report2") != {}
