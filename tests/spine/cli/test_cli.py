"""Bad input through the real command line: one line naming file, line and field (or the
setting), a non-zero exit code, and nothing half-written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, make_tiny_suite, one_error_line, oracle_policy
from medresilience.cli import app
from medresilience.models.spec import parse_model_spec
from medresilience.runtime.errors import InputError, MedresError
from medresilience.suite import Suite
from medresilience.testing.stub import StubServer

runner = CliRunner()


def test_malformed_source_file(tmp_path):
    src = tmp_path / "medqa.jsonl"
    good = {"question": "q?", "options": {"A": "a", "B": "b"}, "answer": "a", "answer_idx": "A"}
    src.write_text(json.dumps(good) + "\n" + "{not json\n")
    out = tmp_path / "items.jsonl"
    line = one_error_line(runner.invoke(app, ["import", str(src), "--out", str(out)]))
    assert "medqa.jsonl:2" in line and "not valid JSON" in line
    assert not out.exists() and not list(tmp_path.glob(".items.jsonl*"))


def test_bad_field_in_source(tmp_path):
    src = tmp_path / "mcqa.jsonl"
    row = {"question": "q?", "opa": "a", "opb": "b", "opc": "c", "opd": "d", "cop": 7, "choice_type": "single", "id": "x1"}
    src.write_text(json.dumps(row) + "\n")
    line = one_error_line(runner.invoke(app, ["import", str(src), "--out", str(tmp_path / "o.jsonl")]))
    assert "mcqa.jsonl:1" in line and "cop" in line


def _write_suite(tmp_path, tiny_suite, mutate):
    d = tmp_path / "bad_suite"
    tiny_suite.save(d)
    lines = (d / "probes.jsonl").read_text().splitlines()
    obj = json.loads(lines[2])
    mutate(obj)
    lines[2] = json.dumps(obj)
    (d / "probes.jsonl").write_text("\n".join(lines) + "\n")
    man = json.loads((d / "suite.json").read_text())
    man["checksums"] = {}
    (d / "suite.json").write_text(json.dumps(man))
    return d


def test_probe_with_missing_item(tmp_path, tiny_suite):
    d = _write_suite(tmp_path, tiny_suite, lambda o: o.update(item_id="nope"))
    out = tmp_path / "run"
    line = one_error_line(runner.invoke(app, ["eval", "--suite", str(d), "--model", "openai:m,base_url=http://127.0.0.1:9/v1", "--out", str(out)]))
    assert "probes.jsonl:3" in line and "item_id" in line and "nope" in line
    assert not out.exists()


def test_unknown_option_letter(tmp_path, tiny_suite):
    def mutate(o):
        o["target"] = "E"
        o["context"][0]["option"] = "E"

    d = _write_suite(tmp_path, tiny_suite, mutate)
    line = one_error_line(runner.invoke(app, ["eval", "--suite", str(d), "--model", "openai:m,base_url=http://127.0.0.1:9/v1"]))
    assert "probes.jsonl:3" in line and "'E'" in line


def test_changed_suite_file_fails_checksum(tmp_path, tiny_suite):
    d = tmp_path / "s"
    tiny_suite.save(d)
    with (d / "items.jsonl").open("a") as fh:
        fh.write("\n")
    line = one_error_line(runner.invoke(app, ["eval", "--suite", str(d), "--model", "openai:m,base_url=http://x/v1"]))
    assert "items.jsonl" in line and "checksum" in line


def test_missing_api_key_variable(tmp_path, tiny_suite, monkeypatch):
    monkeypatch.delenv("MEDRES_TEST_KEY", raising=False)
    d = tmp_path / "s"
    tiny_suite.save(d)
    out = tmp_path / "run"
    spec = "openai:gpt-x,base_url=http://127.0.0.1:9/v1,api_key_env=MEDRES_TEST_KEY"
    line = one_error_line(runner.invoke(app, ["eval", "--suite", str(d), "--model", spec, "--out", str(out)]))
    assert "api_key_env" in line and "MEDRES_TEST_KEY" in line
    assert not out.exists()


def test_bad_model_spec_names_the_setting(tmp_path):
    line = one_error_line(runner.invoke(app, ["eval", "--model", "openai:m,base_url=http://x/v1,temprature=0"]))
    assert "temprature" in line and "unknown setting" in line
    line = one_error_line(runner.invoke(app, ["eval", "--model", "openai:m,base_url=http://x/v1,concurrency=many"]))
    assert "concurrency" in line


def test_import_and_export_release_roundtrip(tmp_path):
    from medresilience.run.bundled_suite import sample_release_path

    suite_dir = tmp_path / "suite"
    r = runner.invoke(app, ["import", str(sample_release_path()), "--out", str(suite_dir), "--seed", "20261122"])
    assert r.exit_code == 0, r.output
    s = Suite.load(suite_dir)
    assert len(s.items) == 48 and len(s.probes) == 192
    out = tmp_path / "release.jsonl"
    r = runner.invoke(app, ["export", "--suite", str(suite_dir), "--format", "bundles", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_text() == sample_release_path().read_text()


def test_eval_with_family_options_and_settings(tmp_path, tiny_suite):
    """`-O KEY=VALUE` reaches the suite's family; `--setting` names mitigations; a bad option or
    setting stops with one line naming it, before anything is written or called."""
    from conftest import oracle_policy
    from medresilience.run.results import Results
    from medresilience.testing.stub import StubServer

    with StubServer(policy=oracle_policy) as srv:
        spec = f"openai:stub-model,base_url={srv.base_url}"
        base = ["eval", "--suite", str(tiny_suite.path), "--model", spec]
        r = runner.invoke(app, [*base, "--out", str(tmp_path / "run"), "-O", "type1=sample", "--setting", "none", "--setting", "caution"])
        assert r.exit_code == 0, r.output
        res = Results.load(tmp_path / "run" / "results.json")
        assert set(res.models["stub-model"]) == {"none", "caution"} and res.run.options["family"]["type1"] == "sample"
        assert srv.stats.total == 2 * (4 + 4 + 4)
        r = runner.invoke(app, [*base, "--out", str(tmp_path / "bad"), "-O", "typo=1"])
        assert r.exit_code == 2 and "-O typo" in r.output and "type1" in r.output
        r = runner.invoke(app, [*base, "--out", str(tmp_path / "bad"), "-O", "type1"])
        assert r.exit_code == 2 and "KEY=VALUE" in r.output
        r = runner.invoke(app, [*base, "--out", str(tmp_path / "bad"), "--setting", "shield"])
        assert r.exit_code == 2 and "unknown setting 'shield'" in r.output
        r = runner.invoke(app, [*base, "--out", str(tmp_path / "bad"), "--scoring", "judge"])
        assert r.exit_code == 2 and "--scoring" in r.output
        assert not (tmp_path / "bad").exists() and srv.stats.total == 24


def test_import_reports_skipped_rows(tmp_path):
    """HLE rows with an image or without options are skipped and said, not silently dropped."""

    fixture = FIXTURES / "hle_sample.jsonl"
    r = runner.invoke(app, ["import", str(fixture), "--out", str(tmp_path / "hle.jsonl")])
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())  # the console wraps long lines
    assert "3 items" in out and "image: 1" in out and "not multiple choice: 2" in out


def test_import_says_one_item_in_the_singular(tmp_path):
    """An import of one row says '1 item', not '1 items'; of several, 'items'."""
    one = tmp_path / "one.jsonl"
    one.write_text((FIXTURES / "hle_sample.jsonl").read_text().splitlines()[0] + "\n")
    r = runner.invoke(app, ["import", str(one), "--out", str(tmp_path / "one-out.jsonl")])
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert "1 item" in out and "1 items" not in out, out


def _commands(cmd, path=()):
    yield list(path), cmd
    for name, sub in (getattr(cmd, "commands", None) or {}).items():
        yield from _commands(sub, (*path, name))


def test_bracketed_help_text_is_printed_not_taken_for_markup(tmp_path, monkeypatch):
    """Every '[...]' a command's help or an option's help writes (e.g. '[tool.medres]') reaches
    the screen in `--help`, in the command list of `medres --help`, and in `medres config`."""
    import re

    import typer

    root = typer.main.get_command(app)
    listing = " ".join(runner.invoke(app, ["--help"], env={"COLUMNS": "400"}).output.split())
    checked = 0
    for path, cmd in _commands(root):
        texts = [(cmd.help or "").replace("\\[", "[")] + [(getattr(p, "help", None) or "").replace("\\[", "[") for p in cmd.params]
        brackets = {" ".join(m.split()) for t in texts for m in re.findall(r"\[[^\]]*\]", t)}
        if not brackets:
            continue
        shown = " ".join(runner.invoke(app, [*path, "--help"], env={"COLUMNS": "400"}).output.split())
        for b in brackets:
            checked += 1
            assert b in shown, f"medres {' '.join(path)} --help lost {b!r}"
        first = (cmd.help or "").replace("\\[", "[").split("\n\n")[0]
        for b in re.findall(r"\[[^\]]*\]", first):
            if len(path) == 1:
                assert " ".join(b.split()) in listing, f"medres --help lost {b!r} of {path[0]}"
    assert checked
    monkeypatch.chdir(tmp_path)
    out = runner.invoke(app, ["config"], terminal_width=200).output
    assert "medres.toml or [tool.medres] in pyproject.toml" in out


PYDANTIC_WORDING = (
    "Input should",
    "Extra inputs",
    "Value error",
    "valid integer",
    "greater than or equal",
    "Field required",
    "String should",
    "unable to parse",
)


def test_bad_settings_are_said_in_the_project_s_words(tmp_path, monkeypatch):
    """-O options, model spec settings and medres.toml keys: one line naming the option, the value
    given and what is allowed, never the validation library's phrasing."""
    from medresilience.run.bundled_suite import sample_suite

    suite = str(sample_suite().path)
    model = "openai:x,base_url=http://127.0.0.1:9"
    cases = [
        (["-O", "type1=bogus"], ["-O type1", "'bogus'", "'all' or 'sample'"]),
        (["-O", "bogus=1"], ["-O bogus", "unknown option", "type1, preset"]),
        (["-O", "max_tokens=abc"], ["-O max_tokens", "'abc' is not a whole number"]),
        (["-O", "preset=x"], ["-O preset", "'terse' or 'study'"]),
        (["-O", "max_tokens=0"], ["-O max_tokens", "must be at least 1"]),
    ]
    for extra, wanted in cases:
        r = runner.invoke(app, ["eval", "--suite", suite, "--model", model, "--out", str(tmp_path / "run"), *extra])
        line = one_error_line(r)
        assert all(w in line for w in wanted) and not any(p in line for p in PYDANTIC_WORDING), line
    r = runner.invoke(app, ["eval", "--suite", suite, "--model", f"{model},concurrency=0", "--out", str(tmp_path / "run")])
    line = one_error_line(r)
    assert "concurrency" in line and "must be at least 1, got 0" in line and not any(p in line for p in PYDANTIC_WORDING), line
    monkeypatch.chdir(tmp_path)
    for text, wanted in (('concurrency = "x"\n', "'x' is not a whole number"), ("concurrency = 0\n", "must be at least 1, got 0")):
        (tmp_path / "medres.toml").write_text(text)
        line = one_error_line(runner.invoke(app, ["config"]))
        assert "medres.toml" in line and "concurrency" in line and wanted in line, line
        assert not any(p in line for p in PYDANTIC_WORDING), line


