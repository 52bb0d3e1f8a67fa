"""No import cycles in the package: between modules, and between the folders (and modules) side by side in a folder.

Every import counts, wherever it stands: inside a function (placed there to dodge a cycle, it still ties
the two modules together) and under ``if TYPE_CHECKING`` (a type a module needs is a dependency too).  The
cure for a cycle is to move the shared piece to the one place both sides can import.  One kind of import
is not an edge: a module's import of a package it lives in (the registries: a package imports its
members, which register themselves with it).

Folders: an import ``a -> b`` is seen from the deepest package holding both, as an edge between the entries
of that package (a subfolder or a module) on each side's path.  ``converter/training/recovery.py ->
converter/checkpoints/loading.py`` is the edge ``training/ -> loading.py`` inside ``converter/``; a cycle among the
entries of any one folder means two parts of the code each need the other."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("pocketbert",)


def _modules(root: Path = REPO, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    modules = {}
    for package in packages:
        for path in (root / package).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement in the module: top level, in functions, under ``if TYPE_CHECKING``."""
    return [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


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


def _folder_edges(edges: dict[str, set[str]]) -> dict[str, dict[str, list[str]]]:
    """``{entry: {entry: [the imports behind the edge]}}`` between the entries (subfolders and modules) of
    each folder; a package importing its own members (``__init__.py`` re-exports) is inside its entry."""
    folders: dict[str, dict[str, list[str]]] = {}
    for a, targets in edges.items():
        for b in targets:
            pa, pb = a.split("."), b.split(".")
            depth = next((i for i, (x, y) in enumerate(zip(pa, pb)) if x != y), None)
            if depth is None:  # one contains the other: a package and its own members
                continue
            entry_a, entry_b = ".".join(pa[:depth + 1]), ".".join(pb[:depth + 1])
            folders.setdefault(entry_b, {})
            folders.setdefault(entry_a, {}).setdefault(entry_b, []).append(f"{a} -> {b}")
    return folders


def _cycles(edges: dict[str, set[str]] | dict[str, dict]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
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


def _folder_cycles(edges: dict[str, set[str]]) -> dict[str, list[str]]:
    """Each cycle between entries of a folder (``"a <-> b"``) with the module imports that make it."""
    folders = _folder_edges(edges)
    return {" <-> ".join(cycle): sorted(i for a in cycle for b in cycle for i in folders[a].get(b, ()))
            for cycle in _cycles(folders)}


def test_no_import_cycles_between_modules():
    assert _cycles(_edges(_modules())) == []


def test_no_import_cycles_between_folders():
    assert _folder_cycles(_edges(_modules())) == {}


def test_the_checks_see_planted_cycles(tmp_path):
    """A package with a module cycle made only of a TYPE_CHECKING import and one inside a function, and a
    folder cycle between two subpackages whose modules never import each other directly."""
    files = {
        "pkg/__init__.py": "from . import a\n",  # a package importing its member: no cycle
        "pkg/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
        "pkg/b.py": "def f():\n    from . import a\n",
        "pkg/left/__init__.py": "",
        "pkg/left/one.py": "from ..right.two import x\n",
        "pkg/left/three.py": "import pkg\n",  # a package it lives in: the registry pattern, no edge
        "pkg/right/__init__.py": "",
        "pkg/right/two.py": "x = 1\n",
        "pkg/right/four.py": "from pkg.left import three\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    edges = _edges(_modules(tmp_path, ("pkg",)))
    assert _cycles(edges) == [["pkg.a", "pkg.b"]]
    assert _folder_cycles(edges) == {
        "pkg.a <-> pkg.b": ["pkg.a -> pkg.b", "pkg.b -> pkg.a"],
        "pkg.left <-> pkg.right": ["pkg.left.one -> pkg.right.two", "pkg.right.four -> pkg.left",
                                   "pkg.right.four -> pkg.left.three"],
    }


def test_the_runtime_imports_nothing_of_the_converter_or_benchmarks():
    edges = _edges(_modules())
    leaks = sorted((a, b) for a, targets in edges.items() if a.startswith("pocketbert.runtime")
                   for b in targets if not b.startswith("pocketbert.runtime"))
    assert leaks == []
