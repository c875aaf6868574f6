"""What `medres eval` says before its progress bar (run_preview): the suite, models, settings,
units and output folder, and what that folder holds (new, the same run resumed, or an earlier run
with other options whose results this one replaces); and the progress bar's time left, hidden
until completions after the first give a rate."""

from __future__ import annotations

from typer.testing import CliRunner

from medresilience.cli import app
from medresilience.cli.kit import RemainingColumn
from medresilience.models.spec import parse_model_spec
from medresilience.run.bundled_suite import sample_suite
from medresilience.run.resolved import resolve_run
from medresilience.run.run_preview import preview
from medresilience.run.runner import EvalOptions, plan
from medresilience.testing.stub import StubServer


def _eval(srv, out, *extra: str) -> list[str]:
    r = CliRunner().invoke(app, ["eval", "--model", f"openai:m,base_url={srv.base_url}", "--out", str(out), *extra])
    assert r.exit_code == 0, r.output
    return r.output.splitlines()


def test_eval_says_what_will_run_before_the_bar(tmp_path):
    out = tmp_path / "run"
    with StubServer() as srv:
        first = _eval(srv, out, "--limit", "4")
        again = _eval(srv, out, "--limit", "4")
        other = _eval(srv, out, "--limit", "5", "--setting", "none", "--setting", "caution")
    assert first[0].startswith("suite: basic_medicine") and "(misleading; 4 items)" in first[0]
    assert first[1] == "model: m; setting: none; scoring: letter"
    assert first[2].startswith("units: 12 (12 per model and setting)")
    assert first[3] == f"output: {out} (new run directory)"
    assert again[3].startswith(f"output: {out} (resumes the same run")
    assert other[1] == "model: m; settings: none, caution; scoring: letter" and other[2].startswith("units: 30 (15 per model and setting)")
    assert "holds an earlier run with other options (limit, settings)" in other[3] and "replace the earlier ones" in other[3]


def test_the_previewed_units_are_the_planned_ones():
    spec = parse_model_spec("openai:m,base_url=http://127.0.0.1:9/v1")
    for opts in (EvalOptions(limit=7), EvalOptions(limit=3, settings=("none", "caution")), EvalOptions(family={"type1": "all"}, limit=5)):
        assert preview(resolve_run(sample_suite(), [spec], opts), "/nonexistent").units == len(plan(sample_suite(), [spec], opts))


def test_time_left_waits_for_a_rate():
    eta = RemainingColumn(after=5)
    assert eta.estimate("t", 0.0, 0, 144) is None  # nothing done
    assert eta.estimate("t", 1.0, 100, 144) is None  # the first completions seen: 100 reused from the store, not a rate
    assert eta.estimate("t", 2.0, 103, 144) is None  # 3 since: too few
    assert eta.estimate("t", 11.0, 110, 144) == 34 * 10 / 10  # 10 calls in 10 s, 34 left
    assert eta.estimate("u", 5.0, 16, None) is None  # total unknown