def test_every_kind_of_validation_problem_is_said_plainly():
    from typing import Literal

    from pydantic import BaseModel, ConfigDict, Field, ValidationError

    from medresilience.runtime.errors import validation_problem

    class M(BaseModel):
        model_config = ConfigDict(extra="forbid")
        mode: Literal["a", "b"] = "a"
        n: int = Field(1, ge=1, le=9)
        x: float = 0.0
        flag: bool = False
        name: str = Field("n", min_length=1)
        need: str

    cases = [
        ({"need": "z", "mode": "c"}, "mode", "'c' is not allowed (allowed: 'a' or 'b')"),
        ({"need": "z", "n": 0}, "n", "must be at least 1, got 0"),
        ({"need": "z", "n": 10}, "n", "must be at most 9, got 10"),
        ({"need": "z", "n": "many"}, "n", "'many' is not a whole number"),
        ({"need": "z", "x": "big"}, "x", "'big' is not a number"),
        ({"need": "z", "flag": "perhaps"}, "flag", "'perhaps' is not true or false"),
        ({"need": "z", "name": ""}, "name", "must not be empty"),
        ({}, "need", "is required"),
        ({"need": "z", "other": 1}, "other", "unknown name (known: mode, n)"),
    ]
    for data, field, message in cases:
        with pytest.raises(ValidationError) as e:
            M.model_validate(data)
        known = ["mode", "n"] if "other" in data else None
        assert validation_problem(e.value, known) == (field, message)


