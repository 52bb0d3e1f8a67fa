"""The checkpoint -> checkpoint commands: finetune, recover, trim-vocab, share-embeddings, factor-embeddings,
int4-tune, narrow and shrink.  Each refuses an --out that is, holds or lies inside a checkpoint it reads (even
with --overwrite); the four that change accuracy (factor-embeddings, int4-tune, narrow, shrink) refuse a result
that loses more than --max-accuracy-drop against CHECKPOINT, as the conversion does."""

from __future__ import annotations

from pathlib import Path

import click

from pocketbert.runtime.terminal import plain

from ..builtin import short_name
from ..training.defaults import RECOVERY_BUDGET
from .common import (
    CHECKPOINT_EXIT_CODES,
    LEVER_EXIT_CODES,
    TASK_HELP,
    accuracy_gate_options,
    augment_option,
    budget,
    checkpoint_argument,
    checkpoint_job_options,
    log,
    opt_list,
    out_console,
    overwrite_checkpoint_option,
    refuse_own_input,
    training_options,
)
from .group import cli


@cli.command(short_help="Fine-tune an encoder on a task (GLUE or CoNLL-2003).", epilog=CHECKPOINT_EXIT_CODES)
@checkpoint_argument
@click.option("--task", "task_name", required=True, metavar="TASK", help=TASK_HELP)
@click.option("--dev", type=click.Path(path_type=Path), help="Dev file, when --task is a file.")
@click.option("-o", "--out", type=click.Path(path_type=Path), help="Checkpoint directory to write "
              "[default: models/<checkpoint>-<task>].")
@click.option("--budget", default="3epochs", show_default=True, callback=budget,
              help="Training budget: 500steps, 2epochs, 90s, 20m, 1.5h; comma-separated, the first reached wins.")
@click.option("--lr", type=click.FloatRange(0, 1, min_open=True), default=5e-5, show_default=True)
@training_options
@click.option("--resume", is_flag=True, help="Continue an interrupted run from its last checkpoint.")
@click.option("--freeze-word-embeddings", is_flag=True,
              help="Keep the word-embedding table as it is (the base model's), "
              "so the result can ship without it: pocketbert-convert share-embeddings.")
@overwrite_checkpoint_option
def finetune(checkpoint, task_name, dev, out, budget, lr, batch_size, max_length, seed, threads, data_dir,
             train_limit, resume, freeze_word_embeddings, overwrite):
    """Fine-tune CHECKPOINT on TASK and write a Hugging Face checkpoint with a model card."""
    from ..training.finetune import FinetuneOptions
    from ..training.finetune import finetune as run

    if out is None:
        name = short_name(checkpoint)
        out = Path("models") / f"{name}-{task_name.replace(':', '-').replace('/', '_')}"
    refuse_own_input(out, source=checkpoint)
    options = FinetuneOptions(checkpoint=checkpoint, task=task_name, dev=str(dev) if dev else None, out=out,
                              budget=budget, lr=lr, batch_size=batch_size, max_length=max_length, seed=seed,
                              threads=threads, data_dir=data_dir, train_limit=train_limit, resume=resume,
                              overwrite=overwrite, progress=True, freeze_word_embeddings=freeze_word_embeddings)
    result = run(options, log=log)
    out_console.print(plain(f"wrote {result.out}: {result.log.steps} steps in {result.log.seconds:.0f} s; dev "
                            + ", ".join(f"{k} {v:.2f}" for k, v in result.scores.items())))


@cli.command(short_help="Distil a nonorm/relu student from a fine-tuned checkpoint (accuracy recovery).",
             epilog=CHECKPOINT_EXIT_CODES)
@checkpoint_argument
@click.option("--task", "task_name", required=True, metavar="TASK", help=TASK_HELP)
@click.option("--opt", "opts", default="nonorm,relu", show_default=True, metavar="LIST", callback=opt_list,
              help="The function-changing optimisations to recover from: nonorm, relu.")
@click.option("--dev", type=click.Path(path_type=Path), help="Dev file, when --task is a file.")
@click.option("-o", "--out", type=click.Path(path_type=Path),
              help="Checkpoint directory to write [default: models/<checkpoint>-<opts>].")
