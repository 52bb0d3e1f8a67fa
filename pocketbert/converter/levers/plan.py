"""The plan: which levers take a checkpoint to ``--max-size`` (and a multiply-add or latency target), computed from its
shapes before any export or training.

Each registered lever (:mod:`converter.levers`), in its order, is asked what it would do at the shapes the levers
before it left (its ``choose``, given the :class:`Goal`); the plan records the shapes after each step, their int4
file's bytes and MACs (:mod:`.shapes`), and each training step's share of one budget.  The order is the phone
demos': recovery (nonorm/relu, when asked), a vocabulary cut (sentence tasks only, keeping every piece the training
text uses), a factored word table, narrower feed-forward blocks, fewer blocks when width alone cannot reach the
target, int4 tuning, packing.

Speed is planned as multiply-adds at sequence 128, as a fraction of the checkpoint's (``--max-macs``), or as
milliseconds at batch 1 × 128 (``--max-latency``), predicted by a latency model measured on the converting machine
(:mod:`.latency`, given as :attr:`Goal.latency`): the same MACs run at different speeds on CPUs with and without fast
int8 dot products, and fewer blocks buy time that int4 cannot.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import Lever
from . import all as all_levers
from .shapes import SEQUENCE, Shape, file_bytes, macs

MB = 1e6
#: the speed target when none is given: the phone demos' narrowing (half the feed-forward units, 69% of MiniLM's
#: multiply-adds), which kept both demos within their gates and made them 4.0x their teachers' plain fp32 files on an
#: AVX-512 VNNI EPYC, where int4 alone made 3.0x
DEFAULT_MACS = 0.7
#: the default budget's ceiling: the demos' minutes for the planned levers, scaled down to this many in all, so that
#: the one command (training, a dev score after each step and the conversion) ends within 30 minutes on 2 cores
DEFAULT_MINUTES = 20


@dataclass
class Goal:
    """What a plan must reach, and what each lever's ``choose`` may ask about it."""

    max_bytes: int | None = None
    max_macs: float | None = None  # a fraction of the checkpoint's MACs at sequence 128
    buckets: tuple[int, ...] = (32, 64, 128, 256)
    #: the training text's distinct pieces, and with the specials and single characters a cut keeps
    #: (:func:`.vocab_trim.needed_pieces`); None: no vocabulary cut
    pieces_needed: tuple[int, int] | None = None
    recover: tuple[str, ...] = ()  # structural --opt names the checkpoint lacks: a recovery step trains them in
    nonorm: bool = False  # the model has (or will have) no LayerNorm: int4-tune can keep it on the grid
    start_macs: int = 0
    applied: list[str] = field(default_factory=list)
    max_latency_ms: float | None = None  # at batch 1 × sequence 128, as ``latency`` predicts it
    #: ``shape -> ms`` of its int4 file on this machine (a :class:`.latency.LatencyModel`); None: no latency figures
    latency: Callable[[Shape], float] | None = None
    latency_where: str = "predicted"  # how the target line says where and how the milliseconds come

    def __post_init__(self):
        if self.max_latency_ms is not None and self.latency is None:
            raise ValueError("a latency target needs a latency model to predict it (levers.latency)")

    def small_enough(self, shape: Shape) -> bool:
        return self.max_bytes is None or file_bytes(shape, self.buckets) <= self.max_bytes

    def fast_enough(self, shape: Shape) -> bool:
        return ((self.max_macs is None or macs(shape) <= self.max_macs * self.start_macs)
                and (self.max_latency_ms is None or self.ms(shape) <= self.max_latency_ms))

    def ms(self, shape: Shape) -> float | None:
        return self.latency(shape) if self.latency is not None else None

    def reached(self, shape: Shape) -> bool:
        return self.small_enough(shape) and self.fast_enough(shape)


@dataclass(frozen=True)
class PlannedStep:
    lever: Lever
    setting: object
    bytes: int  # the int4 file after this step
    macs: int
    budget: object = None  # its share of the budget (training steps)
    ms: float | None = None  # the int4 file's predicted latency after this step (with a latency model)

    def describe(self) -> str:
        unit = self.lever.setting
        if not unit or self.setting is True:
            return self.lever.name
        if unit == "rank":
            return f"{self.lever.name} rank {self.setting}"
        return f"{self.lever.name} {self.setting:,} {unit.removesuffix('s') if self.setting == 1 else unit}"


