"""Sizes held by a test: no module of reme_es/ over 400 lines, no function or method over 60 (docs/ARCHITECTURE.md).

A function's size is its whole definition, decorators left out: `end_lineno - lineno + 1` of its syntax tree node.
A module or function that must grow past a limit is split by meaning first (a group of calls into a module of its
own, a step of a long function into a named helper); ALLOWED is where an exception would be written, and it is empty.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "reme_es"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60

# "path relative to the repo" or "path:qualified.name" -> the size allowed; empty, and to be kept so.
ALLOWED: dict[str, int] = {}


def _modules(package: Path = PACKAGE) -> list[Path]:
    return sorted(package.rglob("*.py"))


def _functions(tree: ast.AST, prefix: str = ""):
    """(qualified name, lines) of every function and method, nested ones included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{node.name}"
            yield name, node.end_lineno - node.lineno + 1  # type: ignore[operator]
            yield from _functions(node, f"{name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")


def oversized(package: Path = PACKAGE) -> list[str]:
    """Every module and function of `package` (reme_es/) past its limit and not allowed that size."""
    limit_module, limit_function = MAX_MODULE_LINES, MAX_FUNCTION_LINES
    found = []
    for path in _modules(package):
        rel = path.relative_to(package.parent).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > limit_module and lines > ALLOWED.get(rel, 0):
            found.append(f"{rel}: {lines} lines (at most {limit_module})")
        for name, size in _functions(ast.parse(text, rel)):
            key = f"{rel}:{name}"
            if size > limit_function and size > ALLOWED.get(key, 0):
                found.append(f"{key}: {size} lines (at most {limit_function})")
    return found


def test_no_module_or_function_is_over_its_size() -> None:
    assert oversized() == [], "split by meaning (docs/ARCHITECTURE.md, 'Sizes'):\n" + "\n".join(oversized())


def test_the_allow_list_is_empty() -> None:
    assert ALLOWED == {}


def test_the_check_sees_a_module_and_a_function_that_grew(tmp_path: Path) -> None:
    package = tmp_path / "scratch"
    package.mkdir()
    body = "".join(f"        x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))  # def + 59 lines: 60, allowed
    (package / "fits.py").write_text(f"class C:\n    def fits(self):\n{body}")
    assert oversized(package) == []
    (package / "grown.py").write_text(f"class C:\n    def grown(self):\n{body}        x = 0\n" + "#\n" * 339)
    assert oversized(package) == [
        "scratch/grown.py: 401 lines (at most 400)",
        "scratch/grown.py:C.grown: 61 lines (at most 60)",
    ]
    assert len(_modules()) > 100  # the real package is read
