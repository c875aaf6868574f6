"""The shape of the code, checked: ruff passes, with a complexity and a statement cap on every
function (C901, PLR0915, set in pyproject.toml); the spine names no family; the library is layered
one way (no import cycles between modules nor between packages, evaluation does not import the
report layer, serving the embedded model lives with the models)."""

from __future__ import annotations

import ast
import itertools
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

PKG = ROOT / "src" / "medresilience"

# The spine: every module outside families/ (derived from the tree, so a new module is checked
# too). None may import a family or name one; the words come from the registry (every family's
# name) and from the misleading family's own vocabulary.
SPINE = sorted(p.relative_to(PKG).as_posix() for p in PKG.rglob("*.py") if not p.relative_to(PKG).as_posix().startswith("families/"))
#: modules outside families/ that name a family in prose (the dataset catalogue names the studies'
#: releases); nothing may be added here
PENDING = {"sources/catalog.py"}


def _family_words(exclude: frozenset[str] = frozenset()) -> re.Pattern[str]:
    """What names a family in code: its name as a string ('"misleading"', a name-keyed table), its
    conditions and facets that are identifiers ("redherring-10", "content_type"), and the
    misleading family's metric words. Plain English ("misleading context", "noise") is not checked."""
    from medresilience.family import families

    names = {f.name for f in families()} - exclude
    idents = {w for f in families() for w in (*f.probes.conditions, *f.probes.facets) if re.search(r"[_\d-]", w)}
    quoted = "|".join(rf"[\"']{re.escape(n)}[\"']" for n in sorted(names))
    bare = "|".join(re.escape(w) for w in sorted(idents, key=len, reverse=True))
    return re.compile(rf"{quoted}|(?<![\w-])(?:{bare})(?![\w-])|\basr\b|tasr", re.IGNORECASE)


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["check", "format"])
def test_ruff_clean(command):
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(ruff).exists():
        pytest.fail("ruff is not installed: install the test extras (scripts/install.sh --test)")
    r = subprocess.run([ruff, *command, "src", "tests", "bench"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_ruff_holds_every_function_to_a_complexity_and_a_statement_cap():
    """A function is one job: ruff's mccabe complexity (C901) and statement count (PLR0915) are
    selected, at caps no looser than 15 paths and 50 statements, and only tests, benchmarks and the
    report modules being rewritten as parts are exempt from them."""
    import tomllib

    lint = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]["lint"]
    assert {"C901", "PLR0915"} <= set(lint["select"]) and not {"C901", "PLR0915"} & set(lint.get("ignore", ()))
    assert lint["mccabe"]["max-complexity"] <= 15 and lint["pylint"]["max-statements"] <= 50
    exempt = sorted(p for p, rules in lint.get("per-file-ignores", {}).items() if {"C901", "PLR0915"} & set(rules))
    assert all(p.startswith(("tests/", "bench/")) or "/report/" in p for p in exempt), exempt


#: a family's name that one spine module uses for something else, and what it means there: that
#: module is not checked for that word (every other family word still is)
HOMONYMS = {
    ("mitigations/team.py", "adaptive"): "MDAgents' adaptive mode: the moderator picks the team's level",
    ("mitigations/team_run.py", "adaptive"): "MDAgents' adaptive mode: the moderator picks the team's level",
    ("stats/persuasion.py", "adaptive"): "a searched attack's flips beside a static suite's, the neutral statistics' own label",
}


@pytest.mark.parametrize("module", [m for m in SPINE if m not in PENDING])
def test_spine_names_no_family(module):
    words = _family_words(exclude=frozenset(w for (m, w) in HOMONYMS if m == module))
    text = (PKG / module).read_text(encoding="utf-8")
    hits = [f"{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1) if words.search(line)]
    assert not hits, "\n".join(hits)


def test_no_spine_module_imports_a_family():
    g = _graph(top_level_only=False)
    pending = {_module_name(PKG / m) for m in PENDING}
    bad = {
        m: sorted(d for d in deps if d.startswith("medresilience.families"))
        for m, deps in g.items()
        if not m.startswith("medresilience.families") and m not in pending
    }
    bad = {m: d for m, d in bad.items() if d}
    assert not bad, bad


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, top_level_only: bool) -> set[str]:
    """Modules of the package that a module imports (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]

    def walk(node: ast.AST):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue  # imports for type checkers only: they never run
            if top_level_only and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            yield child
            yield from walk(child)

    out = set()
    for node in walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.startswith("medresilience"):
                out.add(mod)
                out.update(f"{mod}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("medresilience"))
    return out


def _graph(top_level_only: bool) -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PKG.rglob("*.py")}
    return {m: {i for i in _imports(p, top_level_only) if i in files and i != m} for m, p in files.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found, state, stack = [], {}, []

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                found.append(stack[stack.index(m) :] + [m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)
    return found


def test_no_import_cycles():
    """Edges to a parent package count: a submodule that imports from its package's __init__ while
    the __init__ imports it is a cycle (the __init__ holds registration and the public API only)."""
    cycles = _cycles(_graph(top_level_only=False))
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def _package_of(module: str) -> str:
    """A module's node in the package graph: its first-level package under medresilience (every
    family is one node, `families`), or the module itself for a root module (`family`, `score`) and
    for a program (`cli.__main__`: run by `python -m`, imported by no module)."""
    parts = module.split(".")[1:]
    if not parts:
        return "medresilience"  # the package root's lazy public API
    if parts[-1] == "__main__":
        return ".".join(parts)
    return parts[0]


def _import_sites(path: Path) -> list[tuple[int, str, bool]]:
    """(line, imported module, for type checkers only) for every import of a package module in a
    module, at any depth (in functions too); `from X import name` counts as importing X.name where
    that is a module."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    files = {_module_name(p) for p in PKG.rglob("*.py")}
    sites = []

    def visit(node: ast.AST, typing_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            typing = typing_only or (isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test))
            if isinstance(child, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - child.level + 1] if child.level else []
                mod = ".".join([*base, *([child.module] if child.module else [])])
                subs = [f"{mod}.{a.name}" for a in child.names if f"{mod}.{a.name}" in files]
                sites.extend((child.lineno, m, typing) for m in (subs or [mod]) if m in files)
            elif isinstance(child, ast.Import):
                sites.extend((child.lineno, a.name, typing) for a in child.names if a.name in files)
            visit(child, typing)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return sites