@dataclass
class LeverPlan:
    shape: Shape
    goal: Goal
    steps: list[PlannedStep]
    budget: object = None

    @property
    def start_bytes(self) -> int:
        return file_bytes(self.shape, self.goal.buckets)

    @property
    def final_bytes(self) -> int:
        return self.steps[-1].bytes if self.steps else self.start_bytes

    @property
    def final_macs(self) -> int:
        return self.steps[-1].macs if self.steps else self.goal.start_macs

    @property
    def final_shape(self) -> Shape:
        shape = self.shape
        for step in self.steps:
            shape = step.lever.reshape(shape, step.setting)
        return shape

    @property
    def best_shape(self) -> Shape:
        """The furthest the levers go at the plan's widths: down to one block, the fewest shrink keeps.  A plan that
        misses its target says this, not its last step, which stops before shrink when even one block misses."""
        return self.final_shape.keeping(1)

    @property
    def start_ms(self) -> float | None:
        return self.goal.ms(self.shape)

    @property
    def final_ms(self) -> float | None:
        return self.steps[-1].ms if self.steps else self.start_ms

    @property
    def reached(self) -> bool:
        return ((self.goal.max_bytes is None or self.final_bytes <= self.goal.max_bytes)
                and (self.goal.max_macs is None or self.final_macs <= self.goal.max_macs * self.goal.start_macs)
                and (self.goal.max_latency_ms is None or self.final_ms <= self.goal.max_latency_ms))

    @property
    def levers(self) -> list[str]:
        return [step.lever.name for step in self.steps]

    def lines(self, keep: str | None = None) -> list[str]:
        """The plan as the one command prints it before any work."""
        start_ms = f", {self.start_ms:.1f} ms predicted" if self.start_ms is not None else ""
        out = [f"plan from the shapes ({self.shape.describe()}): int4 file {self.start_bytes / MB:.2f} MB, "
               f"{self.goal.start_macs / 1e6:,.0f} M multiply-adds at sequence {SEQUENCE}{start_ms}",
               "target: " + self._target()]
        for index, step in enumerate(self.steps, 1):
            time = f"{duration(step.budget)} of training" if step.budget is not None else "no training"
            ms = f"{step.ms:6.1f} ms  " if step.ms is not None else ""
            out.append(f"  {index}. {step.describe():<28} {step.bytes / MB:6.2f} MB  "
                       f"{step.macs / 1e6:7,.0f} M MACs  {ms}{time}")
        if not self.steps:
            out.append("  no lever needed: the checkpoint converts as it is")
        elif not self.goal.nonorm:
            out.append("  no int4 tuning: the model keeps LayerNorm (add --opt nonorm,relu to recover without it), so "
                       "the int4 file may keep some Linears in int8 and come out larger than planned")
        if not self.reached:
            best = self.best_shape
            ms = f", {self.goal.ms(best):.2f} ms" if self.goal.latency is not None else ""
            out.append(f"  the levers cannot reach the target: at best {file_bytes(best, self.goal.buckets) / MB:.2f} "
                       f"MB and {macs(best) / self.goal.start_macs:.0%} of the MACs with one block, the fewest shrink "
                       f"keeps{ms}")
        if keep:
            out.append(f"dev score to keep: {keep}")
        return out

    def _target(self) -> str:
        parts = []
        if self.goal.max_bytes is not None:
            parts.append(f"≤ {self.goal.max_bytes / MB:.2f} MB")
        if self.goal.max_macs is not None:
            parts.append(f"≤ {self.goal.max_macs:.0%} of the checkpoint's multiply-adds (a MAC count, not a timing)")
        if self.goal.max_latency_ms is not None:
            parts.append(f"≤ {self.goal.max_latency_ms:g} ms {self.goal.latency_where}")
        return ", ".join(parts) or "none"


