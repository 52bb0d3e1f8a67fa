"""``pocketbert-convert CHECKPOINT --max-size SIZE --recover TRAIN [--dev DEV]``: plan the levers from the shapes, run
them with CHECKPOINT as the frozen teacher inside one budget, gate the result, and hand it to the conversion.

The plan (:mod:`converter.levers.plan`) is printed before anything is trained.  Each step writes its checkpoint into
a work folder beside ``--out`` (``OUT.levers``, created here) and records it in ``steps.json`` under a digest of its
inputs (the checkpoint's files, the training and dev files' content, the lever and its setting, and the steps before
it), with the SHA-256 of the files it wrote (:mod:`.lever_steps` runs them).  A rerun skips every step already
recorded whose files are unchanged; a lever that can train further from its own output (recovery, the factored
table's re-tuning, ``shrink``, ``int4-tune``) continues for the part of its new share it has not spent, so a longer
``--budget`` resumes every training step instead of starting again.  When a step leaves the dev score below the gate
(the teacher's minus ``--max-accuracy-drop``) with steps to go, or the last step does, the run refuses with what each
step cost and keeps the work folder.

With ``--max-latency MS`` the plan's milliseconds come from a latency model measured on this machine first
(:mod:`converter.levers.latency`, cached in the work folder); after the conversion, :func:`check_latency` compares
the written file's measured latency with the target.

Before a plain ``--max-size`` conversion (no training text), :func:`refuse_unreachable` predicts the smallest file
from the shapes and refuses before any export when it cannot fit, naming the one command as the fix.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path

from pocketbert.runtime.contract import sha256

from ..checkpoints import loading
from ..checkpoints.training_record import training_record
from ..errors import AccuracyLossRefused, ConverterInputError
from ..levers import latency, shapes
from ..levers import plan as planning
from ..opts import parse_opts
from .lever_checks import check_budget, check_splits, check_targets, warn_if_loaded
from .lever_steps import Gate, longer_budget_fix, run_steps, score_checkpoint
from .lever_work import digest_inputs, load_state, open_work, work_folder

#: a predicted file this much over --max-size is refused before export (the shapes' model is within 1% of real files)
TOLERANCE = 1.02
#: the threads a latency is measured with when the run names none: the convert command's default
LATENCY_THREADS = 2


@dataclass
class LeverRun:
    checkpoint: str  # the teacher: a built-in name or a checkpoint directory
    out: Path  # the bundle the conversion writes; the work folder goes beside it
    task: str  # a task name or a training file
    dev: str | None = None  # the dev file, when task is a file
    max_bytes: int | None = None
    max_macs: float | None = None  # a fraction of the checkpoint's multiply-adds at sequence 128
    max_latency_ms: float | None = None  # at batch 1 × sequence 128 on this machine, with ``threads``
    budget: object = None  # a Budget; None: the phone demos' minutes for the planned levers
    opts: str | None = None
    buckets: tuple[int, ...] | None = None
    max_drop: float = 1.0  # the gate: the teacher's dev score minus this
    data_dir: str | None = None
    threads: int | None = None
    train_limit: int | None = None
    augment: int = 0  # variants per training example for the steps that distil (data.augment)
    overwrite: bool = False  # an invalid record in the work folder is started afresh instead of refused


def run_levers(run: LeverRun, log=print) -> Path:
    """Plan, print the plan, run its steps (skipping those done), gate; returns the checkpoint to convert."""
    path, _ = loading.resolve(run.checkpoint)
    check_targets(run)
    train, dev = _splits(run)
    made = _plan(run, path, train, log)
    recorded = _recorded_teacher(path, train, dev, own_split=run.dev is None)
    keep = (f"{recorded[0]} ≥ {recorded[1] - run.max_drop:.2f} (the teacher's {recorded[1]:.2f} − {run.max_drop:g})"
            if recorded else f"the teacher's {dev.metric} on {dev.name} − {run.max_drop:g} (scored next)")
    for line in made.lines(keep=keep):
        log(line)
    if not made.reached:
        raise _unreachable(run, made)
    if not made.steps:
        return path
    check_budget(made)
    work = open_work(run.out)
    load_state(work, run.overwrite)  # an invalid record is refused before any work
    teacher = recorded[1] if recorded else score_checkpoint(str(path), dev, f"of the teacher ({run.checkpoint})", log)
    gate = Gate(teacher, run.max_drop, dev.metric)
    inputs = digest_inputs(path, train, dev, train_limit=run.train_limit, opts=run.opts, augment=run.augment)
    warn_if_loaded(run.threads or LATENCY_THREADS, log)
    source, score, costs = run_steps(run, made, work, start=(str(path), inputs), dev=dev, gate=gate, log=log)
    if score < gate.value:
        raise AccuracyLossRefused(
            f"after the planned levers the dev {dev.metric} is {score:.2f}, below {gate.words()} within --budget "
            f"{_budget_words(made)}; the trained checkpoints are kept in {work}. What each step cost:\n"
            + "\n".join(costs.table()), longer_budget_fix(made, costs, work))
    for line in ["what each step cost:", *costs.table()]:
        log(line)
    log(f"dev {dev.metric} {score:.2f} meets {gate.words()}")
    return Path(source)


def _splits(run: LeverRun):
    from ..data.tasks import load_task

    if Path(run.task).exists() and not run.dev:
        raise ConverterInputError(f"--recover {run.task} is a training file, and no dev file was given",
                                  "add --dev DEV_FILE: the plan's gate is scored on it")
    train = load_task(run.task, "train", run.data_dir, limit=run.train_limit)
    dev = load_task(run.dev or run.task, "dev", run.data_dir)
    check_splits(train, dev)
    return train, dev


def _plan(run: LeverRun, path: Path, train, log=print) -> planning.LeverPlan:
    from ..levers.vocab_trim import needed_pieces

    shape = shapes.read(path)
    done = _saved_transforms(path)
    recover = tuple(name for name in parse_opts(run.opts).structural if name not in done)
    pieces = None
    if train.kind != "ner":
        pieces = needed_pieces(_tokenizer(path), train.texts)
    nonorm = "nonorm" in (*done, *recover, *shape.built_in)  # MobileBERT has NoNorm by construction
    goal = planning.Goal(max_bytes=run.max_bytes, max_macs=run.max_macs, buckets=_buckets(run, shape),
                         pieces_needed=pieces, recover=recover, nonorm=nonorm)
    if run.max_latency_ms is None:
        return planning.make(shape, goal, run.budget)
    model, cached = _latency_model(run, path, (*done, *recover), log)
    goal = replace(goal, max_latency_ms=run.max_latency_ms, latency=model, latency_where=model.where(cached))
    made = planning.make(shape, goal, run.budget)
    latency.remember_target(work_folder(run.out), run.max_latency_ms, made.final_ms, model)
    return made


def _latency_model(run: LeverRun, path: Path, opts: tuple[str, ...], log):
    """The int4 file's latency model on this machine, with the structural opts the final file has (measured once,
    then read from the work folder)."""
    from ..opts import structural_names

    positions = shapes.read(path).positions
    if positions < shapes.SEQUENCE:
        raise ConverterInputError(f"--max-latency is a time at sequence {shapes.SEQUENCE}, and {run.checkpoint} takes "
                                  f"at most {positions} tokens", "plan its speed with --max-macs FRACTION instead")
    raw = json.loads((path / "config.json").read_text(encoding="utf-8"))
    ordered = tuple(name for name in structural_names() if name in opts)
    return latency.measured_model(raw, ordered, run.threads or LATENCY_THREADS, open_work(run.out), log=log,
                                  overwrite=run.overwrite)


def _unreachable(run: LeverRun, made: planning.LeverPlan) -> ConverterInputError:
    """The levers at their limit (one block at the plan's widths) miss the target: the numbers, and the fix for each
    target missed."""
    goal, best = made.goal, made.best_shape
    size, share = shapes.file_bytes(best, goal.buckets), shapes.macs(best) / goal.start_macs
    said = f"at best {size / 1e6:.2f} MB and {share:.0%} of its multiply-adds, with one block"
    fixes = []
    if goal.max_bytes is not None and size > goal.max_bytes:
        fixes.append(f"raise --max-size to at least {math.ceil(size / 1e4) / 100:.2f}MB")
    if goal.max_macs is not None and share > goal.max_macs:
        fixes.append(f"raise --max-macs to at least {math.ceil(share * 100) / 100:g}")
    if goal.max_latency_ms is not None:
        fastest = goal.ms(best)
        said += f", {latency.milliseconds(fastest)} predicted against --max-latency {goal.max_latency_ms:g} ms"
        if fastest > goal.max_latency_ms:
            fixes.append(f"raise --max-latency to at least {latency.milliseconds(fastest)}: the levers keep one "
                         f"block at least, and this machine takes {latency.milliseconds(goal.latency.constant_ms)} "
                         f"for the embeddings and the head, {latency.milliseconds(goal.latency.block_ms)} for a "
                         "block's attention")
    return ConverterInputError(f"the levers cannot bring {run.checkpoint} to the target: {said}, the fewest the "
                               "levers keep (the plan above); nothing was trained",
                               "; ".join(fixes) or "raise --max-size (or --max-macs)")


def _tokenizer(path: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path))


def _buckets(run: LeverRun, shape: shapes.Shape) -> tuple[int, ...]:
    return tuple(run.buckets) if run.buckets else tuple(b for b in (32, 64, 128, 256) if b <= shape.positions)


def _saved_transforms(path: Path) -> list[str]:
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    return list((config.get("pocketbert") or {}).get("transforms") or [])


def _recorded_teacher(path: Path, train, dev, *, own_split: bool) -> tuple[str, float] | None:
    """The teacher's dev score from the checkpoint's training.json, when it was trained on this task and scored on
    this run's dev set: the student is scored on this run's, and a gate from another dev set compares two different
    things.  The record's dev file must have this run's content; a record without one to compare (an older record,
    another machine's path) is trusted only for the task's own dev split (``own_split``: no --dev) of the recorded
    size.  None: the teacher is scored on this run's dev file."""
    from ..data.tasks import TASKS

    record = training_record(path)
    if not isinstance(record, dict) or record.get("task") != train.name:
        return None
    scored_on = record.get("dev_file")
    if isinstance(scored_on, str) and Path(scored_on).is_file():
        same = sha256(Path(scored_on)) == sha256(dev.path)
    else:
        same = own_split and train.name in TASKS and record.get("dev_examples") == len(dev)
    return planning.teacher_score(path) if same else None


def _budget_words(made: planning.LeverPlan) -> str:
    return made.budget.describe() if made.budget is not None else "(none)"


def refuse_unreachable(checkpoint: str, max_bytes: int, buckets, opts: str | None = None) -> None:
    """Before a plain ``--max-size`` conversion: refuse, without exporting, a checkpoint whose smallest file (every
    Linear at int4) cannot fit, naming the one command that trains the levers it needs."""
    path, _ = loading.resolve(checkpoint)
    if not (path / "config.json").is_file():
        return  # the loader's own refusal says what is wrong
    shape = shapes.read(path)
    smallest = shapes.file_bytes(shape, tuple(buckets) if buckets else _buckets(LeverRun(checkpoint, path, ""), shape))
    if smallest <= max_bytes * TOLERANCE:
        return
    raise ConverterInputError(
        f"no TFLite file of {checkpoint} fits --max-size {max_bytes / 1e6:g} MB: its smallest, every Linear at int4, "
        f"would be {smallest / 1e6:.1f} MB (computed from its shapes: {shape.describe()}); nothing was exported",
        f"let the converter plan and train the levers it needs: pocketbert-convert {checkpoint}"
        f"{' --opt ' + opts if opts else ''} --format tflite --max-size {max_bytes / 1e6:g}MB --recover TASK (a task "
        "name such as glue:sst2, or a training file with --dev DEV_FILE)")


def check_latency(out: Path, manifest: dict, log=print) -> bool | None:
    """After the conversion: the written TFLite file's latency at batch 1 × 128 (the conversion's own timing, as its
    ``manifest`` records it) against ``--max-latency`` and the plan's prediction.  A miss by more than the timing's
    noise is said with the numbers and a fix; the bundle stays.  True: within; False: missed; None: not compared."""
    planned = latency.planned_target(work_folder(out))
    if planned is None:
        return None
    target, predicted = planned["target_ms"], planned["predicted_ms"]
    shipped = [a for a in manifest.get("artifacts", [])
               if a["recipe"].startswith("tflite:") and a["recipe"] != "tflite:fp32"]
    timing = shipped[-1].get("latency_ms") if shipped else None
    if not timing or timing.get("sequence") != shapes.SEQUENCE:
        why = "was not timed (--no-latency)" if not timing else f"was timed at sequence {timing['sequence']}"
        log(f"latency: target {target:g} ms, predicted {latency.milliseconds(predicted)} at sequence "
            f"{shapes.SEQUENCE}; the file {why}")
        return None
    measured, slack = timing["median"], planned["tolerance"]
    words = (f"latency of {shipped[-1]['file']} at sequence {shapes.SEQUENCE}, batch 1, "
             f"{latency.threads_words(timing['threads'])} on {planned['cpu']}: measured "
             f"{latency.milliseconds(measured)}, predicted {latency.milliseconds(predicted)}, target {target:g} ms")
    if measured <= target * (1 + slack):
        log(words + (f" (over by less than the timing's noise, ±{slack:.0%})" if measured > target else ""))
        return True
    log(f"warning: {words}: {measured / target - 1:.1%} over the target, more than the timing's noise (±{slack:.0%}); "
        f"the bundle is written. fix: plan for less, e.g. --max-latency {target * target / measured:.1f} (or a lower "
        "--max-macs), on a quieter machine; the steps already done are reused")
    return False
