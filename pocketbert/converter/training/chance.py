"""Did training learn the task?  A fine-tuned model's dev score against what needs no training: the best
constant prediction (always the most useful class, always ``O``, one fixed similarity) and the model
before fine-tuning (a fresh head guesses, and random entity guesses score a few F1 points).  When it beat
neither, a warning gives the budget a task of that size needs: a short budget otherwise writes a useless
checkpoint that looks like any other."""

from __future__ import annotations

from ..data import TaskData
from ..data.metrics import glue_scores
from .loop import Budget, TrainLog

# Points above the constant prediction a model must score to count as having learned something.
MARGIN = 1.0
# Fine-tuning a BERT on a GLUE-sized task takes 2-4 epochs (Devlin et al. 2019); 3 is finetune's default.
EPOCHS_NEEDED = 3


def constant_baseline(dev: TaskData) -> tuple[float, str]:
    """(dev score of the best constant prediction, what that prediction is), in the task's metric."""
    if dev.kind == "ner":
        return 0.0, "tagging every word 'O' (entity F1 0)"
    if dev.kind == "regression":
        return 0.0, "a constant score (correlation 0)"
    scores = {c: glue_scores(dev.metric, [c] * len(dev), dev.labels)[dev.metric] for c in range(len(dev.label_names))}
    best = max(scores, key=scores.get)
    return scores[best], f"always answering {dev.label_names[best]!r}"


def warning(dev: TaskData, score: float, untrained: float, log: TrainLog, batches_per_epoch: int,
            budget: Budget) -> str | None:
    """The warning for a dev ``score`` no better than the constant prediction or the ``untrained`` model's
    score, or for training that stopped inside its first epoch; None when neither."""
    constant, predictor = constant_baseline(dev)
    baseline, what = max((constant, predictor), (untrained, "the model before fine-tuning"))
    epochs = log.steps / max(1, batches_per_epoch)
    trained = (f"It trained {log.steps} steps ({epochs:.2g} epochs of {batches_per_epoch} batches) within its budget "
               f"({budget.describe()}).")
    advice = (f"Fine-tuning usually needs {EPOCHS_NEEDED} epochs, here {EPOCHS_NEEDED * batches_per_epoch} steps: "
              f"pass --budget {EPOCHS_NEEDED}epochs (with no shorter time limit)")
    if score <= baseline + MARGIN:
        return (f"dev {dev.metric} {score:.2f} is no better than {what} ({baseline:.2f}): the model has not learned "
                f"the task. {trained} {advice}; if it still does not learn, check the labels and try another --lr")
    if epochs < 1:
        return (f"dev {dev.metric} {score:.2f} after less than one pass over the training data: the model has seen "
                f"{epochs:.0%} of it. {trained} {advice}")
    return None
