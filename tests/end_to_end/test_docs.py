"""The documentation (README.md and docs/) against the tool it documents.

- every bash or python block is marked `<!-- docs-test: run -->` (run here), `<!-- docs-test: skip
  WHY -->` (needs a hosted model, the hub, your own files, or serves until Ctrl-C), or is a file a
  later block reads (`<!-- docs-test: file NAME -->`);
- the run blocks of each page run in order in one temporary folder, every model spec in them
  (`embedded`, `openai/gpt-4o-mini`, ...) and the default model of `medres run` replaced by the stub
  OpenAI-compatible server (the boundary we do not own: no model is downloaded or run), each command
  exiting 0 (a `medres` command run in this process, a python script as a process of its own);
- every option the documentation gives a `medres` command exists in that command's help;
- the command reference the site builds is generated from the same command line;
- the library example runs as written; the front page stays a front page; its picture comes from
  scripts/docs_figure.py."""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from conftest import ROOT, oracle_policy, run_medres
from medresilience.cli import app
from medresilience.testing.stub import StubServer

DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
MARKED = re.compile(r"^<!-- docs-test: (run|skip|file)(?: ([^\n]*?))? -->\n```(\w*)\n(.*?)^```", re.S | re.M)
FENCE = re.compile(r"^```(\w*)$", re.M)
MODEL_FLAGS = {"--model", "-m", "--judge", "--attacker", "--generator", "--reader", "--verify", "--verifier", "--task-model", "--reflection-model"}


def _blocks(page: Path) -> list[tuple[str, str, str, str]]:
    """(kind, argument, language, body) of each marked block of a page, in order."""
    return [m.groups() for m in MARKED.finditer(page.read_text(encoding="utf-8"))]


def _unmarked(page: Path) -> list[int]:
    """The lines of bash and python blocks with no marker above them."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out, inside = [], False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            if not inside and line[3:].strip() in ("bash", "sh", "python") and not (i and lines[i - 1].startswith("<!-- docs-test: ")):
                out.append(i + 1)
            inside = not inside
    return out


def _command_lines(body: str) -> list[str]:
    """The shell lines of a block: continuations joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n", " ", body)
    return [ln for ln in joined.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def _medres_commands(text: str) -> list[list[str]]:
    """Each `medres ...` invocation in a block's text: its words after `medres`, up to `&&` or the end."""
    out = []
    for line in _command_lines(text):
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        for i, w in enumerate(words):
            if w.endswith("bin/medres") or w == "medres":
                rest = words[i + 1 :]
                out.append(rest[: rest.index("&&")] if "&&" in rest else rest)
    return out


def test_every_command_block_is_marked_run_or_skip_with_a_reason():
    unmarked = {str(p.relative_to(ROOT)): ln for p in PAGES if (ln := _unmarked(p))}
    assert not unmarked, f"blocks with no <!-- docs-test: run|skip WHY --> above them: {unmarked}"
    for page in PAGES:
        for kind, why, _lang, _body in _blocks(page):
            assert kind != "skip" or len(why or "") > 10, f"{page}: a skipped block says why"
    runs = [p for p in PAGES if any(k == "run" for k, *_ in _blocks(p))]
    assert DOCS / "tutorial.md" in runs and len(runs) >= 5


def _stub_spec(spec: str, url: str) -> str:
    label = spec.split(",")[0]
    return f"openai:stub-model,label={label},base_url={url}"


def _argv(words: list[str], url: str) -> list[str]:
    """A documented command as this test runs it: this interpreter, the stub in place of every model."""
    words = [_stub_spec(w, url) if i and words[i - 1] in MODEL_FLAGS else w for i, w in enumerate(words)]
    head = words[0]
    if head.endswith("bin/medres"):
        words = [sys.executable, "-m", "medresilience.cli", *words[1:]]
    elif head.endswith("bin/python"):
        words = [sys.executable, *words[1:]]
    else:
        raise AssertionError(f"a run block runs medres or python only: {words}")
    return words


def _run_page(page: Path, folder: Path) -> list[str]:
    (folder / "src").symlink_to(ROOT / "src")  # the docs name the bundled suite by its path in a clone
    ran = []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]), "COLUMNS": "100", "HF_HUB_OFFLINE": "1"}
    with StubServer(policy=oracle_policy) as srv:
        # `medres run` takes its model from medres.toml when no --model is given
        (folder / "medres.toml").write_text(f'models = ["{_stub_spec("embedded-qwen", srv.base_url)}"]\n', encoding="utf-8")
        for kind, arg, _lang, body in _blocks(page):
            if kind == "file":  # a file of the clone (examples/...) is shown as the clone holds it
                assert not (ROOT / arg).exists() or (ROOT / arg).read_text(encoding="utf-8") == body, (
                    f"{page.relative_to(ROOT)}: {arg} differs from the clone's"
                )
                (folder / arg).parent.mkdir(parents=True, exist_ok=True)
                (folder / arg).write_text(body, encoding="utf-8")
            if kind != "run":
                continue
            for line in _command_lines(body):
                for part in line.split(" && "):
                    argv = _argv(shlex.split(part, comments=True), srv.base_url)
                    if argv[1:3] == ["-m", "medresilience.cli"]:
                        r = run_medres(argv, folder, {k: env[k] for k in ("COLUMNS", "HF_HUB_OFFLINE")})
                    else:  # a python script of the page, as a process
                        r = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=300)
                    assert r.returncode == 0, f"{page.relative_to(ROOT)}: {part}\nexit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
                    ran.append(part)
    return ran