def _package_edges() -> dict[tuple[str, str], list[tuple[str, int, str, bool]]]:
    """(importer's package, imported package) -> the imports that make the edge: (module, line,
    imported module, for type checkers only)."""
    edges: dict[tuple[str, str], list[tuple[str, int, str, bool]]] = {}
    for path in sorted(PKG.rglob("*.py")):
        module = _module_name(path)
        for line, imported, typing in _import_sites(path):
            a, b = _package_of(module), _package_of(imported)
            if a != b and b != "medresilience":
                edges.setdefault((a, b), []).append((module, line, imported, typing))
    return edges


def _running(edges: dict[tuple[str, str], list[tuple[str, int, str, bool]]]) -> dict[str, set[str]]:
    """The package graph of the imports that run (module level and in functions)."""
    graph: dict[str, set[str]] = {}
    for (a, b), sites in edges.items():
        if any(not typing for *_, typing in sites):
            graph.setdefault(a, set()).add(b)
    return graph


def _edge_text(edges, a: str, b: str, typing: bool = False) -> str:
    sites = [s for s in edges[(a, b)] if s[3] == typing]
    return f"{a} -> {b}: " + "; ".join(f"{m.removeprefix('medresilience.')}:{n} imports {i.removeprefix('medresilience.')}" for m, n, i, _ in sites)


