"""Command line: ``python -m converter CHECKPOINT --opt nonorm,relu,int8``."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import warnings
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from pocketbert.runtime.terminal import plain, styled

from . import errors, quiet
from .builtin import BUILTIN, DEFAULT_MODEL
from .bundle import MANIFEST
from .bundle import sha256 as bundle_sha256
from .opts import HELP as OPT_HELP
from .recipes import DEFAULT_FORMATS, INT8_CHOICES, RECIPES, TASKS

# No file= on purpose: rich then writes to whatever sys.stdout/sys.stderr are at print time, which
# quiet.silenced() points at the real terminal.  A pipe gets 80 columns by default: too narrow for the summary.
console = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 160)
out_console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)

EXIT_CODES = """Exit codes: 0 bundle written; 2 bad command line; 3 unusable checkpoint, option or data file;
4 an exported model failed verification; 5 nonorm/relu would lose accuracy (see --allow-accuracy-loss);
6 output not writable, not empty, not ours to replace, or the disk is full; 130 interrupted.
On any non-zero exit no bundle is written."""


class DefaultGroup(click.Group):
    """A group whose default command is ``convert``: ``python -m converter CKPT`` = ``… convert CKPT``."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = ["convert", *args]
        return super().parse_args(ctx, args)


def _log(message) -> None:
    """Progress messages name paths, labels and tasks: printed as they are, never as rich markup."""
    console.print(plain(message))


class RichReporter:
    @contextlib.contextmanager
    def stage(self, name, description):
        start = time.perf_counter()
        with console.status(plain(f"{description}…")):
            yield
        console.print(styled("[green]✓[/] ", description), plain(f"{time.perf_counter() - start:.1f} s", "dim"))

    def info(self, message):
        _log(message)

    def warn(self, message):
        console.print(styled("[yellow]![/] ", message))


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog=EXIT_CODES)
@click.version_option(package_name="pocketbert")
def cli():
    """PocketBERT converter: Hugging Face checkpoint -> verified on-device bundle.

    \b
    python -m converter CHECKPOINT [options]      convert (the default command)
    python -m converter list                      families, optimisations, recipes
    """


def _split_labels(ctx, param, value):
    if value is None:
        return None
    labels = [v.strip() for v in value.split(",")]
    if not all(labels):
        raise click.BadParameter("empty label name; write e.g. --labels negative,positive")
    return labels


def _budget(ctx, param, value):
    from .training.loop import parse_budget

    try:
        return parse_budget(value)
    except errors.InputError as exc:
        raise click.BadParameter(f"{exc.problem}; {exc.fix}")


TASK_HELP = ("A short name (glue:sst2, glue:mrpc, glue:cola, glue:stsb, conll2003) resolved against --data-dir, "
             "or a training file: a GLUE-format .tsv or a CoNLL file.")


CONVERT_HELP = ("Convert CHECKPOINT (a local Hugging Face directory, or a built-in model name) into a verified "
                "bundle.\n\nBuilt-in models: " + "; ".join(f"{k}: {v.description}" for k, v in BUILTIN.items()) + ".")


def _int_list(value):
    if value is None:
        return None
    try:
        values = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a comma-separated list of integers, e.g. 32,64,128")
    if not values:  # `--buckets ,` would otherwise quietly mean the defaults
        raise click.BadParameter(f"{value!r} lists no integers; write e.g. 32,64,128, or leave the option out")
    return values


def _not_empty(ctx, param, value):
    """An empty CHECKPOINT would resolve to the current directory and blame a missing config.json there."""
    if not value.strip():
        raise click.BadParameter("is empty; give a checkpoint directory or a built-in model name")
    return value


@cli.command(help=CONVERT_HELP, short_help="Convert a checkpoint (the default command).", epilog=EXIT_CODES)
@click.argument("checkpoint", callback=_not_empty)
@click.option("-o", "--out", type=click.Path(path_type=Path),
              help="Bundle directory to write [default: bundles/<checkpoint>-<opts>].")
@click.option("--task", type=click.Choice(TASKS), help="Head type; default: the checkpoint's head, "
              "else classification.")
@click.option("--opt", "opts", metavar="LIST", help="Comma-separated: " + "; ".join(
    f"{k} = {v}" for k, v in OPT_HELP.items()) + ".")
