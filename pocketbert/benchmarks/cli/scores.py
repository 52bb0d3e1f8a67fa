"""Task scores: ``accuracy`` of every artifact, the recovery ``gates``, the ``glue`` run from fine-tuning to scores."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from pocketbert.cli_options import threads_option
from pocketbert.converter.training.defaults import RECOVERY_BUDGET
from pocketbert.runtime import MAX_THREADS
from pocketbert.runtime.machine import usable_cpus

from .common import (
    RESULTS,
    bundles_argument,
    data_dir_option,
    fail,
    log,
    quiet_transformers,
    results_file_option,
    work_dir_for,
    work_dir_option,
)
from .group import cli


@cli.command(help="Task score of every artifact of each BUNDLE (GLUE dev metric, CoNLL-2003 entity F1, or a "
             "task of your own given as a labelled file).")
@bundles_argument(required=False)
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
@data_dir_option()
@click.option("--fast", is_flag=True, help="a few dozen examples; without BUNDLE, builds the tiny bundle")
@results_file_option(help=f"results file (default {RESULTS}/accuracy-TASK-SPLIT[-VARIANT].json)")
@work_dir_option
def accuracy(bundle_dirs, task, split, limit, backends, model_name, variant, threads, data_dir, fast, out, work_dir):
    from .. import accuracy as acc
    from .. import models as registry
    from .. import schema

    quiet_transformers()
    work_dir = work_dir_for(work_dir, out)
    task = task or ("glue:sst2" if fast else None)
    if not task:
        fail("no --task given", "pass --task glue:sst2 (or glue:mrpc, glue:cola, glue:stsb, conll2003)", 2)
    limit = limit or (48 if fast else None)
    if not bundle_dirs:
        if not fast:
            fail("no BUNDLE given", "pass the bundles fine-tuned for this task, or --fast", 2)
        bundle_dirs = registry.build_bundles(list(registry.FAST_MODELS), list(registry.FAST_VARIANTS), work_dir, [32],
                                             log=log, verify_samples=64)
    wanted = tuple(b.strip() for b in backends.split(",") if b.strip())
    for b in wanted:
        if b not in ("onnx", "tflite"):
            fail(f"unknown backend {b!r}", "use onnx or tflite (comma-separated)", 2)
    try:
        data = acc.evaluate(list(bundle_dirs), task, split, limit, backends=wanted, model_name=model_name,
                            variant=variant, threads=threads, data_dir=data_dir, fast=fast, progress=log)
    except acc.AccuracyError as exc:
        fail(exc.problem, exc.fix)
    name = f"accuracy-{task.replace(':', '-')}-{split}" + (f"-{variant}" if variant else "") + ("-fast" if fast else "")
    out = out or RESULTS / f"{name}.json"
    schema.write(data, out)
    click.echo(str(out))


@cli.command(help="Accuracy gates of recovered bundles: float within 1.0 point of the teacher, int8 within "
             "another 0.5 (dev split). Exit code 1 when a gate fails.")
@bundles_argument()
@click.option("--limit", type=click.IntRange(min=1), default=None, help="first N dev examples only")
@click.option("--max-drop", type=float, default=1.0, show_default=True, help="points a float artifact may lose")
@click.option("--int8-extra", type=float, default=0.5, show_default=True,
              help="further points an int8 artifact may lose against the bundle's float export")
@data_dir_option()
@click.option("--dev", type=click.Path(path_type=Path), default=None, help="dev file of a task given as a file "
              "[default: the dev file the bundle records; a short name's task uses its dev split]")
@click.option("--rescore", is_flag=True, help="score every artifact again, even where the converter recorded its "
              "score on the same dev file, examples and length")
@threads_option(default=min(usable_cpus(), MAX_THREADS))
def gates(bundle_dirs, limit, max_drop, int8_extra, data_dir, dev, rescore, threads):
    from .. import gates as gate_checks
    from ..accuracy import AccuracyError

    quiet_transformers()
    rows = []
    for bundle in bundle_dirs:
        try:
            rows += gate_checks.check(bundle, limit=limit, max_drop=max_drop, int8_extra=int8_extra,
                                      data_dir=data_dir, dev=dev, threads=threads, progress=log, rescore=rescore)
        except AccuracyError as exc:
            fail(exc.problem, exc.fix)
    click.echo(gate_checks.table(rows))
    failed = [r for r in rows if not r["passed"]]
    click.echo(f"{len(rows) - len(failed)} of {len(rows)} gates pass")
    sys.exit(1 if failed else 0)


@cli.command(help="GLUE (SST-2, MRPC, CoLA, STS-B) and CoNLL-2003: fine-tune the teacher from --base, apply "
             "nonorm,relu, recover, convert with every recipe and score every artifact through the runtime on "
             "the full dev split (and CoNLL test). Steps are cached in --cache: a re-run resumes.")
@click.option("--tasks", default=None, help="comma-separated (default: glue:sst2,glue:mrpc,glue:cola,glue:stsb,"
              "conll2003)")
@click.option("--base", default=None, help="built-in model or checkpoint to fine-tune the teachers from "
              "[default: minilm]")
@click.option("--finetune-budget", default=None, help="per task: 500steps, 2epochs, 5m; first reached wins "
              "[default: 3epochs,30m; fast: 30steps]")
@click.option("--recover-budget", default=None,
              help=f"per task [default: {RECOVERY_BUDGET}, the converter's; fast: 20steps]")
@click.option("--recipes", default=None, help="comma-separated [default: all six ONNX/TFLite × fp32, "
              "int8-dynamic, int8-static]")
@click.option("--calibration-samples", type=click.IntRange(16), default=None, help="int8 calibration texts "
              "(from the task's training file) [default: 128]")
@click.option("--verify-samples", type=click.IntRange(10), default=None, help="[default: 300]")
@click.option("--threads", type=click.IntRange(1), default=None, help="[default: 1]")
@click.option("--train-limit", type=click.IntRange(1), default=None, help="first N training examples only")
@click.option("--cache", type=click.Path(path_type=Path), default=None,
              help="checkpoints, bundles and scores [default: $POCKETBERT_CACHE/glue or ~/.cache/pocketbert/glue]")
@data_dir_option(as_path=True)
@click.option("--fast", is_flag=True, help="tiny random BERT, a few steps: tests the harness (not figures)")
@results_file_option(help="results file [default: benchmarks/results/glue.json; fast: glue-fast.json]")
def glue(fast, out, **kwargs):
    from pocketbert.converter.errors import ConverterError

    from .. import glue as job
    from ..glue_options import parse_options
    from ..glue_report import summary

    quiet_transformers()
    try:
        options = parse_options(fast, **kwargs)
        data = job.run(options, out or RESULTS / ("glue-fast.json" if fast else "glue.json"), log=log)
    except ConverterError as exc:
        fail(exc.problem, exc.fix or "see the message above")
    click.echo(summary(data))
