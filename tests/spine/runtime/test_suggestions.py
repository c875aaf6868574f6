"""A misspelt name the user types gets the closest known one suggested, by one rule
(errors.did_you_mean) wherever names are looked up: model specs (provider, embedded model, a
spec's settings), mitigation settings, family options and every registry; a word close to
nothing gets no suggestion. And `medres --version`."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from medresilience import __version__
from medresilience.cli import app
from medresilience.runtime.errors import did_you_mean


@pytest.mark.parametrize(
    "args, hint",
    [
        (["--model", "embeded"], "did you mean 'embedded'?"),
        (["--model", "embedded,temprature=0"], "unknown setting (did you mean 'temperature'?)"),
        (["--model", "openai/gpt-4o-mini,concurency=2"], "did you mean 'concurrency'?"),
        (["--model", "opnai/gpt-4o-mini"], "did you mean 'openai'?"),
        (["--model", "embedded:smollm"], "did you mean 'smollm2'?"),
        (["--model", "embedded", "--setting", "cauton"], "unknown setting 'cauton' (did you mean 'caution'?)"),
        (["--model", "embedded", "-O", "type=all"], "unknown option (did you mean 'type1'?)"),
    ],
)
def test_misspelt_names_get_a_suggestion(tmp_path, args, hint):
    r = CliRunner().invoke(app, ["eval", *args, "--out", str(tmp_path / "run")])
    assert r.exit_code == 2 and hint in " ".join(r.output.split()), r.output
    assert not (tmp_path / "run").exists()


def test_no_suggestion_for_a_word_close_to_nothing():
    assert did_you_mean("zzz", ["caution", "none"]) == ""
    assert did_you_mean("Cauton", ["caution", "none"]) == " (did you mean 'caution'?)"


def test_version():
    r = CliRunner().invoke(app, ["--version"])
    assert r.exit_code == 0 and r.output.strip() == f"medres {__version__}"
