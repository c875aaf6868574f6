"""`Any` in annotations over src/: never more than the committed ceiling (`any_annotations.txt`
beside this file), so a value that is JSON is typed as JSON (`runtime.jsontypes`), a value with a
known shape gets its model or TypedDict, and one only passed through is `object`.

Counted: every `Any` (a bare name or `typing.Any`) inside a parameter annotation, a return
annotation, an annotated assignment (a dataclass, model or TypedDict field too), a `type` alias, or
a module-level alias `X = dict[str, Any]`. `python tests/spine/test_any_annotations.py [-v]` prints
the count (`-v`: per file, most first)."""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CEILING = Path(__file__).with_name("any_annotations.txt")


def _anys(node: ast.AST | None) -> int:
    if node is None:
        return 0
    return sum(1 for n in ast.walk(node) if (isinstance(n, ast.Name) and n.id == "Any") or (isinstance(n, ast.Attribute) and n.attr == "Any"))


def count_source(source: str) -> int:
    """The `Any` annotations of one module's source."""
    tree = ast.parse(source)
    total = 0
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = n.args
            total += sum(_anys(arg.annotation) for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if arg is not None)
            total += _anys(n.returns)
        elif isinstance(n, ast.AnnAssign):
            total += _anys(n.annotation)
        elif isinstance(n, getattr(ast, "TypeAlias", ())):
            total += _anys(n.value)
    # module-level aliases: X = dict[str, Any], Y = A | B
    total += sum(_anys(n.value) for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.value, (ast.Subscript, ast.BinOp)))
    return total


def count_tree(root: Path) -> Counter[str]:
    """path (relative to the project) -> its `Any` annotations, for every module under `root`."""
    return Counter({str(p.relative_to(ROOT)): count_source(p.read_text(encoding="utf-8")) for p in sorted(root.rglob("*.py"))})


def ceiling() -> int:
    return int(next(line for line in CEILING.read_text(encoding="utf-8").splitlines() if line.strip() and not line.startswith("#")))


def test_any_annotations_stay_under_the_ceiling():
    per = count_tree(ROOT / "src")
    total, most = sum(per.values()), ceiling()
    worst = ", ".join(f"{p} {c}" for p, c in per.most_common(5))
    assert total <= most, f"{total} `Any` annotations under src/, more than the ceiling {most} ({CEILING.name}); most in: {worst}"


def test_the_count_reads_every_kind_of_annotation():
    source = """
from typing import Any
import typing
from dataclasses import dataclass

Alias = dict[str, Any]
Union = list[Any] | None
not_an_alias = Any

def f(a: Any, /, b: dict[str, Any], *args: Any, c: typing.Any = None, **kw: Any) -> tuple[Any, Any]:
    x: list[Any] = []
    y = 1  # no annotation
    return x, y

@dataclass
class Row:
    detail: Any = None
    fine: object = None

async def g(m: "object") -> None:
    def inner(z: Any) -> Any: ...
"""
    # Alias 1, Union 1, f: 7 in its signature (two in its return) and 1 in its body, Row 1, inner 2;
    # not_an_alias is no annotation
    assert count_source(source) == 13
    assert count_source("from typing import Any\n\ndef f(a: object) -> object:\n    return a\n") == 0


if __name__ == "__main__":
    per = count_tree(ROOT / "src")
    if "-v" in sys.argv[1:]:
        for path, n in per.most_common():
            if n:
                print(n, path)
    print(f"Any in annotations: {sum(per.values())} (ceiling {ceiling()})")