@click.option("--labels", callback=_split_labels, metavar="A,B,…",
              help="Label names; attaches a fresh head to a bare encoder, or renames a trained head's labels.")
@click.option("--num-labels", type=click.IntRange(1, 10_000), help="Head size for a bare encoder, without names.")
@click.option("--int8", "int8", type=click.Choice(INT8_CHOICES), default="auto",
              show_default=True, help="int8 method for --opt int8, per format: auto (build dynamic and static, "
              "keep the fastest that passes verification on this machine), dynamic (int8 weights, float "
              "activations), static (int8 activations too, calibrated; for NPUs/DSPs), or all.")
@click.option("--format", "formats", metavar="LIST",
              help="Export formats, comma-separated: tflite (LiteRT, batch 1, one signature per --buckets "
                   f"length), onnx (dynamic shapes) [default: {DEFAULT_FORMATS}].")
@click.option("--recipe", "recipes", metavar="LIST",
              help="Build exactly these recipes (plus each format's fp32), instead of --opt int8/--int8/--format; "
                   "e.g. tflite:fp16,tflite:int8-static. See: python -m converter list.")
@click.option("--buckets", metavar="N,N,…", callback=lambda ctx, p, v: _int_list(v),
              help="TFLite sequence-length buckets [default: 32,64,128,256 up to the model's maximum].")
@click.option("--calibration", type=click.Path(path_type=Path), help="Calibration text for int8: a text file "
              "(one text per line), a GLUE .tsv or a CoNLL file [default: built-in English sentences].")
@click.option("--calibration-samples", type=click.IntRange(1, 100_000), default=256, show_default=True)
@click.option("--data-dir", type=click.Path(path_type=Path),
              help="Data directory holding glue/ and conll2003/ (verification sentences) "
                   "[env POCKETBERT_DATA; default: ../shared/data beside the repository].")
@click.option("--verify-samples", type=click.IntRange(10, 100_000), default=1000, show_default=True,
              help="Real sentences used to verify int8 and measure nonorm/relu damage.")
@click.option("--max-length", type=int, help="Maximum sequence length recorded in the bundle "
              "[default: the model's].")
@click.option("--threads", type=click.IntRange(1, 256), default=2, show_default=True,
              help="CPU threads for PyTorch, verification and the latency figure.")
@click.option("--allow-accuracy-loss", is_flag=True, help="Accept the measured damage of nonorm/relu on a "
              "LayerNorm/GELU model (without it the conversion refuses).")
@click.option("--overwrite", is_flag=True, help="Replace an earlier bundle at --out (never any other directory).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for a freshly initialised head.")
@click.option("--int8-min-cosine", type=click.FloatRange(0, 1), default=0.99, show_default=True,
              help="int8 verification: minimum cosine similarity of logits vs PyTorch.")
@click.option("--int8-min-agreement", type=click.FloatRange(0, 1), default=0.95, show_default=True,
              help="int8 verification: minimum top-1 agreement with PyTorch.")
@click.option("--int8-target-agreement", type=click.FloatRange(0, 1), default=0.995, show_default=True,
              help="int8 accuracy ladder: smoothing, then Linears in float, until this top-1 agreement with "
                   "PyTorch on the calibration text (short of it, the cheapest attempt meeting the bar ships).")
@click.option("--no-latency", is_flag=True, help="Skip the latency figure (batch 1, sequence 128).")
@click.option("--recover", "recover_task", metavar="TASK", help="Recover the accuracy nonorm/relu cost by "
              "distillation from the untransformed model on TASK's training text before exporting. " + TASK_HELP)
@click.option("--recover-budget", default="30m", show_default=True, callback=_budget,
              help="Recovery budget: 500steps, 2epochs, 90s, 20m, 1.5h; the first reached wins.")
@click.option("--recover-schedule", type=click.Choice(["joint", "progressive"]), default="joint",
              show_default=True, help="joint: all loss terms and parameters at once; progressive: MobileBERT's "
              "layer-by-layer transfer, then logit distillation.")
@click.option("--max-accuracy-drop", type=click.FloatRange(0), default=1.0, show_default=True,
              help="With --recover: the most points of the task metric the recovered model may lose against the "
                   "original (dev split); more is refused unless --allow-accuracy-loss.")