@click.option("--budget", default=RECOVERY_BUDGET, show_default=True, callback=budget,
              help="Distillation budget: 500steps, 2epochs, 90s, 20m, 1.5h; the first reached wins.")
@click.option("--schedule", type=click.Choice(["joint", "progressive"]), default="joint", show_default=True,
              help="joint: every loss term and parameter at once; progressive: MobileBERT's layer-by-layer "
                   "transfer, then logit distillation.")
@click.option("--lr", type=click.FloatRange(0, 1, min_open=True), default=1e-4, show_default=True)
@click.option("--temperature", type=click.FloatRange(0, min_open=True), default=1.0, show_default=True)
@click.option("--hard-weight", type=click.FloatRange(0), default=0.0, show_default=True,
              help="Weight of the hard-label loss beside logit distillation.")
@click.option("--stream-weight", type=click.FloatRange(0), default=0.0, show_default=True,
              help="Weight of the residual-stream range penalty, log(max |h| / rms h) per layer, against the "
                   "outliers per-tensor int8 scales must cover (full-integer int8; measured without gain on the "
                   "SST-2 demo, see docs/full-integer.md).")
@click.option("--init", type=click.Choice(["teacher", "lstsq", "moments", "none"]), default="teacher",
              show_default=True, help="NoNorm γ/β fitted before training: to the teacher's norm outputs (teacher), "
              "to the LayerNorm on the student's own inputs (lstsq), by average moments, or not at all.")
@training_options
@click.option("--freeze-word-embeddings", is_flag=True,
              help="Keep the word-embedding table as it is (the teacher's), "
              "so the result can ship without it: pocketbert-convert share-embeddings.")
@click.option("--qat", is_flag=True, help="Quantization-aware: train through a simulation of the full-integer "
              "(tflite:int8-static) export. CHECKPOINT may already be nonorm/relu: it is then its own float teacher.")
@augment_option
@overwrite_checkpoint_option
def recover(checkpoint, task_name, opts, dev, out, budget, schedule, lr, temperature, hard_weight, stream_weight, init,
            batch_size, max_length, seed, threads, data_dir, train_limit, freeze_word_embeddings, qat, augment,
            overwrite):
    """Train CHECKPOINT with nonorm/relu applied to match CHECKPOINT itself (the teacher) on TASK's text."""
    from ..opts import parse_opts
    from ..training.recovery import RecoverOptions, recover_checkpoint

    opt_list = parse_opts(opts)
    if out is None:
        name = short_name(checkpoint)
        out = Path("models") / f"{name}-{'-'.join(opt_list)}"
    refuse_own_input(out, source=checkpoint)
    options = RecoverOptions(task=task_name, dev=str(dev) if dev else None, budget=budget, schedule=schedule, lr=lr,
                             temperature=temperature, hard_weight=hard_weight, stream_weight=stream_weight, init=init,
                             batch_size=batch_size, max_length=max_length, seed=seed, data_dir=data_dir,
                             train_limit=train_limit, freeze_word_embeddings=freeze_word_embeddings, qat=qat,
                             augment=augment)
    path, record = recover_checkpoint(checkpoint, opt_list, options, out, overwrite=overwrite, threads=threads,
                                      log=log)
    scores = record["dev_scores"]
    metric = record["metric"]
    out_console.print(plain(f"wrote {path}: dev {metric} teacher {scores['teacher'][metric]:.2f}, without recovery "
                            f"{scores['without_recovery'][metric]:.2f}, recovered {scores['recovered'][metric]:.2f} "
                            f"({record['delta_vs_teacher']:+.2f})"))


@cli.command("trim-vocab", short_help="Keep only the word pieces a task uses (smaller embedding table).",
             epilog=CHECKPOINT_EXIT_CODES)
@checkpoint_argument
@click.option("--task", "task_name", required=True, metavar="TASK", help="Whose training text chooses the pieces. "
              + TASK_HELP)
@click.option("--size", type=click.IntRange(100), required=True, help="Vocabulary size to keep (at most).")
@click.option("--retune", "retune", metavar="BUDGET", help="Then distil the trimmed model from the untrimmed one "
              "on TASK's training text for this budget (15m, 1epoch, 300steps): wins back what the new "
              "segmentation of rare words costs.")
