"""How noisy a dev score is: a paired bootstrap of the task's headline metric over the dev examples.

On a dev set of a few hundred examples one example moves accuracy by a quarter of a point or more, so a
recovered model's "−0.53 vs the teacher" says little without its spread.  Each metric is written as sums of
per-example counts (accuracy: correct, examples; F1: true positives, predictions, gold; Matthews: the
confusion matrix; Pearson: the moments), so a resample is one sum per statistic and 1,000 resamples cost
milliseconds.  NER resamples sentences (an entity belongs to its sentence), as the entity F1 counts them.
The student and the teacher are resampled together (paired): the interval of their difference is the
interval of the gate's figure.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..data import metrics
from ..data.features import Features

RESAMPLES = 1000
SEED = 0
LEVEL = 0.95
_CHUNK = 4_000_000  # resampled counts held at once (resamples × examples × counts)


def counts(features: Features, logits: list[np.ndarray]) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]:
    """Per-example counts ``[examples, k]`` of the model's outputs, and the function of their sums (``[..., k]``)
    that is the task's headline metric on the 0–100 scale, as :func:`converter.data.metrics.score` gives it."""
    task = features.task
    predicted, gold = metrics.predictions(features, logits), metrics.references(features)
    if task.kind == "ner":
        return _ner_counts(predicted, gold), _f1
    if task.kind == "regression" or task.metric in ("pearson", "spearman"):
        if task.metric == "spearman":
            raise ValueError("the bootstrap covers the headline metrics; Spearman is not one")
        x, y = np.asarray(predicted, float), np.asarray(gold, float)
        return np.stack([x, y, x * x, y * y, x * y, np.ones_like(x)], axis=1), _pearson
    p, r = np.asarray(predicted), np.asarray(gold)
    if task.metric == "f1":
        cells = np.stack([(p == 1) & (r == 1), (p == 1) & (r != 1), (p != 1) & (r == 1)], axis=1)
        return cells.astype(float), _f1_binary
    if task.metric == "matthews":
        size = int(max(p.max(initial=0), r.max(initial=0))) + 1
        cells = np.zeros((len(p), size * size))
        cells[np.arange(len(p)), r * size + p] = 1.0
        return cells, _matthews
    return np.stack([p == r, np.ones(len(p), bool)], axis=1).astype(float), _accuracy


def interval(student: np.ndarray, teacher: np.ndarray | None, statistic: Callable[[np.ndarray], np.ndarray], *,
             resamples: int = RESAMPLES, seed: int = SEED, level: float = LEVEL) -> tuple[float, float]:
    """The percentile bootstrap interval of ``statistic(student sums)`` (minus the teacher's, resampled with the
    same indices, when ``teacher`` is given).  Indices are drawn as ``numpy.random.default_rng(seed).integers(0,
    n, (resamples, n))``, the draw scipy.stats.bootstrap makes with that generator."""
    values = resampled(student, teacher, statistic, resamples=resamples, seed=seed)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def resampled(student: np.ndarray, teacher: np.ndarray | None, statistic: Callable, *, resamples: int,
              seed: int) -> np.ndarray:
    """The statistic on each of ``resamples`` bootstrap resamples of the examples."""
    n = len(student)
    if n == 0:
        raise ValueError("no dev examples to resample")
    indices = np.random.default_rng(seed).integers(0, n, (resamples, n))
    step = max(1, _CHUNK // (n * student.shape[1]))
    out = []
    for start in range(0, resamples, step):
        chosen = indices[start:start + step]
        value = statistic(student[chosen].sum(axis=1))
        if teacher is not None:
            value = value - statistic(teacher[chosen].sum(axis=1))
        out.append(value)
    return np.concatenate(out)


def _ner_counts(predicted: list[list[str]], gold: list[list[str]]) -> np.ndarray:
    """Per sentence: entities found and right, found, in the gold tags (seqeval's default, conlleval rules)."""
    from seqeval.metrics.sequence_labeling import get_entities

    rows = []
    for p, g in zip(predicted, gold):
        found, true = set(get_entities(list(p))), set(get_entities(list(g)))
        rows.append((len(found & true), len(found), len(true)))
    return np.asarray(rows, float).reshape(-1, 3)


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """100 · numerator / denominator, 0 where the denominator is 0 (scikit-learn's and seqeval's zero division)."""
    safe = np.where(denominator == 0, 1.0, denominator)
    return np.where(denominator == 0, 0.0, 100.0 * numerator / safe)


def _accuracy(sums: np.ndarray) -> np.ndarray:
    return _ratio(sums[..., 0], sums[..., 1])


def _f1(sums: np.ndarray) -> np.ndarray:
    """Micro F1 from (true positives, predicted, gold): 2·tp / (predicted + gold)."""
    return _ratio(2 * sums[..., 0], sums[..., 1] + sums[..., 2])


def _f1_binary(sums: np.ndarray) -> np.ndarray:
    """F1 of the positive class from (tp, fp, fn)."""
    return _ratio(2 * sums[..., 0], 2 * sums[..., 0] + sums[..., 1] + sums[..., 2])


def _matthews(sums: np.ndarray) -> np.ndarray:
    """Matthews correlation (scikit-learn's multi-class form) from the flattened confusion matrix."""
    size = int(round(np.sqrt(sums.shape[-1])))
    c = sums.reshape(*sums.shape[:-1], size, size)
    t, p = c.sum(-1), c.sum(-2)  # true and predicted counts per class
    correct = np.trace(c, axis1=-2, axis2=-1)
    total = c.sum((-2, -1))
    cov_ytyp = correct * total - (t * p).sum(-1)
    cov_ypyp = total ** 2 - (p * p).sum(-1)
    cov_ytyt = total ** 2 - (t * t).sum(-1)
    return _ratio(cov_ytyp, np.sqrt(cov_ytyt * cov_ypyp))


def _pearson(sums: np.ndarray) -> np.ndarray:
    x, y, xx, yy, xy, n = (sums[..., i] for i in range(6))
    cov = n * xy - x * y
    return _ratio(cov, np.sqrt(np.clip(n * xx - x * x, 0, None) * np.clip(n * yy - y * y, 0, None)))


def describe(student_logits, teacher_logits, features: Features, *, resamples: int = RESAMPLES, seed: int = SEED,
             level: float = LEVEL) -> dict | None:
    """The record of how noisy the shipped score is: the dev set's size, what one example is worth, and the
    bootstrap intervals of the student's score and of its difference to the teacher."""
    if features.task.metric == "spearman":
        return None  # ranks do not decompose into per-example sums
    student, statistic = counts(features, student_logits)
    teacher, _ = counts(features, teacher_logits)
    unit = "sentences" if features.task.kind == "ner" else "examples"
    score = interval(student, None, statistic, resamples=resamples, seed=seed, level=level)
    delta = interval(student, teacher, statistic, resamples=resamples, seed=seed, level=level)
    return {"dev_examples": len(student), "unit": unit, "method": "paired percentile bootstrap",
            "resamples": resamples, "seed": seed, "level": level,
            "score_interval": [round(v, 3) for v in score], "delta_interval": [round(v, 3) for v in delta]}


def sentence(noise: dict, metric: str) -> str:
    """The line printed next to the verdict."""
    low, high = noise["delta_interval"]
    s_low, s_high = noise["score_interval"]
    return (f"dev set of {noise['dev_examples']} {noise['unit']}: {noise['level']:.0%} bootstrap interval "
            f"({noise['resamples']:,} resamples) of the difference to the teacher {low:+.2f} to {high:+.2f} points, "
            f"of the {metric} {s_low:.2f} to {s_high:.2f}")
