"""``nonorm``: replace every LayerNorm of the encoder by NoNorm (MobileBERT, Sun et al. 2020, §4.3).

LayerNorm normalises each token vector over its ``d`` features::

    LayerNorm(x) = γ ⊙ (x − μ(x)) / sqrt(σ²(x) + ε) + β,   μ, σ² over the d features

NoNorm keeps only the element-wise affine part::

    NoNorm(x) = γ ⊙ x + β

so it needs no reductions (mean/variance) at inference and, being linear, can often be folded
into a neighbouring Linear (see :mod:`converter.transforms.fold`).  γ and β are taken over from the
LayerNorm.  On a model trained with LayerNorm this changes the function: its accuracy must be
recovered by distillation, or the loss accepted explicitly.  Modules that already are NoNorm
(MobileBERT checkpoints) are left alone.
"""

from __future__ import annotations

import torch
from torch import nn

from ..families import Family, is_nonorm
from . import Opt, TransformReport, register


class NoNorm(nn.Module):
    """Element-wise affine ``x * weight + bias`` (same parameter names as LayerNorm)."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor):
        super().__init__()
        self.weight = nn.Parameter(weight.detach().clone())
        self.bias = nn.Parameter(bias.detach().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.weight + self.bias


def apply(model: nn.Module, family: Family) -> TransformReport:
    norms = family.norms(model)
    base = family.base(model)
    changed = []
    for path, module in norms:
        if is_nonorm(module):
            continue
        if not module.elementwise_affine:  # γ=1, β=0
            weight = torch.ones(module.normalized_shape)
            bias = torch.zeros(module.normalized_shape)
        else:
            weight = module.weight
            bias = module.bias if module.bias is not None else torch.zeros_like(module.weight)
        parent_path, _, attr = path.rpartition(".")
        parent = base.get_submodule(parent_path) if parent_path else base
        setattr(parent, attr, NoNorm(weight, bias))
        changed.append(path)
    return TransformReport("nonorm", sites=len(norms), changed=len(changed), exact=not changed,
                           details=[f"LayerNorm -> NoNorm: {p}" for p in changed])


register(Opt("nonorm", "LayerNorm -> NoNorm (x*γ+β) in the encoder", order=10, changes_function=True, structural=True,
             apply=apply))