@click.option("--retune-lr", type=click.FloatRange(0, 1, min_open=True), default=3e-5, show_default=True)
@checkpoint_job_options()
def trim_vocab(checkpoint, task_name, size, out, dev, fp16, retune, retune_lr, threads, train_limit, data_dir,
               overwrite):
    """Trim CHECKPOINT's vocabulary to the pieces TASK's training text uses; report the dev score before/after."""
    from ..levers.vocab_trim import trim_checkpoint

    refuse_own_input(out, source=checkpoint)
    path, record = trim_checkpoint(checkpoint, task_name, size, out, data_dir=data_dir, fp16=fp16, retune=retune,
                                   retune_lr=retune_lr, threads=threads, train_limit=train_limit,
                                   overwrite=overwrite, dev=_text(dev), log=log)
    out_console.print(plain(f"wrote {path}"))


@cli.command("share-embeddings", short_help="Re-tune a checkpoint around a base model's word embeddings and "
             "write it without them.", epilog=CHECKPOINT_EXIT_CODES)
@checkpoint_argument
@click.option("--base", default="minilm", show_default=True,
              help="Built-in model name or checkpoint directory whose word-embedding table the result uses.")
@click.option("--task", "task_name", required=True, metavar="TASK", help="Training text for the re-tuning. "
              + TASK_HELP)
@click.option("--retune", "retune", metavar="BUDGET", default="20m", show_default=True,
              help="Distillation budget: 15m, 1epoch, 300steps.")
@click.option("--lr", type=click.FloatRange(0, 1, min_open=True), default=3e-5, show_default=True)
@checkpoint_job_options()
def share_embeddings(checkpoint, base, task_name, retune, lr, out, dev, fp16, threads, train_limit, data_dir,
                     overwrite):
    """Re-tune CHECKPOINT with BASE's word embeddings (frozen) by distillation from CHECKPOINT itself, and write
    it without the table: PocketBERT's loader takes it from BASE (sha256 checked). For all-MiniLM-L6-v2 that
    halves the checkpoint with no change to tokenization."""
    from ..training.base_embeddings import share_checkpoint

    refuse_own_input(out, source=checkpoint, base=base)
    path, record = share_checkpoint(checkpoint, base, task_name, out, retune=retune, lr=lr, fp16=fp16,
                                    threads=threads, train_limit=train_limit, data_dir=data_dir,
                                    overwrite=overwrite, dev=_text(dev), log=log)
    out_console.print(plain(f"wrote {path}"))


@cli.command("factor-embeddings", short_help="Factor the word-embedding table into a narrow table and a projection "
             "(smaller files).", epilog=LEVER_EXIT_CODES)
@checkpoint_argument
@click.option("--task", "task_name", required=True, metavar="TASK", help="Training text that chooses the pieces, "
              "weights the rows and re-tunes the factors. " + TASK_HELP)
@click.option("--rank", type=click.IntRange(1), required=True, help="Width of the narrow table (e.g. 160 for a "
              "384-wide model).")
@click.option("--vocab-size", type=click.IntRange(100), help="First trim the vocabulary to this many pieces, as "
              "trim-vocab does.")
@click.option("--retune", "retune", metavar="BUDGET", default="10m", show_default=True,
              help="Distil the two factors from CHECKPOINT for this budget (15m, 1epoch, 300steps); 0steps keeps the "
              "SVD alone.")
@click.option("--lr", type=click.FloatRange(0, 1, min_open=True), default=1e-3, show_default=True)
@click.option("--share-body", is_flag=True, help="Store the word embeddings only: the loader takes every other "
              "weight from CHECKPOINT (sha256 checked), which must then stay installed.")
