"""``relu``: replace the GELU of every feed-forward block by ReLU (MobileBERT, §4.3).

BERT's feed-forward block is ``FFN(x) = W₂ · act(W₁x + b₁) + b₂`` with::

    GELU(z) = z · Φ(z) = z/2 · (1 + erf(z/√2))      (or its tanh approximation)
    ReLU(z) = max(z, 0)

The two agree for |z| ≫ 1 and differ near 0 (GELU(−0.5) ≈ −0.154, ReLU = 0).  ReLU is a single
cheap op on every backend, needs no Erf/Tanh, and its non-negative output quantises with the
whole int8 range.  On a GELU-trained model this changes the function; blocks that already use
ReLU are left alone.
"""

from __future__ import annotations

from torch import nn

from ..families import Family, is_relu
from . import Opt, TransformReport, register


def apply(model: nn.Module, family: Family) -> TransformReport:
    sites = family.activation_sites(model)
    changed = []
    for site in sites:
        act = site.activation
        if is_relu(act):
            continue
        setattr(site.parent, site.attr, nn.ReLU())
        changed.append(f"{type(act).__name__} -> ReLU: {site.path}")
    return TransformReport("relu", sites=len(sites), changed=len(changed), exact=not changed, details=changed)


register(Opt("relu", "GELU -> ReLU in the feed-forward blocks", order=20, changes_function=True, structural=True,
             apply=apply))
