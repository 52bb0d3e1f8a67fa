"""Text classification: texts or sentence pairs -> ``{label, score}``, shaped like Hugging Face's
text-classification pipeline.

Scores follow the manifest's ``problem_type``: softmax for single-label, sigmoid for multi-label, the
raw logit for regression (and, as Hugging Face does, sigmoid for a single-logit model of unknown type).
Texts longer than the model's maximum are truncated (``longest_first`` for pairs), with one warning.
"""

from __future__ import annotations

import warnings

import numpy as np

from .errors import InputError
from .pipeline import Pipeline, softmax
from .tokenization import Texts, validate

_UNSET = object()


class TruncationWarning(UserWarning):
    """An input was longer than the model's maximum and was cut."""


def score_function(problem_type: str, num_labels: int) -> str:
    """softmax | sigmoid | none, by Hugging Face's default rule."""
    if problem_type == "regression":
        return "none"
    if problem_type == "multi_label_classification" or num_labels == 1:
        return "sigmoid"
    return "softmax"


def scores(logits: np.ndarray, function: str) -> np.ndarray:
    """Logits ``[..., labels]`` -> scores, in float32 as Hugging Face computes them."""
    logits = logits.astype(np.float32, copy=False)
    if function == "softmax":
        return softmax(logits)
    if function == "sigmoid":
        return 1.0 / (1.0 + np.exp(-logits))
    if function == "none":
        return logits
    raise ValueError(f"unknown score function {function!r}")


def ranked(row: np.ndarray, labels: list[str], top_k: int | None = 1, legacy: bool = False) -> list[dict] | dict:
    """One row of scores -> Hugging Face's result: ``legacy`` (top_k not given) the best label alone as
    a dict; else the ``top_k`` best, best first (``None``: all)."""
    if legacy:
        best = int(row.argmax())
        return {"label": labels[best], "score": float(row[best])}
    order = sorted(range(len(labels)), key=lambda i: row[i], reverse=True)  # stable: ties keep label order
    if top_k is not None:
        order = order[:top_k]
    return [{"label": labels[i], "score": float(row[i])} for i in order]


class TextClassificationPipeline(Pipeline):
    task = "classification"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.function = score_function(self.bundle.problem_type, len(self.labels))

    def logits(self, inputs) -> np.ndarray:
        """Raw logits ``[texts, labels]`` (float32) for one text/pair or a list of them."""
        return self._logits_of(validate(inputs, pairs=True))

    def _logits_of(self, texts: Texts) -> np.ndarray:
        encodings = self.encoder.encode(texts.items, offsets=False)  # a label per text needs no spans
        if any(e.overflowing for e in encodings) and self._warn_once():
            warnings.warn(f"input longer than the model's maximum of {self.max_length} tokens was truncated "
                          "(warned once per pipeline)", TruncationWarning, stacklevel=3)
        rows = [(e.ids, e.type_ids) for e in encodings]
        out = self._logits(rows)
        return np.stack(out) if out else np.zeros((0, len(self.labels)), dtype=np.float32)

    def __call__(self, inputs, top_k=_UNSET, function_to_apply: str | None = None):
        """Classify a text, a pair ``(a, b)`` / ``{"text": a, "text_pair": b}``, or a list of them.

        Like Hugging Face: without ``top_k`` each input gives ``{label, score}`` (a single input:
        ``[{label, score}]``); with ``top_k=k`` each gives its ``k`` best, best first (``None``: all).
        """
        if top_k is not _UNSET and top_k is not None and (type(top_k) is not int or top_k < 1):  # True is no count
            raise InputError(f"top_k must be a positive integer or None, not {top_k!r}", "pass e.g. top_k=2")
        if function_to_apply not in (None, "softmax", "sigmoid", "none"):
            raise InputError(f"unknown function_to_apply {function_to_apply!r}", "use softmax, sigmoid or none")
        texts = validate(inputs, pairs=True)
        if not texts.items:
            return []
        matrix = scores(self._logits_of(texts), function_to_apply or self.function)
        legacy = top_k is _UNSET
        results = [ranked(row, self.labels, None if legacy else top_k, legacy) for row in matrix]
        if texts.single:
            return [results[0]] if legacy else results[0]
        return results
