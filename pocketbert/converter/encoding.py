"""Texts -> named numpy inputs, the way every backend and the runtime feed the model."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .texts import Text


def encode(tokenizer, texts: Sequence[Text], *, input_names: Sequence[str], max_length: int,
           pad_to: int | None = None) -> dict[str, np.ndarray]:
    """Tokenise a batch; pad to the longest text, or to ``pad_to`` (static-shape calibration)."""
    firsts = [t if isinstance(t, str) else t[0] for t in texts]
    seconds = [t[1] for t in texts] if texts and not isinstance(texts[0], str) else None
    padding = "max_length" if pad_to else "longest"
    enc = tokenizer(firsts, seconds, padding=padding, truncation=True,
                    max_length=pad_to or max_length, return_tensors="np")
    feeds = {}
    for name in input_names:
        values = enc.get(name)
        if values is None:  # e.g. token_type_ids for a tokenizer that does not emit them
            values = np.zeros_like(enc["input_ids"])
        feeds[name] = values.astype(np.int64)
    return feeds