@pytest.mark.parametrize("page", [p for p in PAGES if any(k == "run" for k, *_ in _blocks(p))], ids=lambda p: str(p.relative_to(ROOT)))
def test_the_offline_commands_of_a_page_run_as_written(page, tmp_path):
    ran = _run_page(page, tmp_path)
    assert ran
    if page.name == "tutorial.md":  # what the tutorial says each step leaves behind
        for path in (
            "runs/sample/report/report.html",
            "site/index.html",
            "items.jsonl",
            "suites/mine/suite.json",
            "runs/mine/results.json",
            "reports/first/report.html",
        ):
            assert (tmp_path / path).exists(), path


@functools.cache
def _click_tree():
    """The click command tree of `medres`, built once (typer builds it anew on every call)."""
    return typer.main.get_command(app)


def _resolve(words: list[str]):
    """The command a documented invocation names, and the words after its name."""
    cmd, i = _click_tree(), 0
    while hasattr(cmd, "commands") and i < len(words) and words[i] in cmd.commands:
        cmd, i = cmd.commands[words[i]], i + 1
    return cmd, words[i:]


def _documented_invocations() -> list[tuple[str, list[str]]]:
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        rel = str(page.relative_to(ROOT))
        for m in re.finditer(r"^```(?:bash|sh)\n(.*?)^```", text, re.S | re.M):
            out += [(rel, w) for w in _medres_commands(m.group(1))]
        for span in re.findall(r"`((?:\.venv/bin/)?medres [^`]+)`", text):
            out += [(rel, w) for w in _medres_commands(span)]
    return out


def test_every_option_the_docs_give_a_command_exists_in_its_help():
    invocations = _documented_invocations()
    assert len(invocations) > 150
    unknown = []
    for rel, words in invocations:
        cmd, rest = _resolve(words)
        if hasattr(cmd, "commands"):
            continue  # a group named alone (`medres build`, `medres review`)
        known = {o for p in cmd.params for o in [*getattr(p, "opts", []), *getattr(p, "secondary_opts", [])]}
        for w in rest:
            flag = w.strip("[]").split("=", 1)[0]
            if re.fullmatch(r"--?[A-Za-z][\w-]*", flag) and flag not in known:
                unknown.append(f"{rel}: medres {' '.join(words[: len(words) - len(rest)])} {flag}")
    assert not unknown, "\n".join(sorted(set(unknown)))