def test_the_eval_summary_fits_80_columns_and_never_cuts_a_number(tmp_path):
    """`medres eval` with three models in an 80-column terminal: the summary is laid out to fit
    (blocks of 'header: value' when the table would not), nothing is cut to '…', and every
    number of the summary is printed whole."""
    import os
    import re
    import subprocess

    from conftest import oracle_policy
    from medresilience.testing.stub import StubServer

    make_tiny_suite().save(tmp_path / "suite")
    env = {**os.environ, "COLUMNS": "80", "TERM": "dumb"}
    with StubServer(policy=oracle_policy) as srv:
        args = ["eval", "--suite", str(tmp_path / "suite"), "--out", str(tmp_path / "run")]
        for name in ("stub-model-alpha-2026-11-26", "stub-model-beta-2026-11-26", "stub-model-gamma-2026-11-26"):
            args += ["--model", f"openai:{name},base_url={srv.base_url}"]
        p = subprocess.run([sys.executable, "-m", "medresilience.cli", *args], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = [line for line in p.stdout.splitlines() if not line.startswith(("calls:", "run:", "report:"))]
    assert max(len(line) for line in lines) <= 80, "\n".join(line for line in lines if len(line) > 80)
    assert "…" not in p.stdout
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    for name in ("stub-model-alpha-2026-11-26", "stub-model-beta-2026-11-26", "stub-model-gamma-2026-11-26"):
        assert name in p.stdout
        clean = results["models"][name]["none"]["overall"]["clean_acc"]
        assert re.search(rf"{100 * clean['p']:.1f}%", p.stdout), name


def test_the_medres_command_keeps_its_exit_codes_and_output():
    """`medres` (cli.main: the app, then gc.freeze before the interpreter's exit) exits as the app does."""
    import subprocess

    def run(*args: str) -> subprocess.CompletedProcess:
        code = "import sys; from medresilience.cli import main; sys.argv = ['medres', *sys.argv[1:]]; main()"
        return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)

    ok = run("--help")
    assert ok.returncode == 0 and "Usage" in ok.stdout
    bad = run("no-such-command")
    assert bad.returncode == 2 and "No such command" in bad.stderr


