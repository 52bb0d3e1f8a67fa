"""Printing with rich without trusting the text: what users, files and models say is never markup.

rich reads ``[bold]``, ``[/]``, ``[link=…]`` and ``:emoji:`` codes in every string it prints, so a
text, a label or a path holding brackets would be restyled, become a live terminal hyperlink, or
crash the print with MarkupError.  The command lines therefore keep markup to their own fixed
words (``[red]error:[/]``) and pass everything else through :func:`plain`, which makes a rich
``Text``: printed exactly as given, except that control characters (a terminal's own escape
sequences, carriage returns) are shown as ``\\x1b`` instead of acting on the terminal.

:func:`command_name` is the command as the user typed it, for usage lines they copy.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rich.text import Text

# C0 controls but tab and newline, DEL, and C1 controls: shown, never sent to the terminal raw.
_VISIBLE = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if chr(c) not in "\t\n"}


def plain(value: object, style: str = "") -> Text:
    """``str(value)`` as literal text: no markup, no emoji codes, no highlighting, no raw control codes."""
    return Text(str(value).translate(_VISIBLE), style=style)


def styled(markup: str, *values: object) -> Text:
    """Our own ``markup`` (a fixed label such as ``[red]error:[/] ``) followed by ``values``, verbatim."""
    return Text.assemble(Text.from_markup(markup), *(plain(v) for v in values))


def command_name() -> str:
    """How this command line was started: ``python -m`` and the module as typed (``pocketbert.converter``, or in a
    checkout its forwarding module ``converter``), else the console script's name (``pocketbert-convert``)."""
    argv = getattr(sys, "orig_argv", sys.argv)
    if Path(sys.argv[0]).name == "__main__.py" and "-m" in argv[1:]:
        module = argv[argv.index("-m", 1) + 1:][:1]
        if module:
            return f"python -m {module[0]}"
    return Path(sys.argv[0]).name
