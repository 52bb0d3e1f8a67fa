"""Speed on this machine: ``latency`` (per configuration), ``throughput`` (dev sets), ``corpus`` (a corpus job)."""

from __future__ import annotations

import click

from pocketbert.runtime.errors import Error
from pocketbert.runtime.machine import usable_cpus
from pocketbert.runtime.terminal import plain

from .common import (
    RESULTS,
    bundles_argument,
    console,
    data_dir_option,
    fail,
    ints,
    log,
    progress,
    quiet_transformers,
    results_file_option,
    work_dir_for,
    work_dir_option,
)
from .group import cli


@cli.command(help="Latency of every artifact of each BUNDLE (and peers): JSON results.")
@bundles_argument(required=False)
@click.option("--backend", "backends", default="onnx,tflite", show_default=True)
@click.option("--threads", default=None, help="comma-separated thread counts (default 1,2,4 up to the usable CPUs)")
@click.option("--seq-len", default=None, help="comma-separated sequence lengths (default 32,64,128,256)")
@click.option("--batch", default=None, help="comma-separated batch sizes (default 1,8)")
@click.option("--runs", type=click.IntRange(min=1), default=None, help="timed runs per configuration (default 50)")
@click.option("--warmup", type=click.IntRange(min=0), default=None, help="warm-up runs (default 10)")
@click.option("--rounds", type=click.IntRange(min=1), default=1, show_default=True,
              help="split each configuration's runs over N rounds, the runners taking turns (fairer ratios "
                   "on a machine whose load drifts)")
@click.option("--peers", is_flag=True, help="also measure PyTorch eager, ORT optimizer fp32/int8 and plain TFLite")
@click.option("--checkpoint", default=None, help="source checkpoint for peers/MACs when the manifest's is gone")
@click.option("--no-floor", is_flag=True, help="skip the GEMM floor measurement")
@click.option("--fast", is_flag=True, help="few runs, one configuration; without BUNDLE, builds a tiny bundle")
@results_file_option(help=f"results file (default {RESULTS}/latency.json; fast: latency-fast.json)")
@work_dir_option
def latency(bundle_dirs, backends, threads, seq_len, batch, runs, warmup, rounds, peers, checkpoint, no_floor, fast,
            out, work_dir):
    from .. import latency as lat
    from .. import models as registry
    from .. import schema

    quiet_transformers()
    work_dir = work_dir_for(work_dir, out)
    usable = usable_cpus()
    settings = lat.LatencySettings(backends=[b.strip() for b in backends.split(",") if b.strip()], peers=peers,
                            checkpoint=checkpoint, floor=not no_floor, fast=fast, rounds=rounds)
    if fast:
        settings.threads, settings.seq_lens, settings.batches = [1], [32], [1]
        settings.runs, settings.warmup, settings.min_runs, settings.floor_seconds = 8, 2, 8, 0.01
    else:
        settings.threads = [t for t in (1, 2, 4) if t <= usable] or [1]
    if threads:
        settings.threads = ints(threads, "--threads")
        if max(settings.threads) > usable:
            console.print(f"[yellow]warning:[/yellow] {max(settings.threads)} threads on {usable} usable CPUs: "
                          "oversubscribed, figures will be slower than the hardware allows")
    if seq_len:
        settings.seq_lens = ints(seq_len, "--seq-len")
    if batch:
        settings.batches = ints(batch, "--batch")
    if runs:
        settings.runs = runs
        settings.min_runs = min(settings.min_runs, runs)
    if warmup is not None:
        settings.warmup = warmup
    for b in settings.backends:
        if b not in lat.BACKENDS:
            fail(f"unknown backend {b!r}", f"use {' or '.join(lat.BACKENDS)} (comma-separated)", 2)
    if not bundle_dirs:
        if not fast:
            fail("no BUNDLE given", "pass bundle directories (pocketbert-bench bundles makes them), or --fast", 2)
        bundle_dirs = registry.build_bundles(list(registry.FAST_MODELS), list(registry.FAST_VARIANTS), work_dir,
                                             settings.seq_lens, log=log, verify_samples=64)
    from pocketbert.runtime import Bundle
    from pocketbert.runtime.errors import BundleError

    for path in bundle_dirs:  # missing, a file, no manifest, a broken one: the runtime names which, before any run
        try:
            Bundle.open(path)
        except BundleError as exc:
            fail(exc.problem, exc.fix)
    try:
        total = lat.count_configurations(list(bundle_dirs), settings)
        with progress() as bar:
            task = bar.add_task("latency", total=total)
            data = lat.run(list(bundle_dirs), settings, work_dir, progress=lambda m: bar.console.print(plain(m)),
                           advance=lambda n: bar.advance(task, n))
    except lat.LatencyError as exc:
        fail(exc.problem, exc.fix)
    out = out or RESULTS / ("latency-fast.json" if fast else "latency.json")
    schema.write(data, out)
    click.echo(str(out))


@cli.command(help="Sentences/s of each BUNDLE on its task's dev set (SST-2 / CoNLL-2003), real lengths: buckets vs "
                  "one bucket of 128, ONNX dynamic vs padded.")
@bundles_argument()
@click.option("--threads", type=click.IntRange(min=1), default=2, show_default=True)
@click.option("--rounds", type=click.IntRange(min=1), default=2, show_default=True, help="best of N rounds")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="the first N sentences of each dev set "
              "(recorded; default: all)")
@data_dir_option(as_path=True)
@results_file_option(help="results file (default benchmarks/results/throughput.json)")
def throughput(bundle_dirs, threads, rounds, limit, data_dir, out):
    from pocketbert.converter.errors import ConverterError
    from pocketbert.converter.inputs.texts import data_dir as find_data

    from .. import schema
    from .. import throughput as job

    try:
        data = find_data(data_dir)
        if data is None:
            fail("no data directory found",
                 "pass --data-dir DIR (holding glue/ and conll2003/) or set POCKETBERT_DATA")
        data = job.run(list(bundle_dirs), data, threads=threads, rounds=rounds, limit=limit, progress=log)
    except (Error, ConverterError) as exc:
        fail(exc.problem, exc.fix or "")
    out = out or RESULTS / "throughput.json"
    schema.write(data, out)
    click.echo(str(out))


@cli.command(help="Corpus throughput (sentences/s) of each BUNDLE on its task's training set: the pipeline in "
             "memory, the streaming job, and Ray Data with 1 and 2 actors.")
@bundles_argument()
@click.option("--rows", type=click.IntRange(min=1), default=None, help="first N sentences (default: all; fast: 256)")
@click.option("--workers", default="1,2", show_default=True, help="comma-separated Ray actor counts")
@click.option("--data-dir", default=None, help="data directory (default $POCKETBERT_DATA or ../shared/data)")
@click.option("--fast", is_flag=True, help="256 sentences: checks the harness, not figures to quote")
@results_file_option(help="results file (default benchmarks/results/corpus.json; fast: corpus-fast.json)")
def corpus(bundle_dirs, rows, workers, data_dir, fast, out):
    from .. import corpus as throughput
    from .. import schema

    try:
        data = throughput.run(list(bundle_dirs), rows=rows, workers=ints(workers, "--workers"), data=data_dir,
                              fast=fast, log=log)
    except (Error, throughput.CorpusBenchError) as exc:
        fail(exc.problem, exc.fix)
    out = out or RESULTS / ("corpus-fast.json" if fast else "corpus.json")
    schema.write(data, out)
    click.echo(str(out))
