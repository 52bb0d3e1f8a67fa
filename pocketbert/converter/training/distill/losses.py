"""Distillation loss terms.  Each returns a scalar tensor; masks select real (non-padding) tokens.

Shapes: ``B`` batch, ``S`` sequence, ``C`` labels, ``D`` hidden width, ``H`` heads.  ``attention_mask``
is the tokenizer's ``[B, S]`` mask (1 real token, 0 padding).  Every term is 0 when the student
computes exactly what the teacher computes, so a term's value is also a measure of the gap.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def masked_mean(values: Tensor, mask: Tensor | None) -> Tensor:
    """Mean of ``values`` (``[B, S]``) over the positions where ``mask`` is non-zero (all if None)."""
    if mask is None:
        return values.mean()
    mask = mask.to(values.dtype)
    return (values * mask).sum() / mask.sum().clamp_min(1.0)


def logit_distillation(student: Tensor, teacher: Tensor, *, temperature: float = 1.0,
                       attention_mask: Tensor | None = None) -> Tensor:
    """Knowledge distillation on the logits (Hinton et al. 2015).

    Classification (``[B, C]``, C > 1)::

        L = T² · mean_b KL(p_t ‖ p_s),  p_t = softmax(z_t / T),  p_s = softmax(z_s / T)
          = T² · mean_b Σ_c p_t,c (log p_t,c − log p_s,c)

    i.e. the soft cross-entropy ``−Σ p_t log p_s`` minus the teacher's entropy, a constant: same
    gradients, but 0 at a perfect match.  The T² keeps gradient magnitudes independent of T.

    Token classification (``[B, S, C]``): the same KL per token, averaged over real tokens
    (``attention_mask``), not only over labelled first word pieces: every token's output is kept.

    Regression (C = 1, e.g. STS-B): ``mean (z_s − z_t)²`` (per real token for ``[B, S, 1]``); no
    temperature.
    """
    if student.shape != teacher.shape:
        raise ValueError(f"student logits {tuple(student.shape)} and teacher logits {tuple(teacher.shape)} differ")
    mask = attention_mask if student.dim() == 3 else None
    if student.shape[-1] == 1:
        return masked_mean((student - teacher).pow(2).squeeze(-1), mask)
    log_p_s = F.log_softmax(student / temperature, dim=-1)
    log_p_t = F.log_softmax(teacher / temperature, dim=-1)
    kl = (log_p_t.exp() * (log_p_t - log_p_s)).sum(-1)
    return masked_mean(kl, mask) * temperature**2


def hidden_mse(student: Tensor, teacher: Tensor, attention_mask: Tensor | None = None) -> Tensor:
    """Feature-map transfer of one layer (MobileBERT §3.1; TinyBERT's hidden-state loss without W_h)::

        L = (1 / (N·D)) Σ_{real tokens b,s} Σ_d (h_s,bsd − h_t,bsd)²,   N = number of real tokens

    ``student``/``teacher``: ``[B, S, D]`` hidden states of the same width.  Padding positions are
    ignored: their hidden states are never used by the model's outputs.
    """
    if student.shape != teacher.shape:
        raise ValueError(f"student hidden states {tuple(student.shape)} and teacher {tuple(teacher.shape)} differ")
    return masked_mean((student - teacher).pow(2).mean(-1), attention_mask)


def attention_kl(student: Tensor, teacher: Tensor, attention_mask: Tensor | None = None) -> Tensor:
    """Attention transfer of one layer (MobileBERT §3.1): KL(teacher ‖ student) per head and query row::

        L = (1 / (N·H)) Σ_{real query rows b,q} Σ_h Σ_k a_t,bhqk (log a_t,bhqk − log a_s,bhqk)

    ``student``/``teacher``: ``[B, H, S, S]`` attention probabilities (rows sum to 1 over keys k).
    Only real query rows count; padded keys carry probability 0 in both models and add nothing
    (``0·log 0 = 0``; the student's zeros are clamped inside the log so no NaN appears).
    """
    if student.shape != teacher.shape:
        raise ValueError(f"student attentions {tuple(student.shape)} and teacher {tuple(teacher.shape)} differ")
    tiny = torch.finfo(student.dtype).tiny
    kl = (torch.special.xlogy(teacher, teacher) - teacher * torch.log(student.clamp_min(tiny))).sum(-1)  # [B,H,S]
    return masked_mean(kl.mean(1), attention_mask)


def stream_range(hidden: Tensor, attention_mask: Tensor | None = None) -> Tensor:
    """How far one residual-stream tensor's outliers stretch a per-tensor int8 scale::

        log(max |h| / rms(h))   over real tokens

    Per-tensor int8 spends its 255 steps on the largest value; what it loses on the rest depends on
    that ratio, not on the magnitude (a largest value 160 times the rms gives log 160 ≈ 5).  The gradient
    reaches the outlier itself and, through the rms, every value.
    """
    values = hidden if attention_mask is None else hidden[attention_mask.bool()]
    return torch.log(values.abs().amax() / values.pow(2).mean().sqrt().clamp_min(1e-12))


def hard_label_loss(logits: Tensor, labels: Tensor) -> Tensor:
    """The task loss on gold labels.

    Classification ``[B, C]`` with labels ``[B]``, or token classification ``[B, S, C]`` with labels
    ``[B, S]``: cross-entropy averaged over labelled positions (label −100 is ignored: padding and
    non-first word pieces).  ``0`` when no position is labelled.
    Regression (C = 1): ``mean (z − y)²`` with float labels.
    """
    if logits.shape[-1] == 1:
        return F.mse_loss(logits.squeeze(-1), labels.to(logits.dtype).view_as(logits.squeeze(-1)))
    flat_logits = logits.reshape(-1, logits.shape[-1])
    flat_labels = labels.reshape(-1).long()
    if not (flat_labels != -100).any():
        return flat_logits.sum() * 0.0
    return F.cross_entropy(flat_logits, flat_labels, ignore_index=-100)


#: loss-term name -> what it is (also the keys of a stage's ``weights``)
TERMS = {
    "logits": "logit distillation (KL with temperature; MSE for regression)",
    "hidden": "hidden-state MSE per layer (feature-map transfer; layer 0 = embedding output)",
    "attention": "attention-distribution KL per layer and head (attention transfer)",
    "hard": "hard-label loss (cross-entropy ignoring -100; MSE for regression)",
    "stream": "residual-stream range penalty: log(max |h| / rms h) per student layer, for full-integer int8",
}
