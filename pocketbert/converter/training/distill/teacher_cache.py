"""The teacher's outputs on each training example, computed once and reused every later epoch.

Recovery on a small task set (a new NER corpus of a few thousand sentences, MRPC, STS-B) passes over the
data ten times or more in its budget, and the teacher is frozen, in eval mode, without dropout: it gives the
same logits, hidden states and attention probabilities every epoch.  Its forward pass is about a quarter
of a distillation step (MiniLM, batch 32, 2 cores), so from the second epoch on each step is that much
cheaper, and a time budget trains that many more steps.

Rows are kept unpadded, in float16 (targets to 3 significant digits: far below the distillation losses'
final values), keyed by the batch's ``index`` (the example's position in the training features), and padded
again to whatever batch the shuffled order groups them in: zeros at padded positions, which every loss masks
(attention probabilities at padded keys are exactly 0 in the teacher's own output too).  Only a set whose
outputs fit the memory limit is cached, decided before training from the examples' lengths.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from types import SimpleNamespace

import torch
from torch import Tensor

from .pairing import forward

BYTES = 2  # float16


def default_limit() -> int:
    """At most 4 GiB, and at most a sixth of the machine's memory."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        physical = 8 << 30
    return min(4 << 30, physical // 6)


def needed_bytes(lengths: list[int], *, layers: int, heads: int, width: int, outputs: int, hidden: bool,
                 attentions: bool, token_level: bool) -> int:
    """What caching every example costs: logits, ``layers + 1`` hidden states, ``layers`` attention maps."""
    total = 0
    for n in lengths:
        total += n * outputs if token_level else outputs
        total += (layers + 1) * n * width if hidden else 0
        total += layers * heads * n * n if attentions else 0
    return total * BYTES


@dataclass
class TeacherCache:
    """``outputs(batch, inputs)``: the teacher's outputs on a batch, from memory when every row was seen."""

    teacher: torch.nn.Module
    hidden: bool
    attentions: bool
    rows: dict[int, tuple] = field(default_factory=dict)
    hits: int = 0  # batches served from memory
    misses: int = 0  # batches the teacher ran on

    def outputs(self, batch: dict[str, Tensor], inputs: dict[str, Tensor]):
        rows = batch["index"].tolist()
        mask = inputs["attention_mask"]
        if all(row in self.rows for row in rows):
            self.hits += 1
            return self._assemble(rows, width=mask.shape[1])
        self.misses += 1
        with torch.no_grad():
            out = forward(self.teacher, inputs, hidden=self.hidden, attentions=self.attentions)
        for r, (row, n) in enumerate(zip(rows, mask.sum(1).tolist())):
            logits = out.logits[r, :n] if out.logits.dim() == 3 else out.logits[r]
            hidden = [h[r, :n].half() for h in out.hidden_states] if self.hidden else []
            attentions = [a[r, :, :n, :n].half() for a in out.attentions] if self.attentions else []
            self.rows[row] = (logits.half(), hidden, attentions)
        return out

    def _assemble(self, rows: list[int], width: int):
        entries = [self.rows[row] for row in rows]
        logits = [entry[0].float() for entry in entries]
        token_level = logits[0].dim() == 2
        out = SimpleNamespace(logits=_padded(logits, width, dims=1) if token_level else torch.stack(logits),
                              hidden_states=None, attentions=None)
        if self.hidden:
            out.hidden_states = tuple(_padded([entry[1][k].float() for entry in entries], width, dims=1)
                                      for k in range(len(entries[0][1])))
        if self.attentions:
            out.attentions = tuple(_padded([entry[2][k].float() for entry in entries], width, dims=2)
                                   for k in range(len(entries[0][2])))
        return out

    def to_json(self) -> dict:
        stored = sum(t.numel() for entry in self.rows.values()
                     for t in (entry[0], *entry[1], *entry[2])) * BYTES
        return {"examples": len(self.rows), "bytes": stored, "batches_from_memory": self.hits,
                "batches_computed": self.misses}


def _padded(tensors: list[Tensor], width: int, *, dims: int) -> Tensor:
    """Stack unpadded rows into one tensor zero-padded to ``width`` along their first ``dims`` sequence axes
    (tokens for logits and hidden states; queries and keys for attention maps, after the head axis)."""
    first = tensors[0]
    if dims == 1:
        out = first.new_zeros((len(tensors), width, *first.shape[1:]))
        for r, t in enumerate(tensors):
            out[r, :t.shape[0]] = t
        return out
    out = first.new_zeros((len(tensors), first.shape[0], width, width))
    for r, t in enumerate(tensors):
        out[r, :, :t.shape[1], :t.shape[2]] = t
    return out


def for_training(pair_, stages, batches, limit: int | None = None) -> tuple[TeacherCache | None, dict]:
    """The cache for a recovery run, or None with the reason: the set's outputs must fit ``limit`` bytes
    (:func:`default_limit`), and the batches must say which examples they hold."""
    hidden = any(stage.weights.get("hidden") for stage in stages)
    attentions = any(stage.weights.get("attention") for stage in stages)
    features = getattr(batches, "features", None)
    if features is None:
        return None, {"used": False, "why": "the batches do not name their examples"}
    family, teacher = pair_.family, pair_.teacher
    config = teacher.config
    token_level = getattr(features, "word_ids", None) is not None
    need = needed_bytes([len(ids) for ids in features.input_ids], layers=family.num_layers(config),
                        heads=family.num_heads(config), width=family.hidden_size(config), outputs=config.num_labels,
                        hidden=hidden, attentions=attentions, token_level=token_level)
    limit = default_limit() if limit is None else limit
    if need > limit:
        return None, {"used": False, "why": f"the teacher's outputs need {need / 2**30:.1f} GiB, over the "
                                            f"{limit / 2**30:.1f} GiB limit", "bytes_needed": need}
    return TeacherCache(teacher, hidden=hidden, attentions=attentions), {"used": True, "bytes_needed": need}
