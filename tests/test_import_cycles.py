"""No import cycles between the project's modules, counting imports inside functions too.

An import placed inside a function to dodge a cycle still ties the two modules together; the cure is
to move the shared piece into a module of its own.  Two kinds of import are not edges: a module's
import of its own parent package (the registries: a package imports its members, which register
themselves with it), and imports under ``if TYPE_CHECKING`` (never executed)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("pocketbert",)


def _modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _imports(tree: ast.AST):
    """Every Import/ImportFrom node, except those inside ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in _imports_of(child))
            continue
        yield from _imports_of(node)


def _imports_of(node: ast.AST):
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
    yield from _imports(node)


def _edges(modules: dict[str, Path]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = ".".join(package[:len(package) - node.level + 1] + [node.module or ""]).strip(".") \
                    if node.level else node.module
                targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            else:
                targets = [alias.name for alias in node.names]
            edges[name] |= {t for t in targets if t in modules and t != name and not name.startswith(t + ".")}
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles():
    assert _cycles(_edges(_modules())) == []


def test_the_check_sees_a_cycle_hidden_in_a_function(tmp_path):
    edges = {"a": {"b"}, "b": {"a"}, "c": {"a"}}
    assert _cycles(edges) == [["a", "b"]]
    module = ast.parse("def f():\n    from .b import x\nif TYPE_CHECKING:\n    from .c import y\n")
    assert [n.module for n in _imports(module)] == ["b"]


def test_the_runtime_imports_nothing_of_the_converter_or_benchmarks():
    edges = _edges(_modules())
    leaks = sorted((a, b) for a, targets in edges.items() if a.startswith("pocketbert.runtime")
                   for b in targets if not b.startswith("pocketbert.runtime"))
    assert leaks == []
