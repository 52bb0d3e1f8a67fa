"""Files for phones and integer-only hardware: ``size-frontier``, ``full-integer``, ``full-integer-levers``."""

from __future__ import annotations

from pathlib import Path

import click

from .common import (
    RESULTS,
    bundles_argument,
    data_dir_option,
    fail,
    log,
    one_thread_option,
    quiet_transformers,
    results_file_option,
)
from .group import cli


@cli.command("size-frontier", help="Every verified TFLite file of each BUNDLE (phones run TFLite): size, dev score "
             "against the teacher its recovery record names, p50 latency at batch 1 measured in alternating rounds "
             "across all the files, and the speed-up against the bundle's tflite:fp32. Writes DIR/size-frontier.json "
             "and DIR/size_frontier.png, nothing outside DIR (`report` draws its own copy beside REPORT.md).")
@bundles_argument()
@one_thread_option
@click.option("--seq-len", type=click.IntRange(min=1), default=128, show_default=True)
@click.option("--rounds", type=click.IntRange(min=1), default=20, show_default=True,
              help="alternating rounds over all the files; p50 is the median of a file's rounds")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="first N dev examples of each task only")
@data_dir_option()
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=RESULTS, show_default=True,
              help="results directory")
def size_frontier(bundle_dirs, threads, seq_len, rounds, limit, data_dir, out):
    from pocketbert.converter.errors import ConverterError

    from .. import schema
    from .. import size_frontier as job
    from .. import size_frontier_report as render
    from ..accuracy import AccuracyError

    quiet_transformers()
    try:  # the plot is drawn after minutes of measuring: a missing matplotlib must stop it before them
        import matplotlib  # noqa: F401
    except ImportError:
        fail("size-frontier draws size_frontier.png with matplotlib, which is not installed (it comes with the "
             "'bench' extra, not 'convert')", "pip install -e '.[bench]' in the checkout (or pip install "
             "'pocketbert[bench]'), then run the command again", 2)
    try:
        data = job.measure(list(bundle_dirs), threads=threads, seq_len=seq_len, rounds=rounds, limit=limit,
                           data_dir=data_dir, progress=log)
    except (AccuracyError, ConverterError) as exc:  # no TFLite file, no teacher score, a missing dev file
        fail(exc.problem, exc.fix or "")
    path = schema.write(data, Path(out) / ("size-frontier-fast.json" if limit else "size-frontier.json"))
    click.echo("\n".join(render.table(data["results"])))
    click.echo(render.settings_line(data))
    click.echo(str(path))
    click.echo(str(render.plot(data["results"], Path(out) / render.PNG)))


@cli.command("full-integer", help="Each artifact of each BUNDLE against the bundle's float export: dev score, top-1 "
             "agreement, size, ops left in float, latency (batch 1, sequence 128, this CPU).")
@bundles_argument()
@click.option("--limit", type=click.IntRange(min=1), default=None, help="first N dev examples only (fast mode)")
@one_thread_option
@data_dir_option()
@results_file_option()
def full_integer(bundle_dirs, limit, threads, data_dir, out):
    from pocketbert.converter.errors import ConverterError

    from .. import full_integer as fi
    from .. import schema
    from ..accuracy import AccuracyError

    quiet_transformers()
    try:
        data = fi.measure(list(bundle_dirs), limit=limit, threads=threads, data_dir=data_dir, progress=log)
    except (AccuracyError, ConverterError) as exc:  # a broken bundle; a missing or unreadable dev file
        fail(exc.problem, exc.fix or "")
    out = out or RESULTS / ("full-integer-fast.json" if limit else "full-integer.json")
    click.echo(str(schema.write(data, out)))


@cli.command("full-integer-levers", help="The bundle's float TFLite quantized with int8 activations, int16 on the "
             "residual stream (ADD, MUL) only, and int16 everywhere: dev score, agreement, size, latency.")
@click.argument("bundle_dir", type=click.Path(path_type=Path))
@click.option("--calibration-rows", type=click.IntRange(min=1), default=256, show_default=True)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="first N dev examples only (fast mode)")
@one_thread_option
@data_dir_option()
@results_file_option()
def full_integer_levers(bundle_dir, calibration_rows, limit, threads, data_dir, out):
    from pocketbert.converter.errors import ConverterError

    from .. import full_integer_levers as levers
    from .. import schema
    from ..accuracy import AccuracyError

    quiet_transformers()
    try:
        data = levers.measure(bundle_dir, calibration_rows=calibration_rows, limit=limit, threads=threads,
                              data_dir=data_dir, progress=log)
    except (AccuracyError, ConverterError) as exc:  # a broken bundle; a missing or unreadable data file
        fail(exc.problem, exc.fix or "")
    name = f"full-integer-levers-{Path(bundle_dir).name}" + ("-fast" if limit else "")
    click.echo(str(schema.write(data, out or RESULTS / f"{name}.json")))