def make(shape: Shape, goal: Goal, budget=None) -> LeverPlan:
    """The plan for ``shape`` towards ``goal``; ``budget`` (a Budget, or None for the demos' minutes) is split
    across the training steps by their levers' weights."""
    start, goal.start_macs = shape, goal.start_macs or macs(shape)
    chosen = _gentlest(start, goal, _choose_all(start, goal, {}))
    chosen = [(lever, setting, file_bytes(after, goal.buckets), macs(after), goal.ms(after))
              for lever, setting, _, after in chosen]
    budget = budget if budget is not None else default_budget([lever for lever, *_ in chosen])
    weights = sum(lever.budget_weight for lever, *_ in chosen if lever.trains)
    steps = [PlannedStep(lever, setting, bytes=size, macs=count, ms=ms,
                         budget=budget.scaled(lever.budget_weight / weights) if lever.trains and budget else None)
             for lever, setting, size, count, ms in chosen]
    return LeverPlan(start, goal, steps, budget if weights else None)


def _choose_all(shape: Shape, goal: Goal, overrides: dict) -> list[tuple]:
    """Each lever in order asked what it does at the shapes the ones before it left (``overrides``: a lever's
    setting given instead); ``(lever, setting, shape before, shape after)`` for those applied."""
    goal.applied, chosen = [], []
    for lever in all_levers():
        setting = overrides[lever.name] if lever.name in overrides else lever.choose(shape, goal)
        if setting is None:
            continue
        before, shape = shape, lever.reshape(shape, setting)
        goal.applied.append(lever.name)
        chosen.append((lever, setting, before, shape))
    return chosen


def _gentlest(start: Shape, goal: Goal, chosen: list[tuple]) -> list[tuple]:
    """Each lever's gentlest setting with which the whole plan still reaches the goal with every other lever as it
    was: a lever chooses before the ones after it have freed any room, so alone it would cut deeper than needed."""
    if not goal.reached(chosen[-1][3] if chosen else start):
        return chosen
    overrides = {}
    for lever in [lever for lever, *_ in chosen]:
        current = {entry[0].name: entry for entry in _choose_all(start, goal, overrides)}
        if lever.name not in current:
            continue
        _, setting, before, _ = current[lever.name]
        others = _settings(current.values(), but=lever.name)
        for gentler in lever.gentler(before, goal, setting):
            trial = _choose_all(start, goal, {**overrides, lever.name: gentler})
            # the others exactly as they were: a gentler table must not buy narrower blocks or fewer of them
            if _settings(trial, but=lever.name) == others and goal.reached(trial[-1][3] if trial else start):
                overrides[lever.name] = gentler
                break
    return _choose_all(start, goal, overrides)


def _settings(chosen, but: str) -> list[tuple[str, object]]:
    return [(lever.name, setting) for lever, setting, *_ in chosen if lever.name != but]


def default_budget(chosen: list[Lever]):
    """The phone demos' minutes for these levers (each lever's ``budget_weight``), at most :data:`DEFAULT_MINUTES` in
    all, or None without training."""
    from ..training.loop import Budget

    minutes = min(DEFAULT_MINUTES, sum(lever.budget_weight for lever in chosen if lever.trains))
    return Budget(seconds=60 * minutes) if minutes else None


def teacher_score(checkpoint: Path) -> tuple[str, float] | None:
    """``(metric, score)`` of the checkpoint's teacher on its dev split, from its training.json: the original
    teacher's for a recovered or shrunk model, else the checkpoint's own; None without a record."""
    path = Path(checkpoint) / "training.json"
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    metric, scores = record.get("metric"), record.get("dev_scores") or {}
    for key in ("teacher", "shipped"):
        if metric in (scores.get(key) or {}):
            return metric, scores[key][metric]
    return (metric, scores[metric]) if metric in scores else None


def duration(budget) -> str:
    """A budget as the plan prints it: minutes when it is a time, else its own words."""
    if budget.seconds is not None and budget.steps is None and budget.epochs is None:
        return f"{budget.seconds / 60:.1f} min" if budget.seconds >= 60 else f"{budget.seconds:.0f} s"
    return budget.describe()
