"""Recovery as a job: task data in, a distilled nonorm/relu student out, with dev scores measured.

Shared by ``pocketbert-convert recover`` (writes the recovered checkpoint) and ``convert --recover``
(recovers in memory, then exports).  The distillation itself is :func:`converter.training.distill.recover`;
this module adds the task data, the checks that must fail before any training starts, and the
teacher / without-recovery / recovered scores on the dev split that the manifest and model card report.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ..data.features import Features
from ..errors import ConverterInputError
from ..factored_table import whole_table
from ..families import Family
from ..opts import Opts
from . import loop
from .defaults import RECOVERY_BUDGET
from .evaluate import evaluate
from .finetune import load_splits

SCHEDULES = ("joint", "progressive")
INITS = ("teacher", "lstsq", "moments", "none")
DEFAULT_BUDGET = loop.parse_budget(RECOVERY_BUDGET)


@dataclass
class RecoverOptions:
    task: str  # short name or training file
    budget: loop.Budget
    dev: str | None = None
    schedule: str = "joint"  # measured better than progressive at CPU budgets (converter.training.distill.recover)
    lr: float = 1e-4
    temperature: float = 1.0
    hard_weight: float = 0.0  # weight of the hard-label loss (0: pure distillation)
    attention_weight: float = 1.0
    hidden_weight: float = 1.0
    stream_weight: float = 0.0  # residual-stream range penalty (distill.losses.stream_range), for full integer
    init: str = "teacher"  # NoNorm γ/β fitted to the teacher's norm outputs: 50.9 -> 83.9 on SST-2 untrained
    batch_size: int = 32
    max_length: int = 128
    seed: int = 0
    data_dir: Path | None = None
    train_limit: int | None = None
    dev_limit: int | None = None
    progress: bool = True
    dev_checks: int = 3  # dev scores part-way through training (at 1/4, 2/4, 3/4 of the budget for 3)
    checkpoint_dir: Path | None = None
    # keep the word-embedding table as the teacher's (= the base model's when the teacher was fine-tuned with it
    # frozen), so the result can ship without it (pocketbert-convert share-embeddings)
    freeze_word_embeddings: bool = False
    # quantization-aware: train through the simulated full-integer export (converter.training.distill.fake_quant)
    qat: bool = False


@dataclass
class PreparedRecovery:
    options: RecoverOptions
    train_name: str
    metric: str
    features: Features
    dev_features: Features
    input_names: tuple[str, ...]
    batches: object
    # the files read: the gates score the dev file recorded here, never the training file
    train_file: str = ""
    dev_file: str = ""


def prepare(options: RecoverOptions, *, task_kind: str, tokenizer, labels: list[str], input_names: tuple[str, ...],
            eval_length: int) -> PreparedRecovery:
    """Read and check everything that can be wrong before training: data, labels, budget, schedule."""
    if options.schedule not in SCHEDULES:
        raise ConverterInputError(f"unknown recovery schedule {options.schedule!r}",
                                  f"use one of {', '.join(SCHEDULES)}")
    if options.init not in INITS:
        raise ConverterInputError(f"unknown NoNorm initialisation {options.init!r}", f"use one of {', '.join(INITS)}")
    train, dev = load_splits(options.task, options.dev, options.data_dir, options.train_limit,
                             dev_limit=options.dev_limit)
    data_task = "ner" if train.kind == "ner" else "classification"
    if data_task != task_kind:
        raise ConverterInputError(f"--recover {options.task} is {train.kind} data but the model is a {task_kind} model",
                                  "give the task the model was trained on")
    if train.kind != "ner" and len(train.label_names) != len(labels):
        raise ConverterInputError(f"{options.task} has {len(train.label_names)} label(s) {train.label_names}, the "
                                  f"model {len(labels)} {labels}", "recover on the task the model was fine-tuned for")
    features = train.encode(tokenizer, options.max_length, labels)  # NER: tags the model lacks fail here
    dev_features = dev.encode(tokenizer, eval_length, labels)
    batches = features.batches(options.batch_size, shuffle=True, seed=options.seed, input_names=input_names)
    options.budget.check(len(batches))
    return PreparedRecovery(options, train.name, train.metric, features, dev_features=dev_features,
                            input_names=input_names, batches=batches,
                            train_file=str(train.path), dev_file=str(dev.path))


def run(prepared: PreparedRecovery, teacher, student, family: Family, log=print) -> dict:
    """Distil ``teacher`` into ``student`` (in place); returns the JSON record for manifest and card."""
    from .distill import recover

    options = prepared.options
    start = time.perf_counter()
    names = prepared.input_names
    teacher_scores = evaluate(teacher, prepared.dev_features, input_names=names)
    scoring = time.perf_counter() - start
    before = evaluate(student, prepared.dev_features, input_names=names)
    metric = prepared.metric
    log(f"dev {metric}: teacher {teacher_scores[metric]:.2f}, transformed without recovery {before[metric]:.2f}")
    log(_expected_time(options, scoring))
    eval_batches = prepared.dev_features.batches(64, input_names=names)
    curve = [{"steps": 0, "seconds": 0.0, metric: round(before[metric], 3)}]
    report = recover(teacher, student, family, prepared.batches, budget=options.budget, schedule=options.schedule,
                     temperature=options.temperature, lr=options.lr, seed=options.seed,
                     weights={"hard": options.hard_weight, "attention": options.attention_weight,
                              "hidden": options.hidden_weight, "stream": options.stream_weight},
                     init=None if options.init == "none" else options.init, eval_batches=eval_batches,
                     checkpoint_dir=options.checkpoint_dir, progress=options.progress, qat=options.qat,
                     frozen=[whole_table(student, "--freeze-word-embeddings")]
                     if options.freeze_word_embeddings else (),
                     milestones=_dev_checks(options.dev_checks, student, prepared,
                                            scores=(teacher_scores[metric], curve), log=log))
    after = evaluate(student, prepared.dev_features, input_names=names)
    log(f"dev {metric}: recovered {after[metric]:.2f} (teacher {teacher_scores[metric]:.2f}, "
        f"{after[metric] - teacher_scores[metric]:+.2f} points)")
    last = report.stages[-1]  # the curve follows the whole-model stage (the only one of the joint schedule)
    curve.append({"steps": last.steps, "seconds": round(last.seconds, 1), metric: round(after[metric], 3)})
    rnd = lambda scores: {k: round(v, 3) for k, v in scores.items()}  # noqa: E731
    return {
        "task": prepared.train_name,
        "train_file": prepared.train_file,
        "dev_file": prepared.dev_file,
        "train_examples": len(prepared.features),
        "dev_examples": len(prepared.dev_features),
        "metric": metric,
        "recipe": {"schedule": options.schedule, "budget": options.budget.to_json(), "lr": options.lr,
                   "temperature": options.temperature, "hidden_weight": options.hidden_weight,
                   "attention_weight": options.attention_weight, "hard_weight": options.hard_weight,
                   "stream_weight": options.stream_weight,
                   "init": options.init, "batch_size": options.batch_size, "max_length": options.max_length,
                   "seed": options.seed, "word_embeddings": "frozen" if options.freeze_word_embeddings else "trained",
                   "qat": options.qat},
        "dev_scores": {"teacher": rnd(teacher_scores), "without_recovery": rnd(before), "recovered": rnd(after)},
        "delta_vs_teacher": round(after[metric] - teacher_scores[metric], 3),
        "delta_without_recovery": round(before[metric] - teacher_scores[metric], 3),
        # the dev score against the whole-model stage's training seconds (evaluation time not counted)
        "dev_curve": curve,
        "distillation": report.to_json(),
        "wall_seconds": round(time.perf_counter() - start, 1),
    }


def _expected_time(options: RecoverOptions, scoring: float) -> str:
    """What the user will wait for, said before training starts."""
    budget = options.budget
    checks = f"{options.dev_checks + 1} dev scores of ~{scoring:.0f} s each"
    if budget.seconds is not None:
        return (f"recovery: at most {budget.seconds / 60:.1f} min of training ({budget.describe()}), plus {checks} "
                "and the NoNorm fit")
    return f"recovery: {budget.describe()} (the progress line estimates the time), plus {checks}"


def _dev_checks(count: int, student, prepared: PreparedRecovery, *, scores: tuple[float, list], log):
    """Milestones that score the student on the dev split part-way, print it against the teacher's score and add
    it to the curve (``scores``: the teacher's score, the curve)."""
    if count < 1:
        return None
    metric = prepared.metric
    teacher_score, curve = scores

    def check(step: int, seconds: float) -> None:
        score = evaluate(student, prepared.dev_features, input_names=prepared.input_names)[metric]
        curve.append({"steps": step, "seconds": round(seconds, 1), metric: round(score, 3)})
        log(f"dev {metric} after {seconds / 60:.1f} min of recovery ({step} steps): {score:.2f} "
            f"({score - teacher_score:+.2f} vs the teacher)")

    return loop.Milestones(tuple((i + 1) / (count + 1) for i in range(count)), check)


def recover_checkpoint(checkpoint: str, opts: list[str], options: RecoverOptions, out: Path, *,
                       overwrite: bool = False, threads: int = 2, log=print) -> tuple[Path, dict]:
    """``pocketbert-convert recover``: teacher checkpoint -> recovered nonorm/relu checkpoint at ``out``."""
    import copy

    from .. import loading
    from ..transforms import OPTS
    from . import checkpoint_job as job
    from .finetune import eval_length, source_name

    opts = Opts(opts)
    changing = list(opts.changing)
    if not opts.only_structural:
        raise ConverterInputError(f"recover trains a nonorm/relu student; --opt {','.join(opts) or '(empty)'} is not "
                                  "that", "use --opt nonorm,relu (or one of them); fold and int8 happen at conversion")
    job.begin(out, overwrite, threads)  # before any training
    teacher = loading.load(checkpoint)
    if teacher.head_initialized:
        raise ConverterInputError(f"{checkpoint!r} has no trained task head: there is nothing to recover towards",
                                  f"fine-tune it first: pocketbert-convert finetune {checkpoint} --task "
                                  f"{options.task}")
    prepared = prepare(options, task_kind=teacher.task, tokenizer=teacher.tokenizer, labels=teacher.labels,
                       input_names=teacher.family.input_names, eval_length=eval_length(teacher))
    student = copy.deepcopy(teacher.model)
    reports = [OPTS[name].apply(student, teacher.family) for name in changing]
    if all(r.noop for r in reports) and options.qat:
        # already nonorm/relu: quantization-aware training of the model itself, its float self the teacher
        options.init = "none"
    elif all(r.noop for r in reports):
        raise ConverterInputError(f"{','.join(changing)} changes nothing in {checkpoint!r} (already NoNorm/ReLU)",
                                  "convert it directly: pocketbert-convert CHECKPOINT --opt nonorm,relu,…")
    record = run(prepared, teacher.model, student, teacher.family, log=log)
    record.update(kind="recover", teacher=source_name(teacher), transforms=changing,
                  labels=teacher.labels)
    record["comparison"] = {"metrics": list(record["dev_scores"]["teacher"]), "rows": [
        {"name": f"teacher ({source_name(teacher)})", "scores": record["dev_scores"]["teacher"]},
        {"name": f"{','.join(changing)} without recovery", "scores": record["dev_scores"]["without_recovery"]},
        {"name": f"{','.join(changing)} recovered (this model)", "scores": record["dev_scores"]["recovered"]}]}
    record["training"] = {"steps": record["distillation"]["steps"],
                          "seconds": record["distillation"]["seconds"], "stopped_by": "budget"}
    path = job.write(student, teacher.tokenizer, out, overwrite=overwrite, record=record, transforms=changing)
    return path, record
