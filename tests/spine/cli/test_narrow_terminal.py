"""At 80 columns nothing the commands print cuts a word or a number: `medres models`, `medres
config`, `medres datasets` (run as real processes with COLUMNS=80) and every command's --help
(option names whole, an on/off flag as --x / --no-x). A token of the source text that appears
nowhere whole in the output was cut."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from medresilience.cli import app

WIDTH = 80


def _run(*args: str) -> str:
    env = dict(os.environ, COLUMNS=str(WIDTH), LINES="50", OPENAI_API_KEY="")
    p = subprocess.run([sys.executable, "-m", "medresilience.launch", *args], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def _tokens(*texts: str) -> set[str]:
    return {t.strip(".,;:()") for text in texts for t in str(text).split()} - {""}


def _cut(tokens: set[str], out: str) -> list[str]:
    words = set(out.split()) | {w.strip(".,;:()│┃") for w in out.split()}
    return sorted(t for t in tokens if t not in words and not any(t in w for w in words))


def _fits(out: str) -> list[str]:
    return [line for line in out.splitlines() if len(line) > WIDTH]


def test_models_keeps_every_word_and_number_whole():
    from medresilience.models.providers import PRICES, PROVIDERS

    out = _run("models")
    assert _fits(out) == []
    want = set()
    for p in PROVIDERS.values():
        want |= _tokens(p.name, p.title, p.base_url, p.base_url_env, *p.key_envs, *p.quirks())
    for pr in PRICES:
        want |= _tokens(pr.model, f"{pr.input:.2f}", f"{pr.output:.2f}", pr.date)
    assert _cut(want, out) == []


def test_config_keeps_every_word_and_number_whole(tmp_path):
    out = _run("config", "-m", "openai/gpt-4o-mini", "-m", "embedded")
    assert _fits(out) == []
    assert _cut(_tokens("OPENAI_API_KEY 0.15/0.6 concurrency= in a model spec price_input= / price_output= embedded-qwen"), out) == []


def test_datasets_lines_fit_and_keep_every_hash_and_command_whole():
    from medresilience.sources.catalog import CATALOG

    out = _run("datasets")
    assert _fits(out) == []
    want = set()
    for d in CATALOG:
        want |= _tokens(d.name, d.what, d.where, d.licence, d.size, d.fmt, d.command, d.checked, *[h for h in d.files.values() if h])
    assert _cut(want, out) == []


def _commands(group, path: tuple[str, ...] = ()):
    yield path, group
    for name, sub in getattr(group, "commands", {}).items():
        yield from _commands(sub, (*path, name))


@pytest.mark.parametrize("path", [p for p, _ in _commands(typer.main.get_command(app))], ids=lambda p: " ".join(p) or "medres")
def test_help_keeps_option_names_and_words_whole(path):
    cmd = dict(_commands(typer.main.get_command(app)))[path]
    r = CliRunner().invoke(app, [*path, "--help"], terminal_width=WIDTH)
    assert r.exit_code == 0, r.output
    out = r.output
    assert _fits(out) == [] and "<bool>" not in out
    for param in cmd.params:
        if param.param_type_name == "option" and not param.hidden:
            for name in [*param.opts, *param.secondary_opts]:
                assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", out), f"{name!r} cut in:\n{out}"
            if param.secondary_opts:  # an on/off flag: its two forms side by side
                assert f"{param.opts[-1]} / {param.secondary_opts[-1]}" in out, out
            assert _cut(_tokens(re.sub(r"\s+", " ", param.help or "")), out) == [], out
