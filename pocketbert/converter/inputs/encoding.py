"""Texts -> named numpy inputs, the way every backend and the runtime feed the model."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .texts import Text


def _tokenize(tokenizer, texts: Sequence[Text], max_length: int, pad_to: int | None):
    firsts = [t if isinstance(t, str) else t[0] for t in texts]
    seconds = [t[1] for t in texts] if texts and not isinstance(texts[0], str) else None
    padding = "max_length" if pad_to else "longest"
    return tokenizer(firsts, seconds, padding=padding, truncation=True, max_length=pad_to or max_length,
                     return_tensors="np")


def encode(tokenizer, texts: Sequence[Text], *, input_names: Sequence[str], max_length: int,
           pad_to: int | None = None) -> dict[str, np.ndarray]:
    """Tokenise a batch; pad to the longest text, or to ``pad_to`` (static-shape calibration)."""
    enc = _tokenize(tokenizer, texts, max_length, pad_to)
    feeds = {}
    for name in input_names:
        values = enc.get(name)
        if values is None:  # e.g. token_type_ids for a tokenizer that does not emit them
            values = np.zeros_like(enc["input_ids"])
        feeds[name] = values.astype(np.int64)
    return feeds


def word_starts(tokenizer, texts: Sequence[Text], *, max_length: int, pad_to: int | None = None) -> np.ndarray:
    """True at each word's first piece, for the batch :func:`encode` makes of the same arguments: where a
    token-classification model's tag for the word is read (as the task metric reads it)."""
    enc = _tokenize(tokenizer, texts, max_length, pad_to)
    starts = np.zeros(enc["input_ids"].shape, dtype=bool)
    for row in range(starts.shape[0]):
        previous = None
        for position, word in enumerate(enc.word_ids(row)):
            starts[row, position] = word is not None and word != previous
            previous = word
    return starts
