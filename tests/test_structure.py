"""The structure bars a newcomer relies on: functions short enough to read at once, modules of one idea.

* no function (or method) in pocketbert/ longer than 60 lines, from its ``def`` line to its last line
  (decorators not counted: click options are declarations, not logic);
* no module in pocketbert/ longer than 350 lines;
* no two module-level classes in pocketbert/ with the same public name (an ``Artifact`` of the converter
  and one of the runtime make every reader check which one an import means).

Running this file prints every offender, so the list is the to-do list while a split is under way."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pocketbert"
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 350
# "path:function" -> why it may be longer; keep empty unless splitting would make the code harder to read
EXEMPT: dict[str, str] = {}


def long_functions(root: Path = PACKAGE, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, int]]:
    """("path:qualified.name", lines) for every function over ``limit`` lines under ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name, node in _functions(tree, ""):
            lines = node.end_lineno - node.lineno + 1
            if lines > limit:
                found.append((f"{path.relative_to(root.parent)}:{name}", lines))
    return found


def long_modules(root: Path = PACKAGE, limit: int = MAX_MODULE_LINES) -> list[tuple[str, int]]:
    found = []
    for path in sorted(root.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found.append((str(path.relative_to(root.parent)), lines))
    return found


def _functions(node: ast.AST, prefix: str):
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield f"{prefix}{child.name}", child
            yield from _functions(child, f"{prefix}{child.name}.")
        elif isinstance(child, ast.ClassDef):
            yield from _functions(child, f"{prefix}{child.name}.")
        else:
            yield from _functions(child, prefix)


def test_the_measures_see_what_they_measure(tmp_path):
    """A 61-line function and a 351-line module are caught; 60 and 350 lines pass."""
    def body(indent: str, lines: int) -> str:
        return "".join(f"{indent}x{i} = {i}\n" for i in range(lines))

    (tmp_path / "mod.py").write_text("@decorator\n" * 5 + "def fits():\n" + body("    ", 59)
                                     + "\n\nclass C:\n    def too_long(self):\n" + body("        ", 60))
    assert long_functions(tmp_path) == [(f"{tmp_path.name}/mod.py:C.too_long", 61)]
    (tmp_path / "mod.py").unlink()
    (tmp_path / "big.py").write_text("x = 1\n" * 351)
    (tmp_path / "small.py").write_text("x = 1\n" * 350)
    assert long_modules(tmp_path) == [(f"{tmp_path.name}/big.py", 351)]


def test_no_function_over_60_lines():
    offenders = [(name, lines) for name, lines in long_functions() if name not in EXEMPT]
    assert not offenders, "split these functions:\n" + "\n".join(f"  {n} ({k} lines)" for n, k in offenders)


def test_no_module_over_350_lines():
    offenders = long_modules()
    assert not offenders, "split these modules:\n" + "\n".join(f"  {n} ({k} lines)" for n, k in offenders)


def duplicate_class_names(root: Path = PACKAGE) -> dict[str, list[str]]:
    """Public class name -> the modules under ``root`` defining it at module level, for names defined twice.
    Classes nested in functions are not importable, so they are not counted."""
    where: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                where.setdefault(node.name, []).append(str(path.relative_to(root.parent)))
    return {name: paths for name, paths in where.items() if len(paths) > 1}


def test_duplicate_class_names_are_found(tmp_path):
    (tmp_path / "a.py").write_text("class Artifact:\n    pass\n\n\nclass _Private:\n    pass\n")
    (tmp_path / "b.py").write_text("class Artifact:\n    pass\n\n\nclass _Private:\n    pass\n\n\n"
                                   "def f():\n    class Local:\n        pass\n")
    (tmp_path / "c.py").write_text("def g():\n    class Local:\n        pass\n")
    assert duplicate_class_names(tmp_path) == {"Artifact": [f"{tmp_path.name}/a.py", f"{tmp_path.name}/b.py"]}


def test_no_two_public_classes_share_a_name():
    duplicates = duplicate_class_names()
    assert not duplicates, "rename these classes so that each name says which one it is:\n" + "\n".join(
        f"  {name}: {', '.join(paths)}" for name, paths in duplicates.items())


# --- calls passing more than four arguments by position ---------------------------------------

MAX_POSITIONAL = 4
# "path:function" -> why a call there may still pass more than four arguments by position
POSITIONAL_EXEMPT: dict[str, str] = {}


def long_positional_calls(root: Path = PACKAGE, limit: int = MAX_POSITIONAL) -> list[tuple[str, int, str]]:
    """("path:enclosing function", line, callee) for every call under ``root`` passing more than ``limit``
    arguments by position to a function or class defined under ``root`` (other libraries' signatures,
    such as torch's, are theirs to choose)."""
    trees = {path: ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
             for path in sorted(root.rglob("*.py"))}
    ours = {node.name for tree in trees.values() for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    found = []
    for path, tree in trees.items():
        where = f"{path.relative_to(root.parent)}:"
        for name, call in _calls(tree, ""):
            callee = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
            if len(call.args) > limit and callee in ours:
                found.append((where + name, call.lineno, callee))
    return found


def _calls(node: ast.AST, name: str):
    """(qualified name of the enclosing function or class, call) for every call below ``node``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield from _calls(child, f"{name}.{child.name}" if name else child.name)
            continue
        if isinstance(child, ast.Call):
            yield name, child
        yield from _calls(child, name)


def test_the_positional_call_measure_sees_a_planted_call(tmp_path):
    """Five positional arguments to our own function are caught; four, keywords, and other libraries' pass."""
    (tmp_path / "mod.py").write_text(
        "import torch\n\n\ndef five(a, b, c, d, e):\n    return a\n\n\nclass Outer:\n    def run(self):\n"
        "        five(1, 2, 3, 4, 5)\n        five(1, 2, 3, 4, e=5)\n        torch.full(1, 2, 3, 4, 5)\n\n\n"
        "x = five(1, 2, 3, 4, 5)\n")
    assert long_positional_calls(tmp_path) == [(f"{tmp_path.name}/mod.py:Outer.run", 10, "five"),
                                               (f"{tmp_path.name}/mod.py:", 15, "five")]


def test_no_call_passes_more_than_four_arguments_by_position():
    offenders = [(name, line, callee) for name, line, callee in long_positional_calls()
                 if name not in POSITIONAL_EXEMPT]
    assert not offenders, "name the arguments of these calls:\n" + "\n".join(
        f"  {name} line {line}: {callee}(...)" for name, line, callee in offenders)


if __name__ == "__main__":
    for name, lines in long_functions():
        print(f"function {name}: {lines} lines{'  (exempt: ' + EXEMPT[name] + ')' if name in EXEMPT else ''}")
    for name, lines in long_modules():
        print(f"module {name}: {lines} lines")
