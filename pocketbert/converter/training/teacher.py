"""The float teacher a checkpoint command distils from (``factor-embeddings``, ``int4-tune``, ``narrow``,
``shrink``): loaded frozen, checked against its student, reading the student's ids when the student's vocabulary
was trimmed from the teacher's (its word table renumbered once, so every loss takes the same batch for both), and
the one every-token training run the first three share."""

from __future__ import annotations

import torch

from ..checkpoints import loading
from ..errors import ConverterInputError
from ..weights.factored_table import FactoredEmbedding
from .distill.pairing import every_token_distillation, no_dropout
from .loop import TrainLog, train


def frozen_teacher(spec: str, student, train_split) -> torch.nn.Module:
    """The model ``spec`` names, frozen in eval mode, reading ``student``'s ids (see :func:`renumbered`)."""
    teacher = loading.load(spec)
    _check_pair(student, teacher)
    pieces = _piece_map(student, teacher, train_split)
    for p in teacher.model.parameters():
        p.requires_grad_(False)
    model = renumbered(teacher.model, pieces) if pieces is not None else teacher.model
    return model.eval()


def renumbered(model, pieces: torch.Tensor):
    """``model`` (in place) reading ids ``pieces`` numbers: its word table's row ``pieces[i]`` becomes row i."""
    table = model.get_input_embeddings()
    rows = table.table if isinstance(table, FactoredEmbedding) else table  # a factored table's rows: its inner one
    rows.weight = torch.nn.Parameter(rows.weight.detach()[pieces], requires_grad=False)
    rows.num_embeddings = model.config.vocab_size = len(pieces)
    return model


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
                       params=None, milestones=None) -> TrainLog:
    """Train ``student`` (a loaded checkpoint; only ``params`` when given) to compute ``teacher``'s logits and every
    layer's hidden states at every real token of ``features``, in shuffled batches of 32, dropout off
    (``milestones``: callbacks part-way, :class:`~.loop.Milestones`)."""
    names = student.family.input_names
    batches = features.batches(32, shuffle=True, seed=0, input_names=names)
    loss_fn = every_token_distillation(teacher, student.model, names)
    with no_dropout(student.model):
        return train(student.model, loss_fn, batches, params=params, budget=budget, lr=lr, description=description,
                     milestones=milestones)
