"""``python -m benchmarks``: the benchmark harness (latency, device, accuracy, report, bundles).

    python -m benchmarks bundles  [--models …] [--variants …] [--fast]      # convert the models measured
    python -m benchmarks latency  BUNDLE… [--backend onnx,tflite] [--threads 1,2] [--seq-len 32,64,128,256]
                                  [--batch 1,8] [--runs N] [--peers] [--fast]
    python -m benchmarks device   --serial S [--benchmark-binary PATH] [--taskset MASK] [--use-gpu]
                                  [--use-nnapi] BUNDLE…
    python -m benchmarks accuracy BUNDLE… [--tasks sst2,…] [--limit N] [--fast]
    python -m benchmarks size-frontier BUNDLE… [--threads 1] [--seq-len 128] [--rounds 20]  # phone-sized files
    python -m benchmarks arm64    BUNDLE… [--cpus cortex-a53,max-nosve,max] [--samples N]  # LiteRT aarch64 (QEMU)
    python -m benchmarks report   [--results DIR] [--out benchmarks/REPORT.md]

Results are JSON files in one schema (benchmarks/schema.py) under benchmarks/results/ unless --out
says otherwise; ``report`` turns every results file there into REPORT.md and PNG plots.  That is in a
checkout of the repository; an installed package (pocketbert-bench) writes results and REPORT.md under
./pocketbert-benchmarks/ and its work files under $POCKETBERT_CACHE or ~/.cache/pocketbert/benchmarks.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from pocketbert.locations import DATA_DIR_DEFAULT, cache_dir, checkout
from pocketbert.runtime.errors import Error
from pocketbert.runtime.terminal import plain, styled

from . import arm64, emulated_cpus

HERE = Path(__file__).resolve().parent
# A checkout keeps results beside the committed REPORT.md; an installed package must not write into site-packages.
OUTPUT = HERE if checkout() else Path.cwd() / "pocketbert-benchmarks"
RESULTS = OUTPUT / "results"
WORK = HERE / ".cache" if checkout() else cache_dir() / "benchmarks"
DATA_HELP = f"data directory (default {DATA_DIR_DEFAULT})"
console = Console(stderr=True, highlight=False, soft_wrap=True)  # no wrapping inside paths or in logs


def _ints(text: str, what: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"{what} must be comma-separated integers, e.g. 1,2 (got {text!r})") from None
    if not values or any(v < 1 for v in values):
        raise click.BadParameter(f"{what} must list positive integers (got {text!r})")
    return values


def _cpu_names(text: str, known, what: str) -> list[str]:
    """--cpus: comma-separated emulated CPU models, each one ``known``; anything else is a usage error."""
    names = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in names if c not in known]
    if unknown or not names:
        _fail(f"unknown {what} model(s) {', '.join(unknown) or '(none given)'}",
              f"use one or more of {', '.join(known)}", 2)
    return names


def _out_file(ctx, param, value: Path | None) -> Path | None:
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


def _fail(problem: str, fix: str, code: int = 3) -> None:
    console.print(styled("[red]error:[/red] ", problem))
    console.print(styled("  fix: ", fix))
    sys.exit(code)


def _log(message: str) -> None:
    """Progress lines name bundles, files and tasks: printed as they are, never as markup."""
    console.print(plain(message))


def _quiet_transformers() -> None:
    """transformers' per-load progress bars and the exporters' warnings would interleave with our progress."""
    import warnings

    from transformers.utils import logging

    warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.onnx")
    warnings.filterwarnings("ignore", category=FutureWarning)
    logging.disable_progress_bar()
    logging.set_verbosity_error()


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, transient=True)


@click.group(help="The PocketBERT benchmark harness: bundles, latency, device, accuracy, report.")
def cli() -> None:
    pass


# --- bundles ------------------------------------------------------------------------------------
@cli.command(help="Convert the measured models (real MiniLM; random MobileBERT/TinyBERT4/DistilBERT shapes).")
@click.option("--models", default=None, help="comma-separated model names or NAME=CHECKPOINT_DIR (default: minilm,"
              "mobilebert,tinybert4,distilbert; fast: tiny-bert)")
@click.option("--variants", default=None, help="comma-separated: plain-int8, nonorm-relu-fold-int8 (default), "
              "plain-int8-static, nonorm-relu-fold-int8-static")
@click.option("--buckets", default=None, help="TFLite sequence buckets (default 32,64,128,256; fast: 32)")
@click.option("--work-dir", type=click.Path(path_type=Path), default=WORK, show_default=True)
@click.option("--fast", is_flag=True, help="tiny random model, one variant, one bucket")
def bundles(models, variants, buckets, work_dir, fast):
    from . import models as registry

    _quiet_transformers()
    names = models.split(",") if models else list(registry.FAST_MODELS if fast else registry.DEFAULT_MODELS)
    chosen = variants.split(",") if variants else list(registry.FAST_VARIANTS if fast else registry.DEFAULT_VARIANTS)
    for name in names:
        if name not in registry.SHAPES and "=" not in name:
            _fail(f"unknown model {name!r}", f"use one of {', '.join(registry.SHAPES)}, or NAME=CHECKPOINT_DIR", 2)
    for v in chosen:
        if v not in registry.VARIANTS:
            _fail(f"unknown variant {v!r}", f"use one of {', '.join(registry.VARIANTS)}", 2)
    try:
        made = registry.build_bundles(names, chosen, work_dir, _ints(buckets or ("32" if fast else "32,64,128,256"),
                                                                      "--buckets"),
                                      log=_log, verify_samples=64 if fast else 300)
    except KeyError as exc:
        _fail(str(exc.args[0]), "pass NAME=DIR with the directory the fine-tuning wrote (config.json, weights)", 2)
    for path in made:
        click.echo(str(path))


# --- latency ------------------------------------------------------------------------------------
@cli.command(help="Latency of every artifact of each BUNDLE (and peers): JSON results.")
@click.argument("bundle_dirs", nargs=-1, type=click.Path(path_type=Path))
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
@click.option("--out", type=click.Path(path_type=Path), callback=_out_file, default=None,
              help=f"results file (default {RESULTS}/latency.json; fast: latency-fast.json)")
@click.option("--work-dir", type=click.Path(path_type=Path), default=WORK, show_default=True)
def latency(bundle_dirs, backends, threads, seq_len, batch, runs, warmup, rounds, peers, checkpoint, no_floor, fast,
            out, work_dir):
    from . import latency as lat
    from . import models as registry
    from . import schema

    _quiet_transformers()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    settings = lat.LatencySettings(backends=[b.strip() for b in backends.split(",") if b.strip()], peers=peers,
                            checkpoint=checkpoint, floor=not no_floor, fast=fast, rounds=rounds)
    if fast:
        settings.threads, settings.seq_lens, settings.batches = [1], [32], [1]
        settings.runs, settings.warmup, settings.min_runs, settings.floor_seconds = 8, 2, 8, 0.01
    else:
        settings.threads = [t for t in (1, 2, 4) if t <= usable] or [1]
    if threads:
        settings.threads = _ints(threads, "--threads")
        if max(settings.threads) > usable:
            console.print(f"[yellow]warning:[/yellow] {max(settings.threads)} threads on {usable} usable CPUs: "
                          "oversubscribed, figures will be slower than the hardware allows")
    if seq_len:
        settings.seq_lens = _ints(seq_len, "--seq-len")
    if batch:
        settings.batches = _ints(batch, "--batch")
    if runs:
        settings.runs = runs
        settings.min_runs = min(settings.min_runs, runs)
    if warmup is not None:
        settings.warmup = warmup
    for b in settings.backends:
        if b not in lat.BACKENDS:
            _fail(f"unknown backend {b!r}", f"use {' or '.join(lat.BACKENDS)} (comma-separated)", 2)
    if not bundle_dirs:
        if not fast:
            _fail("no BUNDLE given", "pass bundle directories (python -m benchmarks bundles makes them), or --fast", 2)
        bundle_dirs = registry.build_bundles(list(registry.FAST_MODELS), list(registry.FAST_VARIANTS), work_dir,
                                             settings.seq_lens, log=_log, verify_samples=64)
    from pocketbert.runtime import Bundle
    from pocketbert.runtime.errors import BundleError

    for path in bundle_dirs:  # missing, a file, no manifest, a broken one: the runtime names which, before any run
        try:
            Bundle.open(path)
        except BundleError as exc:
            _fail(exc.problem, exc.fix)
    try:
        total = lat.count_configurations(list(bundle_dirs), settings)
        with _progress() as bar:
            task = bar.add_task("latency", total=total)
            data = lat.run(list(bundle_dirs), settings, work_dir, progress=lambda m: bar.console.print(plain(m)),
                           advance=lambda n: bar.advance(task, n))
    except lat.LatencyError as exc:
        _fail(exc.problem, exc.fix)
    out = out or RESULTS / ("latency-fast.json" if fast else "latency.json")
    schema.write(data, out)
    click.echo(str(out))


@cli.command(help="Sentences/s of each BUNDLE on its task's dev set (SST-2 / CoNLL-2003), real lengths: buckets vs "
                  "one bucket of 128, ONNX dynamic vs padded.")
@click.argument("bundle_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--threads", type=click.IntRange(min=1), default=2, show_default=True)
@click.option("--rounds", type=click.IntRange(min=1), default=2, show_default=True, help="best of N rounds")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="the first N sentences of each dev set "
              "(recorded; default: all)")
@click.option("--data-dir", type=click.Path(path_type=Path), default=None, help=DATA_HELP)
@click.option("--out", type=click.Path(path_type=Path), callback=_out_file, default=None, help="results file (default "
              "benchmarks/results/throughput.json)")
def throughput(bundle_dirs, threads, rounds, limit, data_dir, out):
    from pocketbert.converter.errors import ConverterError
    from pocketbert.converter.texts import data_dir as find_data

    from . import schema
    from . import throughput as job

    try:
        data = find_data(data_dir)
        if data is None:
            _fail("no data directory found",
                  "pass --data-dir DIR (holding glue/ and conll2003/) or set POCKETBERT_DATA")
        data = job.run(list(bundle_dirs), data, threads=threads, rounds=rounds, limit=limit, progress=_log)
    except (Error, ConverterError) as exc:
        _fail(exc.problem, exc.fix or "")
    out = out or RESULTS / "throughput.json"
    schema.write(data, out)
    click.echo(str(out))


# --- device -------------------------------------------------------------------------------------
@cli.command(help="TFLite artifacts of each BUNDLE on an Android phone via adb and benchmark_model.")
@click.argument("bundle_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--serial", required=True, help="the phone's serial (adb devices)")
@click.option("--benchmark-binary", type=click.Path(path_type=Path), default=None,
              help="benchmark_model built for the phone (android_aarch64); omitted: already pushed")
@click.option("--adb", default=None, help="adb executable (default: adb on PATH)")
@click.option("--taskset", default=None, help="hex CPU mask to pin to (big cores), e.g. f0 or c0")
@click.option("--threads", default=None, help="comma-separated (default 1,4; fast: 1)")
@click.option("--seq-len", default=None, help="comma-separated buckets (default 128; fast: 32)")
@click.option("--runs", type=click.IntRange(min=1), default=None, help="--num_runs (default 50)")
@click.option("--warmup", type=click.IntRange(min=0), default=None, help="--warmup_runs (default 10)")
@click.option("--use-gpu", is_flag=True, help="also run with the GPU delegate")
@click.option("--use-nnapi", is_flag=True, help="also run with the NNAPI delegate")
@click.option("--fast", is_flag=True, help="few runs, one thread, bucket 32")
@click.option("--dry-run", is_flag=True, help="print the adb commands instead of running them")
@click.option("--out", type=click.Path(path_type=Path), callback=_out_file, default=None,
              help=f"results file (default {RESULTS}/device-SERIAL.json)")
def device(bundle_dirs, serial, benchmark_binary, adb, taskset, threads, seq_len, runs, warmup, use_gpu, use_nnapi,
           fast, dry_run, out):
    from . import device as dev
    from . import schema

    if taskset is not None:
        try:
            int(taskset, 16)
        except ValueError:
            _fail(f"--taskset {taskset!r} is not a hex CPU mask", "pass e.g. f0 (CPUs 4-7) or c0 (CPUs 6-7)", 2)
    settings = dev.DeviceSettings(serial=serial, binary=benchmark_binary, taskset=taskset, use_gpu=use_gpu,
                                  use_nnapi=use_nnapi, fast=fast)
    if fast:
        settings.threads, settings.seq_lens, settings.runs, settings.warmup = [1], [32], 5, 1
    settings.threads = _ints(threads, "--threads") if threads else settings.threads
    settings.seq_lens = _ints(seq_len, "--seq-len") if seq_len else settings.seq_lens
    settings.runs = runs or settings.runs
    settings.warmup = settings.warmup if warmup is None else warmup
    runner = dev.run_process
    if dry_run:
        settings.adb = adb or "adb"

        def runner(argv):  # noqa: F811 - prints instead of running; getprop answers "dry-run"
            click.echo(" ".join(argv))
            return 0, "dry-run" if "getprop" in argv else "", ""
    try:
        if not dry_run:
            settings.adb = dev.find_adb(adb)
        data = dev.run(list(bundle_dirs), settings, runner, progress=_log)
    except dev.DeviceError as exc:
        _fail(exc.problem, exc.fix)
    if dry_run:
        return
    out = out or RESULTS / f"device-{serial}.json"
    schema.write(data, out)
    click.echo(str(out))


# --- accuracy -----------------------------------------------------------------------------------
@cli.command(help="Task score of every artifact of each BUNDLE (GLUE dev metric, CoNLL-2003 entity F1, or a "
             "task of your own given as a labelled file).")
@click.argument("bundle_dirs", nargs=-1, type=click.Path(path_type=Path))
@click.option("--task", default=None, help="glue:sst2, glue:mrpc, glue:cola, glue:stsb or conll2003, resolved "
              "against --data-dir (fast: glue:sst2); or a labelled file of a task of your own: a GLUE-format TSV "
              "(header with 'sentence' or 'sentence1'/'sentence2', and 'label') or a CoNLL file (word first, tag "
              "last, blank lines between sentences), told apart by content. A file is scored as it is: pass the "
              "dev file itself, never the training file")
@click.option("--split", type=click.Choice(["dev", "test"]), default="dev", show_default=True,
              help="which file of a short-name task to score; for a task given as a file, only the name the "
                   "results record for it (say test when the file is the test set)")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="first N examples only (fast: 48)")
@click.option("--backend", "backends", default="onnx,tflite", show_default=True)
@click.option("--model-name", default=None, help="name rows by this model (matches latency rows; default: from "
              "models.json or the checkpoint)")
@click.option("--variant", default=None, help="variant label, e.g. recovered (default: from models.json)")
@click.option("--threads", type=click.IntRange(min=1), default=None)
@click.option("--data-dir", default=None, help=DATA_HELP)
@click.option("--fast", is_flag=True, help="a few dozen examples; without BUNDLE, builds the tiny bundle")
@click.option("--out", type=click.Path(path_type=Path), callback=_out_file, default=None,
              help=f"results file (default {RESULTS}/accuracy-TASK-SPLIT[-VARIANT].json)")
@click.option("--work-dir", type=click.Path(path_type=Path), default=WORK, show_default=True)
def accuracy(bundle_dirs, task, split, limit, backends, model_name, variant, threads, data_dir, fast, out, work_dir):
    from . import accuracy as acc
    from . import models as registry
    from . import schema

    _quiet_transformers()
    task = task or ("glue:sst2" if fast else None)
    if not task:
        _fail("no --task given", "pass --task glue:sst2 (or glue:mrpc, glue:cola, glue:stsb, conll2003)", 2)
    limit = limit or (48 if fast else None)
    if not bundle_dirs:
        if not fast:
            _fail("no BUNDLE given", "pass the bundles fine-tuned for this task, or --fast", 2)
        bundle_dirs = registry.build_bundles(list(registry.FAST_MODELS), list(registry.FAST_VARIANTS), work_dir, [32],
                                             log=_log, verify_samples=64)
    wanted = tuple(b.strip() for b in backends.split(",") if b.strip())
    for b in wanted:
        if b not in ("onnx", "tflite"):
            _fail(f"unknown backend {b!r}", "use onnx or tflite (comma-separated)", 2)
    try:
        data = acc.evaluate(list(bundle_dirs), task, split, limit, wanted, model_name, variant, threads, data_dir,
                            fast, progress=_log)
    except acc.AccuracyError as exc:
        _fail(exc.problem, exc.fix)
    name = f"accuracy-{task.replace(':', '-')}-{split}" + (f"-{variant}" if variant else "") + ("-fast" if fast else "")
    out = out or RESULTS / f"{name}.json"
    schema.write(data, out)
    click.echo(str(out))


# --- gates --------------------------------------------------------------------------------------
@cli.command(help="Accuracy gates of recovered bundles: float within 1.0 point of the teacher, int8 within "
             "another 0.5 (dev split). Exit code 1 when a gate fails.")
@click.argument("bundle_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--limit", type=click.IntRange(min=1), default=None, help="first N dev examples only")
@click.option("--max-drop", type=float, default=1.0, show_default=True, help="points a float artifact may lose")
@click.option("--int8-extra", type=float, default=0.5, show_default=True,
              help="further points an int8 artifact may lose against the bundle's float export")
@click.option("--data-dir", default=None, help=DATA_HELP)
@click.option("--dev", type=click.Path(path_type=Path), default=None, help="dev file of a task given as a file "
              "[default: the dev file the bundle records; a short name's task uses its dev split]")
def gates(bundle_dirs, limit, max_drop, int8_extra, data_dir, dev):
    from . import gates as gate_checks
    from .accuracy import AccuracyError

    _quiet_transformers()
    rows = []
    for bundle in bundle_dirs:
        try:
            rows += gate_checks.check(bundle, limit=limit, max_drop=max_drop, int8_extra=int8_extra,
                                      data_dir=data_dir, dev=dev, progress=_log)
        except AccuracyError as exc:
            _fail(exc.problem, exc.fix)
    click.echo(gate_checks.table(rows))
    failed = [r for r in rows if not r["passed"]]
    click.echo(f"{len(rows) - len(failed)} of {len(rows)} gates pass")
    sys.exit(1 if failed else 0)


# --- size-frontier ------------------------------------------------------------------------------
@cli.command("size-frontier", help="Every verified TFLite file of each BUNDLE (phones run TFLite): size, dev score "
             "against the teacher its recovery record names, p50 latency at batch 1 measured in alternating rounds "
             "across all the files, and the speed-up against the bundle's tflite:fp32. Writes DIR/size-frontier.json "
             "and size_frontier.png beside DIR, where `report` draws it.")
@click.argument("bundle_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--threads", type=click.IntRange(1, 256), default=1, show_default=True)
@click.option("--seq-len", type=click.IntRange(min=1), default=128, show_default=True)
@click.option("--rounds", type=click.IntRange(min=1), default=20, show_default=True,
              help="alternating rounds over all the files; p50 is the median of a file's rounds")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="first N dev examples of each task only")
@click.option("--data-dir", default=None, help=DATA_HELP)
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=RESULTS, show_default=True,
              help="results directory")
def size_frontier(bundle_dirs, threads, seq_len, rounds, limit, data_dir, out):
    from pocketbert.converter.errors import ConverterError

    from . import schema
    from . import size_frontier as job
    from . import size_frontier_report as render
    from .accuracy import AccuracyError

    _quiet_transformers()
    try:
        data = job.measure(list(bundle_dirs), threads=threads, seq_len=seq_len, rounds=rounds, limit=limit,
                           data_dir=data_dir, progress=_log)
    except (AccuracyError, ConverterError) as exc:  # no TFLite file, no teacher score, a missing dev file
        _fail(exc.problem, exc.fix or "")
    path = schema.write(data, Path(out) / ("size-frontier-fast.json" if limit else "size-frontier.json"))
    click.echo("\n".join(render.table(data["results"])))
    click.echo(render.settings_line(data))
    click.echo(str(path))
    click.echo(str(render.plot(data["results"], Path(out).absolute().parent / render.PNG)))


# --- full-integer -------------------------------------------------------------------------------
@cli.command("full-integer", help="Each artifact of each BUNDLE against the bundle's float export: dev score, top-1 "
             "agreement, size, ops left in float, latency (batch 1, sequence 128, this CPU).")
@click.argument("bundle_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--limit", type=click.IntRange(min=1), default=None, help="first N dev examples only (fast mode)")
@click.option("--threads", type=click.IntRange(1, 256), default=1, show_default=True)
@click.option("--data-dir", default=None, help=DATA_HELP)
@click.option("--out", type=click.Path(path_type=Path), callback=_out_file, default=None)
def full_integer(bundle_dirs, limit, threads, data_dir, out):
    from pocketbert.converter.errors import ConverterError

    from . import full_integer as fi
    from . import schema
    from .accuracy import AccuracyError

    _quiet_transformers()
    try:
        data = fi.measure(list(bundle_dirs), limit=limit, threads=threads, data_dir=data_dir, progress=_log)
    except (AccuracyError, ConverterError) as exc:  # a broken bundle; a missing or unreadable dev file
        _fail(exc.problem, exc.fix or "")
    out = out or RESULTS / ("full-integer-fast.json" if limit else "full-integer.json")
    click.echo(str(schema.write(data, out)))


@cli.command("full-integer-levers", help="The bundle's float TFLite quantized with int8 activations, int16 on the "
             "residual stream (ADD, MUL) only, and int16 everywhere: dev score, agreement, size, latency.")
@click.argument("bundle_dir", type=click.Path(path_type=Path))
@click.option("--calibration-rows", type=click.IntRange(min=1), default=256, show_default=True)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="first N dev examples only (fast mode)")
@click.option("--threads", type=click.IntRange(1, 256), default=1, show_default=True)
@click.option("--data-dir", default=None, help=DATA_HELP)
@click.option("--out", type=click.Path(path_type=Path), callback=_out_file, default=None)
def full_integer_levers(bundle_dir, calibration_rows, limit, threads, data_dir, out):
    from pocketbert.converter.errors import ConverterError

    from . import full_integer_levers as levers
    from . import schema
    from .accuracy import AccuracyError

    _quiet_transformers()
    try:
        data = levers.measure(bundle_dir, calibration_rows=calibration_rows, limit=limit, threads=threads,
                              data_dir=data_dir, progress=_log)
    except (AccuracyError, ConverterError) as exc:  # a broken bundle; a missing or unreadable data file
        _fail(exc.problem, exc.fix or "")
    name = f"full-integer-levers-{Path(bundle_dir).name}" + ("-fast" if limit else "")
    click.echo(str(schema.write(data, out or RESULTS / f"{name}.json")))


# --- glue ---------------------------------------------------------------------------------------
@cli.command(help="GLUE (SST-2, MRPC, CoLA, STS-B) and CoNLL-2003: fine-tune the teacher from --base, apply "
             "nonorm,relu, recover, convert with every recipe and score every artifact through the runtime on "
             "the full dev split (and CoNLL test). Steps are cached in --cache: a re-run resumes.")
@click.option("--tasks", default=None, help="comma-separated (default: glue:sst2,glue:mrpc,glue:cola,glue:stsb,"
              "conll2003)")
@click.option("--base", default=None, help="built-in model or checkpoint to fine-tune the teachers from "
              "[default: minilm]")
@click.option("--finetune-budget", default=None, help="per task: 500steps, 2epochs, 5m; first reached wins "
              "[default: 3epochs,30m; fast: 30steps]")
@click.option("--recover-budget", default=None, help="per task [default: 20m; fast: 20steps]")
@click.option("--recipes", default=None, help="comma-separated [default: all six ONNX/TFLite × fp32, "
              "int8-dynamic, int8-static]")
@click.option("--calibration-samples", type=click.IntRange(16), default=None, help="int8 calibration texts "
              "(from the task's training file) [default: 128]")
@click.option("--verify-samples", type=click.IntRange(10), default=None, help="[default: 300]")
@click.option("--threads", type=click.IntRange(1), default=None, help="[default: 1]")
@click.option("--train-limit", type=click.IntRange(1), default=None, help="first N training examples only")
@click.option("--cache", type=click.Path(path_type=Path), default=None,
              help="checkpoints, bundles and scores [default: $POCKETBERT_CACHE/glue or ~/.cache/pocketbert/glue]")
@click.option("--data-dir", type=click.Path(path_type=Path), default=None,
              help=DATA_HELP)
@click.option("--fast", is_flag=True, help="tiny random BERT, a few steps: tests the harness (not figures)")
@click.option("--out", type=click.Path(path_type=Path), callback=_out_file, default=None,
              help="results file [default: benchmarks/results/glue.json; fast: glue-fast.json]")
def glue(fast, out, **kwargs):
    from pocketbert.converter.errors import ConverterError

    from . import glue as job

    _quiet_transformers()
    try:
        options = job.parse_options(fast, **kwargs)
        data = job.run(options, out or RESULTS / ("glue-fast.json" if fast else "glue.json"), log=_log)
    except ConverterError as exc:
        _fail(exc.problem, exc.fix or "see the message above")
    click.echo(job.summary(data))


# --- cpus ---------------------------------------------------------------------------------------
@cli.command(help="Every verified artifact of each BUNDLE on emulated x86 CPUs (QEMU user mode: Haswell = AVX2 "
             "without VNNI, SandyBridge = no AVX2), compared with this machine's run. Results, never timings. "
             "Exit code 1 when an artifact differs beyond its tolerance.")
@click.argument("bundle_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--cpus", default=",".join(emulated_cpus.CPUS), show_default=True, help="comma-separated CPU models")
@click.option("--samples", type=click.IntRange(min=1), default=50, show_default=True,
              help="verification sentences of the bundle's task (data directory), else built-in English text")
@click.option("--data-dir", default=None, help=DATA_HELP)
def cpus(bundle_dirs, cpus, samples, data_dir):
    from pocketbert.converter.errors import ConverterError

    names = _cpu_names(cpus, emulated_cpus.CPUS, "CPU")
    try:
        emulated_cpus.qemu()
    except emulated_cpus.EmulationUnavailable as exc:
        _fail(exc.problem, exc.fix)
    failed = False
    for bundle in bundle_dirs:
        try:
            texts = emulated_cpus.bundle_texts(bundle, samples, data_dir)
            _log(f"{bundle}: {len(texts)} sentences on {', '.join(names)} (emulated) and this CPU")
            rows = emulated_cpus.check(bundle, texts, names)
        except (Error, ConverterError) as exc:  # a missing or broken bundle, a missing --data-dir
            _fail(getattr(exc, "problem", str(exc)), getattr(exc, "fix", None) or "pass a bundle directory "
                  "written by python -m converter")
        click.echo(emulated_cpus.table(rows))
        failed |= not all(r["passed"] for r in rows)
    sys.exit(1 if failed else 0)


# --- arm64 --------------------------------------------------------------------------------------
@cli.command("arm64", help="Every verified TFLite artifact of each BUNDLE, at every bucket, on LiteRT's aarch64 "
             "build (the ARM kernels phones run) under QEMU user-mode emulation, compared with this machine's "
             "LiteRT. Prepares the aarch64 Python once, cached outside the repository. Results, never timings. "
             "Exit code 1 when an artifact differs beyond its tolerance.")
@click.argument("bundle_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--cpus", default=",".join(arm64.DEFAULT_CPUS), show_default=True,
              help=f"comma-separated QEMU ARM CPU models ({', '.join(arm64.CPUS)})")
@click.option("--samples", type=click.IntRange(min=1), default=24, show_default=True,
              help="verification sentences of the bundle's task, each run at every bucket")
@click.option("--recipes", default=None, help="comma-separated TFLite recipes to check (default: every verified one)")
@click.option("--data-dir", default=None, help=DATA_HELP)
@click.option("--out", type=click.Path(path_type=Path), callback=_out_file, default=RESULTS / "arm64.json",
              show_default=True,
              help="results file")
def arm64_(bundle_dirs, cpus, samples, recipes, data_dir, out):
    from pocketbert.converter.errors import ConverterError
    from pocketbert.runtime import machine

    from . import aarch64_env, schema

    names = _cpu_names(cpus, arm64.CPUS, "ARM CPU")
    try:
        environment = aarch64_env.prepare(log=_log)
    except aarch64_env.EmulationUnavailable as exc:
        _fail(exc.problem, exc.fix)
    device = {"kind": arm64.DEVICE_KIND, "emulator": _qemu_version(environment.qemu),
              "python": aarch64_env.PYTHON + " (Debian arm64)", "versions": environment.versions}
    data = schema.new_file("arm64", fast=False, machine=machine.describe(), device=device,
                           settings={"cpus": names, "samples": samples, "recipes": recipes or "all"})
    for bundle in bundle_dirs:
        try:
            texts = emulated_cpus.bundle_texts(bundle, samples, data_dir)
            data["results"] += arm64.check(bundle, texts, names, environment, log=_log,
                                           recipes=[r.strip() for r in recipes.split(",")] if recipes else None)
        except (Error, ConverterError) as exc:  # a missing or broken bundle, a missing --data-dir
            _fail(getattr(exc, "problem", str(exc)), getattr(exc, "fix", None) or "pass a bundle directory "
                  "written by python -m converter")
    click.echo(arm64.table(data["results"]))
    schema.write(data, out)
    click.echo(str(out))
    sys.exit(0 if all(r["passed"] for r in data["results"]) else 1)


def _qemu_version(qemu: str) -> str:
    import subprocess

    done = subprocess.run([qemu, "--version"], capture_output=True, text=True)
    return (done.stdout.splitlines() or ["qemu-aarch64 (version unknown)"])[0]


# --- corpus -------------------------------------------------------------------------------------
@cli.command(help="Corpus throughput (sentences/s) of each BUNDLE on its task's training set: the pipeline in "
             "memory, the streaming job, and Ray Data with 1 and 2 actors.")
@click.argument("bundle_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--rows", type=click.IntRange(min=1), default=None, help="first N sentences (default: all; fast: 256)")
@click.option("--workers", default="1,2", show_default=True, help="comma-separated Ray actor counts")
@click.option("--data-dir", default=None, help="data directory (default $POCKETBERT_DATA or ../shared/data)")
@click.option("--fast", is_flag=True, help="256 sentences: checks the harness, not figures to quote")
@click.option("--out", type=click.Path(path_type=Path), callback=_out_file, default=None,
              help="results file (default benchmarks/results/corpus.json; fast: corpus-fast.json)")
def corpus(bundle_dirs, rows, workers, data_dir, fast, out):
    from . import corpus as throughput
    from . import schema

    try:
        data = throughput.run(list(bundle_dirs), rows=rows, workers=_ints(workers, "--workers"), data=data_dir,
                              fast=fast, log=_log)
    except (Error, throughput.CorpusBenchError) as exc:
        _fail(exc.problem, exc.fix)
    out = out or RESULTS / ("corpus-fast.json" if fast else "corpus.json")
    schema.write(data, out)
    click.echo(str(out))


# --- report -------------------------------------------------------------------------------------
@cli.command(help="REPORT.md (tables) and PNG plots from every results file.")
@click.option("--results", "results_dir", type=click.Path(path_type=Path), default=RESULTS, show_default=True,
              help="directory of results JSON files")
@click.option("--out", type=click.Path(path_type=Path), callback=_out_file, default=OUTPUT / "REPORT.md",
              show_default=True)
def report(results_dir, out):
    from . import report as rep

    if not Path(results_dir).is_dir() or not any(Path(results_dir).glob("*.json")):
        _fail(f"no results files in {results_dir}", "run `python -m benchmarks latency …` (and device/accuracy) "
              "first, or pass --results DIR")
    files, skipped = rep.read_all(Path(results_dir))
    unread = "; ".join(f"{name}: {why}" for name, why in skipped.items())
    if not files:
        _fail(f"none of the .json files in {results_dir} is a readable results file ({unread})",
              "pass --results DIR holding the files `python -m benchmarks latency …` (or accuracy, device) wrote")
    if skipped:
        console.print(styled("[yellow]warning:[/yellow] ", f"skipped {len(skipped)} unreadable file(s): {unread}"))
    click.echo(str(rep.build(Path(results_dir), Path(out))))


if __name__ == "__main__":
    cli(prog_name="python -m benchmarks")