@checkpoint_job_options()
@accuracy_gate_options
def factor_embeddings(checkpoint, task_name, rank, vocab_size, retune, lr, share_body, out, dev, fp16, threads,
                      train_limit, data_dir, overwrite, max_accuracy_drop, allow_accuracy_loss):
    """Factor CHECKPOINT's word embeddings at RANK (a narrow table and a learned projection, as MobileBERT's
    embedding) and re-tune the factors by distillation from CHECKPOINT on TASK's text. With int4 rows a 384-wide
    table shrinks from 204 to RANK/2 + 12 bytes a row."""
    from ..levers.factor_embeddings import FactorOptions, factor_checkpoint

    refuse_own_input(out, source=checkpoint)
    options = FactorOptions(rank=rank, vocab_size=vocab_size, retune=retune, lr=lr, share_body=share_body, fp16=fp16,
                            threads=threads, train_limit=train_limit, data_dir=data_dir, overwrite=overwrite,
                            allow_accuracy_loss=allow_accuracy_loss, max_accuracy_drop=max_accuracy_drop)
    path, record = factor_checkpoint(checkpoint, task_name, out, options, log=log, dev=_text(dev))
    out_console.print(plain(f"wrote {path}"))


@cli.command("int4-tune", short_help="Distil a checkpoint through int4 rounding and put it on the int4 grid "
             "(int4 files that keep every Linear at 4 bits).", epilog=LEVER_EXIT_CODES)
@checkpoint_argument
@click.option("--task", "task_name", required=True, metavar="TASK", help="Training text for the distillation. "
              + TASK_HELP)
@click.option("--teacher", metavar="CHECKPOINT", help="The float model to match (same depth and labels; the same "
              "vocabulary, or the one CHECKPOINT's was trimmed from) [default: CHECKPOINT itself].")
@click.option("--budget", default="10m", show_default=True, callback=budget,
              help="Distillation budget: 500steps, 2epochs, 90s, 20m, 1.5h; the first reached wins.")
@click.option("--lr", type=click.FloatRange(0, 1, min_open=True), default=5e-5, show_default=True)
@click.option("--pack", is_flag=True, help="Store the int4 weights two to a byte and every other weight in float16 "
              "(about an eighth of the float32 checkpoint).")
@augment_option
@checkpoint_job_options(fp16=False)
@accuracy_gate_options
def int4_tune(checkpoint, task_name, teacher, budget, lr, pack, augment, out, dev, threads, train_limit, data_dir,
              overwrite, max_accuracy_drop, allow_accuracy_loss):
    """Train every weight of CHECKPOINT with its Linears and word-embedding table rounded to the int4 grid of
    tflite:int4-dynamic (one scale per row, max|w|/7), matching the teacher's logits and hidden states on TASK's
    text, then write the weights onto that grid: the int4 file then holds the checkpoint's weights exactly."""
    from ..levers.int4_tune import Int4Options, int4_tune_checkpoint

    refuse_own_input(out, source=checkpoint, teacher=teacher)
    options = Int4Options(teacher=teacher, budget=budget, lr=lr, pack=pack, threads=threads, train_limit=train_limit,
                          data_dir=data_dir, overwrite=overwrite, allow_accuracy_loss=allow_accuracy_loss,
                          max_accuracy_drop=max_accuracy_drop, augment=augment)
    path, record = int4_tune_checkpoint(checkpoint, task_name, out, options, log=log, dev=_text(dev))
    out_console.print(plain(f"wrote {path}"))


@cli.command(short_help="Narrow every feed-forward block of a checkpoint, refitting its output (smaller, faster).",
             epilog=LEVER_EXIT_CODES)
@checkpoint_argument
@click.option("--task", "task_name", required=True, metavar="TASK", help="Text the refit (and any distillation) "
              "reads. " + TASK_HELP)
@click.option("--ffn-width", "width", type=int, required=True, help="Hidden units each feed-forward block keeps.")
@click.option("--texts", type=click.IntRange(32, 100_000), default=1024, show_default=True,
              help="Training texts the unit scores and the least-squares refit read.")
@click.option("--teacher", metavar="CHECKPOINT", help="What --budget distils from (same depth and labels; the same "
              "vocabulary, or the one CHECKPOINT's was trimmed from) [default: CHECKPOINT as it was].")
@click.option("--budget", default="0steps", show_default=True, callback=budget,
              help="Distillation after the refit: 500steps, 2epochs, 90s, 20m; 0steps: none (int4-tune next).")
