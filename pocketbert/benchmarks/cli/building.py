"""``pocketbert-bench bundles``: convert the models the other commands measure; ``conversion-time``: what a
conversion costs, stage by stage."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from pocketbert.cli_options import threads_option

from .common import RESULTS, data_dir_option, fail, ints, log, quiet_transformers, results_file_option, work_dir_for, work_dir_option
from .group import cli


@cli.command(help="Convert the measured models (real MiniLM; random MobileBERT/TinyBERT4/DistilBERT shapes).")
@click.option("--models", default=None, help="comma-separated model names or NAME=CHECKPOINT_DIR (default: minilm,"
              "mobilebert,tinybert4,distilbert; fast: tiny-bert)")
@click.option("--variants", default=None, help="comma-separated: plain-int8, nonorm-relu-fold-int8 (default), "
              "plain-int8-static, nonorm-relu-fold-int8-static")
@click.option("--buckets", default=None, help="TFLite sequence buckets (default 32,64,128,256; fast: 32)")
@work_dir_option
@click.option("--fast", is_flag=True, help="tiny random model, one variant, one bucket")
def bundles(models, variants, buckets, work_dir, fast):
    from .. import models as registry

    quiet_transformers()
    work_dir = work_dir_for(work_dir, None)
    names = models.split(",") if models else list(registry.FAST_MODELS if fast else registry.DEFAULT_MODELS)
    chosen = variants.split(",") if variants else list(registry.FAST_VARIANTS if fast else registry.DEFAULT_VARIANTS)
    for name in names:
        if name not in registry.SHAPES and "=" not in name:
            fail(f"unknown model {name!r}", f"use one of {', '.join(registry.SHAPES)}, or NAME=CHECKPOINT_DIR", 2)
    for v in chosen:
        if v not in registry.VARIANTS:
            fail(f"unknown variant {v!r}", f"use one of {', '.join(registry.VARIANTS)}", 2)
    try:
        made = registry.build_bundles(names, chosen, work_dir, ints(buckets or ("32" if fast else "32,64,128,256"),
                                                                    "--buckets"),
                                      log=log, verify_samples=64 if fast else 300)
    except KeyError as exc:
        fail(str(exc.args[0]), "pass NAME=DIR with the directory the fine-tuning wrote (config.json, weights)", 2)
    for path in made:
        click.echo(str(path))


@cli.command("conversion-time", help="Where one conversion's time goes on this machine: every stage and step "
             "(each recipe's export, quantisation, metadata, verification) and the int8 ladders' judgements.")
@click.argument("checkpoint")
@click.option("--opt", "opts", default=None, help="the converter's --opt (e.g. nonorm,relu,fold)")
@click.option("--recipe", "recipes", default=None, help="the converter's --recipe (e.g. onnx:int8-dynamic,"
              "tflite:int8-dynamic)")
@click.option("--format", "formats", default=None, help="the converter's --format (default: onnx,tflite)")
@click.option("--cprofile", "profile_rows", type=click.IntRange(min=0), default=0, show_default=True,
              help="also list the N functions with the most cumulative time (cProfile)")
@threads_option()
@data_dir_option()
@results_file_option(help="results file (default results/conversion-time-<checkpoint>.json)")
def conversion_time(checkpoint, opts, recipes, formats, profile_rows, threads, data_dir, out):
    import shlex

    from pocketbert.converter.errors import ConverterError
    from pocketbert.converter.quiet import silenced

    from .. import conversion_time as timing
    from .. import schema

    quiet_transformers()
    chosen = {k: v for k, v in dict(opts=opts, recipes=recipes, formats=formats, data_dir=data_dir).items()
              if v is not None}
    settings = ", ".join(f"{k} {v}" for k, v in chosen.items()) or "defaults"
    log(f"converting {checkpoint} ({settings}), {threads} threads")
    try:
        with silenced():  # the exporters' C++ logs; our own lines still show
            figures = timing.run(checkpoint, profile_rows, tell=log, threads=threads, **chosen)
    except ConverterError as exc:
        fail(exc.problem, exc.fix or "")
    for line in timing.table_lines(checkpoint, figures):
        log(line)
    data = timing.results_file(checkpoint, figures, shlex.join(sys.argv[1:]))
    name = Path(checkpoint).name or "checkpoint"
    click.echo(str(schema.write(data, out or RESULTS / f"conversion-time-{name}.json")))
