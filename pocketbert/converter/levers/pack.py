"""``int4-tune --budget 0steps --pack`` as the last lever of a plan: the int4 weights stored two to a byte, every other
weight in float16.  The TFLite file is the same; the checkpoint that ships beside it is an eighth of float32."""

from __future__ import annotations

from pathlib import Path

from ..training.loop import parse_budget
from . import Lever, register
from .int4_tune import Int4Options, int4_tune_checkpoint


def _run_lever(step) -> Path:
    options = Int4Options(budget=parse_budget("0steps"), allow_accuracy_loss=True, pack=True, threads=step.threads,
                          train_limit=step.train_limit, data_dir=step.data_dir, overwrite=True)
    path, _ = int4_tune_checkpoint(step.source, step.task, step.out, options, log=step.log, dev=step.dev,
                                   source_scores=step.source_scores)
    return path


register(Lever("pack", "the checkpoint's storage: int4 weights two to a byte, the rest float16 (the file is the same)",
               order=60, trains=False, records_score=True,
               choose=lambda shape, goal: True if "int4-tune" in goal.applied else None, run=_run_lever))
