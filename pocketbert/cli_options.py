"""Command-line options the converter and the benchmarks both take, spelled once.

Only click and the runtime's limits: importing this must stay as cheap as ``--help`` (the converter's
command modules pull in torch, which the benchmark harness loads only when a command needs it)."""

from __future__ import annotations

import click

from pocketbert.runtime import MAX_THREADS


def threads_option(default: int | None = 2):
    """--threads, 1 to MAX_THREADS; ``None``: the library's own choice (all cores), said in the help."""
    return click.option("--threads", type=click.IntRange(1, MAX_THREADS), default=default,
                        show_default=default is not None,
                        help=None if default else "PyTorch threads [default: all cores].")