def test_the_package_graph_is_a_dag():
    """No cycle between packages (a module's package is its first-level package; a root module is its
    own node): a concept both sides use lives in the lower package, and a package reaches a higher
    one through a callback it is handed, never an import (in a function or not)."""
    edges = _package_edges()
    cycles = _cycles(_running(edges))
    assert not cycles, "package cycles:\n" + "\n".join(
        " -> ".join(c) + "\n" + "\n".join("    " + _edge_text(edges, a, b) for a, b in itertools.pairwise(c)) for c in cycles
    )


#: imports for type checkers only that point up the package graph (the imported package reaches the
#: importer through imports that run): annotations of a lower package naming a higher one's types.
#: They never run, so they are no cycle; they are listed here, and the list only shrinks.
TYPING_UPWARD = {
    ("family", "report"): "Family's report hooks are annotated with report.compare's types",
    ("family", "review"): "Family's review hooks are annotated with review.rubrics' Rubric",
    ("family", "run"): "Family's measures are annotated with run.label_rates' types",
    ("family", "mitigations"): "Family's probe loop is annotated with mitigations.setting's AnswerLoop and Setting",
    ("family", "suite"): "Family's probe hooks are annotated with Suite",
    ("scoring", "run"): "the judge's and the extraction's runs take run.runner's Planned units",
}


def test_type_checking_imports_up_the_package_graph_are_listed():
    edges = _package_edges()
    graph = _running(edges)
    upward = {(a, b) for (a, b), sites in edges.items() if all(typing for *_, typing in sites) and a in _reach(graph, b)}
    assert upward <= set(TYPING_UPWARD), "\n".join(_edge_text(edges, a, b, typing=True) for a, b in sorted(upward - set(TYPING_UPWARD)))
    assert not set(TYPING_UPWARD) - upward, f"no longer upward, drop from TYPING_UPWARD: {sorted(set(TYPING_UPWARD) - upward)}"


def test_the_package_graph_check_names_the_edge_and_its_modules(tmp_path, monkeypatch):
    """The check finds a package cycle made by an import inside a function, and says which modules
    make each edge."""
    pkg = tmp_path / "medresilience"
    for rel, text in {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/a.py": "def f():\n    from ..high.b import g\n",
        "high/__init__.py": "",
        "high/b.py": "from ..low import a\n",
    }.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "PKG", pkg)
    edges = _package_edges()
    assert _cycles(_running(edges)) == [["high", "low", "high"]]
    assert _edge_text(edges, "low", "high") == "low -> high: low.a:2 imports high.b"


#: the modules that may run SQL: the run store's package, the viewer's index of a run's units (on the
#: store's read-only connection), the review database, the corpus index
SQL_PACKAGES = ("store/",)
SQL_MODULES = {"view/index.py", "review/db.py", "corpus/index.py"}
_SQL = re.compile(r"\.execute(?:many|script)?\(|\bsqlite3\.connect\(|\b(?:SELECT|INSERT|UPDATE|DELETE)\s+(?:\*|DISTINCT|INTO|OR|FROM|\w+\s*(?:,|FROM))")


def test_sql_runs_only_in_the_store_the_viewers_index_the_review_database_and_the_corpus_index():
    modules = [p.relative_to(PKG).as_posix() for p in PKG.rglob("*.py")]
    assert "view/index.py" in modules and any(m.startswith(SQL_PACKAGES) for m in modules)
    bad = [m for m in modules if m not in SQL_MODULES and not m.startswith(SQL_PACKAGES) and _SQL.search((PKG / m).read_text(encoding="utf-8"))]
    assert not bad, bad


def test_no_private_name_is_imported_from_another_module():
    """A name another module needs is public; a leading underscore means 'this module only'."""
    bad = [
        f"{p.relative_to(PKG).as_posix()}: from {n.module or '.'} import {a.name}"
        for p in PKG.rglob("*.py")
        for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        if isinstance(n, ast.ImportFrom)
        for a in n.names
        if a.name.startswith("_") and not a.name.startswith("__")
    ]
    assert not bad, "\n".join(bad)


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        n = todo.pop()
        for m in graph.get(n, ()):
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen


