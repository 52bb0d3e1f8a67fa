"""``pocketbert-convert CHECKPOINT``: the convert command, its options, and the screen it draws."""

from __future__ import annotations

from pathlib import Path

import click

from pocketbert.locations import DATA_DIR_DEFAULT

from ..builtin import BUILTIN, short_name
from ..opts import help_texts
from ..backends.recipes import INT8_CHOICES, TASKS, default_formats
from ..training.defaults import RECOVERY_BUDGET
from .common import (
    EXIT_CODES,
    TASK_HELP,
    augment_option,
    budget,
    checkpoint_argument,
    data_dir_path,
    finite,
    int_list,
    log,
    opt_list,
    seed_option,
    split_labels,
)
from .group import cli
from .render import Screen, summary

CONVERT_HELP = ("Convert CHECKPOINT (a local Hugging Face directory, or a built-in model name) into a verified "
                "bundle.\n\nBuilt-in models: " + "; ".join(f"{k}: {v.description}" for k, v in BUILTIN.items()) + ".")


@cli.command(help=CONVERT_HELP, short_help="Convert a checkpoint (the default command).", epilog=EXIT_CODES)
@checkpoint_argument
@click.option("-o", "--out", type=click.Path(path_type=Path),
              help="Bundle directory to write [default: bundles/<checkpoint>-<opts>].")
@click.option("--task", type=click.Choice(TASKS), help="Head type; default: the checkpoint's head, "
              "else classification.")
@click.option("--opt", "opts", metavar="LIST", callback=opt_list, help="Comma-separated: " + "; ".join(
    f"{k} = {v}" for k, v in help_texts().items()) + ".")
@click.option("--labels", callback=split_labels, metavar="A,B,…",
              help="Label names; attaches a fresh head to a bare encoder, or renames a trained head's labels.")
@click.option("--num-labels", type=click.IntRange(1, 10_000), help="Head size for a bare encoder, without names.")
@click.option("--int8", "int8", type=click.Choice(INT8_CHOICES), default="auto",
              show_default=True, help="int8 method for --opt int8, per format: auto (build dynamic and static, "
              "keep the fastest that passes verification on this machine), dynamic (int8 weights, float "
              "activations), static (int8 activations too, calibrated; for NPUs/DSPs), or all.")
@click.option("--format", "formats", metavar="LIST",
              help="Export formats, comma-separated: tflite (LiteRT, batch 1, one signature per --buckets "
                   f"length), onnx (dynamic shapes) [default: {default_formats()}].")
@click.option("--recipe", "recipes", metavar="LIST",
              help="Build exactly these recipes (plus each format's fp32), instead of --opt int8/--int8/--format; "
                   "e.g. tflite:fp16,tflite:int8-static. See: pocketbert-convert list.")
@click.option("--max-size", metavar="SIZE",
              help="TFLite: ship the most accurate recipe (fp16, int8-dynamic, int4-dynamic) whose file fits SIZE "
                   "(e.g. 8MB, 7.5MiB: kB/MB/GB/TB or KiB/MiB/GiB/TiB, or bytes) and passes its bar, or refuse saying "
                   "what would fit; instead of --opt int8 for TFLite.")
@click.option("--max-macs", type=click.FloatRange(0, 1, min_open=True), metavar="FRACTION", callback=finite,
              help="With --max-size and --recover: at most this fraction of the checkpoint's multiply-adds at "
                   "sequence 128, counted from the shapes (not a timing); 1 keeps them all [default: 0.7, the phone "
                   "demos' narrowing, unless --max-latency is given].")
@click.option("--max-latency", type=click.FloatRange(0, min_open=True), metavar="MS", callback=finite,
              help="With --max-size and --recover: at most this many milliseconds at sequence 128, batch 1, with "
                   "--threads, on this machine: predicted from probe files timed first (cached in OUT.levers), "
                   "and the written file's measured latency is checked against it.")
@click.option("--budget", "lever_budget", metavar="BUDGET", callback=lambda ctx, param, value: None if value is None
              else budget(ctx, param, value), help="With --max-size and --recover: the one training budget the "
              "planned levers share (25m, 300steps) [default: the phone demos' minutes for the planned levers, at "
              "most 20 in all].")
@click.option("--save-checkpoint", type=click.Path(path_type=Path), metavar="DIR",
              help="With --max-size and --recover: also write the checkpoint the file was converted from (the "
                   "levers' last step) to DIR, e.g. to ship it or convert it again.")
@click.option("--buckets", metavar="N,N,…", callback=int_list,
              help="TFLite sequence-length buckets [default: 32,64,128,256 up to the model's maximum].")
@click.option("--calibration", type=click.Path(path_type=Path), help="Calibration text for int8: a text file "
              "(one text per line), a GLUE .tsv or a CoNLL file [default: built-in English sentences].")
@click.option("--calibration-samples", type=click.IntRange(1, 100_000),
              help="Calibration texts for int8 [default: 1024 when an int8-static file is asked for by name "
                   "(--recipe, --int8 static/all), else 256].")