@pytest.fixture
def read_only_dir(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    if os.geteuid() != 0:
        d.chmod(0o555)
        yield d
        d.chmod(0o755)
        return
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(d)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("root cannot make a read-only directory here")
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], check=False)


MEDQA_ROW = {"question": "Which is right?", "options": {"A": "a", "B": "b", "C": "c", "D": "d"}, "answer": "a", "answer_idx": "A"}


def test_an_unusable_out_is_one_line(tmp_path, tiny_suite):
    d = tmp_path / "suite"
    tiny_suite.save(d)
    afile = tmp_path / "afile"
    afile.write_text("x")
    for out in (afile / "run", afile):
        r = runner.invoke(app, ["eval", "--suite", str(d), "--out", str(out), "--model", "openai:m,base_url=http://127.0.0.1:9/v1"])
        line = one_error_line(r)
        assert str(out) in line and r.exit_code == 2
    assert "afile is a file, not a directory" in line or "is a file" in line
    # the import command: an items file or a suite directory under a file
    src = tmp_path / "medqa.jsonl"
    src.write_text(json.dumps(MEDQA_ROW) + "\n")
    line = one_error_line(runner.invoke(app, ["import", str(src), "--out", str(afile / "items.jsonl")]))
    assert f"cannot write {afile / 'items.jsonl'}: {afile} is a file, not a directory" in line
    from medresilience.run.bundled_suite import sample_release_path

    line = one_error_line(runner.invoke(app, ["import", str(sample_release_path()), "--out", str(afile / "suite")]))
    assert f"{afile} is a file, not a directory" in line


def test_a_read_only_out_is_one_line(tmp_path, tiny_suite, read_only_dir):
    d = tmp_path / "suite"
    tiny_suite.save(d)
    for out in (read_only_dir, read_only_dir / "run"):
        r = runner.invoke(app, ["eval", "--suite", str(d), "--out", str(out), "--model", "openai:m,base_url=http://127.0.0.1:9/v1"])
        line = one_error_line(r)
        assert str(read_only_dir) in line


def test_a_suite_missing_a_file_it_lists_is_refused(tmp_path, tiny_suite):
    d = tmp_path / "s"
    tiny_suite.save(d)
    (d / "probes.jsonl").unlink()
    with pytest.raises(InputError, match=r"probes\.jsonl.*missing"):
        Suite.load(d)
    line = one_error_line(runner.invoke(app, ["eval", "--suite", str(d), "--model", "openai:m,base_url=http://127.0.0.1:9/v1", "--out", str(tmp_path / "run")]))
    assert "probes.jsonl" in line and "missing" in line
    assert not (tmp_path / "run").exists()


STUB = "openai:stub-model,base_url=http://127.0.0.1:9/v1"


