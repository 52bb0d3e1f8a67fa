"""``fold``: push NoNorm's γ/β into the Linear layers or embedding tables that produce its input.

Where a NoNorm's input is a plain sum of Linear outputs and embedding lookups (no residual)::

    NoNorm(Σᵢ sᵢ) = γ ⊙ Σᵢ sᵢ + β = Σᵢ (γ ⊙ sᵢ) + β

and each term is absorbed exactly:

* Linear ``s = W·h + b``       →  ``W' = diag(γ)·W``,  ``b' = γ ⊙ b``
* Embedding ``s = E[id]``      →  ``E' = E ⊙ γ`` (every row)
* β is added once, to one summand: a Linear's bias, or every row of an embedding table (one
  lookup per token, so it is added exactly once).

The NoNorm then becomes the identity and costs nothing at inference.  A NoNorm after a residual
add (``NoNorm(dense(h) + r)``) would need ``γ ⊙ r`` at run time and is left in place.  The pipeline
checks the folded model against the unfolded one (:func:`converter.checks.verify.compare_models`).
"""

from __future__ import annotations

import torch
from torch import nn

from ..errors import ConverterInputError
from ..weights.factored_table import FactoredEmbedding
from ..families import Family, is_nonorm
from . import Opt, TransformReport, register


@torch.no_grad()
def _fold_site(site) -> None:
    norm = site.norm
    gamma, beta = norm.weight.detach(), norm.bias.detach()
    for module in site.summands:
        if isinstance(module, nn.Linear):
            module.weight.mul_(gamma[:, None])
            if module.bias is not None:
                module.bias.mul_(gamma)
        elif isinstance(module, nn.Embedding):
            module.weight.mul_(gamma[None, :])
        elif isinstance(module, FactoredEmbedding):
            module.scale_output(gamma)
        else:  # a family pointed at something we do not know how to scale
            raise TypeError(f"cannot fold into {type(module).__name__} at {site.path}")
    target = site.bias_into
    if isinstance(target, nn.Linear):
        if target.bias is None:
            target.bias = nn.Parameter(torch.zeros(target.out_features))
        target.bias.add_(beta)
    elif isinstance(target, FactoredEmbedding):
        target.add_to_output(beta)
    else:
        target.weight.add_(beta[None, :])
    setattr(site.parent, site.attr, nn.Identity())


def apply(model: nn.Module, family: Family) -> TransformReport:
    sites = family.fold_sites(model)
    nonorm_sites = [s for s in sites if is_nonorm(s.norm)]
    if sites and not nonorm_sites and any(isinstance(s.norm, nn.LayerNorm) for s in sites):
        raise ConverterInputError("--opt fold needs NoNorm layers, but this model uses LayerNorm",
                                  "add nonorm to --opt (e.g. --opt nonorm,fold), or drop fold")
    for site in nonorm_sites:
        _fold_site(site)
    total_norms = len(family.norms(model)) + len(nonorm_sites)
    details = [f"folded: {s.path}" for s in nonorm_sites]
    details.append(f"{total_norms - len(nonorm_sites)} norm(s) follow a residual add and stay")
    return TransformReport("fold", sites=total_norms, changed=len(nonorm_sites), exact=True, details=details)


register(Opt("fold", "fold NoNorm γ/β into the preceding Linear/embeddings where exact", order=30, exact=True,
             action="Folding NoNorm into neighbouring layers", compared="folded vs unfolded", apply=apply))