@click.option("--data-dir", type=click.Path(), callback=data_dir_path,
              help="Data directory holding glue/ and conll2003/ (verification sentences; without one, built-in "
                   f"English sentences) [default: {DATA_DIR_DEFAULT}].")
@click.option("--verify-samples", type=click.IntRange(10, 100_000), default=1000, show_default=True,
              help="Real sentences used to verify int8 and measure nonorm/relu damage.")
@click.option("--max-length", type=int, help="Maximum sequence length recorded in the bundle "
              "[default: the model's].")
@click.option("--threads", type=click.IntRange(1, 256), default=2, show_default=True,
              help="CPU threads for PyTorch, verification and the latency figure.")
@click.option("--allow-accuracy-loss", is_flag=True, help="Accept the measured damage of nonorm/relu on a "
              "LayerNorm/GELU model (without it the conversion refuses).")
@click.option("--overwrite", is_flag=True, help="Replace an earlier bundle at --out (never any other directory).")
@seed_option(help="Seed for a freshly initialised head.")
@click.option("--int8-min-cosine", type=click.FloatRange(0, 1), default=0.99, show_default=True,
              help="int8 verification: minimum cosine similarity of logits vs PyTorch.")
@click.option("--int8-min-agreement", type=click.FloatRange(0, 1), default=0.95, show_default=True,
              help="int8 verification: minimum top-1 agreement with PyTorch.")
@click.option("--int8-min-entity-f1", type=click.FloatRange(0, 1), default=0.90, show_default=True,
              help="int8 verification of a token-classification model: minimum entity F1 against the entities "
                   "the PyTorch model finds (token agreement alone is mostly 'O' tokens).")
@click.option("--int8-target-agreement", type=click.FloatRange(0, 1), default=0.995, show_default=True,
              help="int8 accuracy ladder: smoothing, then Linears in float, until this top-1 agreement with "
                   "PyTorch on the calibration text (short of it, the cheapest attempt meeting the bar ships).")
@click.option("--int8-equalize/--no-int8-equalize", default=True, show_default=True,
              help="Static int8 of a nonorm model: divide its residual stream's outlier channels by per-channel "
                   "scales folded into the weights (exact in float, nothing added at run time) before calibrating.")
@click.option("--no-latency", is_flag=True, help="Skip the latency figure (batch 1, sequence 128).")
@click.option("--dev-gate/--no-dev-gate", default=True, show_default=True,
              help="Score every file on the dev split of the checkpoint's task, when it is here, and leave out an "
                   "int8 file more than 0.5 below the float file.  --no-dev-gate scores nothing (the int8 ladders "
                   "then chase their calibration-text target alone); pocketbert-bench gates scores the bundle later.")
@click.option("--recover", "recover", metavar="TASK", help="Recover the accuracy nonorm/relu cost by "
              "distillation from the untransformed model on TASK's training text before exporting. " + TASK_HELP)
@click.option("--dev", "recover_dev", type=click.Path(path_type=Path), help="With --recover given as a training "
              "file: the task's dev file, scored before and after recovery and recorded for the gates.")
@click.option("--recover-budget", default=RECOVERY_BUDGET, show_default=True, callback=budget,
              help="Recovery budget: 500steps, 2epochs, 90s, 20m, 1.5h; the first reached wins.")
@click.option("--resume", "recover_resume", is_flag=True,
              help="With --recover: continue the best state a refused recovery for the same --out kept beside it "
                   "(same checkpoint, --opt, data and settings; give a longer --recover-budget).")
@click.option("--recover-schedule", type=click.Choice(["joint", "progressive"]), default="joint",
              show_default=True, help="joint: all loss terms and parameters at once; progressive: MobileBERT's "
              "layer-by-layer transfer, then logit distillation.")
@click.option("--max-accuracy-drop", type=click.FloatRange(0), default=1.0, show_default=True,
              help="With --recover: the most points of the task metric the recovered model may lose against the "
                   "original (dev split); more is refused unless --allow-accuracy-loss.")
@augment_option
@click.option("--recover-qat/--recover-float", "recover_qat", default=None,
              help="With --recover: train through a simulation of the full-integer TFLite export (quantization-"
                   "aware) or in float [default: quantization-aware when a tflite:int8-static file is asked for].")
