"""Task metrics: GLUE's own metric per task (scikit-learn, SciPy) and entity-level F1 (seqeval).

=========  ===================================
SST-2      accuracy
MRPC       F1 of the "equivalent" class, accuracy
CoLA       Matthews correlation
STS-B      Pearson and Spearman correlation
CoNLL      entity-level micro F1 (conlleval rules), precision, recall
=========  ===================================

Scores are on a 0–100 scale, as GLUE reports them.
"""

from __future__ import annotations

import numpy as np

from .features import IGNORE, Features


def glue_scores(metric: str, predictions, references) -> dict[str, float]:
    from scipy.stats import pearsonr, spearmanr
    from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

    p, r = np.asarray(predictions), np.asarray(references)
    if metric in ("pearson", "spearman"):
        return {"pearson": 100 * float(pearsonr(p, r)[0]), "spearman": 100 * float(spearmanr(p, r)[0])}
    scores = {"accuracy": 100 * float(accuracy_score(r, p))}
    if metric == "f1":
        scores["f1"] = 100 * float(f1_score(r, p))
    if metric == "matthews":
        scores["matthews"] = 100 * float(matthews_corrcoef(r, p))
    return scores


def ner_scores(predicted_tags: list[list[str]], gold_tags: list[list[str]]) -> dict[str, float]:
    from seqeval.metrics import f1_score, precision_score, recall_score

    return {"f1": 100 * float(f1_score(gold_tags, predicted_tags)),
            "precision": 100 * float(precision_score(gold_tags, predicted_tags)),
            "recall": 100 * float(recall_score(gold_tags, predicted_tags))}


def predictions(features: Features, logits: list[np.ndarray]):
    """Model outputs per example (``logits[i]`` for example i) -> predictions in the task's label space.

    NER: the tag of each word is the argmax at its first piece; words cut off by truncation are "O".
    """
    task = features.task
    if task.kind == "regression":
        return [float(np.asarray(x).reshape(-1)[0]) for x in logits]
    if task.kind == "classification":
        return [int(np.argmax(x)) for x in logits]
    out = []
    for words, word_ids, x in zip(task.texts, features.word_ids, logits):
        tags = ["O"] * len(words)
        previous = None
        for position, w in enumerate(word_ids):
            if w is not None and w != previous and position < len(x):
                tags[w] = features.label_names[int(np.argmax(x[position]))]
            previous = w
        out.append(tags)
    return out


def references(features: Features) -> list:
    """The gold labels the predictions are compared with: NER's tags, else the labels in the model's label space
    (a class is the model's id for it, which for names in a file is not the file's sorted numbering)."""
    return features.task.labels if features.task.kind == "ner" else features.labels


def score(features: Features, logits: list[np.ndarray]) -> dict[str, float]:
    """All of the task's metrics for per-example model outputs; the headline is ``features.task.metric``."""
    task = features.task
    if task.labels is None:
        raise ValueError(f"{task.path} has no labels to score against")
    predicted = predictions(features, logits)
    if task.kind == "ner":
        return ner_scores(predicted, references(features))
    return glue_scores(task.metric, predicted, references(features))


__all__ = ["IGNORE", "glue_scores", "ner_scores", "predictions", "references", "score"]
