"""The levers that make a checkpoint's TFLite file smaller or faster, one module each, which registers its
:class:`Lever`: what it changes, whether it trains, its place in a plan, and what it saves, as functions of the
shapes (:mod:`.shapes`: the int4 TFLite file's bytes and the multiply-adds at sequence 128).  The planner
(:mod:`.plan`) reads this registry and nothing else; ``pocketbert-convert CHECKPOINT --max-size SIZE --recover
TRAIN`` runs what it plans (:mod:`converter.one_command.lever_run`).

    levers.all()               # every lever, in the order a plan applies them
    levers.get("narrow")       # one, by its checkpoint command's name

Support modules register nothing: :mod:`.shapes` (the shapes and their costs), :mod:`.size_fit` (``--max-size``'s
choice among the TFLite recipes, whose constants the shapes reuse), :mod:`.latency` (``--max-latency``'s model of the
int4 file's time, measured on this machine) and :mod:`.plan`.  The modules a checkpoint
written by a lever needs at load time (``factored_table``, ``int4_grid``, ``int4_packing``, ``shared_body``,
``shared_table``) stay in ``converter/``: the loader, the training code and the exporters import them, and nothing
there may import this folder, which imports them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pocketbert.runtime.registry import Registry


@dataclass(frozen=True)
class Saving:
    bytes: int  # of the int4 TFLite file
    macs: int  # multiply-adds of one sequence of 128 tokens


@dataclass(frozen=True)
class Lever:
    """One lever: its checkpoint command, its properties, and how it changes the shapes."""

    name: str  # the checkpoint command that applies it alone (pocketbert-convert NAME …)
    changes: str  # what it changes, for the plan and --help
    #: place in a plan: the order the phone demos showed works
    order: int
    #: trains (distils from the teacher): takes a share of the budget
    trains: bool
    #: what its one setting counts ("pieces", "rank", "units", "blocks"), or "" when it has none
    setting: str = ""
    #: its share of a plan's training budget, relative to the other training levers' (the demos' minutes)
    budget_weight: float = 0.0
    #: the steps after it distil from its output, not from the teacher (whose blocks no longer pair with theirs)
    new_teacher: bool = False
    #: distils a new body from the plan's teacher (:attr:`Step.teacher`), so a score below the gate before it is not
    #: final and does not stop the run (``int4-tune`` distils from the teacher too, but only tunes its source
    #: through the grid's rounding: it does not win back what a step before it lost)
    regains: bool = False
    #: its training.json's shipped dev scores (``checkpoint_job.record_shipped``) are its output's, scored on the
    #: plan's dev file: the plan reads them instead of scoring the dev set again
    records_score: bool = False
    #: can train further from its own output (a longer --budget continues it instead of starting again): its
    #: ``run`` then reads :attr:`Step.resume_from`
    continues: bool = False
    #: ``(shape, setting) -> shape`` after the lever; the identity for levers that keep the shapes
    reshape: Callable = field(default=lambda shape, setting: shape, compare=False)
    #: ``(shape, goal) -> setting``: what this lever does for a plan at ``shape`` towards ``goal``
    #: (:class:`.plan.Goal`); None: not needed; True: applied, for a lever without a setting
    choose: Callable = field(default=lambda shape, goal: None, compare=False)
    #: ``(shape, goal, setting) -> settings``: gentler settings than ``setting`` at ``shape``, gentlest first (None:
    #: not applied), which the plan takes instead when the levers after it still reach the goal without a new lever
    gentler: Callable = field(default=lambda shape, goal, setting: (), compare=False)
    #: ``(step) -> Path``: apply it to ``step.source`` and write ``step.out`` (:class:`Step`)
    run: Callable | None = field(default=None, compare=False)

    def saves(self, shape, setting=None, buckets: tuple[int, ...] = (32, 64, 128, 256)) -> Saving:
        """What applying this lever at ``setting`` to ``shape`` takes off the int4 file and the MACs."""
        from .shapes import file_bytes, macs

        after = self.reshape(shape, setting)
        return Saving(file_bytes(shape, buckets) - file_bytes(after, buckets), macs(shape) - macs(after))


@dataclass
class Step:
    """What a lever's ``run`` is given: its input checkpoint, where to write, the frozen teacher, the task's
    training text, its setting and its share of the budget (a :class:`~converter.training.loop.Budget`, or None)."""

    source: str
    out: Path
    teacher: str
    task: str
    dev: str | None = None  # the dev file, when task is a file
    setting: object = None
    budget: object = None
    opts: tuple[str, ...] = ()  # the structural --opt names a recovery step trains in
    data_dir: str | None = None
    threads: int | None = None
    train_limit: int | None = None
    augment: int = 0  # TinyBERT augmentation's variants per training example (data.augment), for distillation
    log: Callable = print
    #: the source's dev scores on this dev set, recorded by the step before (None: the lever scores its source)
    source_scores: dict | None = None
    #: this lever's own output from an earlier run, to train further for ``budget`` (a lever that ``continues``);
    #: ``source`` stays what it was made from, and ``resume_scores`` are its recorded dev scores
    resume_from: str | None = None
    resume_scores: dict | None = None


LEVERS: Registry[Lever] = Registry("lever", __name__)
register = LEVERS.register


def budget_text(budget) -> str | None:
    """A :class:`~converter.training.loop.Budget` as a budget option reads it (``90s``, ``40steps``); None for none."""
    if budget is None:
        return None
    if budget.steps is not None:
        return f"{budget.steps}steps"
    return f"{max(1, round(budget.seconds))}s"


def all() -> list[Lever]:  # noqa: A001 - levers.all(), as the other registries read
    """Every lever, in plan order."""
    return LEVERS.all()


def get(name: str) -> Lever | None:
    return LEVERS.get(name)
