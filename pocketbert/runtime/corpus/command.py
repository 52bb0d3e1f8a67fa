"""The corpus options of ``pocketbert-run`` and what they run: the streaming job, or the job on Ray.

``options`` adds the flags to the runtime's command; ``run`` is called when ``--input`` is given.  On a
terminal a progress bar shows rows, rows/s and the time left (stderr); in a pipe or a log nothing is
drawn, and skipped rows and errors are still printed, one line each.
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

from ..terminal import plain, styled
from .job import DEFAULT_CHUNK_ROWS, Job, check_paths
from .job import run as run_job
from .predict import Predictor, Settings

EXIT_INTERRUPTED = 130


def options(command):
    """Decorate the runtime's click command with the corpus options (applied bottom-up: listed in order)."""
    for decorator in reversed([
        click.option("--input", "input_path", type=click.Path(dir_okay=False, path_type=Path),
                     help="Corpus file: .jsonl, .csv, .tsv or .parquet; results go to --output FILE, same format."),
        click.option("--text-field", default="text", show_default=True, help="Corpus: field/column with the text."),
        click.option("--pair-field", help="Corpus: field/column with the second text of a sentence pair."),
        click.option("--prefix", default="pred_", show_default=True, help="Corpus: prefix of the prediction columns."),
        click.option("--chunk-rows", type=click.IntRange(min=1), default=DEFAULT_CHUNK_ROWS, show_default=True,
                     help="Corpus: rows read, predicted and committed at a time (the unit of --resume)."),
        click.option("--skip-bad", is_flag=True, help="Corpus: skip rows without a usable text (each is listed)."),
        click.option("--resume", is_flag=True, help="Corpus: continue a killed run from its last completed chunk."),
        click.option("--overwrite", is_flag=True, help="Corpus: replace an existing --output (or its partial run)."),
        click.option("--ray", "ray_address", is_flag=False, flag_value="local", default=None, metavar="[ADDRESS]",
                     help="Corpus: run on Ray Data: a new local instance, or the cluster at ADDRESS ('auto': the "
                          "running one). Needs pip install 'pocketbert[cluster]'."),
        click.option("--workers", type=click.IntRange(min=1), help="Corpus with --ray: actors, each with the bundle "
                     "loaded once (default: the cluster's CPUs)."),
    ]):
        command = decorator(command)
    return command


def _progress(err: Console) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                    TextColumn("{task.fields[rows]} rows  {task.fields[rate]} rows/s"), TimeRemainingColumn(),
                    console=err, transient=True, disable=not err.is_terminal)


def run(bundle: str, output: str | None, load: dict, *, top_k: int, aggregation: str, stride: int | None,
        input_path: Path, text_field: str, pair_field: str | None, prefix: str, chunk_rows: int, skip_bad: bool,
        resume: bool, overwrite: bool, ray_address: str | None, workers: int | None, err: Console,
        quiet_load=contextlib.nullcontext) -> None:
    if not output or output in ("auto", "jsonl", "table"):
        raise click.UsageError("--input needs --output FILE: the results file (same format as the input)")
    if workers is not None and ray_address is None:
        raise click.UsageError("--workers sizes the Ray actor pool: add --ray (or leave --workers out)")
    if resume and ray_address is not None:
        raise click.UsageError("--resume continues a streaming run; a Ray run retries failed tasks itself: drop one")
    settings = Settings(text_field=text_field, pair_field=pair_field, prefix=prefix, top_k=top_k,
                        aggregation=aggregation, stride=stride, load=load)
    job = Job(bundle, input_path, Path(output), settings, chunk_rows=chunk_rows, skip_bad=skip_bad, resume=resume,
              overwrite=overwrite)
    check_paths(job)  # an output already there is refused before the bundle loads
    with quiet_load():
        predictor = Predictor.load(bundle, settings)
    with _progress(err) as bar:
        task = bar.add_task(plain(input_path.name), total=None, rows=0, rate="-")
        console = bar.console
        started, counted = time.perf_counter(), [0]

        def on_bad(where: str, reason: str) -> None:
            console.print(styled("[yellow]skipped:[/] ", f"{input_path}, {where}: {reason}"))

        def on_start(total: int, done: int, unit: str) -> None:
            bar.update(task, total=total, completed=done)

        def progress(done: int, rows: int) -> None:
            counted[0] += rows
            rate = counted[0] / max(time.perf_counter() - started, 1e-9)
            bar.update(task, completed=done, rows=counted[0], rate=f"{rate:,.0f}")

        try:
            if ray_address is not None:
                from .ray_job import run as run_ray

                summary = run_ray(job, predictor, ray_address, workers, progress=progress, on_start=on_start,
                                  on_bad=on_bad)
            else:
                summary = run_job(job, predictor=predictor, progress=progress, on_bad=on_bad, on_start=on_start)
        except KeyboardInterrupt:
            kept = (f"the completed chunks are saved in {output}.partial; run the same command with --resume to "
                    "continue") if ray_address is None else "a Ray run keeps nothing: run it again"
            console.print(styled("[yellow]interrupted:[/] ", kept))
            sys.exit(EXIT_INTERRUPTED)
    if summary.kept is not None:
        err.print(styled("[yellow]kept:[/] ", f"the earlier {output} was not written by PocketBERT (or was changed "
                                              f"since), so it was not deleted: it is now {summary.kept}"))
    if err.is_terminal:
        rate = (summary.rows_read - summary.resumed_at) / max(summary.seconds, 1e-9)
        note = f" ({summary.resumed_at} done by the run resumed)" if summary.resumed_at else ""
        err.print(plain(f"wrote {summary.rows_written} rows to {summary.output}{note} in {summary.seconds:.1f} s "
                        f"({rate:,.0f} rows/s); {summary.skipped_count} bad rows skipped"))
