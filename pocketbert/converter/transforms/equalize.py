"""Residual-stream equalisation before full-integer (static) int8: per-channel scales folded into the weights.

Without LayerNorm nothing bounds a nonorm model's residual stream: on the SST-2 demo model a few channels
reach 160 on a few tokens while most values stay below 1, and static int8 gives each of these tensors
one scale (per tensor), so the small channels lose their precision. A post-norm block computes

    a = NoNorm(h + writer(sublayer(h))) = γ ⊙ (h + writer(…)) + β

and every channel j of the stream can be divided by its own scale ``s_j`` exactly, with nothing added at
run time: the producing norm's γ and β (or, once fold made it the identity, the embedding tables) are
divided by ``s``; every Linear reading the stream takes ``s`` into its input columns; the writer's rows and
bias are divided by the scale of the stream they are added to; and the next norm's γ becomes
``γ ⊙ s_in / s_out``, which hands the sum over to the next stream's scale.

``s_j = max(1, m_j / median(m))^α``, with ``m_j`` the largest |value| channel j reaches in any int8 tensor of
that stream (the norm's MUL and ADD outputs, and the residual sum after it) on calibration text. Only
outlier channels shrink: their range moves into the readers' weight columns, which are quantised per
output channel (α = 0.5 splits it, as SmoothQuant's migration strength does). Exact in float arithmetic;
applied only to the copy of the model that is quantised.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

import torch
from torch import Tensor, nn

from ..weights.factored_table import FactoredEmbedding
from ..families import Family, ResidualStream, is_nonorm
from .smoothquant import forward_all

DEFAULT_ALPHA = 0.5


def supported(model: nn.Module, family: Family) -> bool:
    """True when ``family`` maps its residual stream and every norm on it is a NoNorm (a LayerNorm divides
    by each token's spread: no fixed per-channel scale passes through it)."""
    try:
        streams = family.residual_streams(model)
    except NotImplementedError:
        return False
    norms = [s.producer for s in streams[1:]] + [s.next_norm for s in streams if s.next_norm is not None]
    first = streams[0].producer
    return all(is_nonorm(n) for n in norms) and (is_nonorm(first) or isinstance(first, nn.Identity))


@torch.no_grad()
def stream_maxima(model: nn.Module, family: Family, batches: Iterable[dict]) -> list[Tensor]:
    """Per stream, per channel: the largest |value| over the int8 tensors carrying that stream's scale."""
    maxima: list[Tensor | None] = []
    forward_all(model, batches, stream_hooks(model, family, maxima))
    return maxima


def stream_hooks(model: nn.Module, family: Family, maxima: list) -> list:
    """Hooks filling the empty list ``maxima`` with what :func:`stream_maxima` returns (one shared forward pass)."""
    streams = family.residual_streams(model)
    maxima.extend([None] * len(streams))

    def record(index: int, x: Tensor) -> None:
        value = x.detach().abs().reshape(-1, x.shape[-1]).amax(0)
        maxima[index] = value if maxima[index] is None else torch.maximum(maxima[index], value)

    handles = []
    for index, stream in enumerate(streams):
        handles.append(stream.producer.register_forward_hook(_producer_hook(index, record)))
        if stream.next_norm is not None:  # the residual sum: stream + writer output, still at this scale
            handles.append(stream.next_norm.register_forward_pre_hook(
                lambda _module, inputs, index=index: record(index, inputs[0])))
    return handles


def reader_maxima(model: nn.Module, family: Family, maxima: dict[str, Tensor],
                  factors: list[Tensor]) -> dict[str, Tensor]:
    """What ``smoothquant.activation_maxima`` finds on the model equalised by ``factors``, from ``maxima``, its
    finding on ``model``: a Linear reading stream i sees that stream divided by ``factors[i]``; every other
    Linear's input is unchanged, since equalisation leaves each sublayer's function as it was."""
    names = {id(module): name for name, module in family.base(model).named_modules()}
    derived = dict(maxima)
    for stream, factor in zip(family.residual_streams(model), factors):
        for reader in stream.readers:
            name = names.get(id(reader))
            if name in derived:
                derived[name] = derived[name] / factor
    return derived


def _producer_hook(index: int, record):
    def hook(module, inputs, output):
        record(index, output)
        if is_nonorm(module):  # its MUL output is an int8 tensor of its own
            record(index, inputs[0] * module.weight)
    return hook


def scales(maxima: list[Tensor], alpha: float = DEFAULT_ALPHA) -> list[Tensor]:
    return [(m / m.median().clamp_min(1e-9)).clamp(min=1.0) ** alpha for m in maxima]


def equalize(model: nn.Module, family: Family, maxima: list[Tensor],
             alpha: float = DEFAULT_ALPHA) -> tuple[nn.Module, dict]:
    """An equalised deep copy of ``model`` (the original is untouched) and what was done, for the manifest."""
    model = copy.deepcopy(model)
    factors = scales(maxima, alpha)
    apply_scales(model, family, factors)
    return model, {"method": "residual-stream equalisation", "alpha": alpha, "streams": len(factors),
                   "channels_scaled": sum(int((s > 1).sum()) for s in factors),
                   "largest_scale": round(max(float(s.max()) for s in factors), 2)}


@torch.no_grad()
def apply_scales(model: nn.Module, family: Family, factors: list[Tensor]) -> None:
    """Divide stream i's channels by ``factors[i]``, in place, leaving the function unchanged (module docstring)."""
    streams = family.residual_streams(model)
    if len(factors) != len(streams):
        raise ValueError(f"{len(factors)} scale vectors for {len(streams)} residual streams")
    _divide_first(streams[0], factors[0])
    for index, (stream, s) in enumerate(zip(streams, factors)):
        for reader in stream.readers:
            reader.weight.mul_(s[None, :])
        if stream.writer is not None:
            _scale_rows(stream.writer, 1.0 / s)
            following = factors[index + 1]
            stream.next_norm.weight.mul_(s / following)
            stream.next_norm.bias.div_(following)


def _divide_first(stream: ResidualStream, s: Tensor) -> None:
    if is_nonorm(stream.producer):
        stream.producer.weight.div_(s)
        stream.producer.bias.div_(s)
        return
    for module in stream.summands:  # fold made the embedding norm the identity: the tables produce the stream
        if isinstance(module, nn.Embedding):
            module.weight.div_(s[None, :])
        elif isinstance(module, FactoredEmbedding):
            module.scale_output(1.0 / s)
        else:
            _scale_rows(module, 1.0 / s)


def _scale_rows(linear: nn.Linear, factor: Tensor) -> None:
    linear.weight.mul_(factor[:, None])
    if linear.bias is not None:
        linear.bias.mul_(factor)
