"""Recovery distillation: train a transformed student (nonorm/relu) back towards its untransformed teacher."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from torch import Tensor
from transformers import PreTrainedModel

from ...errors import ConverterInputError
from ...families import Family, is_nonorm
from . import losses
from .nonorm_init import METHODS as INIT_METHODS
from .nonorm_init import calibrate_nonorm
from .pairing import Pair, eager_attention, forward, measure_gap, no_dropout, pair, truncated
from .schedule import DEFAULT_WEIGHTS, SCHEDULES, TrainingStage, split_budget
from .teacher_cache import TeacherCache, for_training


@dataclass
class StageReport:
    name: str
    trained_parameters: int  # number of scalars that learned in this stage
    weights: dict[str, float]
    share: float
    budget: dict
    steps: int
    seconds: float
    stopped_by: str
    final_losses: dict[str, float]


@dataclass
class RecoveryReport:
    """What recovery did, JSON-serialisable (``to_json``) for the manifest."""

    schedule: str
    temperature: float
    weights: dict[str, float]
    lr: float
    seed: int
    budget: dict
    init: dict  # NoNorm initialisation: method, calibrated norms, gap after it
    stages: list[StageReport] = field(default_factory=list)
    gap_before: dict | None = None  # on eval_batches, before any change (None without eval_batches)
    gap_after: dict | None = None
    steps: int = 0
    seconds: float = 0.0  # wall time of the whole recovery, calibration and gap measurements included
    qat: dict | None = None  # quantization-aware recovery: the simulation and the post-training-quantization gap
    teacher_cache: dict | None = None  # the teacher's outputs kept from the first epoch on (.teacher_cache)

    def to_json(self) -> dict:
        return asdict(self)


def nonorm_paths(teacher: PreTrainedModel, student: PreTrainedModel, family: Family) -> set[str]:
    """Student NoNorms that replaced a LayerNorm: the ones whose teacher counterpart is a LayerNorm
    (a MobileBERT checkpoint's own, trained NoNorms are left alone).  Blocks are matched by role, so a
    shallower student's norms count too."""

    def role(path: str) -> str:
        return re.sub(r"\.\d+\.", ".#.", path)

    layernorm_roles = {role(p) for p, m in family.norms(teacher) if isinstance(m, torch.nn.LayerNorm)}
    return {p for p, m in family.norms(student) if is_nonorm(m) and role(p) in layernorm_roles}


def _take(batches, count: int) -> list[dict[str, Tensor]]:
    out = []
    for batch in batches:
        if len(out) >= count:
            break
        out.append(batch)
    return out


def _count(params) -> int:
    return sum(p.numel() for p in params)


def stage_loss(pair_: Pair, stage: TrainingStage, *, temperature: float,
               cache: TeacherCache | None = None) -> Callable[[dict[str, Tensor]], tuple]:
    """The loss function of one stage: batch -> (weighted total, {term: value, 'loss': total}).  With ``cache``,
    the teacher's full-depth outputs come from it (:mod:`.teacher_cache`)."""
    weights = stage.weights
    need_hidden = bool(weights.get("hidden"))
    need_stream = bool(weights.get("stream"))
    need_attn = bool(weights.get("attention"))
    hidden_layers = stage.layers if stage.layers is not None else list(range(pair_.student_layers + 1))
    attn_layers = [m for m in hidden_layers if m >= 1]
    depth = stage.depth
    s_blocks = pair_.family.layers(pair_.student)
    t_blocks = pair_.family.layers(pair_.teacher)
    # Hugging Face records hidden states with hooks on the blocks: keep at least one block, or the
    # embedding output (hidden_states[0]) is not returned either.
    s_keep = max(1, depth) if depth is not None else len(s_blocks)
    t_keep = max(1, pair_.layer_map[depth]) if depth is not None else len(t_blocks)

    def loss_fn(batch: dict[str, Tensor]) -> tuple[Tensor, dict[str, float]]:
        inputs = pair_.inputs(batch)
        mask = inputs.get("attention_mask")
        if cache is not None and t_keep >= len(t_blocks):
            t = cache.outputs(batch, inputs)
        else:
            with torch.no_grad(), truncated(pair_.teacher, t_blocks, t_keep):
                t = forward(pair_.teacher, inputs, hidden=need_hidden, attentions=need_attn)
        with truncated(pair_.student, s_blocks, s_keep):
            s = forward(pair_.student, inputs, hidden=need_hidden or need_stream, attentions=need_attn)
        terms: dict[str, Tensor] = {}
        if weights.get("logits"):
            terms["logits"] = losses.logit_distillation(s.logits, t.logits, temperature=temperature,
                                                        attention_mask=mask)
        if need_hidden:
            terms["hidden"] = torch.stack([
                losses.hidden_mse(s.hidden_states[m], t.hidden_states[pair_.layer_map[m]], mask)
                for m in hidden_layers]).mean()
        if need_stream:
            terms["stream"] = torch.stack([losses.stream_range(h, mask) for h in s.hidden_states]).mean()
        if need_attn and attn_layers:
            terms["attention"] = torch.stack([
                losses.attention_kl(s.attentions[m - 1], t.attentions[pair_.layer_map[m] - 1], mask)
                for m in attn_layers]).mean()
        if weights.get("hard"):
            if "labels" not in batch:
                raise ConverterInputError("the hard-label loss needs labels in the batches", "set its weight to 0")
            terms["hard"] = losses.hard_label_loss(s.logits, batch["labels"])
        total = sum(weights[name] * value for name, value in terms.items())
        return total, {"loss": total.item(), **{name: value.item() for name, value in terms.items()}}

    return loss_fn


def recover(teacher: PreTrainedModel, student: PreTrainedModel, family: Family, batches, *, budget,
            schedule: str = "joint", temperature: float = 1.0, weights: dict[str, float] | None = None,
            lr: float = 1e-4, seed: int = 0, init: str | None = "teacher", init_batches: int = 8,
            final_share: float = 0.5, eval_batches=None, eval_max_batches: int = 8,
            checkpoint_dir: Path | None = None, progress: bool = True, frozen=(), train_fn: Callable | None = None,
            qat: bool = False, milestones=None, resume_state: dict | None = None) -> RecoveryReport:
    """Distil ``teacher`` (the untransformed model) into ``student`` (its nonorm/relu copy), in place.

    * ``batches``: the task's training batches (the loop's BatchSource: ``len()``, ``epoch(k)``, and
      iterating gives epoch 0) of dicts with ``input_ids``, ``attention_mask``, ``token_type_ids``,
      and ``labels`` when the hard-label loss is used.
    * ``budget``: a :class:`converter.training.loop.Budget` for the training steps, split over the
      stages by their shares (NoNorm initialisation and gap measurements come on top).
    * ``schedule``: ``joint`` (default: measured better at CPU budgets, docs/training.md) or ``progressive``
      (MobileBERT's PKT, then logit distillation; ``final_share`` of the budget).
    * ``weights``: loss term -> weight, merged over :data:`DEFAULT_WEIGHTS` (``hard`` is 0 unless set).
    * ``temperature``: of the logit distillation; ``lr``, ``seed``: for the loop (stage i uses seed + i).
    * ``init``: NoNorm initialisation before training, on ``init_batches`` training batches:
      ``teacher`` (default), ``lstsq``, ``moments`` or None (see :mod:`converter.training.distill.nonorm_init`).
    * ``eval_batches``: if given, the gap is measured on up to ``eval_max_batches`` of them before,
      after the initialisation and after training (``RecoveryReport.gap_before``/``init``/``gap_after``).
    * ``checkpoint_dir``: the loop checkpoints each stage into ``checkpoint_dir/<stage>``; ``train_fn``: the
      loop (default :func:`converter.training.loop.train`); ``frozen``: student parameters no stage trains.
    * ``qat``: quantization-aware: the student trains through :mod:`.fake_quant`'s simulation of the
      full-integer export (ranges calibrated on ``init_batches`` batches, then following the training
      batches); the gaps after training are the simulated int8 model's (``RecoveryReport.qat``).
    * ``milestones`` (``loop.Milestones``: dev scores) and ``resume_state`` (a state to continue) are the last stage's.

    Both models run with eager attention while attention transfer is on (restored after), the student without
    dropout (see :func:`.pairing.no_dropout`); the teacher stays in eval mode, frozen, under
    ``torch.no_grad()``.  The student is left in eval mode with all parameters trainable, in float.  Every
    check (families, widths, depths, heads, labels, budget, data) runs before any training.
    """
    weights = _checked_weights(schedule, init, weights, temperature, budget=budget)
    pair_, stages, budgets = _plan(teacher, student, family, batches, weights=weights, schedule=schedule,
                                   final_share=final_share, budget=budget, frozen=frozen)
    train_fn = train_fn or _default_loop()
    started = time.perf_counter()
    report = RecoveryReport(schedule=schedule, temperature=temperature, weights=weights, lr=lr, seed=seed,
                            budget=_as_dict(budget), init={"method": init, "norms": 0})
    gap = _gap_measure(pair_, eval_batches, eval_max_batches, temperature)
    torch.manual_seed(seed)
    # only eager attention returns attention probabilities; keep the models' own (sdpa) otherwise
    needs_attentions = any(stage.weights.get("attention") for stage in stages)
    with _frozen(teacher), eager_attention(teacher, student) if needs_attentions else nullcontext(), \
            no_dropout(student):
        report.gap_before = gap()
        if init is not None and resume_state is None:
            _initialise(report, pair_, teacher, student, family=family, batches=_take(batches, init_batches),
                        init=init, gap=gap)
        with _simulated_int8(report, pair_, _take(batches, init_batches), gap) if qat else nullcontext():
            _train_stages(report, pair_, stages, budgets, batches=batches, train_fn=train_fn, temperature=temperature,
                          lr=lr, seed=seed, checkpoint_dir=checkpoint_dir, progress=progress,
                          milestones=milestones, resume_state=resume_state)
            student.requires_grad_(True)
            student.eval()
            report.gap_after = gap()
    report.steps = sum(s.steps for s in report.stages)
    report.seconds = time.perf_counter() - started
    return report


@contextmanager
def _frozen(teacher) -> Iterator[None]:
    """The teacher in eval mode and frozen inside; its modes and flags as they were after."""
    t_grad = [p.requires_grad for p in teacher.parameters()]
    teacher_training = teacher.training
    teacher.eval().requires_grad_(False)
    try:
        yield
    finally:
        for p, flag in zip(teacher.parameters(), t_grad):
            p.requires_grad_(flag)
        teacher.train(teacher_training)


def _plan(teacher, student, family: Family, batches, weights: dict, *, schedule: str, final_share: float, budget,
          frozen) -> tuple[Pair, list[TrainingStage], list]:
    """The pair, its stages (without the frozen parameters) and their budgets, once the data is checked."""
    pair_ = pair(teacher, student, family, attention=bool(weights["attention"]))
    stages = SCHEDULES[schedule](student, family, weights, final_share=final_share)
    frozen_ids = {id(p) for p in frozen}
    for stage in stages:
        stage.params = [p for p in stage.params if id(p) not in frozen_ids]
    if not stages:
        raise ConverterInputError("every loss term has weight 0: nothing to train on",
                                  "give some term a positive weight")
    budgets = split_budget(budget, stages)
    first = _take(batches, 1)
    if not first:
        raise ConverterInputError("no training batches for recovery", "give training data with at least one example")
    if any(stage.weights.get("hard") for stage in stages) and "labels" not in first[0]:
        raise ConverterInputError("the hard-label loss needs labelled training data, and the batches have no labels",
                                  "give labelled data, or set the hard-label weight to 0")
    return pair_, stages, budgets


def _checked_weights(schedule, init, weights, temperature, budget) -> dict[str, float]:
    """The loss weights merged over the defaults, once every argument is checked."""
    if schedule not in SCHEDULES:
        raise ConverterInputError(f"unknown recovery schedule {schedule!r}", f"use one of: {', '.join(SCHEDULES)}")
    if init is not None and init not in INIT_METHODS:
        raise ConverterInputError(f"unknown NoNorm initialisation {init!r}",
                                  f"use one of: {', '.join(INIT_METHODS)}, or None")
    unknown = set(weights or {}) - set(DEFAULT_WEIGHTS)
    if unknown:
        raise ConverterInputError(f"unknown loss term(s) {', '.join(sorted(unknown))}",
                                  f"use: {', '.join(f'{k} ({v})' for k, v in losses.TERMS.items())}")
    if temperature <= 0:
        raise ConverterInputError(f"temperature must be positive, not {temperature}", "e.g. temperature=1")
    if all(getattr(budget, f, None) is None for f in ("steps", "seconds", "epochs")):
        raise ConverterInputError("the recovery budget sets no limit", "give steps, seconds or epochs")
    return {**DEFAULT_WEIGHTS, **(weights or {})}


def _initialise(report: RecoveryReport, pair_: Pair, teacher, student, family: Family, batches, init: str,
                gap: Callable) -> None:
    """NoNorm γ/β fitted before training (recorded in ``report.init``)."""
    paths = nonorm_paths(teacher, student, family)
    calibration = [pair_.inputs(b) for b in batches]
    # the teacher's norms are matched by path: only a student of the teacher's depth
    method = init if init != "teacher" or pair_.layer_map == list(range(len(pair_.layer_map))) else "lstsq"
    report.init["method_used"] = method
    fitted = calibrate_nonorm(student, family, calibration, paths=paths, method=method,
                              eps=getattr(teacher.config, "layer_norm_eps", 1e-12), teacher=teacher)
    report.init["norms"] = len(fitted)
    if fitted:
        report.init["gap"] = gap()


@contextmanager
def _simulated_int8(report: RecoveryReport, pair_: Pair, batches, gap: Callable) -> Iterator[None]:
    """The student computes through the int8 simulation inside (float again after): ranges calibrated on
    ``batches`` first, as the exporter calibrates, and the gap of plain post-training quantization measured."""
    from .fake_quant import FakeQuant, calibrate

    fq = FakeQuant(pair_.student, pair_.family)
    try:
        calibrate(fq, batches, lambda batch: pair_.student(**pair_.inputs(batch)))
        fq.observing, fq.quantizing = False, True
        report.qat = {"scheme": "tflite int8-static (fake quantization, straight-through estimator)",
                      "ranges": "moving-average min/max as the exporter calibrates: calibrated, then following "
                                "the training batches (not learned: the exporter recalibrates them)",
                      "activation_ranges": len(fq.ranges), "gap_post_training": gap()}
        fq.observing = True  # ranges follow the weights as they train
        yield
        fq.observing = False
    finally:
        fq.remove()


def _train_stages(report: RecoveryReport, pair_: Pair, stages, budgets, batches, train_fn, *, temperature, lr, seed,
                  checkpoint_dir, progress, milestones, resume_state=None) -> None:
    """Each stage through ``train_fn``, the teacher's outputs kept from the first epoch on when they fit; a
    resumed run only the last stage, from ``resume_state``."""
    cache, report.teacher_cache = for_training(pair_, stages, batches)
    for index, (stage, stage_budget) in enumerate(zip(stages, budgets)):
        last = index == len(stages) - 1
        if resume_state is not None and not last:
            continue  # its training is in the kept weights
        extra = {"milestones": milestones} if last and milestones else {}
        if last and resume_state is not None:
            extra["resume_state"] = resume_state
        log = train_fn(pair_.student, stage_loss(pair_, stage, temperature=temperature, cache=cache), batches,
                       params=stage.params, budget=stage_budget, lr=lr, seed=seed + index,
                       description=f"recover {stage.name} ({index + 1}/{len(stages)})",
                       checkpoint_dir=None if checkpoint_dir is None else Path(checkpoint_dir) / stage.name,
                       progress=progress, **extra)
        report.stages.append(StageReport(
            name=stage.name, trained_parameters=_count(stage.params), weights=stage.weights,
            share=stage.share, budget=_as_dict(stage_budget), steps=log.steps, seconds=log.seconds,
            stopped_by=log.stopped_by, final_losses=dict(log.losses[-1]) if log.losses else {}))
    report.teacher_cache.update(cache.to_json() if cache else {})


def _as_dict(budget) -> dict:
    return {f: getattr(budget, f, None) for f in ("steps", "seconds", "epochs")}


def _default_loop() -> Callable:
    from ..loop import train

    return train


def _gap_measure(pair_, eval_batches, max_batches: int, temperature: float) -> Callable:
    """gap() -> the teacher/student gap on up to ``max_batches`` eval batches; None without eval batches."""
    if eval_batches is None:
        return lambda: None
    return lambda: measure_gap(pair_, eval_batches, max_batches=max_batches, temperature=temperature)
