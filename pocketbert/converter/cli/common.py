"""What every converter command shares: the consoles, exit codes, option parsers and repeated options."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import click
from rich.console import Console

from pocketbert.cli_options import threads_option
from pocketbert.locations import DATA_DIR_DEFAULT
from pocketbert.runtime.terminal import plain

from .. import errors
from ..options import MAX_SEED

# No file= on purpose: rich then writes to whatever sys.stdout/sys.stderr are at print time, which
# quiet.silenced() points at the real terminal.  A pipe gets 80 columns by default: too narrow for the summary.
# piped or captured (logs, CI, a test): messages stay one line each, greppable, as the runtime's and benchmarks' do
console = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 160,
                  soft_wrap=not sys.stderr.isatty())
out_console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)

EXIT_CODES = """Exit codes: 0 bundle written; 2 bad command line; 3 unusable checkpoint, option or data file;
4 an exported model failed verification; 5 nonorm/relu would lose accuracy (see --allow-accuracy-loss);
6 output not writable, not empty, not ours to replace, or the disk is full; 130 interrupted.
On any non-zero exit no bundle is written."""

# finetune, recover, trim-vocab, share-embeddings: they write a checkpoint and never verify an export
CHECKPOINT_EXIT_CODES = """Exit codes: 0 checkpoint written; 2 bad command line; 3 unusable checkpoint, option or data
file; 6 output not writable, not empty, not ours to replace, or the disk is full; 130 interrupted.
On any non-zero exit no checkpoint is written (an interrupted finetune continues with --resume)."""

# narrow, shrink, factor-embeddings, int4-tune: they change accuracy, and pass the accuracy gate first
LEVER_EXIT_CODES = """Exit codes: 0 checkpoint written; 2 bad command line; 3 unusable checkpoint, option or data
file; 5 the result loses more than --max-accuracy-drop against its source (see --allow-accuracy-loss); 6 output not
writable, not empty, not ours to replace, inside or holding the source, or the disk is full; 130 interrupted.
On any non-zero exit no checkpoint is written."""

TASK_HELP = ("A short name (glue:sst2, glue:mrpc, glue:cola, glue:stsb, conll2003) resolved against --data-dir, "
             "or a training file: a GLUE-format TSV or a CoNLL file (told apart by content), with its dev file "
             "given by --dev.")


def log(message) -> None:
    """Progress messages name paths, labels and tasks: printed as they are, never as rich markup."""
    console.print(plain(message))


def split_labels(ctx, param, value):
    if value is None:
        return None
    labels = [v.strip() for v in value.split(",")]
    if not all(labels):
        raise click.BadParameter("empty label name; write e.g. --labels negative,positive")
    return labels


def budget(ctx, param, value):
    from ..training.loop import parse_budget

    try:
        return parse_budget(value)
    except errors.ConverterInputError as exc:
        raise click.BadParameter(f"{exc.problem}; {exc.fix}")


def finite(ctx, param, value):
    """click's ranges pass nan (every comparison with it is false) and, unbounded above, inf."""
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a finite number; give e.g. "
                                 + ("0.7 (a fraction of the multiply-adds)" if param.name == "max_macs" else "20 (ms)"))
    return value


def int_list(ctx, param, value):
    if value is None:
        return None
    try:
        values = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a comma-separated list of integers, e.g. 32,64,128")
    if not values:  # `--buckets ,` would otherwise quietly mean the defaults
        raise click.BadParameter(f"{value!r} lists no integers; write e.g. 32,64,128, or leave the option out")
    return values


def not_empty(ctx, param, value):
    """An empty CHECKPOINT would resolve to the current directory and blame a missing config.json there."""
    if not value.strip():
        raise click.BadParameter("is empty; give a checkpoint directory or a built-in model name")
    return value


def opt_list(ctx, param, value):
    """--opt: a value naming nothing (',' or '') would quietly mean no optimisation at all."""
    if value is not None and not any(v.strip() for v in value.split(",")):
        raise click.BadParameter(f"{value!r} names no optimisation; write e.g. --opt int8 or --opt nonorm,relu, "
                                 "or leave the option out")
    return value


