"""Printing with rich without trusting the text: what users, files and models say is never markup.

rich reads ``[bold]``, ``[/]``, ``[link=…]`` and ``:emoji:`` codes in every string it prints, so a
text, a label or a path holding brackets would be restyled, become a live terminal hyperlink, or
crash the print with MarkupError.  The command lines therefore keep markup to their own fixed
words (``[red]error:[/]``) and pass everything else through :func:`plain`, which makes a rich
``Text``: printed exactly as given, except that control characters (a terminal's own escape
sequences, carriage returns) are shown as ``\\x1b`` instead of acting on the terminal.
"""

from __future__ import annotations

from rich.text import Text

# C0 controls but tab and newline, DEL, and C1 controls: shown, never sent to the terminal raw.
_VISIBLE = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if chr(c) not in "\t\n"}


def plain(value: object, style: str = "") -> Text:
    """``str(value)`` as literal text: no markup, no emoji codes, no highlighting, no raw control codes."""
    return Text(str(value).translate(_VISIBLE), style=style)


def styled(markup: str, *values: object) -> Text:
    """Our own ``markup`` (a fixed label such as ``[red]error:[/] ``) followed by ``values``, verbatim."""
    return Text.assemble(Text.from_markup(markup), *(plain(v) for v in values))
