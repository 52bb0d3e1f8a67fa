"""Distillation across tokenizations: the teacher and the student read the same text through different
vocabularies (e.g. after ``trim-vocab``), so their token positions do not line up.

Outputs are paired where the text says they are the same thing: per example (the logits and the
``[CLS]`` hidden states) for sequence classification and regression, per *word* (its first word
piece, the position that carries the word's tag) for token classification.  Attention maps have no
such pairing (their rows and columns are pieces) and are not transferred.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ...data.features import Features
from ...errors import ConverterInputError
from ..loop import Budget, TrainLog, train
from . import losses
from .pairing import no_dropout

#: what :func:`distill_retokenized` minimises, for records and model cards
LOSS = "logit KL (T=1) + every layer's hidden-state MSE at each example's [CLS] or each word's first piece"


def first_pieces(word_ids: list[int | None]) -> dict[int, int]:
    """Word index → position of its first piece."""
    out: dict[int, int] = {}
    for position, word in enumerate(word_ids):
        if word is not None and word not in out:
            out[word] = position
    return out


def word_pairs(student: Features, teacher: Features, rows: list[int]) -> tuple[Tensor, Tensor, Tensor]:
    """(row, student position, teacher position) for every word both tokenizations kept (truncation at
    ``max_length`` can drop the last words of the longer one)."""
    r_, s_, t_ = [], [], []
    for r, i in enumerate(rows):
        s_first, t_first = first_pieces(student.word_ids[i]), first_pieces(teacher.word_ids[i])
        for word, position in s_first.items():
            if word in t_first:
                r_.append(r)
                s_.append(position)
                t_.append(t_first[word])
    return torch.tensor(r_, dtype=torch.long), torch.tensor(s_, dtype=torch.long), torch.tensor(t_, dtype=torch.long)


def paired_outputs(teacher, student, teacher_features: Features, student_features: Features, rows: list[int],
                   teacher_batches, student_batches, teacher_inputs, student_inputs, *, hidden: bool = False,
                   student_batch: dict[str, Tensor] | None = None
                   ) -> tuple[Tensor, Tensor, list[tuple[Tensor, Tensor]]]:
    """Student and teacher logits of the same examples (``[B, labels]``) or words (``[words, labels]``),
    and with ``hidden`` each layer's hidden states at the same places (``[CLS]``, or each word's first
    piece) as (student, teacher) pairs; the teacher's without gradient."""
    with torch.no_grad():
        t_batch = teacher_batches.collate(rows)
        t_out = teacher(**{k: t_batch[k] for k in teacher_inputs}, output_hidden_states=hidden)
    s_batch = student_batch if student_batch is not None else student_batches.collate(rows)
    s_out = student(**{k: s_batch[k] for k in student_inputs}, output_hidden_states=hidden)
    if student_features.word_ids is not None:
        r, s, t = word_pairs(student_features, teacher_features, rows)
    else:
        r = torch.arange(len(rows))
        s = t = torch.zeros(len(rows), dtype=torch.long)  # [CLS]
    s_logits, t_logits = s_out.logits, t_out.logits
    if s_logits.dim() == 3:
        s_logits, t_logits = s_logits[r, s], t_logits[r, t]
    layers = []
    if hidden:  # the encoder layers' outputs; the embedding output differs by design (other pieces)
        layers = [(hs[r, s], ht[r, t]) for hs, ht in zip(s_out.hidden_states[1:], t_out.hidden_states[1:])]
    return s_logits, t_logits, layers


@torch.no_grad()
def gap(teacher, student, teacher_features: Features, student_features: Features, *, batch_size: int = 64,
        teacher_inputs=("input_ids", "attention_mask", "token_type_ids"),
        student_inputs=("input_ids", "attention_mask", "token_type_ids")) -> float:
    """Mean logit distillation loss (KL at T=1; MSE for regression) between the two, per example or word."""
    teacher_batches = teacher_features.batches(batch_size, input_names=teacher_inputs)
    student_batches = student_features.batches(batch_size, input_names=student_inputs)
    was = student.training
    student.eval()
    total, count = 0.0, 0
    try:
        for rows in student_batches.order(0):
            s_logits, t_logits, _ = paired_outputs(teacher, student, teacher_features, student_features, rows=rows,
                                                   teacher_batches=teacher_batches, student_batches=student_batches,
                                                   teacher_inputs=teacher_inputs, student_inputs=student_inputs)
            total += losses.logit_distillation(s_logits, t_logits).item() * len(s_logits)
            count += len(s_logits)
    finally:
        student.train(was)
    return total / max(1, count)


def distill_retokenized(teacher, student, teacher_features: Features, student_features: Features, *,
                        budget: Budget, lr: float = 3e-5, temperature: float = 1.0, hidden_weight: float = 1.0,
                        batch_size: int = 32, params: list | None = None,
                        seed: int = 0, teacher_inputs: tuple[str, ...] = ("input_ids", "attention_mask",
                                                                           "token_type_ids"),
                        student_inputs: tuple[str, ...] = ("input_ids", "attention_mask", "token_type_ids"),
                        description: str = "distil", progress: bool = True) -> TrainLog:
    """Train ``student`` (``params``, default all) towards ``teacher`` over the same examples, each model on its
    own tokenization (``*_features``: the same task data encoded by each model's tokenizer): logit
    distillation, plus ``hidden_weight`` × the feature-map MSE of every layer at the paired positions
    (a word's representation carries far more than its 9 tag logits, and it is what a re-segmented
    rare word has to rebuild).  The teacher is frozen and in eval mode."""
    if len(teacher_features) != len(student_features) or teacher_features.task is not student_features.task:
        raise ConverterInputError("teacher and student features must encode the same examples",
                                  "encode one task's data with each model's tokenizer")
    ner = student_features.word_ids is not None
    if ner != (teacher_features.word_ids is not None):
        raise ConverterInputError("one model is token classification and the other is not", "pair models of one task")
    teacher_batches = teacher_features.batches(batch_size, input_names=teacher_inputs)
    student_batches = student_features.batches(batch_size, shuffle=True, seed=seed, input_names=student_inputs)
    teacher.eval()
    for p in teacher.parameters():
        p.requires_grad_(False)

    def loss_fn(batch: dict[str, Tensor]) -> tuple[Tensor, dict[str, float]]:
        s_logits, t_logits, layers = paired_outputs(
            teacher, student, teacher_features, student_features, rows=batch["index"].tolist(),
            teacher_batches=teacher_batches, student_batches=student_batches, teacher_inputs=teacher_inputs,
            student_inputs=student_inputs, hidden=hidden_weight > 0, student_batch=batch)
        logit_loss = losses.logit_distillation(s_logits, t_logits, temperature=temperature)
        parts = {"logits": logit_loss.item()}
        loss = logit_loss
        if layers:
            hidden_loss = sum(losses.hidden_mse(hs, ht) for hs, ht in layers) / len(layers)
            parts["hidden"] = hidden_loss.item()
            loss = loss + hidden_weight * hidden_loss
        return loss, parts

    with no_dropout(student):  # the student learns the teacher's function, which has no dropout
        return train(student, loss_fn, student_batches, params=params, budget=budget, lr=lr, seed=seed,
                     description=description, progress=progress)
