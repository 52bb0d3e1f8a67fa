"""``recover`` as the first lever of a plan, when ``--opt`` asks for nonorm/relu and the checkpoint has neither:
LayerNorm → NoNorm and GELU → ReLU, the accuracy they cost won back by distillation from the checkpoint.  It
changes no shape; it is what lets ``int4-tune`` keep the weights on the int4 grid (a LayerNorm's γ is folded into
the next Linear by the exporter, off the grid)."""

from __future__ import annotations

from pathlib import Path

from ..training.recovery import RecoverOptions, recover_checkpoint
from . import Lever, register


def _run_lever(step) -> Path:
    # one part-way check, not three: the steps after it distil again, and each check is a dev pass
    options = RecoverOptions(task=step.task, dev=step.dev, budget=step.budget, data_dir=step.data_dir,
                             train_limit=step.train_limit, progress=False, dev_checks=1,
                             continue_from=step.resume_from, augment=step.augment)
    path, _ = recover_checkpoint(step.source, list(step.opts), options, step.out, overwrite=True,
                                 threads=step.threads or 2, log=step.log)
    return path


def _choose(shape, goal):
    """Planned when a structural opt asked for changes the model: MobileBERT has NoNorm and ReLU by construction."""
    return True if set(goal.recover) - set(shape.built_in) else None


register(Lever("recover", "the norms and activations (--opt nonorm,relu), recovered by distillation", order=5,
               trains=True, budget_weight=13, records_score=True, continues=True, choose=_choose, run=_run_lever))
