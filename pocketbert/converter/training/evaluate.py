"""Evaluate a PyTorch model on task features: logits per example and the task's metrics."""

from __future__ import annotations

import numpy as np
import torch

from pocketbert.runtime.contract import INPUT_NAMES

from ..data import metrics
from ..data.features import Features


@torch.no_grad()
def logits(model, features: Features, batch_size: int = 64,
           input_names: tuple[str, ...] = INPUT_NAMES) -> list[np.ndarray]:
    """Per-example logits (unpadded: ``[labels]``, or ``[tokens, labels]`` for NER)."""
    was_training = model.training
    model.eval()
    out: list[np.ndarray | None] = [None] * len(features)
    try:
        for batch in features.batches(batch_size, input_names=input_names):
            rows = batch.pop("index").tolist()
            batch.pop("labels", None)
            result = model(**batch)
            values = (result.logits if hasattr(result, "logits") else result).float().numpy()
            lengths = batch["attention_mask"].sum(1).tolist()
            for r, i in enumerate(rows):
                out[i] = values[r, : lengths[r]] if values.ndim == 3 else values[r]
    finally:
        model.train(was_training)
    return out


def evaluate(model, features: Features, batch_size: int = 64,
             input_names: tuple[str, ...] = INPUT_NAMES) -> dict[str, float]:
    return metrics.score(features, logits(model, features, batch_size, input_names))
