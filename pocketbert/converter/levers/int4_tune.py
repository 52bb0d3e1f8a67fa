"""``int4-tune``: distil a checkpoint through the int4 rounding its TFLite file will apply, then put it on that grid.

An int4 file's accuracy ladder keeps in int8 the Linears whose int4 rounding moves the answers too far from the
float file; on the CoNLL-2003 demo about half of them, which is what keeps its int4 file over 10 MB.  This command
trains every weight of the checkpoint with its Linears and word-embedding table computed on their int4 grids
(:mod:`converter.weights.int4_grid`, straight-through gradients), matching a float teacher's logits and every layer's
hidden states at every real token (by default the checkpoint itself, as it is), and then writes the weights onto
the grid.  The checkpoint's own float file and its int4 file then hold the same weights, and the int4 ladder
starts from a file that meets the bars with every Linear at 4 bits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..checkpoints import loading
from ..checkpoints.checkpoint_inputs import refuse_as_output
from ..checks import accuracy_gate
from ..data import augment
from ..errors import ConverterInputError
from ..training import checkpoint_job as job
from ..training.best_state import BestState, Check
from ..training.finetune import eval_length
from ..training.loop import Budget, Milestones, TrainLog, parse_budget, weights_copy
from ..training.teacher import distil_every_token, frozen_teacher
from ..weights import int4_grid, int4_packing
from . import Lever, register

#: what the tuning minimises, for records and model cards
LOSS = ("logit KL (T=1) + every layer's hidden-state MSE at every real token, from the float teacher; every weight "
        "trained with the Linears and the word-embedding table rounded to their int4 grids (straight-through)")


@dataclass
class Int4Options(job.CheckpointJobOptions):
    teacher: str | None = None  # the float model to match; None: the checkpoint itself
    budget: Budget = field(default_factory=lambda: parse_budget("10m"))
    lr: float = 5e-5
    pack: bool = False  # store the int4 weights two to a byte and every other weight in float16
    # TinyBERT's augmentation (data.augment): this many word-replaced variants of each training example; the
    # grid costs most where the text is thin (WNUT-17: -5.5 F1 before tuning), and tuning passes over it many times
    augment: int = 0


def int4_tune_checkpoint(checkpoint: str, task: str, out: Path, options: Int4Options, log=print,
                        dev: str | None = None, source_scores: dict | None = None) -> tuple[Path, dict]:
    """Tune ``checkpoint`` through int4 rounding from ``options.teacher`` and write it snapped onto the grid
    (a budget of 0 steps snaps without training: e.g. to pack an already tuned checkpoint).  ``dev``: the dev file
    beside a training file ``task``; ``source_scores``: the checkpoint's dev scores on it, when they are known.
    The state that scores highest on the grid ships: the end of tuning, its dev check half-way, or the checkpoint
    as it came (so tuning further never ships worse than where it started)."""
    refuse_as_output(out, source=checkpoint, teacher=options.teacher)
    job.begin(out, options.overwrite, options.threads)
    train_split, dev = job.splits(task, options.data_dir, options.train_limit, dev)
    student = loading.load(checkpoint)
    _check_student(student)
    tunes = options.budget.steps != 0
    if tunes and options.augment:
        train_split = _augmented(train_split, student, options.augment, log)
    teacher = frozen_teacher(options.teacher or str(student.checkpoint), student, train_split) if tunes else None
    metric, length = train_split.metric, eval_length(student)
    scores = {"dev_float": source_scores or job.score(student, dev, length)}
    scores["dev_int4_before"] = _grid_scores(student, dev, length, scores["dev_float"])
    log(f"dev {metric}: float {scores['dev_float'][metric]:.2f}, its weights on the int4 grid "
        f"{scores['dev_int4_before'][metric]:.2f}")
    run = best = None
    if teacher is not None:
        run, best = _tune_keeping_best(student, teacher=teacher, train_split=train_split, dev=dev, options=options,
                                       start=scores["dev_int4_before"][metric], log=log)
    tensors = _snap(student.model, options.pack)
    scores["dev_after"] = after = job.score(student, dev, length)
    log(f"{f'tuned through int4 ({run.steps} steps, {run.seconds:.0f} s) and ' if run else ''}put on the grid "
        f"({tensors} tensors{', stored packed, the rest float16' if options.pack else ''}): dev {metric} "
        f"{scores['dev_int4_before'][metric]:.2f} -> {after[metric]:.2f}")
    if best is not None and best.best.score > after[metric]:
        scores["dev_after"] = after = _ship_best(student, best, pack=options.pack, dev=dev, length=length, end=after,
                                                 log=log)
    accuracy_gate.check("int4-tune", metric, scores["dev_float"], after, allow=options.allow_accuracy_loss,
                        max_drop=options.max_accuracy_drop, log=log)
    report = {"teacher": (options.teacher or "the checkpoint itself") if run else None, "tensors_on_grid": tensors,
              "packed": options.pack, "budget": options.budget.to_json(), "lr": options.lr,
              "steps": run.steps if run else 0, "seconds": round(run.seconds, 1) if run else 0, "loss": LOSS,
              "best": best.to_json() if best is not None else None,
              "augmentation": train_split.details.get("augmented") if run else None}
    record = _record(student, train_split, dev, report={**report, **scores})
    path = job.write(student.model, student.tokenizer, out, overwrite=options.overwrite, record=record,
                     transforms=job.saved_transforms(student.model.config), int4=options.pack, fp16=options.pack)
    return path, record


def _augmented(train_split, student, copies: int, log):
    """The training text with ``copies`` variants of each example.  The neighbours come from the checkpoint's own
    word-piece table, numbered as its tokenizer numbers pieces (a teacher's may number a larger vocabulary);
    the checkpoint was distilled from that teacher, and its table is the teacher's, or a trim or factoring of it."""
    train_split = augment.augmented(train_split, student.tokenizer, student.model.get_input_embeddings(),
                                    copies=copies, source="the tuned checkpoint's word-piece embeddings")
    log(augment.described(train_split))
    return train_split


def _tune_keeping_best(student, *, teacher, train_split, dev, options: Int4Options, start: float, log):
    """Tune, offering the checkpoint as it came (scored on the grid: ``start``) and a dev check half-way as
    candidates; returns the run and the candidates (:class:`~converter.training.best_state.BestState`), whose best
    ships when it beats the end."""
    metric, length = train_split.metric, eval_length(student)
    best = BestState(metric, start)
    came = weights_copy(student.model)
    best.offer(Check(0, 0.0, 0.0, start), lambda: {"model": came})

    def check(point) -> None:  # runs inside the int4 simulation: the score is the grid's
        now = job.score(student, dev, length)[metric]
        best.offer(Check(point.step, point.fraction, point.seconds, now), point.state)
        log(f"dev {metric} on the int4 grid after {point.seconds / 60:.1f} min ({point.step} steps): {now:.2f}")

    return _tune(student, teacher, train_split, options, milestones=Milestones((0.5,), check)), best


def _ship_best(student, best, *, pack: bool, dev, length: int, end: dict, log) -> dict:
    """A candidate beat the end of tuning: put its state on the grid instead; returns its dev scores."""
    metric = best.metric
    student.model.load_state_dict(best.state["model"])
    _snap(student.model, pack)
    scores = job.score(student, dev, length)
    where = "the checkpoint as it came" if best.best.step == 0 else f"the dev check at step {best.best.step}"
    log(f"dev {metric}: {where} scores {scores[metric]:.2f} on the grid, above the end's {end[metric]:.2f}: it ships")
    return scores


def _grid_scores(student, dev, length: int, float_scores: dict) -> dict:
    """The dev scores with every weight rounded to its int4 grid: the float scores when the weights are on it
    already (a tuned checkpoint being packed), since rounding then changes nothing."""
    if int4_grid.is_snapped(student.model):
        return float_scores
    with int4_grid.simulated(student.model):
        return job.score(student, dev, length)


def _snap(model, pack: bool) -> int:
    """Put the weights on the grid; packed, give the model exactly what its checkpoint will load (the rest in
    float16), so that the recorded score is the shipped weights'."""
    tensors = int4_grid.snap(model)
    if pack:
        kept = {name for name, t in model.state_dict().items() if int4_packing.packable(name, t)}
        int4_packing.round_trip(model)
        job.round_to_fp16(model, keep=kept.__contains__)
    return tensors


def _check_student(student) -> None:
    """A LayerNorm's γ is folded into the next Linear's columns by the TFLite exporter, which takes its weight off
    the grid: only a model without LayerNorm (nonorm) keeps the grid into its file."""
    layernorms = [path for path, m in student.family.norms(student.model) if isinstance(m, torch.nn.LayerNorm)]
    if layernorms:
        raise ConverterInputError(f"the checkpoint has {len(layernorms)} LayerNorm(s) (e.g. {layernorms[0]}): the "
                                  "TFLite exporter folds their γ into the next Linear, off the int4 grid",
                                  "tune a nonorm checkpoint (recover --opt nonorm,relu first), e.g. ner-demo")


def _record(student, train_split, dev, *, report: dict) -> dict:
    """The input's training record, extended with what this command did and the shipped dev scores."""
    record = job.input_record(student.checkpoint, "int4-tune", train_split, dev)
    earlier = record.get("int4_grid")  # the input was tuned already (e.g. then packed with 0 steps): keep its run
    record["int4_grid"] = {k: job.rounded(v) if k.startswith("dev_") else v for k, v in report.items()}
    if earlier:
        record["int4_grid"]["input"] = earlier
    record["training"] = {"steps": report["steps"], "seconds": report["seconds"],
                          "stopped_by": "budget" if report["steps"] else "n/a"}
    name = "shipped: " + ("tuned through int4 and " if report["steps"] else "") + "put on the int4 grid"
    job.record_shipped(record, name + (", stored as int4 (the rest float16)" if report["packed"] else ""),
                       job.rounded(report["dev_after"]))
    return record


def _tune(student, teacher, train_split, options: Int4Options, milestones=None) -> TrainLog:
    """Every weight of ``student`` trained, through int4 rounding, to compute ``teacher``'s logits and hidden
    states."""
    features = train_split.encode(student.tokenizer, 128, student.labels)
    with int4_grid.simulated(student.model):
        return distil_every_token(student, teacher, features, budget=options.budget, lr=options.lr,
                                  description="tune through int4", milestones=milestones)


def _run_lever(step) -> Path:
    options = Int4Options(teacher=step.teacher, allow_accuracy_loss=True, budget=step.budget, threads=step.threads,
                          train_limit=step.train_limit, data_dir=step.data_dir, overwrite=True, augment=step.augment)
    # continuing: tune its own earlier output further, from the same teacher
    source, scores = (step.resume_from, step.resume_scores) if step.resume_from else (step.source, step.source_scores)
    path, _ = int4_tune_checkpoint(source, step.task, step.out, options, log=step.log, dev=step.dev,
                                   source_scores=scores)
    return path


def _choose(shape, goal):
    """After any lever, recovery included, on a model without LayerNorm: what keeps every Linear of the file at
    int4, as the plan's sizes assume (a recovered model's int4 ladder, untuned, keeps Linears in int8: all-MiniLM's
    recovered on WNUT-17 made 17.6 MB where the plan said 13.0)."""
    return True if goal.nonorm and goal.applied else None


register(Lever("int4-tune", "every weight, trained through the int4 file's rounding from the teacher and put on "
               "its grid: every Linear then stays int4", order=50, trains=True, budget_weight=15, continues=True,
               records_score=True, choose=_choose, run=_run_lever))
