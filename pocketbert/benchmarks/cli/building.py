"""``python -m benchmarks bundles``: convert the models the other commands measure."""

from __future__ import annotations

import click

from .common import fail, ints, log, quiet_transformers, work_dir_option
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