def test_the_setting_help_names_every_setting_and_export_every_format():
    from medresilience.export import FORMATS
    from medresilience.family import families
    from medresilience.mitigations import names

    tree = _click_tree()
    setting = next(p for p in tree.commands["eval"].params if p.name == "setting").help
    assert all(n.split(":")[0].split("[")[0] in setting for n in names()), (names(), setting)
    assert "agent:INDEX|URL" in setting
    fmt = next(p for p in tree.commands["export"].params if p.name == "fmt").help
    for fam in families():
        assert all(f in fmt for f in fam.suites.export_formats), (fam.name, fmt)
    assert all(f in fmt for f in FORMATS), fmt


def test_help_text_shows_percent_signs_as_written():
    """Help is not %-formatted: a doubled percent sign would reach the user as '%%'."""
    from medresilience.cli.reference import commands

    doubled = [(" ".join(path), p.name) for path, cmd in commands(_click_tree()) for p in cmd.params if "%%" in (getattr(p, "help", None) or "")]
    assert not doubled, doubled
    shown = CliRunner().invoke(app, ["eval", "--help"], env={"COLUMNS": "200"}).output
    assert "anytime-valid 95% interval" in shown and "%%" not in shown


def test_the_command_reference_is_the_command_line():
    from medresilience.cli.reference import commands, markdown

    page = markdown(app)
    tree = _click_tree()
    names = [" ".join(path) for path, _ in commands(tree)]
    assert "medres build misleading" in names and "medres review serve" in names and len(names) > 30
    for path, cmd in commands(tree):
        assert f"## {' '.join(path)}\n" in page
        for p in cmd.params:
            if getattr(p, "hidden", False) or p.name == "help" or not getattr(p, "opts", None) or not p.opts[0].startswith("-"):
                continue
            assert f"`{p.opts[0]}`" in page, (path, p.opts)
    assert "--defense" not in page  # hidden stays hidden
    assert "agent:INDEX\\|URL" in page  # the --setting help, pipes escaped for the table


def test_library_example(tmp_path, tiny_suite, monkeypatch):
    """The library page's example runs as written, with the embedded model swapped for the stub
    server (the boundary we do not own) under the same label, and the suite for the tiny suite."""
    page = DOCS / "how-to" / "library.md"
    code = re.search(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S).group(1)
    monkeypatch.chdir(tmp_path)
    with StubServer(policy=oracle_policy) as srv:
        code = code.replace('parse_model_spec("embedded")', f'parse_model_spec("openai:stub,label=embedded-qwen,base_url={srv.base_url}")')
        code = code.replace('"SUITE_DIR"', repr(str(tiny_suite.path)))
        env: dict = {}
        exec(compile(code, str(page), "exec"), env)
    res = env["res"]
    assert res.results.headline("embedded-qwen")["type1_asr"].n == 3  # sampled Type 1 on the 3 clean-correct items
    assert (tmp_path / "runs" / "x" / "report" / "report.html").exists()


def test_the_readme_is_a_front_page_whose_links_resolve():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    assert "bash scripts/install.sh && .venv/bin/medres run" in text
    assert "bash scripts/install.sh --test && .venv/bin/python -m pytest -q" in text
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert "docs/img/first-run.svg" in links and "docs/tutorial.md" in links
    assert all((ROOT / link).exists() for link in links if "://" not in link), [ln for ln in links if not (ROOT / ln).exists()]
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert all(str(p.relative_to(DOCS)) in nav for p in DOCS.rglob("*.md")), "every page is in the site's navigation"


def test_the_front_page_picture_is_the_report_figure_of_a_stub_run(tmp_path):
    out = tmp_path / "first-run.svg"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "docs_figure.py"), "--out", str(out)], check=True, capture_output=True, timeout=300)
    made, committed = out.read_text(encoding="utf-8"), (DOCS / "img" / "first-run.svg").read_text(encoding="utf-8")

    def bars(svg: str) -> list[str]:  # the figure's title, model and bar values, as drawn
        return re.findall(r"<title>([^<]*)</title>", svg)[:1] + re.findall(r">(stub-model|\d{1,3})<", svg)

    assert 'id="fig-accuracy"' in made and bars(made) == bars(committed), "rerun scripts/docs_figure.py"
