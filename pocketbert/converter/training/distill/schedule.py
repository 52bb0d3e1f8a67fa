"""Training schedules as data: a list of :class:`TrainingStage` that :func:`.recover.recover` runs in order."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from torch import nn
from transformers import PreTrainedModel

from ...errors import ConverterInputError
from ...families import Family

#: weight of each loss term (see :data:`converter.training.distill.losses.TERMS`) when the caller gives none
DEFAULT_WEIGHTS = {"logits": 1.0, "hidden": 1.0, "attention": 1.0, "hard": 0.0, "stream": 0.0}


@dataclass
class TrainingStage:
    """One training run: which parameters learn, on which loss terms, for which share of the budget.

    ``weights``: loss term -> weight (terms absent or 0 are not computed).  ``layers``: the student
    ``hidden_states`` indices whose feature-map (and, for m ≥ 1, attention) terms count, 0 being the
    embedding output; None = all.  ``share``: fraction of the total budget (shares sum to 1).
    """

    name: str
    params: list[nn.Parameter]
    weights: dict[str, float]
    share: float
    layers: list[int] | None = None

    @property
    def depth(self) -> int | None:
        """Deepest student block this stage's loss needs (None: the whole model, logits included)."""
        if any(self.weights.get(term) for term in ("logits", "hard", "stream")) or self.layers is None:
            return None
        return max(self.layers)


def _active(weights: dict[str, float], *terms: str) -> dict[str, float]:
    return {term: weights[term] for term in terms if weights.get(term)}


def joint(student: PreTrainedModel, family: Family, weights: dict[str, float], **_) -> list[TrainingStage]:
    """All student parameters, all loss terms at once (TinyBERT-style intermediate + prediction
    distillation in one stage)."""
    terms = _active(weights, *DEFAULT_WEIGHTS)
    return [TrainingStage("joint", list(student.parameters()), terms, 1.0)] if terms else []


def progressive(student: PreTrainedModel, family: Family, weights: dict[str, float], *,
                final_share: float = 0.5, **_) -> list[TrainingStage]:
    """MobileBERT's progressive knowledge transfer (Sun et al. 2020, §3.4), then logit distillation.

    TrainingStage ``embeddings``: only the embedding block learns, on the embedding output (``hidden``).
    TrainingStage ``layer l`` (l = 1..L): only block l learns, on its feature map (``hidden``) and
    attention distributions (``attention``); every other parameter is frozen.  TrainingStage ``final``:
    every parameter learns on logit distillation (+ the hard-label loss and the stream-range penalty when
    their weights are set).
    The L + 1 transfer stages split ``1 − final_share`` of the budget equally.
    """
    if not 0.0 <= final_share < 1.0:
        raise ConverterInputError(f"final_share must be in [0, 1), not {final_share}", "e.g. final_share=0.5")
    blocks = family.layers(student)
    transfer = 1.0 - final_share
    hidden = _active(weights, "hidden")
    stages = []
    if hidden:
        stages.append(TrainingStage("embeddings", list(family.embeddings(student).parameters()), hidden, 0.0,
                                    layers=[0]))
    for index, block in enumerate(blocks, start=1):
        terms = _active(weights, "hidden", "attention")
        if terms:
            stages.append(TrainingStage(f"layer{index}", list(block.parameters()), terms, 0.0, layers=[index]))
    for stage in stages:
        stage.share = transfer / len(stages)
    final = _active(weights, "logits", "hard", "stream")
    if final and final_share > 0:
        stages.append(TrainingStage("final", list(student.parameters()), final, final_share if stages else 1.0))
    elif stages:  # no final stage: the transfer stages take the whole budget
        for stage in stages:
            stage.share = 1.0 / len(stages)
    return stages


SCHEDULES = {"joint": joint, "progressive": progressive}


def split_budget(budget, stages: list[TrainingStage]) -> list:
    """One budget per stage, by share: steps are integers summing to the total (largest remainder),
    seconds and epochs are scaled.  Raises ConverterInputError when a stage would get no step at all."""
    steps = getattr(budget, "steps", None)
    if steps is not None:
        raw = [steps * stage.share for stage in stages]
        counts = [math.floor(r) for r in raw]
        for i in sorted(range(len(raw)), key=lambda i: counts[i] - raw[i])[: steps - sum(counts)]:
            counts[i] += 1
        if any(count < 1 for count in counts):
            raise ConverterInputError(f"a budget of {steps} steps leaves some of the {len(stages)} stages "
                                      f"({', '.join(s.name for s in stages)}) without a step",
                                      f"give at least {math.ceil(1 / min(s.share for s in stages))} steps, or use the "
                                      "joint schedule")
    out = []
    for i, stage in enumerate(stages):
        changes = {}
        if steps is not None:
            changes["steps"] = counts[i]
        for field in ("seconds", "epochs"):
            value = getattr(budget, field, None)
            if value is not None:
                changes[field] = value * stage.share
        out.append(dataclasses.replace(budget, **changes))
    return out
