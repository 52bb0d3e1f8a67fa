"""The shell commands the README and docs/ show in fenced blocks, as a reader would type them.

A block's lines are joined across trailing backslashes and split at ``&&`` and ``;``.  In a transcript
(a block with ``$ `` prompts) only the prompted lines are commands, the rest is output.  Python, JSON and
other non-shell blocks are skipped."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELL = ("", "bash", "sh", "shell", "console")
FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.MULTILINE | re.DOTALL)
#: the console scripts of pyproject.toml and the package each one runs (its ``python -m`` form)
SCRIPTS = {"pocketbert-convert": "pocketbert.converter", "pocketbert-run": "pocketbert.runtime",
           "pocketbert-bench": "pocketbert.benchmarks"}


def block_commands(code: str) -> list[str]:
    lines = code.replace("\\\n", " ").splitlines()
    if any(line.lstrip().startswith("$ ") for line in lines):
        lines = [line.lstrip()[2:] for line in lines if line.lstrip().startswith("$ ")]
    commands = []
    for line in lines:
        commands += [part.strip() for part in re.split(r"&&|;", line) if part.strip()]
    return [c for c in commands if not c.startswith("#")]


def commands(pages: list[Path] = PAGES) -> list[tuple[str, str]]:
    """``(page, command)`` for every command of every fenced shell block, in reading order."""
    found = []
    for page in pages:
        for _, language, code in FENCE.findall(page.read_text(encoding="utf-8")):
            if language in SHELL:
                found += [(page.name, command) for command in block_commands(code)]
    return found


def words(command: str) -> list[str]:
    """The command's words without its comment; placeholders such as ``BUNDLE…`` are words too."""
    try:
        return shlex.split(command, comments=True)
    except ValueError:  # an apostrophe in a trailing comment
        return command.split("#")[0].split()


def python_module(command: str) -> tuple[str, str] | None:
    """``(interpreter, module)`` of a ``python -m MODULE …`` command, else ``None``."""
    argv = words(command)
    if len(argv) >= 3 and re.fullmatch(r"(.*/)?python3?", argv[0]) and argv[1] == "-m":
        return argv[0], argv[2]
    return None