@pytest.mark.parametrize(
    "args, blamed",
    [
        (["--limit", "0"], "--limit"),
        (["--limit", "-5"], "--limit"),
        (["-O", "answer=open", "-O", "judge=nosuch/x"], "-O judge"),
        (["--judge", "nosuch/x"], "--judge"),
        (["--judge", "openai:j,base_url=http://127.0.0.1:9/v1"], "judge model is used only for open answers"),
        (["-O", "type1=all", "-O", "type1=sample"], "-O type1"),
        (["--model", STUB + ",temperature=0.5,temperature=0"], "temperature"),
        (["--model", STUB + ",base_url=http://127.0.0.1:10/v1"], "base_url"),
        (["--model", STUB + ",price_input=nan"], "price_input"),
        (["--model", STUB + ",max_tokens=0"], "max_tokens"),
        (["--model", STUB + ",temperature=1e308"], "temperature"),
        (["--model", STUB + ",top_p=0"], "top_p"),
        (["--model", STUB + ",timeout=inf"], "timeout"),
    ],
)
def test_a_bad_setting_is_one_line_before_anything_is_written(tmp_path, tiny_suite, args, blamed):
    out = tmp_path / "run"
    model = [] if "--model" in args else ["--model", STUB]
    r = runner.invoke(app, ["eval", "--suite", str(tiny_suite.path), "--out", str(out), *model, *args])
    line = one_error_line(r)
    assert r.exit_code == 2 and blamed in line, line
    if blamed.startswith("-") and blamed != "-O judge":
        assert f"setting '{blamed}" in line
    if blamed == "-O judge":
        assert "--model" not in line
    assert not out.exists()


def test_a_model_file_giving_a_setting_twice_is_refused(tmp_path):
    f = tmp_path / "m.json"
    f.write_text('{"model": "m", "base_urls": "http://127.0.0.1:9/v1", "temperature": 0.5, "temperature": 0}')
    with pytest.raises(MedresError, match=r"temperature.*twice"):
        parse_model_spec(f"@{f}")


def test_the_build_commands_refuse_a_limit_below_one(tmp_path):
    for cmd in (["build", "noise", "--items", "x.jsonl"], ["build", "misleading", "--items", "x.jsonl"]):
        r = runner.invoke(app, [*cmd, "--out", str(tmp_path / "s"), "--limit", "0"])
        assert r.exit_code == 2 and not (tmp_path / "s").exists()


def test_medres_toml_with_a_bom_is_read_and_a_bad_byte_is_named(tmp_path):
    from medresilience.cli.config import load_config

    (tmp_path / "medres.toml").write_bytes(b'\xef\xbb\xbfout = "runs/x"\nmodels = ["embedded"]\n')
    assert str(load_config(tmp_path).out(None, Path("d"))) == "runs/x"
    (tmp_path / "medres.toml").write_bytes(b'out = "runs/x"\n# caf\xe9\n')
    with pytest.raises(MedresError) as ei:
        load_config(tmp_path)
    assert str(ei.value).startswith(f"{tmp_path / 'medres.toml'}:2: not UTF-8 text")


def test_a_model_label_with_a_control_character_is_refused(tmp_path, tiny_suite):
    import pytest

    from medresilience.models.spec import parse_model_spec
    from medresilience.runtime.errors import ConfigError

    for bad in ("a\nb", "a\rb", "tab\there", "nul\x00", "esc\x1b[31m", "line\u2028sep"):
        with pytest.raises(ConfigError, match=r"label.*control character"):
            parse_model_spec(f"embedded,label={bad}")
        with pytest.raises(ConfigError, match=r"label.*control character"):
            parse_model_spec(f"openai:m,base_url=http://127.0.0.1:9/v1,label={bad}")
    with pytest.raises(ConfigError, match=r"model.*control character"):
        parse_model_spec("openai:m\nx,base_url=http://127.0.0.1:9/v1")  # the label it would default to
    assert parse_model_spec("embedded,label=qwen 1.5B (ünïcode)").label == "qwen 1.5B (ünïcode)"
    d = tmp_path / "suite"
    tiny_suite.save(d)
    with StubServer(policy=oracle_policy) as srv:
        line = one_error_line(
            runner.invoke(app, ["eval", "--suite", str(d), "--out", str(tmp_path / "run"), "--model", f"openai:stub-model,base_url={srv.base_url},label=a\nb"])
        )
        assert srv.stats.total == 0
    assert "label" in line and "control character" in line and "U+000A" in line, line
    assert not (tmp_path / "run").exists()
