"""One training loop for fine-tuning and distillation.

Why not transformers' Trainer: recovery needs wall-clock budgets, per-stage parameter freezing
(progressive knowledge transfer) and a teacher in the loss, and the converter must run it inside its
own pipeline with its own progress display; these are a few dozen lines here and awkward callbacks
there.  The pieces are the field's: AdamW, linear warm-up/decay, gradient clipping, seeded order.

The learning rate follows the fraction of the budget used (steps, epochs or seconds, whichever is
furthest), so a time budget gets a proper warm-up and decay without knowing the step count.
Checkpoints (model, optimiser, position in the epoch order) make a run resumable: a resumed run
visits the same batches in the same order as an uninterrupted one.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from ..errors import ConverterInputError
from .budget import Budget, parse_budget  # noqa: F401  (parse_budget: imported from here by its users)


@dataclass
class Point:
    """Where training is when a milestone is passed; ``state()`` copies the whole training state (model,
    optimiser, position, clock, random state: what a checkpoint holds), for a caller that keeps the best."""

    step: int
    seconds: float
    fraction: float  # of the budget used
    state: Callable[[], dict]


@dataclass
class Milestones:
    """``callback(point)`` once training passes each fraction of its budget in ``at`` (e.g. a dev score as
    training goes; 1.0 is the last step).  The time the callbacks take is not charged to a time budget:
    training gets all of it."""

    at: tuple[float, ...]
    callback: Callable[[Point], None]


@dataclass
class TrainLog:
    steps: int = 0
    seconds: float = 0.0
    examples: int = 0
    losses: list[dict[str, float]] = field(default_factory=list)  # running means, every ``log_every`` steps
    stopped_by: str = ""
    resumed_from: int | None = None

    def final(self) -> dict[str, float]:
        return self.losses[-1] if self.losses else {}

    def to_json(self) -> dict:
        return {"steps": self.steps, "seconds": round(self.seconds, 1), "examples": self.examples,
                "stopped_by": self.stopped_by, "resumed_from": self.resumed_from,
                "final_losses": {k: round(v, 6) for k, v in self.final().items()}}


def _warmup_decay(fraction: float, warmup: float) -> float:
    if warmup > 0 and fraction < warmup:
        return fraction / warmup
    return max(0.0, (1 - fraction) / max(1e-9, 1 - warmup))


class _Progress:
    """A rich progress bar on a terminal; elsewhere (background jobs, logs) a plain line every 30 s."""

    def __init__(self, enabled: bool, description: str, budget: Budget):
        import sys

        self.bar = None
        self.enabled = enabled
        self.description = f"{description} ({budget.describe()})"
        self.start = self.last = time.perf_counter()
        if enabled and sys.stderr.isatty():
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            # markup=False: the description names the user's task file, which may hold brackets
            self.bar = Progress(TextColumn("{task.description}", markup=False), BarColumn(),
                                TextColumn("{task.percentage:>3.0f}%"), TimeElapsedColumn(), TimeRemainingColumn(),
                                TextColumn("{task.fields[status]}", markup=False))
            self.task = self.bar.add_task(self.description, total=1000, status="")

    def __enter__(self):
        if self.bar:
            self.bar.__enter__()
        return self

    def update(self, fraction: float, status: str) -> None:
        if self.bar:
            self.bar.update(self.task, completed=min(1000, int(fraction * 1000)), status=status)
        elif self.enabled and (time.perf_counter() - self.last > 30 or fraction >= 1):
            import sys

            self.last = now = time.perf_counter()
            eta = (now - self.start) * (1 - fraction) / fraction if fraction > 0 else float("nan")
            print(f"{self.description}: {fraction:.1%}, {now - self.start:.0f} s elapsed, ~{eta:.0f} s left, {status}",
                  file=sys.stderr, flush=True)

    def __exit__(self, *exc):
        if self.bar:
            self.bar.__exit__(*exc)


def weights_copy(module: nn.Module) -> dict[str, torch.Tensor]:
    """``module``'s state dict with every tensor cloned: training goes on changing the live ones."""
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def train(model: nn.Module, loss_fn: Callable[[dict[str, torch.Tensor]], tuple[torch.Tensor, dict[str, float]]],
          batches, *, params: list[nn.Parameter] | None = None, budget: Budget, lr: float, warmup: float = 0.1,
          weight_decay: float = 0.01, max_grad_norm: float = 1.0, seed: int = 0, description: str = "training",
          checkpoint_dir: Path | None = None, checkpoint_every: float = 600.0, resume: bool = False,
          progress: bool = True, log_every: int = 20, milestones: Milestones | None = None,
          resume_state: dict | None = None) -> TrainLog:
    """Train ``params`` (default: all of ``model``) on ``loss_fn(batch)`` until ``budget`` runs out.

    ``batches`` needs ``len()`` (batches per epoch) and ``epoch(k)`` (the k-th epoch's batches, a
    deterministic order per k).  Every other parameter of ``model`` is frozen for the run and
    restored afterwards.  With ``checkpoint_dir`` the state is saved every ``checkpoint_every``
    seconds and at the end; ``resume`` continues from it.  ``milestones``: callbacks part-way (:class:`Milestones`).
    ``resume_state``: a state as :meth:`Point.state` copies it (a kept state): training continues from it, its
    steps and seconds counted against ``budget``.
    """
    per_epoch = len(batches)
    if per_epoch == 0:
        raise ConverterInputError("no training batches", "give training data with at least one example")
    budget.check(per_epoch)
    params = list(model.parameters()) if params is None else list(params)
    wanted = {id(p) for p in params}
    saved_flags = [(p, p.requires_grad) for p in model.parameters()]
    for p in model.parameters():
        p.requires_grad_(id(p) in wanted)
    torch.manual_seed(seed)
    run = _Run(model=model, loss_fn=loss_fn, params=params, optimizer=_adamw(params, lr, weight_decay),
               budget=budget, per_epoch=per_epoch, lr=lr, warmup=warmup, max_grad_norm=max_grad_norm,
               description=description, log_every=log_every, checkpoint_every=checkpoint_every,
               state_file=Path(checkpoint_dir) / "training_state.pt" if checkpoint_dir else None,
               milestones=milestones)
    if resume_state is not None:
        run.restore(resume_state)
    elif resume:
        run.resume()
    model.train()
    run.start = run.last_save = time.perf_counter()
    run.log.stopped_by = "budget"
    try:
        with _Progress(progress, description, budget) as bar:
            while not run.epoch_pass(batches.epoch(run.epoch), bar):
                run.epoch, run.position = run.epoch + 1, 0
            run.milestone(1.0)  # a time budget can run out between steps: the end's milestones still come
            bar.update(1.0, f"loss {run.log.losses[-1]['loss']:.4f}" if run.log.losses else "")
    finally:
        for p, flag in saved_flags:
            p.requires_grad_(flag)
        model.eval()
    run.flush_losses()
    run.log.steps = run.step
    run.log.seconds = run.seconds()
    run.save()
    return run.log