def convert(checkpoint, out, task, opts, labels, num_labels, int8, formats, recipes, buckets, calibration,
            calibration_samples, data_dir, verify_samples, max_length, threads, allow_accuracy_loss, overwrite, seed,
            int8_min_cosine, int8_min_agreement, int8_target_agreement, no_latency, recover_task, recover_budget,
            recover_schedule, max_accuracy_drop):
    from .pipeline import ConvertOptions
    from .pipeline import convert as run_convert

    if out is None:
        name = Path(checkpoint).name if checkpoint not in BUILTIN else checkpoint
        out = Path("bundles") / "-".join([name] + [o.strip() for o in (opts or "").split(",") if o.strip()])
    options = ConvertOptions(checkpoint=checkpoint, out=out, task=task, opts=opts, labels=labels,
                             num_labels=num_labels, int8=int8, formats=formats, recipes=recipes, buckets=buckets,
                             calibration=calibration,
                             calibration_samples=calibration_samples, verify_samples=verify_samples,
                             data_dir=data_dir, max_length=max_length, overwrite=overwrite,
                             allow_accuracy_loss=allow_accuracy_loss, seed=seed, threads=threads,
                             int8_min_cosine=int8_min_cosine, int8_min_agreement=int8_min_agreement,
                             int8_target_agreement=int8_target_agreement,
                             measure_latency=not no_latency, recover=recover_task,
                             recover_options={"budget": recover_budget, "schedule": recover_schedule},
                             max_accuracy_drop=max_accuracy_drop)
    result = run_convert(options, RichReporter())
    _print_summary(result)


def _print_summary(result) -> None:
    manifest = result.manifest
    table = Table(title=plain(f"Bundle {result.bundle}"), title_justify="left")
    sequence = next((a["latency_ms"]["sequence"] for a in manifest["artifacts"] if a["latency_ms"]), None)
    latency_column = f"latency b1×s{sequence}" if sequence else "latency"
    for column in ("recipe", "file", "size", "parity vs PyTorch", latency_column, "vs fp32", "seconds"):
        table.add_column(column, justify="left" if column in ("recipe", "file", "parity vs PyTorch") else "right")
    # each artifact against the fp32 export of its own backend
    base = {a.recipe.split(":")[0]: a.latency_ms for a in result.artifacts if a.recipe.endswith(":fp32")}
    for a in result.artifacts:
        v = a.verification
        real = v["real_sentences"]
        if "fixed_inputs" in v:
            parity = f"max|Δ| {max(v['fixed_inputs']['max_abs'], real['max_abs']):.1e}"
        else:
            parity = f"cos {real['cosine']:.4f}, top-1 {real['top1_agreement']:.1%}"
        latency = f"{a.latency_ms:.1f} ms" if a.latency_ms is not None else "-"
        own = base.get(a.recipe.split(":")[0])
        ratio = f"{a.latency_ms / own:.2f}x" if a.latency_ms and own else "-"
        table.add_row(a.recipe, a.file, f"{a.bytes / 1e6:.1f} MB", parity, latency, ratio, f"{a.seconds:.1f}")
    out_console.print(table)
    stages = ", ".join(f"{k} {v:.1f} s" for k, v in result.stage_seconds.items())
    verification = manifest["verification"]
    out_console.print(plain(f"Verified on {verification['samples']} sentences from {verification['texts']}; "
                            f"stages: {stages}"))
    if manifest["source"]["head_initialized"]:
        out_console.print("[yellow]Note:[/] the task head is freshly initialised (untrained): outputs are "
                          "verified to match PyTorch, but predictions are not meaningful until the head is trained.")
    # manifest.json lists every file's SHA-256, so its own SHA-256 pins the whole bundle
    out_console.print(f"bundle pin: sha256 {bundle_sha256(result.bundle / MANIFEST)} "
                      "(runtime.load(dir, expected_sha256=...) or python -m runtime DIR --expect-sha256 ...)",
                      markup=False, highlight=False)


@cli.command(short_help="Fine-tune an encoder on a task (GLUE or CoNLL-2003).", epilog=EXIT_CODES)
@click.argument("checkpoint", callback=_not_empty)
@click.option("--task", "task_name", required=True, metavar="TASK", help=TASK_HELP)
@click.option("--dev", type=click.Path(path_type=Path), help="Dev file, when --task is a file.")
@click.option("-o", "--out", type=click.Path(path_type=Path), help="Checkpoint directory to write "
              "[default: models/<checkpoint>-<task>].")
