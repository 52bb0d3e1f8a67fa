"""The docs' ``python -m`` commands work where a reader runs them.

The rule: a fenced command ``python -m MODULE …`` (or ``python3``) runs from the reader's own folder, so
MODULE must be importable from any folder once PocketBERT is installed (``pocketbert.converter``,
``pytest``, ``venv``); a command run from the checkout says so by its interpreter, ``.venv/bin/python -m
…``, and may use the repository root's forwarding modules (``converter``, ``runtime``, ``benchmarks``).
The docs' console-script commands (pocketbert-convert, …) are run from a folder outside the checkout by
tests/test_wheel.py, on the installed wheel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .doc_commands import REPO, commands, python_module

CHECKOUT_PYTHON = ".venv/bin/python"
FORWARDING = {path.stem for path in REPO.glob("*.py")}  # converter.py, runtime.py, benchmarks.py


def offenders(found: list[tuple[str, str]], importable: dict[str, bool]) -> list[str]:
    """The commands that break the rule; ``importable[m]``: ``m`` imports from a folder outside the checkout."""
    bad = []
    for page, command in found:
        python = python_module(command)
        if python is None:
            continue
        interpreter, module = python
        works = importable[module] or (interpreter == CHECKOUT_PYTHON and module in FORWARDING)
        if not works:
            bad.append(f"{page}: {command}")
    return bad


def importable_outside(modules: set[str], folder: Path) -> dict[str, bool]:
    """Which of ``modules`` this interpreter finds from ``folder``, with nothing pointing at the checkout."""
    probe = "import importlib.util, json, sys; print(json.dumps({m: importlib.util.find_spec(m) is not None " \
            "for m in sys.argv[1:]}))"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", probe, *sorted(modules)], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_every_python_m_command_works_where_it_is_run(tmp_path):
    found = commands()
    modules = {python_module(c)[1] for _, c in found if python_module(c)}
    assert {"venv", "pytest", "converter"} <= modules, "the set-up commands were not found: the parser broke"
    assert offenders(found, importable_outside(modules, tmp_path)) == []


def test_the_rule_tells_checkout_commands_from_commands_run_anywhere(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```\npython -m converter list\n.venv/bin/python -m converter list\n"
                    "python3 -m pocketbert.converter list && python -m runtime B t\n```\n\n"
                    "```console\n$ python -m benchmarks gates \\\n    bundles/x   # a comment's apostrophe\n"
                    "python -m converter (output, not a command)\n```\n\n"
                    "```python\nimport runtime  # python -m converter in Python code is not a command\n```\n")
    found = commands([page])
    assert [c for _, c in found] == [
        "python -m converter list", ".venv/bin/python -m converter list", "python3 -m pocketbert.converter list",
        "python -m runtime B t", "python -m benchmarks gates      bundles/x   # a comment's apostrophe"]
    modules = {python_module(c)[1] for _, c in found}
    importable = importable_outside(modules, tmp_path)
    assert importable == {"converter": False, "runtime": False, "benchmarks": False, "pocketbert.converter": True}
    assert offenders(found, importable) == [
        "page.md: python -m converter list", "page.md: python -m runtime B t",
        "page.md: python -m benchmarks gates      bundles/x   # a comment's apostrophe"]
