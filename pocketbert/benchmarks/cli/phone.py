"""``pocketbert-bench device``: TFLite artifacts on an Android phone (adb, benchmark_model), and the demo APK's
page in the phone's System WebView (``--apk``)."""

from __future__ import annotations

from pathlib import Path

import click

from .common import RESULTS, bundles_argument, fail, ints, log, results_file_option
from .group import cli


@cli.command(help="TFLite artifacts of each BUNDLE on an Android phone via adb and benchmark_model; with --apk, "
                  "also the demo APK's page (LiteRT.js, WebAssembly, 1 thread) in the phone's System WebView.")
@bundles_argument(required=False)
@click.option("--serial", required=True, help="the phone's serial (adb devices)")
@click.option("--benchmark-binary", type=click.Path(path_type=Path), default=None,
              help="benchmark_model built for the phone (android_aarch64); omitted: already pushed")
@click.option("--adb", default=None, help="adb executable (default: adb on PATH)")
@click.option("--taskset", default=None, help="hex CPU mask to pin to (big cores), e.g. f0 or c0")
@click.option("--threads", default=None, help="comma-separated (default 1,4; fast: 1)")
@click.option("--seq-len", default=None, help="comma-separated buckets (default 128; fast: 32)")
@click.option("--runs", type=click.IntRange(min=1), default=None,
              help="timed runs: --num_runs, and the page's with --apk (default 50)")
@click.option("--warmup", type=click.IntRange(min=0), default=None,
              help="untimed runs first: --warmup_runs, and the page's with --apk (default 10)")
@click.option("--use-gpu", is_flag=True, help="also run with the GPU delegate")
@click.option("--use-nnapi", is_flag=True, help="also run with the NNAPI delegate")
@click.option("--apk", type=click.Path(path_type=Path), default=None,
              help="the demo APK (android_demo/build_apk.sh): install it and time its page's buckets in the "
                   "System WebView, with --runs/--warmup")
@click.option("--apk-task", default=None, help="the page's tasks to measure (default ner,classification)")
@click.option("--apk-timeout", type=click.FloatRange(min=0, min_open=True), default=600.0, show_default=True,
              help="seconds one task's page may take to write its results")
@click.option("--fast", is_flag=True, help="few runs, one thread, bucket 32")
@click.option("--dry-run", is_flag=True, help="print the adb commands instead of running them")
@results_file_option(help=f"results file (default {RESULTS}/device-SERIAL.json)")
def device(bundle_dirs, serial, benchmark_binary, adb, taskset, threads, seq_len, runs, warmup, use_gpu, use_nnapi,
           apk, apk_task, apk_timeout, fast, dry_run, out):
    from .. import adb as adb_calls
    from .. import device as dev
    from .. import device_webview, schema

    if not bundle_dirs and apk is None:
        fail("nothing to measure", "name one or more BUNDLE folders, or the demo APK with --apk", 2)
    if apk_task is not None and apk is None:
        fail("--apk-task without --apk", "pass the demo APK too: --apk pocketbert-demo.apk", 2)
    tasks = list(dict.fromkeys(t.strip() for t in (apk_task or ",".join(device_webview.APK_TASKS)).split(",")
                               if t.strip()))
    unknown = [t for t in tasks if t not in device_webview.APK_TASKS]
    if unknown or not tasks:
        fail(f"--apk-task: the demo page has no task {', '.join(unknown) or '(none given)'}",
             f"use one or both of {','.join(device_webview.APK_TASKS)}", 2)
    if taskset is not None:
        try:
            int(taskset, 16)
        except ValueError:
            fail(f"--taskset {taskset!r} is not a hex CPU mask", "pass e.g. f0 (CPUs 4-7) or c0 (CPUs 6-7)", 2)
    settings = dev.DeviceSettings(serial=serial, binary=benchmark_binary, taskset=taskset, use_gpu=use_gpu,
                                  use_nnapi=use_nnapi, fast=fast, apk=apk, apk_tasks=tasks, apk_timeout=apk_timeout)
    if fast:
        settings.threads, settings.seq_lens, settings.runs, settings.warmup = [1], [32], 5, 1
    settings.threads = ints(threads, "--threads") if threads else settings.threads
    settings.seq_lens = ints(seq_len, "--seq-len") if seq_len else settings.seq_lens
    settings.runs = runs or settings.runs
    settings.warmup = settings.warmup if warmup is None else warmup
    runner = adb_calls.run_process
    if dry_run:
        settings.adb = adb or "adb"

        def runner(argv):  # noqa: F811 - prints instead of running; getprop answers "dry-run"
            click.echo(" ".join(argv))
            return 0, "dry-run" if "getprop" in argv else "", ""
    try:
        if not dry_run:
            settings.adb = adb_calls.find_adb(adb)
        data = dev.run(list(bundle_dirs), settings, runner, progress=log, dry_run=dry_run)
    except adb_calls.DeviceError as exc:
        fail(exc.problem, exc.fix)
    if dry_run:
        return
    out = out or RESULTS / f"device-{serial}.json"
    schema.write(data, out)
    click.echo(str(out))
