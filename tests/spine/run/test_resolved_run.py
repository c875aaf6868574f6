"""One resolved run: `medres eval` looks the suite's family up once, parses the family's options
once and checks each model's key once (resolved.resolve_run), and evaluate, the planner, the
runner and the results take that value and look nothing up again.

The counts are taken by wrapping our own functions (the registry's `family.get`, which
`family_of` and every lookup by name go through; `Family.parse_options`; `ModelSpec.api_key`) to
append one line per call to a file, so that the results worker (a forked process) is counted too.
The run is a real `medres eval` (typer's runner, in this process) on the stub OpenAI-compatible
server."""

from __future__ import annotations

import os
import traceback
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import make_tiny_suite, oracle_policy
from medresilience import family as family_module
from medresilience.cli import app
from medresilience.family import Family
from medresilience.models.spec import ModelSpec
from medresilience.run.resolved import EvalOptions, ResolvedRun, resolve_run
from medresilience.run.runner import plan
from medresilience.testing.stub import StubServer

PKG = Path(family_module.__file__).parent


def _where() -> list[str]:
    """The package modules on the stack of the counted call (innermost last), e.g. 'run/runner.py:plan'."""
    out = []
    for f in traceback.extract_stack()[:-3]:
        p = Path(f.filename)
        if PKG in p.parents:
            out.append(f"{p.relative_to(PKG).as_posix()}:{f.name}")
    return out


@pytest.fixture
def counted(tmp_path, monkeypatch):
    """Wrap the family lookup, the option parse and the key check; return a reader of the calls:
    (kind, detail, stack) per call, in every process of the command."""
    log = tmp_path / "calls.log"
    log.write_text("")

    def record(kind: str, detail: str = "") -> None:
        with log.open("a") as fh:
            fh.write(f"{os.getpid()}\t{kind}\t{detail}\t{'>'.join(_where())}\n")

    get, parse, key = family_module.get, Family.parse_options, ModelSpec.api_key

    def counting_get(name):
        record("lookup", name)
        return get(name)

    def counting_parse(self, values):
        record("parse", self.name)
        return parse(self, values)

    def counting_key(self):
        record("key", self.label)
        return key(self)

    monkeypatch.setattr(family_module, "get", counting_get)
    monkeypatch.setattr(Family, "parse_options", counting_parse)
    monkeypatch.setattr(ModelSpec, "api_key", counting_key)

    def calls() -> list[tuple[str, str, str]]:
        return [tuple(line.split("\t")[1:]) for line in log.read_text().splitlines()]  # type: ignore[misc]

    return calls


def _eval(tmp_path, base_url: str, *extra: str):
    suite_dir = tmp_path / "suite"
    make_tiny_suite().save(suite_dir)
    spec = f"openai:m,base_url={base_url},api_key_env=MEDRES_TEST_KEY,label=a"
    return CliRunner().invoke(app, ["eval", "--suite", str(suite_dir), "--model", spec, "--out", str(tmp_path / "run"), *extra])


def _run_path(calls, kind):
    """The calls of one kind made by the run (the command, evaluate, planning, the calls, the
    results and results.md): not by the report, which is built from the run directory as
    `medres report` builds it, and not by the suite's reader, which validates each probe line as
    the probe of the family that line names (`family.probes.model`)."""
    return [c for c in calls() if c[0] == kind and "report/" not in c[2] and not c[2].endswith("family.py:probe_model")]


def test_one_eval_looks_the_family_up_and_parses_its_options_once(tmp_path, monkeypatch, counted):
    monkeypatch.setenv("MEDRES_TEST_KEY", "k")
    with StubServer(policy=oracle_policy) as srv:
        r = _eval(tmp_path, srv.base_url, "-O", "type1=all")
    assert r.exit_code == 0, r.output
    lookups, parses = _run_path(counted, "lookup"), _run_path(counted, "parse")
    assert [(d, s.split(">")[-2:]) for _, d, s in lookups] == [("misleading", ["cli/__init__.py:_run_eval", "family.py:family_of"])]
    assert [(d, s.split(">")[-1]) for _, d, s in parses] == [("misleading", "run/resolved.py:resolve_run")]
    # the results were computed by the worker with the run's family and options, not looked up again
    assert (tmp_path / "run" / "results.json").exists() and (tmp_path / "run" / "results.md").exists()


def test_one_eval_checks_each_models_key_once(tmp_path, monkeypatch, counted):
    """The answering model, a monitor's model and the extraction model: each key variable is
    checked once, by the resolution, before anything is written (the client reads the key it
    sends; that is not a check)."""
    monkeypatch.setenv("MEDRES_TEST_KEY", "k")
    with StubServer(policy=oracle_policy) as srv:
        monitor = f"monitor:openai:mon,base_url={srv.base_url},api_key_env=MEDRES_TEST_KEY,label=mon"
        extract = f"extract=openai:ex,base_url={srv.base_url},api_key_env=MEDRES_TEST_KEY,label=ex"
        r = _eval(tmp_path, srv.base_url, "--setting", "none", "--setting", monitor, "-O", extract)
    assert r.exit_code == 0, r.output
    checks = [c for c in counted() if c[0] == "key" and "models/" not in c[2].rsplit(">", 1)[-1]]
    assert sorted(d for _, d, _ in checks) == ["a", "ex", "mon"]
    assert {s.rsplit(">", 1)[-1] for *_, s in checks} == {"run/resolved.py:resolve_run"}


def test_a_missing_key_fails_once_before_anything_is_written(tmp_path, monkeypatch, counted):
    monkeypatch.delenv("MEDRES_TEST_KEY", raising=False)
    r = _eval(tmp_path, "http://127.0.0.1:9/v1")
    assert r.exit_code != 0 and "MEDRES_TEST_KEY" in r.output
    assert not (tmp_path / "run").exists()
    assert [d for k, d, _ in counted() if k == "key"] == ["a"]


def test_the_library_entry_points_build_the_same_resolved_run(tmp_path, counted):
    """`plan(suite, specs, opts)` resolves once and plans what `plan_run` plans of the value the
    command builds; a resolved run plans without looking its family up again."""
    suite = make_tiny_suite()
    spec = ModelSpec(provider="openai", model="m", base_urls=["http://127.0.0.1:9/v1"], label="a")
    opts = EvalOptions(family={"type1": "all"})
    by_library = plan(suite, [spec], opts)
    assert [k for k, *_ in counted()] == ["lookup", "parse"]
    run = resolve_run(suite, [spec], opts, check_keys=False)
    assert isinstance(run, ResolvedRun) and run.family.name == "misleading" and run.settings[0].name == "none"
    before = len(counted())
    again = plan(run)
    assert len(counted()) == before  # nothing looked up, parsed or checked
    assert [(p.unit.unit_id, p.unit.key) for p in again] == [(p.unit.unit_id, p.unit.key) for p in by_library]
