"""Recovery as a job: task data in, a distilled nonorm/relu student out, with dev scores measured.

Shared by ``pocketbert-convert recover`` (writes the recovered checkpoint) and ``convert --recover``
(recovers in memory, then exports).  The distillation itself is :func:`converter.training.distill.recover`;
this module adds the task data, the checks that must fail before any training starts, and the
teacher / without-recovery / recovered scores on the dev split that the manifest and model card report.
The state shipped is the best dev check's (:mod:`.best_state`), its noise is said (:mod:`.dev_noise`), and a
refused recovery keeps that state for ``--resume`` (:mod:`.kept_state`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ..data import augment, metrics
from ..data.features import Features
from ..errors import ConverterInputError
from ..families import Family
from ..opts import Opts
from ..weights.factored_table import whole_table
from . import dev_noise, kept_state, loop, recovery_resume
from .best_state import BestState, Check
from .defaults import RECOVERY_BUDGET
from .evaluate import evaluate, logits
from .finetune import TaskData, load_splits

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
    # the conversion's --out: a refused recovery keeps its best state beside it (kept_state), --resume reads it
    output: Path | None = None
    resume: bool = False
    transforms: tuple[str, ...] = ()  # the --opt transforms trained through (nonorm, relu): part of what is resumed
    # a checkpoint an earlier recovery of the same teacher wrote: the student starts from its weights (it is then a
    # candidate of the checks, so continuing never ships worse than where it started)
    continue_from: str | None = None
    # TinyBERT's augmentation (data.augment): this many word-replaced variants of each training example, labelled
    # by the teacher; 0 trains on the task's own text only
    augment: int = 0


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
    # after run(): the best check and its training state, and what the recovery is of (for kept_state)
    best: BestState | None = None
    identity: dict | None = None
    # the training split as read, before augmentation (a teacher's spelling is checked on it)
    train_split: TaskData | None = None


def prepare(options: RecoverOptions, *, task_kind: str, tokenizer, labels: list[str], input_names: tuple[str, ...],
            eval_length: int, embeddings=None) -> PreparedRecovery:
    """Read and check everything that can be wrong before training: data, labels, budget, schedule.
    ``embeddings``: the teacher's input-embedding module, where the augmentation's neighbours come from (read
    only when ``options.augment`` asks for variants)."""
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
    if train.kind != "ner" and not train.named_labels and len(train.label_names) != len(labels):
        raise ConverterInputError(f"{options.task} has {len(train.label_names)} label(s) {train.label_names}, the "
                                  f"model {len(labels)} {labels}", "recover on the task the model was fine-tuned for")
    # variants keep their example's labels: what the model lacks still fails in encode
    examples = augmented(train, tokenizer, embeddings, options) if options.augment else train
    features = examples.encode(tokenizer, options.max_length, labels)  # tags or label names the model lacks fail here
    dev_features = dev.encode(tokenizer, eval_length, labels)
    batches = features.batches(options.batch_size, shuffle=True, seed=options.seed, input_names=input_names)
    options.budget.check(len(batches))
    return PreparedRecovery(options, train.name, train.metric, features, dev_features=dev_features,
                            input_names=input_names, batches=batches,
                            train_file=str(train.path), dev_file=str(dev.path), train_split=train)


def augmented(train, tokenizer, embeddings, options: RecoverOptions):
    """``train`` with ``options.augment`` variants of each example (:mod:`..data.augment`)."""
    if embeddings is None:
        raise ConverterInputError("augmentation needs the teacher's word embeddings", "pass the teacher's input "
                                  "embeddings to prepare()")
    return augment.augmented(train, tokenizer, embeddings, copies=options.augment, seed=options.seed)


def run(prepared: PreparedRecovery, teacher, student, family: Family, log=print, check_score=None) -> dict:
    """Distil ``teacher`` into ``student`` (in place: it ends holding the best dev check's state); returns the
    JSON record for manifest and card.  ``check_score(model) -> float``: how the dev checks score a state
    (default: the gate's metric on the dev split, in PyTorch)."""
    from .distill import recover

    options = prepared.options
    start = time.perf_counter()
    names = prepared.input_names
    metric = prepared.metric
    prepared.identity = _identity(prepared, teacher) if options.output is not None else None
    resumed = recovery_resume.resumed(prepared) if options.resume else None
    teacher_logits = logits(teacher, prepared.dev_features, input_names=names)
    teacher_scores = metrics.score(prepared.dev_features, teacher_logits)
    scoring = time.perf_counter() - start
    before = evaluate(student, prepared.dev_features, input_names=names)
    began = "recovered in an earlier run" if options.continue_from else "transformed without recovery"
    log(f"dev {metric}: teacher {teacher_scores[metric]:.2f}, {began} {before[metric]:.2f}")
    log(_expected_time(options, scoring))
    if said := augment.described(prepared.features.task):
        log(said)
    eval_batches = prepared.dev_features.batches(64, input_names=names)
    best = prepared.best = _start_best(prepared, teacher_scores[metric], resumed, log)
    if options.continue_from:
        kept = loop.weights_copy(student)
        best.offer(Check(0, 0.0, 0.0, before[metric]), lambda: {"model": kept})
    report = recover(teacher, student, family, prepared.batches, budget=options.budget, schedule=options.schedule,
                     temperature=options.temperature, lr=options.lr, seed=options.seed,
                     weights={"hard": options.hard_weight, "attention": options.attention_weight,
                              "hidden": options.hidden_weight, "stream": options.stream_weight},
                     init=None if options.init == "none" else options.init, eval_batches=eval_batches,
                     checkpoint_dir=options.checkpoint_dir, progress=options.progress, qat=options.qat,
                     frozen=[whole_table(student, "--freeze-word-embeddings")]
                     if options.freeze_word_embeddings else (),
                     milestones=_dev_checks(options.dev_checks, student, prepared, best, log=log,
                                            score=check_score),
                     resume_state=resumed[0] if resumed else None)
    if best.best is not None and best.best is not best.end:
        student.load_state_dict(best.state["model"])  # an earlier check scored higher: ship it
    shipped_logits = logits(student, prepared.dev_features, input_names=names)
    after = metrics.score(prepared.dev_features, shipped_logits)
    noise = dev_noise.describe(shipped_logits, teacher_logits, prepared.dev_features)
    _log_shipped(log, best, shipped=after[metric], teacher=teacher_scores[metric], metric=metric)
    if noise:
        log(dev_noise.sentence(noise, metric))
    record = _record(prepared, report, best, scores={"teacher": teacher_scores, "without_recovery": before,
                                                     "recovered": after})
    record.update(dev_noise=noise, distillation=report.to_json(), wall_seconds=round(time.perf_counter() - start, 1))
    if options.continue_from:
        record["continued_from"] = str(options.continue_from)
    if resumed is not None:
        record["resumed_from"] = {"steps": resumed[1]["best"]["steps"],
                                  "kept": str(kept_state.kept_dir(options.output))}
    return record


def _start_best(prepared: PreparedRecovery, teacher: float, resumed, log) -> BestState:
    """The checks' record, holding the kept state's check first when resuming (it stays a candidate)."""
    best = BestState(prepared.metric, teacher)
    if resumed is not None:
        state, record = resumed
        kept, metric = record["best"], prepared.metric
        best.offer(Check(kept["steps"], kept["fraction"], kept["seconds"], kept[metric]), lambda: state)
        log(f"resuming the recovery kept at {str(kept_state.kept_dir(prepared.options.output))!r}: step "
            f"{kept['steps']}, dev {metric} {kept[metric]:.2f} ({kept['delta_vs_teacher']:+.2f} vs the teacher)")
    return best


def _record(prepared: PreparedRecovery, report, best: BestState, scores: dict[str, dict]) -> dict:
    """The JSON record: data, recipe, dev scores (teacher, without recovery, the shipped state), the checks."""
    metric, options = prepared.metric, prepared.options
    teacher, before, after = scores["teacher"], scores["without_recovery"], scores["recovered"]
    end = best.end
    last = report.stages[-1]  # the curve follows the whole-model stage (the only one of the joint schedule)
    curve = [{"steps": 0, "seconds": 0.0, metric: round(before[metric], 3)}]
    curve += [c.to_json(metric, teacher[metric]) for c in best.checks] or [
        {"steps": last.steps, "seconds": round(last.seconds, 1), metric: round(after[metric], 3)}]
    rnd = lambda scores: {k: round(v, 3) for k, v in scores.items()}  # noqa: E731
    return {
        "task": prepared.train_name,
        "train_file": prepared.train_file,
        "dev_file": prepared.dev_file,
        "train_examples": len(prepared.features),
        "augmentation": prepared.features.task.details.get("augmented"),
        "dev_examples": len(prepared.dev_features),
        "metric": metric,
        "recipe": _recipe(options),
        "dev_scores": {"teacher": rnd(teacher), "without_recovery": rnd(before), "recovered": rnd(after)},
        "delta_vs_teacher": round(after[metric] - teacher[metric], 3),
        "delta_without_recovery": round(before[metric] - teacher[metric], 3),
        # the dev score against the whole-model stage's training seconds (evaluation time not counted)
        "dev_curve": curve,
        # the shipped state: the best check (step, fraction of the budget, score), and the end of training's
        "best": best.to_json() if best.best else None,
        "end_of_training": end.to_json(metric, teacher[metric]) if end else None,
    }


def _recipe(options: RecoverOptions) -> dict:
    return {"schedule": options.schedule, "budget": options.budget.to_json(), "lr": options.lr,
            "temperature": options.temperature, "hidden_weight": options.hidden_weight,
            "attention_weight": options.attention_weight, "hard_weight": options.hard_weight,
            "stream_weight": options.stream_weight,
            "init": options.init, "batch_size": options.batch_size, "max_length": options.max_length,
            "seed": options.seed, "word_embeddings": "frozen" if options.freeze_word_embeddings else "trained",
            "qat": options.qat, "augment": options.augment}


def _log_shipped(log, best: BestState, *, shipped: float, teacher: float, metric: str) -> None:
    end = best.end
    if best.best is None or end is None:
        log(f"dev {metric}: recovered {shipped:.2f} (teacher {teacher:.2f}, {shipped - teacher:+.2f} points)")
        return
    if best.best is end:
        log(f"dev {metric}: recovered {shipped:.2f} (teacher {teacher:.2f}, {shipped - teacher:+.2f} points), the "
            f"best check: the end ({best.where()})")
        return
    log(f"dev {metric}: recovered {shipped:.2f} (teacher {teacher:.2f}, {shipped - teacher:+.2f} points): the best "
        f"check's state ({best.where()}) is kept, not the end's {end.score:.2f} ({end.score - teacher:+.2f})")


def _identity(prepared: PreparedRecovery, teacher) -> dict:
    return kept_state.identity(teacher=kept_state.teacher_hash(teacher), transforms=list(prepared.options.transforms),
                               recipe=_recipe(prepared.options), train_file=prepared.train_file,
                               dev_file=prepared.dev_file)


def _expected_time(options: RecoverOptions, scoring: float) -> str:
    """What the user will wait for, said before training starts."""
    budget = options.budget
    checks = f"{options.dev_checks + 1} dev scores of ~{scoring:.0f} s each"
    if budget.seconds is not None:
        fit = "" if options.init == "none" else " and the NoNorm fit"
        return f"recovery: at most {budget.seconds / 60:.1f} min of training ({budget.describe()}), plus {checks}{fit}"
    return f"recovery: {budget.describe()} (the progress line estimates the time), plus {checks}"


def _dev_checks(count: int, student, prepared: PreparedRecovery, best: BestState, *, log, score=None):
    """Milestones that score the student on the dev split part-way and at the end, print it against the
    teacher's score, and offer it to ``best`` (which keeps the best check's training state)."""
    if count < 1:
        return None
    metric = prepared.metric
    score = score or (lambda model: evaluate(model, prepared.dev_features, input_names=prepared.input_names)[metric])

    def check(point: loop.Point) -> None:
        score_now = score(student)
        kept = best.offer(Check(point.step, point.fraction, point.seconds, score_now), point.state)
        mark = " (the best so far)" if kept and len(best.checks) > 1 else ""
        log(f"dev {metric} after {point.seconds / 60:.1f} min of recovery ({point.step} steps): {score_now:.2f} "
            f"({score_now - best.teacher:+.2f} vs the teacher){mark}")

    return loop.Milestones(tuple((i + 1) / (count + 1) for i in range(count)) + (1.0,), check)


def recover_checkpoint(checkpoint: str, opts: list[str], options: RecoverOptions, out: Path, *,
                       overwrite: bool = False, threads: int = 2, log=print) -> tuple[Path, dict]:
    """``pocketbert-convert recover``: teacher checkpoint -> recovered nonorm/relu checkpoint at ``out``."""
    import copy

    from ..checkpoints import loading
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
                       input_names=teacher.family.input_names, eval_length=eval_length(teacher),
                       embeddings=teacher.model.get_input_embeddings())
    student = copy.deepcopy(teacher.model)
    reports = [OPTS[name].apply(student, teacher.family) for name in changing]
    if options.continue_from:
        recovery_resume.start_from(student, options.continue_from)
        options.init = "none"  # the NoNorm fit would undo the training continued
    elif all(r.noop for r in reports) and options.qat:
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
    # the training clock (what the budget counts), not the recovery's wall time with its dev checks and fits
    stages = record["distillation"]["stages"]
    record["training"] = {"steps": record["distillation"]["steps"], "stopped_by": "budget",
                          "seconds": round(sum(stage["seconds"] for stage in stages), 1)}
    path = job.write(student, teacher.tokenizer, out, overwrite=overwrite, record=record, transforms=changing)
    return path, record
