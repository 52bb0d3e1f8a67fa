"""The float teacher a checkpoint command distils every token from (``factor-embeddings``, ``int4-tune``,
``narrow``): loaded frozen, checked against its student, mapped to the student's pieces when the student's
vocabulary was trimmed from the teacher's, and the one training run they share."""

from __future__ import annotations

import torch

from ..checkpoints import loading
from ..errors import ConverterInputError
from .distill.pairing import every_token_distillation, no_dropout
from .loop import TrainLog, train


def frozen_teacher(spec: str, student, train_split) -> tuple[torch.nn.Module, torch.Tensor | None]:
    """The model ``spec`` names, frozen in eval mode, and its piece map (``None``: both number pieces alike)."""
    teacher = loading.load(spec)
    _check_pair(student, teacher)
    pieces = _piece_map(student, teacher, train_split)
    for p in teacher.model.parameters():
        p.requires_grad_(False)
    return teacher.model.eval(), pieces


def _check_pair(student, teacher) -> None:
    """The teacher must have the same depth and labels (every layer is a target); its pieces: see _piece_map."""
    problems = []
    if student.family.num_layers(student.config) != teacher.family.num_layers(teacher.config):
        problems.append("their depths differ")
    if student.labels != teacher.labels:
        problems.append(f"their labels differ ({student.labels} vs {teacher.labels})")
    if problems:
        raise ConverterInputError(f"--teacher cannot teach this checkpoint: {', '.join(problems)}",
                                  "give the float model this checkpoint was made from (same depth and labels), or "
                                  "no --teacher")


def _piece_map(student, teacher, train_split) -> torch.Tensor | None:
    """``None`` when both number the same pieces alike; else the teacher's id of each student piece (a student
    whose vocabulary was trimmed from the teacher's), refused unless the teacher spells every training text with
    exactly the student's pieces, so that both models read the same text."""
    mine, theirs = student.tokenizer.get_vocab(), teacher.tokenizer.get_vocab()
    if mine == theirs:
        return None
    missing = [piece for piece in mine if piece not in theirs]
    ids = torch.zeros(max(mine.values()) + 1, dtype=torch.long)
    for piece, index in mine.items():
        ids[index] = theirs.get(piece, 0)
    spelled = train_split.encode(student.tokenizer, 128, student.labels).input_ids
    expected = train_split.encode(teacher.tokenizer, 128, teacher.labels).input_ids
    differing = sum(ids[torch.tensor(a)].tolist() != b for a, b in zip(spelled, expected))
    if missing or differing:
        raise ConverterInputError(f"--teacher reads other pieces: {len(missing)} of the checkpoint's pieces are not "
                                  f"in its vocabulary and it splits {differing} of {len(spelled)} training texts "
                                  "differently", "give a teacher whose vocabulary holds every piece of the "
                                  "checkpoint's (the model it was trimmed from), or no --teacher")
    return ids


def distil_every_token(student, teacher: torch.nn.Module, features, *, budget, lr: float, description: str,
                       pieces: torch.Tensor | None = None, params=None, milestones=None) -> TrainLog:
    """Train ``student`` (a loaded checkpoint; only ``params`` when given) to compute ``teacher``'s logits and every
    layer's hidden states at every real token of ``features``, in shuffled batches of 32, dropout off
    (``milestones``: callbacks part-way, :class:`~.loop.Milestones`)."""
    names = student.family.input_names
    batches = features.batches(32, shuffle=True, seed=0, input_names=names)
    loss_fn = every_token_distillation(teacher, student.model, names, teacher_ids=pieces)
    with no_dropout(student.model):
        return train(student.model, loss_fn, batches, params=params, budget=budget, lr=lr, description=description,
                     milestones=milestones)
