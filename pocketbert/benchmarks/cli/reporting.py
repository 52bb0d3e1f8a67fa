"""``pocketbert-bench report``: REPORT.md and its plots from the results files, nothing measured."""

from __future__ import annotations

from pathlib import Path

import click

from pocketbert.runtime.terminal import styled

from .common import OUTPUT, RESULTS, console, fail, results_file_option
from .group import cli


@cli.command(help="REPORT.md (tables) and PNG plots from every results file.")
@click.option("--results", "results_dir", type=click.Path(path_type=Path), default=RESULTS, show_default=True,
              help="directory of results JSON files")
@results_file_option(default=OUTPUT / "REPORT.md")
def report(results_dir, out):
    from .. import report as rep

    if not Path(results_dir).is_dir() or not any(Path(results_dir).glob("*.json")):
        fail(f"no results files in {results_dir}", "run `pocketbert-bench latency …` (and device/accuracy) "
             "first, or pass --results DIR")
    files, skipped = rep.read_all(Path(results_dir))
    unread = "; ".join(f"{name}: {why}" for name, why in skipped.items())
    if not files:
        fail(f"none of the .json files in {results_dir} is a readable results file ({unread})",
             "pass --results DIR holding the files `pocketbert-bench latency …` (or accuracy, device) wrote")
    if skipped:
        console.print(styled("[yellow]warning:[/yellow] ", f"skipped {len(skipped)} unreadable file(s): {unread}"))
    click.echo(str(rep.build(Path(results_dir), Path(out))))

