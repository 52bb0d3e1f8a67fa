"""Knowledge distillation from an untransformed teacher into its transformed (nonorm/relu) student.

* :mod:`.losses`: the loss terms (logit KD, feature-map MSE, attention KL, hard labels,
  the residual-stream range penalty);
* :mod:`.pairing`: teacher/student checks, layer mapping, eager attention, the gap measurement;
* :mod:`.schedule`: schedules as data (:class:`TrainingStage` lists): ``joint`` and ``progressive`` (PKT);
* :mod:`.nonorm_init`: NoNorm γ/β fitted to the LayerNorms they replaced, before training;
* :mod:`.recover`: :func:`recover`, the one entry point, and its JSON-serialisable report.
"""

from __future__ import annotations

from .losses import TERMS, attention_kl, hard_label_loss, hidden_mse, logit_distillation, stream_range
from .nonorm_init import calibrate_nonorm
from .pairing import Pair, eager_attention, measure_gap, pair
from .recover import RecoveryReport, StageReport, nonorm_paths, recover, stage_loss
from .schedule import DEFAULT_WEIGHTS, SCHEDULES, TrainingStage, joint, progressive, split_budget

__all__ = ["TERMS", "attention_kl", "hard_label_loss", "hidden_mse", "logit_distillation", "stream_range",
           "calibrate_nonorm",
           "Pair", "eager_attention", "measure_gap", "pair", "RecoveryReport", "StageReport", "nonorm_paths",
           "recover", "stage_loss", "DEFAULT_WEIGHTS", "SCHEDULES", "TrainingStage", "joint", "progressive",
"split_budget"]