@click.option("--lr", type=click.FloatRange(0, 1, min_open=True), default=5e-5, show_default=True)
@checkpoint_job_options(fp16=False)
@accuracy_gate_options
def narrow(checkpoint, task_name, width, texts, teacher, budget, lr, out, dev, threads, train_limit, data_dir,
           overwrite, max_accuracy_drop, allow_accuracy_loss):
    """Keep --ffn-width hidden units of every feed-forward block of CHECKPOINT (those contributing most to the
    block's output on TASK's text) and refit each block's output projection by least squares to what the wide
    block computed, block by block; then distil for --budget (or run int4-tune on the result)."""
    from ..levers.narrow import NarrowOptions, narrow_checkpoint

    refuse_own_input(out, source=checkpoint, teacher=teacher)
    options = NarrowOptions(width=width, texts=texts, teacher=teacher, budget=budget, lr=lr, threads=threads,
                            train_limit=train_limit, data_dir=data_dir, overwrite=overwrite,
                            allow_accuracy_loss=allow_accuracy_loss, max_accuracy_drop=max_accuracy_drop)
    path, _ = narrow_checkpoint(checkpoint, task_name, out, options, log=log, dev=_text(dev))
    out_console.print(plain(f"wrote {path}"))


@cli.command(short_help="Distil a student with fewer transformer blocks from a checkpoint (smaller, faster).",
             epilog=LEVER_EXIT_CODES)
@checkpoint_argument
@click.option("--task", "task_name", required=True, metavar="TASK", help="Training text for the distillation. "
              + TASK_HELP)
@click.option("--layers", type=int, required=True, help="Transformer blocks the student keeps (fewer than "
              "CHECKPOINT's; spread uniformly, the last kept).")
@click.option("--teacher", metavar="CHECKPOINT", help="What the student is distilled from, e.g. the model CHECKPOINT "
              "was narrowed from (same depth and labels; the same vocabulary, or the one CHECKPOINT's was trimmed "
              "from) [default: CHECKPOINT itself].")
@click.option("--budget", default="15m", show_default=True, callback=budget,
              help="Distillation budget: 500steps, 2epochs, 90s, 20m, 1.5h; the first reached wins.")
@click.option("--lr", type=click.FloatRange(0, 1, min_open=True), default=1e-4, show_default=True)
@click.option("--freeze-word-embeddings", is_flag=True,
              help="Keep the word-embedding table as it is; a checkpoint that takes its table from a base model "
              "(share-embeddings) is then written without it, as it was.")
@augment_option
@checkpoint_job_options(fp16=False)
@accuracy_gate_options
def shrink(checkpoint, task_name, layers, teacher, budget, lr, freeze_word_embeddings, augment, out, dev, threads,
           train_limit, data_dir, overwrite, max_accuracy_drop, allow_accuracy_loss):
    """Keep LAYERS of CHECKPOINT's transformer blocks and distil them from CHECKPOINT (or --teacher) on TASK's
    training text (logits, hidden states and attention, TinyBERT's layer map); the record keeps the original
    teacher's dev score, so the accuracy gates judge the result against it."""
    from ..levers.shrink import shrink_checkpoint

    refuse_own_input(out, source=checkpoint, teacher=teacher)
    path, record = shrink_checkpoint(checkpoint, task_name, layers, out, budget=budget, lr=lr, threads=threads,
                                     teacher=teacher,
                                     freeze_word_embeddings=freeze_word_embeddings, data_dir=data_dir,
                                     train_limit=train_limit, overwrite=overwrite,
                                     allow_accuracy_loss=allow_accuracy_loss, max_accuracy_drop=max_accuracy_drop,
                                     dev=_text(dev), augment=augment, log=log)
    scores, metric = record["dev_scores"], record["metric"]
    out_console.print(plain(f"wrote {path}: dev {metric} teacher {scores['teacher'][metric]:.2f}, parent "
                            f"{scores['parent'][metric]:.2f}, {layers} blocks before distillation "
                            f"{scores['without_recovery'][metric]:.2f}, distilled {scores['recovered'][metric]:.2f} "
                            f"({record['delta_vs_teacher']:+.2f})"))


def _text(path: Path | None) -> str | None:
    return None if path is None else str(path)
