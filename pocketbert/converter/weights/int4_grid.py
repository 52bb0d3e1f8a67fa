"""Weights on the int4 grid the TFLite int4 file stores: simulated while training, then made exact.

``tflite:int4-dynamic`` stores every Linear's weight and every word-embedding row as int4, symmetric, one scale
per output channel (row): ``scale = max|w| / 7``, ``q = clamp(round(w / scale), -8, 7)`` (ai-edge-quantizer's
min-max, ``uniform_quantize_tensor.tensor_zp_scale_from_min_max``).  A model trained through that rounding
(:func:`simulated`: straight-through gradients) and then put onto it (:func:`snap`) has weights the int4 file
holds exactly, so its int4 file differs from its float file by the activations' dynamic int8 rounding only: the
bars the converter holds an int4 file to (agreement with the float file) are then met without Linears in int8.

Which tensors: every ``nn.Linear`` weight, and the word-embedding table (a factored table's narrow one).
:func:`on_grid` tells whether a weight already sits on the grid (the converter then keeps min-max clipping,
which reproduces it; OCTAV's would move it).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch
from torch import Tensor, nn

LEVELS = 7  # max|w| maps to ±7; -8 is in range but never reached (symmetric)
_TINY = 1e-9  # the quantizer's scale floor (an all-zero row keeps a positive scale)


def scales(weight: Tensor) -> Tensor:
    """One scale per row (output channel), as the quantizer computes it."""
    return (weight.detach().abs().amax(dim=1).clamp_min(_TINY) / LEVELS).float()


def rounded(weight: Tensor) -> Tensor:
    """``weight`` on its int4 grid; the gradient passes straight through (within range: all of it)."""
    scale = scales(weight)
    zero = torch.zeros_like(scale, dtype=torch.int32)
    return torch.fake_quantize_per_channel_affine(weight, scale, zero, 0, -LEVELS - 1, LEVELS)


def quantised(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """The modules whose weight the int4 file stores at 4 bits: every Linear and the word-embedding table."""
    table = model.get_input_embeddings()
    table = getattr(table, "table", table)  # a factored table (converter.weights.factored_table): its narrow lookup
    return [(path, m) for path, m in model.named_modules() if isinstance(m, nn.Linear) or m is table]


@contextmanager
def simulated(model: nn.Module) -> Iterator[None]:
    """Every :func:`quantised` module computes with its weight rounded to the grid (the stored weight unchanged)."""
    modules = [m for _, m in quantised(model)]
    for module in modules:
        module.forward = _forward(module)
    try:
        yield
    finally:
        for module in modules:
            del module.forward


def _forward(module: nn.Module):
    if isinstance(module, nn.Linear):
        return lambda x: nn.functional.linear(x, rounded(module.weight), module.bias)
    return lambda ids: nn.functional.embedding(ids, rounded(module.weight), module.padding_idx)


@torch.no_grad()
def snap(model: nn.Module) -> int:
    """Put every :func:`quantised` weight onto its grid, in place; returns how many tensors."""
    modules = quantised(model)
    for _, module in modules:
        module.weight.copy_(rounded(module.weight))
    return len(modules)


def is_snapped(model: nn.Module) -> bool:
    """Whether every :func:`quantised` weight is on its grid already (as :func:`snap` leaves it, bit for bit): then
    :func:`simulated` computes exactly what the model computes."""
    with torch.no_grad():
        return all(torch.equal(rounded(module.weight), module.weight) for _, module in quantised(model))


def on_grid(weight: np.ndarray, tolerance: float = 1e-3) -> bool:
    """Whether every row of ``weight`` ([out, in]) is a multiple of its own ``max|w| / 7`` (float rounding
    allowed): what :func:`snap` leaves and min-max clipping reproduces."""
    rows = weight.reshape(weight.shape[0], -1).astype(np.float64)
    scale = np.maximum(np.abs(rows).max(axis=1, keepdims=True), _TINY) / LEVELS
    steps = rows / scale
    return bool(np.all(np.abs(steps - np.rint(steps)) <= tolerance))