def _adamw(params: list[nn.Parameter], lr: float, weight_decay: float) -> torch.optim.AdamW:
    decay = [p for p in params if p.ndim >= 2]
    no_decay = [p for p in params if p.ndim < 2]  # biases and norm scales: no weight decay (BERT recipe)
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}], lr=lr)


@dataclass
class _Run:
    """One training run: its settings, and the state a checkpoint saves (step, epoch, position in it, time)."""

    model: nn.Module
    loss_fn: Callable
    params: list[nn.Parameter]
    optimizer: torch.optim.Optimizer
    budget: Budget
    per_epoch: int
    lr: float
    warmup: float
    max_grad_norm: float
    description: str
    log_every: int
    checkpoint_every: float
    state_file: Path | None
    log: TrainLog = field(default_factory=TrainLog)
    step: int = 0
    epoch: int = 0
    position: int = 0  # batches of the current epoch already trained on
    elapsed: float = 0.0  # seconds spent before this process (a resumed run)
    start: float = 0.0
    last_save: float = 0.0
    running: dict[str, float] = field(default_factory=dict)  # loss sums since the last log line …
    count: int = 0  # … over this many steps
    milestones: Milestones | None = None
    passed: int = 0  # milestones already called
    paused: float = 0.0  # seconds spent in milestone callbacks, not charged to the budget

    def seconds(self) -> float:
        return self.elapsed + time.perf_counter() - self.start - self.paused

    def reached(self, fraction: float) -> int:
        """How many milestones ``fraction`` of the budget has passed."""
        return sum(1 for mark in (self.milestones.at if self.milestones else ()) if fraction >= mark)

    def milestone(self, fraction: float) -> None:
        """Call the milestones ``fraction`` has passed (at most one call per step), off the budget's clock."""
        reached = self.reached(fraction)
        if reached > self.passed:
            self.passed = reached
            began = time.perf_counter()
            seconds = self.seconds()
            fraction = self.budget.fraction(self.step, seconds, self.per_epoch)
            # the clock as the milestone was reached: its own time is not training time
            self.milestones.callback(Point(self.step, seconds, fraction, lambda: {**self.state(), "seconds": seconds}))
            self.model.train()
            self.paused += time.perf_counter() - began

    def resume(self) -> None:
        if not (self.state_file and self.state_file.exists()):
            return
        self.restore(torch.load(self.state_file, weights_only=False))

    def restore(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        import copy

        # a copy: the optimiser updates its moments in place, and the state given may be kept for shipping
        self.optimizer.load_state_dict(copy.deepcopy(state["optimizer"]))
        self.step, self.epoch, self.position = state["step"], state["epoch"], state["position"]
        self.elapsed = state["seconds"]
        torch.set_rng_state(state["rng"])  # dropout masks continue as if never interrupted
        self.log.resumed_from = self.step
        self.passed = self.reached(self.budget.fraction(self.step, self.elapsed, self.per_epoch))

    def save(self) -> None:
        if self.state_file is None:
            return
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_suffix(".tmp")
        torch.save(self.state(), tmp)
        tmp.replace(self.state_file)  # atomic: a crash mid-save keeps the previous checkpoint

    def state(self) -> dict:
        """A copy of everything a resumed run needs (tensors cloned: training goes on changing the live ones)."""
        import copy

        return {"model": weights_copy(self.model),
                "optimizer": copy.deepcopy(self.optimizer.state_dict()), "step": self.step, "epoch": self.epoch,
                "position": self.position, "seconds": self.seconds(), "rng": torch.get_rng_state()}

    def epoch_pass(self, batches, bar: _Progress) -> bool:
        """Train on one epoch's ``batches`` from ``position`` on; True when the budget ran out."""
        for index, batch in enumerate(batches):
            if index < self.position:
                continue  # resuming inside an epoch: same order, skip what was done
            fraction = self.budget.fraction(self.step, self.seconds(), self.per_epoch)
            if fraction >= 1:
                return True
            self.optimise(batch, fraction)
            self.position = index + 1
            self.milestone(self.budget.fraction(self.step, self.seconds(), self.per_epoch))
            if self.step % self.log_every == 0:
                self.flush_losses()
                bar.update(fraction, f"loss {self.log.losses[-1]['loss']:.4f}")
            if self.state_file and time.perf_counter() - self.last_save > self.checkpoint_every:
                self.save()
                self.last_save = time.perf_counter()
        return False

    def optimise(self, batch: dict[str, torch.Tensor], fraction: float) -> None:
        """One optimiser step on ``batch`` at the learning rate for ``fraction`` of the budget."""
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr * _warmup_decay(fraction, self.warmup)
        loss, parts = self.loss_fn(batch)
        if not math.isfinite(loss.item()):
            raise FloatingPointError(f"{self.description}: the loss became {loss.item()} at step {self.step}; "
                                     "lower the learning rate")
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.max_grad_norm:
            torch.nn.utils.clip_grad_norm_(self.params, self.max_grad_norm)
        self.optimizer.step()
        self.step += 1
        self.log.examples += int(batch["input_ids"].shape[0])
        for k, v in {"loss": loss.item(), **parts}.items():
            self.running[k] = self.running.get(k, 0.0) + float(v)
        self.count += 1

    def flush_losses(self) -> None:
        """The running means since the last log line become one entry of ``log.losses``."""
        if self.count:
            self.log.losses.append({k: v / self.count for k, v in self.running.items()})
            self.running, self.count = {}, 0