def test_evaluation_does_not_import_the_report_layer():
    g = _graph(top_level_only=False)
    for start in ("medresilience.run.evaluation", "medresilience.run.runner", "medresilience.run.frame", "medresilience.store"):
        reached = _reach(g, start)
        assert not {m for m in reached if m.startswith("medresilience.report") or m.startswith("medresilience.cli")}, start


def test_serving_lives_with_the_models():
    g = _graph(top_level_only=False)
    users = {m for m, deps in g.items() if "medresilience.models.embedded" in deps}
    assert users <= {"medresilience.models.serving", "medresilience.models"}, users


#: packages whose modules never import the package itself: its __init__ only gathers them and
#: states the public API, so importing one module does not run the package's other imports first
GATHERING_PACKAGES = ("calls", "mitigations")


@pytest.mark.parametrize("package", GATHERING_PACKAGES)
def test_modules_do_not_import_their_package(package):
    g = _graph(top_level_only=False)
    name = f"medresilience.{package}"
    back = sorted(m for m, deps in g.items() if m.startswith(name + ".") and name in deps)
    assert not back, back


def _may_import(package_dir: Path) -> set[str] | None:
    """The top-level modules a package's docstring allows it to import ("May import: a, b, c."); None
    when it allows anything (the CLI) or every spine module (a family)."""
    doc = ast.get_docstring(ast.parse((package_dir / "__init__.py").read_text(encoding="utf-8"))) or ""
    m = re.search(r"^May import: (.+?)\.?$", doc, re.M | re.S)
    assert m, f"{package_dir.relative_to(PKG)}/__init__.py: the docstring says what the package holds and ends 'May import: ...'"
    rule = m.group(1)
    if rule.startswith(("anything", "the spine", "its families")):
        return None
    if rule.startswith("nothing"):
        return set()
    return {w.strip() for w in rule.split(",")}


PACKAGES = sorted(p.parent for p in PKG.glob("*/__init__.py")) + sorted(p.parent for p in (PKG / "families").glob("*/__init__.py"))


@pytest.mark.parametrize("package_dir", PACKAGES, ids=lambda p: p.relative_to(PKG).as_posix())
def test_a_package_imports_only_what_its_docstring_allows(package_dir):
    allowed = _may_import(package_dir)
    name = _module_name(package_dir / "__init__.py")
    g = _graph(top_level_only=False)
    family = name.startswith("medresilience.families.")
    # a family may import another only where its docstring names it ("and the misleading family")
    doc = ast.get_docstring(ast.parse((package_dir / "__init__.py").read_text(encoding="utf-8"))) or ""
    others = set(re.findall(r"the (\w+) family", doc.split("May import:")[-1]))
    bad = set()
    for m, deps in g.items():
        if m != name and not m.startswith(name + "."):
            continue
        for d in deps:
            if d == "medresilience" or d == name or d.startswith(name + "."):
                continue  # the lazy package API, or the package itself
            top = d.split(".")[1]
            if family:
                if d.startswith("medresilience.families.") and d.split(".")[2] not in {name.split(".")[2], *others}:
                    bad.add(f"{m} -> {d} (another family)")
            elif allowed is not None and top not in allowed:
                bad.add(f"{m} -> {d}")
    assert not bad, "\n".join(sorted(bad))


#: the package root holds the vocabulary every layer speaks (records, suites, scores, the Family
#: protocol, Registry[T]) and the console script; everything else lives in a package named for its job:
#: runtime/ (plumbing), run/ (the run path), build/ (suite building), analyses/, and the rest
ROOT_MODULES = {"__init__.py", "launch.py", "records.py", "score.py", "suite.py", "family.py", "registry.py"}
#: packages whose __init__ only says what they hold: importing one imports none of its modules
FACE_PACKAGES = ("runtime", "run", "build", "analyses")


