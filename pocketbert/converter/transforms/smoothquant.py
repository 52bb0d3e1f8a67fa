"""SmoothQuant-style activation smoothing before int8 quantisation (Xiao et al., 2023).

int8 quantises a Linear's input with one scale for the whole tensor.  Distilled BERTs have a few
feature channels whose activations are 10-20x larger than the rest (all-MiniLM-L6-v2: max 28 vs
median 2 at the FFN input), so that scale wastes most of the int8 range.  For each encoder Linear
``y = W·x + b`` with input-channel scales ``s`` the identity

    y = (W · diag(s)) · (x ⊙ 1/s) + b

moves the outliers from the activation into the weight, which is quantised per output channel
and tolerates it.  ``s_j = max|x_j|^α / max|W_{:,j}|^(1−α)`` (α = migration strength) with
``max|x_j|`` measured on calibration text.  The division becomes one element-wise Mul before the
Linear, or, where another Linear produces the input through operations that commute with a positive scale
(attention's weighted sum of values, ReLU: :class:`~converter.families.ScalePair`), is folded into that Linear's rows
and bias, adding nothing at run time.  Exact in float arithmetic; applied only to the copy of the model that is
quantised.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

import torch
from torch import nn

from ..families import Family, ScalePair

DEFAULT_ALPHA = 0.75


class SmoothedLinear(nn.Module):
    """``linear(x * inv_scale)`` where ``linear``'s weight has been multiplied by the scale."""

    def __init__(self, linear: nn.Linear, inv_scale: torch.Tensor):
        super().__init__()
        self.linear = linear
        self.register_buffer("inv_scale", inv_scale)

    def forward(self, x):
        return self.linear(x * self.inv_scale)


@torch.no_grad()
def activation_maxima(model: nn.Module, family: Family, batches: Iterable[dict]) -> dict[str, torch.Tensor]:
    """Per-input-channel max |x| of every encoder Linear, over the calibration batches."""
    maxima: dict[str, torch.Tensor] = {}
    forward_all(model, batches, activation_hooks(model, family, maxima))
    return maxima


def activation_hooks(model: nn.Module, family: Family, maxima: dict[str, torch.Tensor]) -> list:
    """Hooks recording into ``maxima`` what :func:`activation_maxima` returns, to share one forward pass."""
    linears = {name: m for name, m in family.base(model).named_modules() if isinstance(m, nn.Linear)}

    def hook(name):
        def record(_module, inputs):
            x = inputs[0].detach().abs().reshape(-1, inputs[0].shape[-1]).amax(0)
            maxima[name] = torch.maximum(maxima[name], x) if name in maxima else x
        return record

    return [m.register_forward_pre_hook(hook(name)) for name, m in linears.items()]


@torch.no_grad()
def forward_all(model: nn.Module, batches: Iterable[dict], handles: list) -> None:
    """Run ``model`` on every batch, then remove ``handles`` (the hooks recording what the pass is for)."""
    try:
        for batch in batches:
            model(**{k: torch.as_tensor(v) for k, v in batch.items()})
    finally:
        for handle in handles:
            handle.remove()


@torch.no_grad()
def smooth(model: nn.Module, family: Family, maxima: dict[str, torch.Tensor], alpha: float = DEFAULT_ALPHA,
           folded: bool = False) -> tuple[nn.Module, int]:
    """A smoothed deep copy of ``model`` (the original is untouched) and the number of Linears smoothed: every
    Linear in ``maxima``, each behind a Mul; ``folded``: only those whose scale folds into the Linear producing their
    input (:meth:`Family.scale_pairs`), with nothing added at run time, so the graph stays the plain model's."""
    model = copy.deepcopy(model)
    base = family.base(model)
    if folded:
        return model, _fold(base, family.scale_pairs(model), maxima, alpha)
    for name, act_max in maxima.items():
        linear = base.get_submodule(name)
        scale = _scale(linear, act_max, alpha)
        linear.weight.mul_(scale[None, :])
        parent, _, attr = name.rpartition(".")
        setattr(base.get_submodule(parent) if parent else base, attr, SmoothedLinear(linear, 1.0 / scale))
    return model, len(maxima)


def _fold(base: nn.Module, pairs: list[ScalePair], maxima: dict[str, torch.Tensor], alpha: float) -> int:
    """Each pair's reader takes the scale into its input columns, its producer divides its rows and bias by it."""
    names = {id(module): name for name, module in base.named_modules()}
    pairs = [pair for pair in pairs if names.get(id(pair.reader)) in maxima]
    for pair in pairs:
        scale = _scale(pair.reader, maxima[names[id(pair.reader)]], alpha)
        pair.reader.weight.mul_(scale[None, :])
        pair.producer.weight.div_(scale[:, None])
        if pair.producer.bias is not None:
            pair.producer.bias.div_(scale)
    return len(pairs)


def _scale(linear: nn.Linear, act_max: torch.Tensor, alpha: float) -> torch.Tensor:
    """SmoothQuant's per-input-channel scale: ``max|x_j|^α / max|W_{:,j}|^(1−α)``."""
    weight_max = linear.weight.abs().amax(0).clamp(min=1e-5)
    return (act_max.clamp(min=1e-5) ** alpha / weight_max ** (1 - alpha)).clamp(min=1e-5, max=1e5)


def as_unsmoothed(tensors: dict) -> tuple[dict, dict]:
    """A smoothed model's state dict named as the unsmoothed model's (a :class:`SmoothedLinear` at ``P``: its
    ``P.linear.weight`` as ``P.weight``; its ``P.inv_scale`` kept), and each smoothed Linear's input scale by
    ``P``: what a file exported from the unsmoothed model is rewritten with to become the smoothed model's
    (:meth:`ExportBackend.with_weights`).  An unsmoothed model's state dict comes back as it is, with no scales."""
    scales = {name.removesuffix(".inv_scale"): value for name, value in tensors.items() if name.endswith(".inv_scale")}

    def renamed(name: str) -> str:
        prefix, marker, rest = name.rpartition(".linear.")  # the wrapper's own hop is the last one
        return f"{prefix}.{rest}" if marker and prefix in scales else name

    return {renamed(name): value for name, value in tensors.items()}, scales
