"""Long texts for NER: overlapping windows, and which window each token's scores come from.

A text longer than the model's maximum is cut into windows of ``content = max_length - specials``
tokens, each starting ``content - stride`` tokens after the previous one, until one reaches the end
(the rule of ``tokenizers``' overflow, which Hugging Face's token-classification pipeline uses with
``stride=``).  Every token then takes its scores from the window in which it lies farthest from an
inner edge (a window's start or end that is not the text's), and the stitched sequence of the whole
text is decoded once: an entity that crosses a seam is decoded whole.  (Hugging Face instead decodes
each window on its own and keeps the longer of overlapping entities, which splits a name that one
window sees cut: "Emmanuel" from one window, "Macron" from the next.)  This module holds the arithmetic;
the tokenizer does the cutting.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence


def default_stride(max_length: int) -> int:
    """A quarter of the window overlaps its neighbour: entities cut by one window are whole in the next."""
    return max(0, max_length // 4)


def window_starts(num_tokens: int, content: int, stride: int) -> list[int]:
    """Index (into the text's tokens, specials excluded) of each window's first token."""
    if num_tokens <= content:
        return [0]
    step = content - stride
    starts = []
    for start in range(0, num_tokens, step):
        starts.append(start)
        if start + content >= num_tokens:
            break
    return starts


def token_sources(lengths: list[int], step: int) -> list[tuple[int, int]]:
    """Text tokens of windows ``k`` (``lengths[k]`` tokens each, starting ``k * step`` tokens into the
    text) -> for each token of the whole text, ``(window, position in that window's text tokens)``.

    The chosen window is the one where the token's distance to the nearest inner edge is largest
    (the text's own start and end are no edge: nothing was cut there), the earlier window on a tie.
    With two windows overlapping by ``stride`` tokens, that is the first half of the overlap from the
    first window and the second half from the next: every token sees at least ``stride // 2`` tokens
    of context on each cut side."""
    last = len(lengths) - 1
    total = max(k * step + length for k, length in enumerate(lengths))
    best = [-1.0] * total
    sources: list[tuple[int, int]] = [(-1, -1)] * total
    for k, length in enumerate(lengths):
        for j in range(length):
            margin = min(j if k > 0 else math.inf, length - 1 - j if k < last else math.inf)
            g = k * step + j
            if margin > best[g]:
                best[g], sources[g] = margin, (k, j)
    if any(k < 0 for k, _ in sources):
        raise ValueError(f"windows of {lengths} tokens, {step} apart, leave tokens uncovered")
    return sources


def stitched_rows(special_masks: Sequence[Sequence[int]], step: int) -> list[tuple[int, int]]:
    """Special-token masks of one text's windows -> rows ``(window, row)`` of one window of the whole text:
    the first window's leading specials, every text token from the window :func:`token_sources` picks,
    the last window's trailing specials (so a token's ``index`` is its position in the text, ``[CLS]``
    counted)."""
    text_rows = [[i for i, special in enumerate(mask) if not special] for mask in special_masks]
    first, last = text_rows[0], text_rows[-1]
    rows = [(0, i) for i in range(first[0] if first else 0)]
    rows += [(k, text_rows[k][j]) for k, j in token_sources([len(r) for r in text_rows], step)]
    rows += [(len(text_rows) - 1, i) for i in range(last[-1] + 1 if last else 0, len(special_masks[-1]))]
    return rows


class StitchedWindow:
    """Rows ``(window, row)`` of several windows read as one window (``ids``, ``tokens``, ``offsets``,
    ``special``), each list built on first use: decoding a text without entities needs no tokens."""

    def __init__(self, windows: Sequence, rows: list[tuple[int, int]]):
        self.windows, self.rows = windows, rows

    def _gather(self, field: str) -> list:
        columns = [getattr(w, field) for w in self.windows]
        return [columns[k][i] for k, i in self.rows]

    @functools.cached_property
    def ids(self) -> Sequence[int]:
        return self._gather("ids")

    @functools.cached_property
    def tokens(self) -> Sequence[str]:
        return self._gather("tokens")

    @functools.cached_property
    def offsets(self) -> Sequence[tuple[int, int]]:
        return self._gather("offsets")

    @functools.cached_property
    def special(self) -> Sequence[int]:
        return self._gather("special")