def convert(checkpoint, out, no_latency, recover_dev, recover_budget, recover_schedule, recover_qat, recover_resume,
            max_macs, max_latency, lever_budget, save_checkpoint, augment, **flags):
    """The flags are ConvertOptions fields by name; the few that are not are turned into theirs here."""
    from ..pipeline import ConvertOptions
    from ..pipeline import convert as run_convert

    if not flags["recover"]:
        _refuse_recovery_flags()
    out = out or default_out(checkpoint, flags["opts"])
    if save_checkpoint and not flags["max_size"]:
        raise click.UsageError("--save-checkpoint only applies with --max-size and --recover (the one command)")
    if save_checkpoint:  # an unusable DIR fails now, not after the training
        from ..checkpoints.loading import resolve
        from ..one_command.lever_checks import check_save_checkpoint
        from ..output.staging import refuse_overlap
        from ..training.save import check_output

        refuse_overlap(resolve(checkpoint)[0], save_checkpoint, flag="--save-checkpoint")
        check_save_checkpoint(save_checkpoint, out)
        check_output(save_checkpoint, flags["overwrite"])
    if flags["max_size"] and flags["recover"]:  # what the conversion after the levers would refuse, refused now
        _check_conversion(checkpoint, out, flags)
    if flags["max_size"]:  # planned from the shapes first: the levers that train, or a refusal before any export
        checkpoint, recover_dev = _levers(checkpoint, out, dev=recover_dev, max_macs=max_macs, budget=lever_budget,
                                          flags=flags, max_latency=max_latency, augment=augment)
    options = ConvertOptions(checkpoint=checkpoint, out=out,
                             measure_latency=not no_latency,
                             recover_options={"budget": recover_budget, "schedule": recover_schedule,
                                              "qat": recover_qat, "resume": recover_resume, "augment": augment,
                                              "dev": str(recover_dev) if recover_dev else None}, **flags)
    screen = Screen()
    try:
        result = run_convert(options, screen)
    except BaseException:  # no spinner left turning under the error message
        screen.close()
        raise
    summary(result)
    if max_latency is not None and flags["max_size"]:
        from ..one_command.lever_run import check_latency

        check_latency(out, result.manifest, log=log)
    if save_checkpoint:
        from ..training.save import copy_checkpoint

        copied = copy_checkpoint(Path(checkpoint), save_checkpoint, overwrite=flags["overwrite"])
        log(f"the checkpoint the file was converted from: {copied}")
    if flags["max_size"]:
        _point_at_work_folder(out)


#: options that only tune --recover: without it they would be ignored, and the run not the one asked for
RECOVERY_FLAGS = {"recover_dev": "--dev", "recover_budget": "--recover-budget", "recover_schedule": "--recover-schedule",
                  "recover_qat": "--recover-qat/--recover-float", "max_accuracy_drop": "--max-accuracy-drop",
                  "recover_resume": "--resume", "max_macs": "--max-macs", "lever_budget": "--budget",
                  "save_checkpoint": "--save-checkpoint", "max_latency": "--max-latency", "augment": "--augment"}


def _levers(checkpoint: str, out: Path, *, dev, max_macs, budget, flags: dict, max_latency=None, augment=0):
    """``--max-size``: with training text, the planned levers run (converter.one_command.lever_run) and their checkpoint is
    converted; without, a checkpoint no file of which can fit is refused before any export."""
    from ..one_command import lever_run
    from ..backends.recipes import parse_size

    max_bytes = parse_size(flags["max_size"])
    if not flags["recover"]:
        lever_run.refuse_unreachable(checkpoint, max_bytes, flags["buckets"], flags["opts"])
        return checkpoint, dev
    from ..levers.plan import DEFAULT_MACS

    run = lever_run.LeverRun(checkpoint=checkpoint, out=out, task=flags["recover"], dev=str(dev) if dev else None,
                             max_bytes=max_bytes, budget=budget, opts=flags["opts"], max_latency_ms=max_latency,
                             # a latency target replaces the default MAC target; both hold when both are given
                             max_macs=DEFAULT_MACS if max_macs is None and max_latency is None else max_macs,
                             buckets=flags["buckets"], max_drop=flags["max_accuracy_drop"],
                             data_dir=flags["data_dir"], threads=flags["threads"], overwrite=flags["overwrite"],
                             augment=augment)
    final = lever_run.run_levers(run, log=log)
    flags["recover"] = None  # recovery, when asked, was a step of the plan
    return str(final), None


def _check_conversion(checkpoint: str, out: Path, flags: dict) -> None:
    """The conversion's own checks that need no model (options that clash, --max-size without a TFLite file) and
    its --out (not empty, or not a bundle --overwrite may replace), run on the teacher before the levers train."""
    from ..options import ConvertOptions, plan
    from ..output.staging import Staging

    plan(ConvertOptions(checkpoint=checkpoint, out=out, **{**flags, "recover": None}))
    Staging(out, flags["overwrite"])


def _point_at_work_folder(out: Path) -> None:
    """The levers' checkpoints outlive the bundle on purpose (another --max-size reuses them): say where they are."""
    from ..one_command.lever_work import work_folder

    work = work_folder(out)
    if work.is_dir():
        size = sum(f.stat().st_size for f in work.rglob("*") if f.is_file())
        log(f"the levers' checkpoints stay in {work} ({size / 1e6:.0f} MB): a run with another --max-size or a longer "
            "--budget reuses the steps it shares; delete the folder when you no longer need them")


def _refuse_recovery_flags() -> None:
    ctx = click.get_current_context()
    given = [flag for name, flag in RECOVERY_FLAGS.items()
             if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE]
    if given:
        verb = "applies" if len(given) == 1 else "apply"
        raise click.UsageError(f"{', '.join(given)} only {verb} with --recover TASK: add --recover, or drop "
                               f"{'it' if len(given) == 1 else 'them'}")


def default_out(checkpoint: str, opts: str | None) -> Path:
    name = short_name(checkpoint)
    return Path("bundles") / "-".join([name] + [o.strip() for o in (opts or "").split(",") if o.strip()])