def test_the_package_root_holds_only_the_vocabulary():
    root = {p.name for p in PKG.glob("*.py")}
    assert root == ROOT_MODULES, f"at the root and not in ROOT_MODULES (give it a package): {sorted(root - ROOT_MODULES)}"


@pytest.mark.parametrize("package", FACE_PACKAGES)
def test_a_job_package_imports_nothing_on_import(package):
    tree = ast.parse((PKG / package / "__init__.py").read_text(encoding="utf-8"))
    imports = [ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not imports, imports


#: what a setting or a scorer can do, declared in its type (mitigations.setting.Setting,
#: score.DeferredScorer): never asked of it by attribute name
CAPABILITIES = {"precall", "with_note", "agent", "marker", "models", "suite_warnings", "apply_item", "judge", "judge_requests", "extract_request", "rubric"}
_ASKED = re.compile(r"(?:setting|scorer|score|^sc$|^s$)", re.IGNORECASE)


def _asks_capability(call: ast.Call) -> str | None:
    """The text of a getattr/hasattr call that asks a setting or scorer what it can do, else None:
    its object is named for a setting or scorer (or is a setting looked up), or the attribute
    asked is a capability."""
    if not (isinstance(call.func, ast.Name) and call.func.id in ("getattr", "hasattr") and call.args):
        return None
    obj = call.args[0]
    named = obj.attr if isinstance(obj, ast.Attribute) else obj.id if isinstance(obj, ast.Name) else ""
    looked_up = isinstance(obj, ast.Call) and "get" in ast.unparse(obj.func)
    attr = call.args[1].value if len(call.args) > 1 and isinstance(call.args[1], ast.Constant) else None
    if _ASKED.search(named) or looked_up or attr in CAPABILITIES:
        return ast.unparse(call)
    return None


def test_the_spine_never_asks_a_setting_or_scorer_what_it_can_do():
    """No getattr/hasattr on a setting or scorer outside families/: a capability is a typed field
    of `Setting` (pre-call, answer loop, marker, models, suite warnings) or the scorer's type
    (`DeferredScorer`), read as such."""
    bad = []
    for m in SPINE:
        tree = ast.parse((PKG / m).read_text(encoding="utf-8"))
        bad += [f"{m}:{n.lineno}: {text}" for n in ast.walk(tree) if isinstance(n, ast.Call) and (text := _asks_capability(n))]
    assert not bad, "\n".join(bad)


def test_the_spine_imports_no_settings_linked_roles_by_name():
    """Linked-call roles (an agent's steps, a monitor's note) are registered by their settings
    (mitigations.roles) and read there by kind: no module outside mitigations/ imports a setting
    module's role names or its loop."""
    g = _graph(top_level_only=False)
    owners = ("medresilience.mitigations.agent_run", "medresilience.mitigations.agent.", "medresilience.mitigations.monitor.")
    bad = {
        m: sorted(d for d in deps if d.startswith(owners) and d.rsplit(".", 1)[-1].isupper())
        for m, deps in g.items()
        if not m.startswith("medresilience.mitigations")
    }
    bad.update(
        {
            m: sorted(d for d in deps if d.startswith("medresilience.mitigations.agent_run"))
            for m, deps in g.items()
            if not m.startswith("medresilience.mitigations")
        }
    )
    bad = {m: d for m, d in bad.items() if d}
    assert not bad, bad


# HTML is written only by templates (*.j2): a string literal of a .py file under src/ that holds an
# HTML tag (`<td>`, `<a href=...>`, `</p>`; lowercase, bare or with attributes) builds HTML by hand.
# Docstrings are prose and are not checked.
HTML_TAG = re.compile(
    r"</?(?:a|b|i|p|br|hr|em|strong|small|code|pre|span|div|table|thead|tbody|tfoot|tr|td|th|ul|ol|li|dl|dt|dd|h[1-6]|section|details|"
    r"summary|figure|figcaption|html|head|body|nav|header|footer|main|form|input|select|option|button|label|textarea|style|script|meta|"
    r"link|title|iframe|img|sup|sub|mark|kbd|caption|article|aside|blockquote|abbr)(?:\s+[\w-]+=[^<>]*)?\s*/?>"
)
#: literals that look like a tag and are not HTML, each with its reason; nothing else may be added
NOT_HTML = {
    ("report/plots.py", "<title>"): "the inline SVG's own <title> element (SVG, drawn by matplotlib)",
    ("report/plots.py", "</title>"): "the inline SVG's own <title> element (SVG, drawn by matplotlib)",
    ("scoring/judge.py", "<label>"): "a placeholder in the judge's instructions ('VERDICT: <label>')",
    ("scoring/letters.py", "<aside>"): "a regular expression's named group",
    ("scoring/negative_items.py", "<a>"): "a regular expression's named group",
    ("scoring/negative_items.py", "<b>"): "a regular expression's named group",
}
#: modules whose report parts are still written as HTML by hand (issue 42 item 4 moved them to
#: report/parts.py); the list only shrinks
HTML_PENDING: set[str] = set()


def _html_literals(path: Path) -> list[str]:
    """The HTML tags in the string literals (docstrings left out) of one module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        m.group(0)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
        for m in HTML_TAG.finditer(node.value)
    ]


def test_no_module_writes_html_outside_the_templates():
    """A module writes HTML when a string literal holds a tag or it uses report/html.py's cell
    helpers; only the modules still to move may (and each of them still does: the list shrinks)."""
    found = {p.relative_to(PKG).as_posix(): _html_literals(p) for p in PKG.rglob("*.py")}
    writers = {path: tags for path, tags in found.items() if [t for t in tags if (path, t) not in NOT_HTML]}
    users = {p.relative_to(PKG).as_posix(): u for p in PKG.rglob("*.py") if (u := _html_helpers_used(p))}
    builders = set(writers) | set(users)
    assert builders <= HTML_PENDING, {p: (writers.get(p, [])[:5], users.get(p)) for p in builders - HTML_PENDING}
    # a module moved to the parts leaves the list
    assert not HTML_PENDING - builders, HTML_PENDING - builders
    assert {(p, t) for p, tags in found.items() for t in tags} >= set(NOT_HTML), "an exception no longer needed"


#: report/html.py's helpers that write a cell or a table as HTML by hand (rate_cell, ...): only a
#: module still listed in HTML_PENDING may use them (the parts' constructors replace them)
HTML_HELPERS = {"rate_cell", "count_cell", "diff_cell", "test_cell", "linked", "table", "collapsible", "figure", "esc"}


def _html_helpers_used(path: Path, package: list[str] | None = None) -> set[str]:
    """The HTML-writing helpers of report/html.py a module imports (`package`: the module's package,
    by default where it lies under src/)."""
    package = package or ["medresilience", *path.relative_to(PKG).parent.parts]
    used = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            if module == "medresilience.report.html":
                used |= {a.name for a in node.names} & HTML_HELPERS
    return used


def test_the_helper_check_finds_an_import_of_a_cell_helper(tmp_path):
    """The helper check reads `from ..html import rate_cell` in a module of the report package as an
    import of report/html.py's helper (its module name resolved from the module's place)."""
    mod = tmp_path / "probe.py"
    mod.write_text("from .html import rate_cell, units_url\nfrom ..report.html import table\nfrom .parts import rate\n")
    assert _html_helpers_used(mod, ["medresilience", "report"]) == {"rate_cell", "table"}


def test_the_html_check_finds_a_tag_and_passes_prose(tmp_path):
    src = tmp_path / "m.py"
    src.write_text('"""A <td> in a docstring is prose."""\nX = f"<td class=\'num\'>{1}</td>"\nY = "a <b> placeholder <a few words>"\nZ = "x < y > z"\n')
    assert sorted(_html_literals(src)) == ["</td>", "<b>", "<td class='num'>"]