@click.option("--budget", default="3epochs", show_default=True, callback=_budget,
              help="Training budget: 500steps, 2epochs, 90s, 20m, 1.5h; comma-separated, the first reached wins.")
@click.option("--lr", type=click.FloatRange(0, 1, min_open=True), default=5e-5, show_default=True)
@click.option("--batch-size", type=click.IntRange(1, 4096), default=32, show_default=True)
@click.option("--max-length", type=click.IntRange(8, 4096), default=128, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--threads", type=click.IntRange(1, 256), default=2, show_default=True)
@click.option("--data-dir", type=click.Path(path_type=Path),
              help="Data directory holding glue/ and conll2003/ [env POCKETBERT_DATA; default: ../shared/data].")
@click.option("--train-limit", type=click.IntRange(1), help="Use only the first N training examples.")
@click.option("--resume", is_flag=True, help="Continue an interrupted run from its last checkpoint.")
@click.option("--freeze-word-embeddings", is_flag=True,
              help="Keep the word-embedding table as it is (the base model's), "
              "so the result can ship without it: python -m converter share-embeddings.")
@click.option("--overwrite", is_flag=True, help="Replace a checkpoint PocketBERT wrote at --out "
              "(never any other directory).")
def finetune(checkpoint, task_name, dev, out, budget, lr, batch_size, max_length, seed, threads, data_dir,
             train_limit, resume, freeze_word_embeddings, overwrite):
    """Fine-tune CHECKPOINT on TASK and write a Hugging Face checkpoint with a model card."""
    from .training.finetune import FinetuneOptions
    from .training.finetune import finetune as run

    if out is None:
        name = checkpoint if checkpoint in BUILTIN else Path(checkpoint).name
        out = Path("models") / f"{name}-{task_name.replace(':', '-').replace('/', '_')}"
    options = FinetuneOptions(checkpoint=checkpoint, task=task_name, dev=str(dev) if dev else None, out=out,
                              budget=budget, lr=lr, batch_size=batch_size, max_length=max_length, seed=seed,
                              threads=threads, data_dir=data_dir, train_limit=train_limit, resume=resume,
                              overwrite=overwrite, progress=True, freeze_word_embeddings=freeze_word_embeddings)
    result = run(options, log=_log)
    out_console.print(plain(f"wrote {result.out}: {result.log.steps} steps in {result.log.seconds:.0f} s; dev "
                            + ", ".join(f"{k} {v:.2f}" for k, v in result.scores.items())))


@cli.command(short_help="Distil a nonorm/relu student from a fine-tuned checkpoint (accuracy recovery).",
             epilog=EXIT_CODES)
@click.argument("checkpoint", callback=_not_empty)
@click.option("--task", "task_name", required=True, metavar="TASK", help=TASK_HELP)
@click.option("--opt", "opts", default="nonorm,relu", show_default=True, metavar="LIST",
              help="The function-changing optimisations to recover from: nonorm, relu.")
@click.option("--dev", type=click.Path(path_type=Path), help="Dev file, when --task is a file.")
@click.option("-o", "--out", type=click.Path(path_type=Path),
              help="Checkpoint directory to write [default: models/<checkpoint>-<opts>].")
@click.option("--budget", default="30m", show_default=True, callback=_budget,
              help="Distillation budget: 500steps, 2epochs, 90s, 20m, 1.5h; the first reached wins.")
@click.option("--schedule", type=click.Choice(["joint", "progressive"]), default="joint", show_default=True,
              help="joint: every loss term and parameter at once; progressive: MobileBERT's layer-by-layer "
                   "transfer, then logit distillation.")
@click.option("--lr", type=click.FloatRange(0, 1, min_open=True), default=1e-4, show_default=True)
@click.option("--temperature", type=click.FloatRange(0, min_open=True), default=1.0, show_default=True)
@click.option("--hard-weight", type=click.FloatRange(0), default=0.0, show_default=True,
              help="Weight of the hard-label loss beside logit distillation.")
@click.option("--init", type=click.Choice(["teacher", "lstsq", "moments", "none"]), default="teacher",
              show_default=True, help="NoNorm γ/β fitted before training: to the teacher's norm outputs (teacher), "
              "to the LayerNorm on the student's own inputs (lstsq), by average moments, or not at all.")
@click.option("--batch-size", type=click.IntRange(1, 4096), default=32, show_default=True)
@click.option("--max-length", type=click.IntRange(8, 4096), default=128, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--threads", type=click.IntRange(1, 256), default=2, show_default=True)
@click.option("--data-dir", type=click.Path(path_type=Path),
              help="Data directory holding glue/ and conll2003/ [env POCKETBERT_DATA; default: ../shared/data].")
@click.option("--train-limit", type=click.IntRange(1), help="Use only the first N training examples.")
@click.option("--freeze-word-embeddings", is_flag=True,
              help="Keep the word-embedding table as it is (the teacher's), "
              "so the result can ship without it: python -m converter share-embeddings.")
@click.option("--overwrite", is_flag=True, help="Replace a checkpoint PocketBERT wrote at --out "
              "(never any other directory).")
def recover(checkpoint, task_name, opts, dev, out, budget, schedule, lr, temperature, hard_weight, init, batch_size,
            max_length, seed, threads, data_dir, train_limit, freeze_word_embeddings, overwrite):
    """Train CHECKPOINT with nonorm/relu applied to match CHECKPOINT itself (the teacher) on TASK's text."""
    from .opts import parse_opts
    from .training.recovery import RecoverOptions, recover_checkpoint

    opt_list = parse_opts(opts)
    if out is None:
        name = checkpoint if checkpoint in BUILTIN else Path(checkpoint).name
        out = Path("models") / f"{name}-{'-'.join(opt_list)}"
    options = RecoverOptions(task=task_name, dev=str(dev) if dev else None, budget=budget, schedule=schedule, lr=lr,
                             temperature=temperature, hard_weight=hard_weight, init=init, batch_size=batch_size,
                             max_length=max_length, seed=seed, data_dir=data_dir, train_limit=train_limit,
                             freeze_word_embeddings=freeze_word_embeddings)
    path, record = recover_checkpoint(checkpoint, opt_list, options, out, overwrite=overwrite, threads=threads,
                                      log=_log)
    scores = record["dev_scores"]
    metric = record["metric"]
    out_console.print(plain(f"wrote {path}: dev {metric} teacher {scores['teacher'][metric]:.2f}, without recovery "
                            f"{scores['without_recovery'][metric]:.2f}, recovered {scores['recovered'][metric]:.2f} "
                            f"({record['delta_vs_teacher']:+.2f})"))


@cli.command("trim-vocab", short_help="Keep only the word pieces a task uses (smaller embedding table).")
@click.argument("checkpoint", callback=_not_empty)
@click.option("--task", "task_name", required=True, metavar="TASK", help="Whose training text chooses the pieces. "
              + TASK_HELP)
@click.option("--size", type=click.IntRange(100), required=True, help="Vocabulary size to keep (at most).")
@click.option("-o", "--out", type=click.Path(path_type=Path), required=True, help="Checkpoint directory to write.")
@click.option("--fp16", is_flag=True, help="Store the weights in float16 (half the size).")
@click.option("--retune", "retune", metavar="BUDGET", help="Then distil the trimmed model from the untrimmed one "
              "on TASK's training text for this budget (15m, 1epoch, 300steps): wins back what the new "
              "segmentation of rare words costs.")
@click.option("--retune-lr", type=click.FloatRange(0, 1, min_open=True), default=3e-5, show_default=True)
@click.option("--threads", type=click.IntRange(1, 256), default=None, help="PyTorch threads [default: all cores].")
@click.option("--train-limit", type=click.IntRange(1), default=None, help="Use only the first N training examples.")
@click.option("--data-dir", type=click.Path(path_type=Path),
              help="Data directory holding glue/ and conll2003/ [env POCKETBERT_DATA; default: ../shared/data].")
@click.option("--overwrite", is_flag=True, help="Replace a checkpoint PocketBERT wrote at --out "
              "(never any other directory).")
def trim_vocab(checkpoint, task_name, size, out, fp16, retune, retune_lr, threads, train_limit, data_dir, overwrite):
    """Trim CHECKPOINT's vocabulary to the pieces TASK's training text uses; report the dev score before/after."""
    from .vocab_trim import trim_checkpoint

    path, record = trim_checkpoint(checkpoint, task_name, size, out, data_dir=data_dir, fp16=fp16, retune=retune,
                                   retune_lr=retune_lr, threads=threads, train_limit=train_limit,
                                   overwrite=overwrite, log=_log)
    out_console.print(plain(f"wrote {path}"))


@cli.command("share-embeddings", short_help="Re-tune a checkpoint around a base model's word embeddings and "
             "write it without them.")
@click.argument("checkpoint", callback=_not_empty)
@click.option("--base", default="minilm", show_default=True,
              help="Built-in model name or checkpoint directory whose word-embedding table the result uses.")
@click.option("--task", "task_name", required=True, metavar="TASK", help="Training text for the re-tuning. "
              + TASK_HELP)
@click.option("--retune", "retune", metavar="BUDGET", default="20m", show_default=True,
              help="Distillation budget: 15m, 1epoch, 300steps.")
@click.option("--lr", type=click.FloatRange(0, 1, min_open=True), default=3e-5, show_default=True)
@click.option("-o", "--out", type=click.Path(path_type=Path), required=True, help="Checkpoint directory to write.")
@click.option("--fp16", is_flag=True, help="Store the weights in float16 (half the size).")
@click.option("--threads", type=click.IntRange(1, 256), default=None, help="PyTorch threads [default: all cores].")
@click.option("--train-limit", type=click.IntRange(1), default=None, help="Use only the first N training examples.")
@click.option("--data-dir", type=click.Path(path_type=Path),
              help="Data directory holding glue/ and conll2003/ [env POCKETBERT_DATA; default: ../shared/data].")
@click.option("--overwrite", is_flag=True, help="Replace a checkpoint PocketBERT wrote at --out "
              "(never any other directory).")
def share_embeddings(checkpoint, base, task_name, retune, lr, out, fp16, threads, train_limit, data_dir, overwrite):
    """Re-tune CHECKPOINT with BASE's word embeddings (frozen) by distillation from CHECKPOINT itself, and write
    it without the table: PocketBERT's loader takes it from BASE (sha256 checked). For all-MiniLM-L6-v2 that
    halves the checkpoint with no change to tokenization."""
    from .base_embeddings import share_checkpoint

    path, record = share_checkpoint(checkpoint, base, task_name, out, retune=retune, lr=lr, fp16=fp16,
                                    threads=threads, train_limit=train_limit, data_dir=data_dir,
                                    overwrite=overwrite, log=_log)
    out_console.print(plain(f"wrote {path}"))


@cli.command("list")
def list_command():
    """Supported families, optimisations, recipes and built-in models."""
    from .families import families

    table = Table(title="Families")
    table.add_column("family")
    table.add_column("model_type")
    table.add_column("checkpoints")
    for family in families():
        table.add_row(family.name, ", ".join(family.model_types), family.description)
    out_console.print(table)
    out_console.print("Optimisations (--opt): " + "; ".join(f"{k}: {v}" for k, v in OPT_HELP.items()))
    out_console.print("Recipes: " + "; ".join(f"{r.name}: {r.description}" for r in RECIPES.values()))
    out_console.print("Built-in models: " + "; ".join(f"{k}: {v.description}" for k, v in BUILTIN.items())
                      + f" (default: {DEFAULT_MODEL})")


def main(argv=None) -> int:
    # Library chatter (exporter diagnostics, transformers load reports) would bury our own output.
    warnings.filterwarnings("ignore")
    logging.getLogger().setLevel(logging.ERROR)  # ORT's quantizer advises via the root logger
    import torch  # noqa: F401  (torch configures its loggers on import: quieten them afterwards)

    for name in ("torch", "torch.utils._pytree", "torch.onnx", "torch._export"):
        logging.getLogger(name).setLevel(logging.ERROR)
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        with quiet.silenced(), errors.disk_errors_as_output_errors():
            cli.main(args=argv, prog_name="python -m converter", standalone_mode=False)
    except errors.ConverterError as exc:
        console.print(styled("[bold red]error:[/] ", exc.problem))
        if exc.fix:
            console.print(styled("  [bold]fix:[/] ", exc.fix))
        return exc.exit_code
    except click.exceptions.Abort:
        console.print("interrupted: nothing was written")
        return errors.EXIT_INTERRUPTED
    except KeyboardInterrupt:
        console.print("interrupted: nothing was written")
        return errors.EXIT_INTERRUPTED
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except Exception:  # a bug: show it, since library output was silenced
        console.print_exception(max_frames=8)
        return errors.EXIT_INTERNAL
    return errors.EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
