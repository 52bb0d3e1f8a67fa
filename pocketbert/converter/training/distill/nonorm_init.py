"""Initialise NoNorm γ/β so that each NoNorm matches the LayerNorm it replaced, on the student's own inputs.

A LayerNorm-trained model with NoNorm dropped in (``nonorm``) sees un-normalised inputs: every
block's output grows with its input's scale and the error compounds block after block.  Before
training, each NoNorm is re-fitted in forward order (earlier norms already re-fitted, so every norm
sees the inputs it will see at the start of training) on a few batches, over real tokens only:

``moments``: LayerNorm(x) = γ(x − μ(x))/σ(x) + β with the per-token μ(x), σ(x) replaced by their
averages μ̄, σ̄ over tokens::

    γ' = γ / σ̄,    β' = β − γ·μ̄ / σ̄

``lstsq``: per feature d, the affine map that best fits the LayerNorm's output in least squares::

    (γ'_d, β'_d) = argmin_{a,b} Σ_tokens (a·x_d + b − LayerNorm(x)_d)²
    γ'_d = cov(x_d, y_d) / var(x_d),   β'_d = ȳ_d − γ'_d · x̄_d

(the best any element-wise affine map can do on these inputs; needs no more data than ``moments``).

``teacher``: as ``lstsq``, but the target is the teacher's own norm output at the same place
(``y`` = what the teacher's LayerNorm produced on the teacher's inputs), so each fit also absorbs
the error accumulated before it (relu, earlier norms).  Needs the teacher, with the student's
depth (norms are matched by path); a norm without a counterpart falls back to ``lstsq``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ...families import Family, is_nonorm

METHODS = ("moments", "lstsq", "teacher")


class _Stop(Exception):
    """Raised by the hook once the norm being calibrated has seen its input: nothing after it is needed."""


def forward_order(model: nn.Module, modules: list[tuple[str, nn.Module]], inputs: dict[str, Tensor]) -> list[str]:
    """Paths of ``modules`` in the order a forward pass calls them (registration order is not
    forward order in every family: MobileBERT registers its bottleneck after the attention)."""
    order: list[str] = []
    handles = [module.register_forward_pre_hook(lambda _m, _a, path=path: order.append(path) if path not in order
                                                else None) for path, module in modules]
    try:
        with torch.no_grad():
            model(**inputs)
    finally:
        for handle in handles:
            handle.remove()
    return order + [path for path, _ in modules if path not in order]


@torch.no_grad()
def calibrate_nonorm(model: nn.Module, family: Family, batches: list[dict[str, Tensor]], *,
                     paths: set[str] | None = None, method: str = "lstsq", eps: float = 1e-12,
                     teacher: nn.Module | None = None) -> list[str]:
    """Re-fit the γ/β of the model's NoNorms (those in ``paths``; every NoNorm if None), see module doc.

    ``batches``: a few batches of model inputs (``input_ids``, ``attention_mask``, …).  ``eps`` is the
    LayerNorm epsilon the fit targets.  ``teacher``: needed by ``method="teacher"``.  Returns the
    calibrated paths in the order they were fitted.
    """
    if method not in METHODS:
        raise ValueError(f"unknown NoNorm initialisation {method!r}; known: {', '.join(METHODS)}")
    norms = {path: module for path, module in family.norms(model) if is_nonorm(module)
             and (paths is None or path in paths)}
    if not norms or not batches:
        return []
    if method == "teacher" and teacher is None:
        raise ValueError("NoNorm initialisation 'teacher' needs the teacher model")
    teacher_norms = dict(family.norms(teacher)) if method == "teacher" else {}
    training = model.training, teacher.training if teacher is not None else False
    model.eval()
    if teacher is not None:
        teacher.eval()
    try:
        order = forward_order(model, list(norms.items()), batches[0])
        for path in order:
            module = norms[path]
            stats = _collect(model, module, batches, eps, teacher=teacher, counterpart=teacher_norms.get(path))
            weight, bias = stats.solve("moments" if method == "moments" else "lstsq")
            module.weight.copy_(weight)
            module.bias.copy_(bias)
    finally:
        model.train(training[0])
        if teacher is not None:
            teacher.train(training[1])
    return order


def _collect(model: nn.Module, module: nn.Module, batches: list[dict[str, Tensor]], eps: float,
             teacher: nn.Module | None, counterpart: nn.Module | None) -> _Stats:
    """Statistics of ``module``'s inputs over ``batches``, with the teacher's ``counterpart`` output as the
    target when there is one; each forward pass stops as soon as the norm has been reached."""
    stats = _Stats(module.weight, module.bias, eps)
    mask_holder: list[Tensor | None] = [None]
    target_holder: list[Tensor | None] = [None]

    def hook(_module, args):
        stats.add(args[0], mask_holder[0], target_holder[0])
        raise _Stop

    def capture(_module, _args, output):
        target_holder[0] = output
        raise _Stop

    handle = module.register_forward_pre_hook(hook)
    t_handle = counterpart.register_forward_hook(capture) if counterpart is not None else None
    try:
        for batch in batches:
            mask_holder[0] = batch.get("attention_mask")
            if t_handle is not None:
                try:
                    teacher(**batch)
                except _Stop:
                    pass
            try:
                model(**batch)
            except _Stop:
                pass
    finally:
        handle.remove()
        if t_handle is not None:
            t_handle.remove()
    return stats


class _Stats:
    """Running sums over real tokens of one norm's input x and target y (LayerNorm(x), or the teacher's norm output)."""

    def __init__(self, gamma: Tensor, beta: Tensor, eps: float):
        self.gamma, self.beta, self.eps = gamma.detach().double(), beta.detach().double(), eps
        self.n = 0.0
        self.mu = self.sigma = 0.0
        self.sx = self.sy = self.sxx = self.sxy = 0.0

    def add(self, x: Tensor, mask: Tensor | None, target: Tensor | None = None) -> None:
        x = x.detach().double()
        target = None if target is None or target.shape != x.shape else target.detach().double()
        if mask is not None and mask.shape == x.shape[:-1]:
            x = x[mask.bool()]
            target = None if target is None else target[mask.bool()]
        x = x.reshape(-1, x.shape[-1])
        var, mean = torch.var_mean(x, dim=-1, unbiased=False)
        sigma = (var + self.eps).sqrt()
        y = F.layer_norm(x, x.shape[-1:], self.gamma, self.beta, self.eps) if target is None else (
            target.reshape(-1, x.shape[-1]))
        self.n += x.shape[0]
        self.mu += mean.sum()
        self.sigma += sigma.sum()
        self.sx, self.sy = self.sx + x.sum(0), self.sy + y.sum(0)
        self.sxx, self.sxy = self.sxx + (x * x).sum(0), self.sxy + (x * y).sum(0)

    def solve(self, method: str) -> tuple[Tensor, Tensor]:
        n = max(self.n, 1.0)
        if method == "moments":
            mu, sigma = self.mu / n, self.sigma / n
            weight, bias = self.gamma / sigma, self.beta - self.gamma * mu / sigma
        else:
            mx, my = self.sx / n, self.sy / n
            var = (self.sxx / n - mx * mx).clamp_min(1e-12)
            weight = (self.sxy / n - mx * my) / var
            bias = my - weight * mx
        return weight.float(), bias.float()