def data_dir_path(ctx, param, value):
    """--data-dir '': click would read it as the current directory; a typo there must not pass silently."""
    if value is None:
        return None
    if not value.strip():
        raise click.BadParameter("is empty; give the directory holding glue/ and conll2003/, or leave the option out")
    return Path(value)


# --- options several commands take, spelled once -------------------------------------------------
checkpoint_argument = click.argument("checkpoint", callback=not_empty)
data_dir_option = click.option(
    "--data-dir", type=click.Path(), callback=data_dir_path,
    help=f"Data directory holding glue/ and conll2003/ [default: {DATA_DIR_DEFAULT}].")
train_limit_option = click.option("--train-limit", type=click.IntRange(1), default=None,
                                  help="Use only the first N training examples.")
overwrite_checkpoint_option = click.option("--overwrite", is_flag=True, help="Replace a checkpoint PocketBERT "
                                           "wrote at --out (never any other directory).")
augment_option = click.option(
    "--augment", type=click.IntRange(0, 100), default=0, show_default=True, metavar="N",
    help="Distil also on N variants of each training example with words replaced by the teacher's nearest "
         "word-piece neighbours (NER: and mentions swapped for others of their type), TinyBERT's augmentation: "
         "for small training sets, where a budget would pass over the same text many times. TinyBERT used 20.")
fp16_option = click.option("--fp16", is_flag=True, help="Store the weights in float16 (half the size).")


def seed_option(help: str | None = None):
    return click.option("--seed", type=click.IntRange(0, MAX_SEED), default=0, show_default=True, help=help)


def checkpoint_job_options(*, fp16: bool = True):
    """The options every command that reworks a checkpoint takes (trim-vocab, share-embeddings, factor-embeddings,
    int4-tune, narrow, shrink), in one place: where to write, the dev file of a task given as a file, float16
    weights (``fp16``), threads, training data, --overwrite."""
    options = [click.option("-o", "--out", type=click.Path(path_type=Path), required=True,
                            help="Checkpoint directory to write."),
               click.option("--dev", type=click.Path(path_type=Path), help="Dev file, when --task is a file."),
               *([fp16_option] if fp16 else []),
               threads_option(None), train_limit_option, data_dir_option, overwrite_checkpoint_option]

    def apply(command):
        for option in reversed(options):
            command = option(command)
        return command

    return apply


def accuracy_gate_options(command):
    """--allow-accuracy-loss and --max-accuracy-drop, as the conversion spells them, for the commands that change a
    checkpoint's accuracy (narrow, shrink, factor-embeddings, int4-tune)."""
    from ..checks.accuracy_gate import MAX_DROP

    for option in reversed((
            click.option("--max-accuracy-drop", type=click.FloatRange(0), default=MAX_DROP, show_default=True,
                         help="The most points of the task metric (dev split) the result may lose against "
                              "CHECKPOINT; more is refused unless --allow-accuracy-loss."),
            click.option("--allow-accuracy-loss", is_flag=True, help="Write the result even when it loses more than "
                         "--max-accuracy-drop (said as a warning)."))):
        command = option(command)
    return command


def refuse_own_input(out: Path, **inputs: str | None) -> None:
    """--out may never be, hold or lie inside a checkpoint the command reads, --overwrite or not."""
    from ..checkpoints.checkpoint_inputs import refuse_as_output

    refuse_as_output(out, **inputs)


def training_options(command):
    """The options every training command takes (finetune, recover), in one place."""
    for option in reversed((click.option("--batch-size", type=click.IntRange(1, 4096), default=32, show_default=True),
                            click.option("--max-length", type=click.IntRange(8, 4096), default=128,
                                         show_default=True),
                            seed_option(),
                            threads_option(), data_dir_option, train_limit_option)):
        command = option(command)
    return command
