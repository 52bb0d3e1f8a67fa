"""What every benchmark command shares: where results go, the console, error exits and repeated options."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from pocketbert.cli_options import threads_option
from pocketbert.locations import DATA_DIR_DEFAULT, cache_dir, checkout
from pocketbert.runtime.terminal import plain, styled

HERE = Path(__file__).resolve().parents[1]  # pocketbert/benchmarks
# A checkout keeps results beside the committed REPORT.md; an installed package must not write into site-packages.
OUTPUT = HERE if checkout() else Path.cwd() / "pocketbert-benchmarks"
RESULTS = OUTPUT / "results"
WORK = HERE / ".cache" if checkout() else cache_dir() / "benchmarks"
DATA_HELP = f"data directory (default {DATA_DIR_DEFAULT})"
console = Console(stderr=True, highlight=False, soft_wrap=True)  # no wrapping inside paths or in logs


def ints(text: str, what: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"{what} must be comma-separated integers, e.g. 1,2 (got {text!r})") from None
    if not values or any(v < 1 for v in values):
        raise click.BadParameter(f"{what} must list positive integers (got {text!r})")
    return values


def cpu_names(text: str, known, what: str) -> list[str]:
    """--cpus: comma-separated emulated CPU models, each one ``known``; anything else is a usage error."""
    names = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in names if c not in known]
    if unknown or not names:
        fail(f"unknown {what} model(s) {', '.join(unknown) or '(none given)'}",
             f"use one or more of {', '.join(known)}", 2)
    return names


def out_file(ctx, param, value: Path | None) -> Path | None:
    """--out is written after all the measuring: a path that can never be a file is refused before it."""
    if value is None:
        return None
    if value.is_dir():
        raise click.BadParameter(f"{str(value)!r} is a directory; give the file to write, e.g. "
                                 "--out results/latency.json")
    existing = value.absolute().parent
    while not existing.exists():  # the directories schema.write would create
        existing = existing.parent
    if not existing.is_dir():
        raise click.BadParameter(f"{str(value)!r} cannot be written: {str(existing)!r} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise click.BadParameter(f"{str(value)!r} cannot be written: {str(existing)!r} is not writable")
    return value


def fail(problem: str, fix: str, code: int = 3) -> None:
    console.print(styled("[red]error:[/red] ", problem))
    console.print(styled("  fix: ", fix))
    sys.exit(code)


def log(message: str) -> None:
    """Progress lines name bundles, files and tasks: printed as they are, never as markup."""
    console.print(plain(message))


def quiet_transformers() -> None:
    """transformers' per-load progress bars and the exporters' warnings would interleave with our progress."""
    import logging as python_logging
    import warnings

    from transformers.utils import logging

    python_logging.getLogger().setLevel(python_logging.ERROR)  # ONNX Runtime's quantiser advises on every call
    warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.onnx")
    warnings.filterwarnings("ignore", category=FutureWarning)
    logging.disable_progress_bar()
    logging.set_verbosity_error()


def progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, transient=True)


# --- options several commands take, spelled once -------------------------------------------------
def bundles_argument(required: bool = True):
    """BUNDLE…: without ``required``, the command builds the tiny bundle itself in --fast mode."""
    return click.argument("bundle_dirs", nargs=-1, required=required, type=click.Path(path_type=Path))


def data_dir_option(as_path: bool = False):
    """--data-dir; ``as_path``: handed on as a Path, else as the text given (the callees resolve either)."""
    return click.option("--data-dir", type=click.Path(path_type=Path) if as_path else None, default=None,
                        help=DATA_HELP)


def results_file_option(default: Path | None = None, help: str | None = None):
    """--out, the results file: checked before any measuring (out_file)."""
    return click.option("--out", type=click.Path(path_type=Path), callback=out_file, default=default,
                        show_default=True if default is not None else None, help=help)


work_dir_option = click.option("--work-dir", type=click.Path(path_type=Path), default=None,
                               help=f"work files (inputs, built bundles) [default: {WORK}; with --out, "
                                    f"{cache_dir() / 'benchmarks'}]")


def work_dir_for(work_dir: Path | None, out: Path | None) -> Path:
    """--work-dir, else the checkout's cache when results go to the checkout too; results sent elsewhere with --out
    keep their work files in the user's cache, never in the checkout."""
    if work_dir is not None:
        return work_dir
    return WORK if out is None else cache_dir() / "benchmarks"
one_thread_option = threads_option(default=1)  # the converter's --threads: 1 to 256, default 1
