"""Stage 5, verify: does each exported model compute what the PyTorch model computes?

* fp32 artifacts: logits on fixed inputs (padding, several lengths, batch > 1, sentence pairs,
  random ids at the longest length) within a tolerance scaled to the logits' magnitude.
* lower precisions: agreement with the float PyTorch model on real sentences: cosine similarity
  of the logit matrices, top-1 agreement, relative and maximum drift.
* nonorm/relu: the same comparison between the original and the transformed PyTorch model, to
  measure (not guess) what they changed.

Logits are compared only where the attention mask is 1 (token classification), per row otherwise.
For token classification the entities are compared too: most tokens are ``O``, so a model can keep 99%
of its token predictions while losing every entity.  ``entity_f1`` is what a user measures with the
runtime's default ``simple`` aggregation: every word piece's tag, grouped into spans as the runtime groups
them.  A word's later pieces are never trained (their labels are ignored), so int8 flips them more than
first pieces: reading first pieces only (``word_entity_f1``, the task metric's reading) said 0.991 for the
NER demo's onnx:int8-dynamic where its entities through the runtime agree at 0.985.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch

# fp32: |Δ| ≤ FP32_TOLERANCE · max(1, max|logit|): float re-association across kernels is ~1e-6.
FP32_TOLERANCE = 1e-4
# fp16 weights: a |Δlogit| bound scaled like fp32's, and a scale-free cosine bar beside it
FP16_TOLERANCE = 1e-2
FP16_MIN_COSINE = 0.9999
INT8_MIN_COSINE = 0.99
INT8_MIN_AGREEMENT = 0.95
# What the int8 accuracy ladder (smoothing, float fallback) aims for on the calibration text: at most
# one changed prediction in 200, the agreement analogue of "int8 costs at most 0.5 points".  Below
# it but above the bar, the cheapest attempt that meets the bar ships and the manifest says so.
INT8_TARGET_AGREEMENT = 0.995
# NER: entity-level F1 of the int8 model's entities against the float model's, on real sentences.
INT8_MIN_ENTITY_F1 = 0.90
# int4 weights have 16 levels, not 256: on the SST-2 demo the int4 file's logits reach cosine 0.984 with
# the float model's and flip 4% of its near-even answers, at the same dev accuracy.  A broken file (a wrong
# scale, a kernel bug) lands far below; the task's accuracy is the gates' to judge.  The ladder aims at the
# bar itself: int4 buys size, and keeping Linears in int8 to agree more would spend it.
INT4_MIN_COSINE = 0.95


@dataclass(frozen=True)
class Bars:
    """What an integer file must agree with the float model by, and what its accuracy ladder aims at."""

    min_cosine: float
    min_agreement: float
    target_agreement: float
    min_entity_f1: float

    def to_json(self, entities: bool) -> dict:
        bars = {"min_cosine": self.min_cosine, "min_top1_agreement": self.min_agreement,
                "ladder_target_top1_agreement": self.target_agreement}
        return {**bars, "min_entity_f1": self.min_entity_f1} if entities else bars


def integer_bars(precision: str, min_cosine: float, min_agreement: float, target_agreement: float,
                 min_entity_f1: float) -> Bars:
    """The int8 bars (the converter's --int8-* options), or int4's: its own cosine bar, the ladder at the bar."""
    if precision.startswith("int4"):
        return Bars(min(min_cosine, INT4_MIN_COSINE), min_agreement, min_agreement, min_entity_f1)
    return Bars(min_cosine, min_agreement, target_agreement, min_entity_f1)
IOB_PREFIXES = ("B-", "I-", "E-", "S-")


@dataclass(frozen=True)
class EntityView:
    """How to read entities from token logits: each word's first piece (per batch, as the task's metric
    reads a word's tag) and the label names."""

    word_starts: list[np.ndarray]
    labels: list[str]

    def tags(self, batches: Sequence[np.ndarray]) -> list[list[str]]:
        """One IOB2 tag list per text; labels without a prefix (``PER``) read as ``I-PER`` (IO scheme)."""
        names = [n if n == "O" or n[:2] in IOB_PREFIXES else f"I-{n}" for n in self.labels]
        return [[names[i] for i in row[starts].argmax(-1)]
                for logits, batch_starts in zip(batches, self.word_starts)
                for row, starts in zip(logits, batch_starts)]


def word_entity_agreement(ref_batches: Sequence[np.ndarray], out_batches: Sequence[np.ndarray],
                          view: EntityView) -> tuple[float, int]:
    """(entity F1 of ``out`` taking ``ref``'s entities as the truth, the number of ``ref`` entities), words
    read at their first piece with seqeval's conlleval rules, as the task metric.  Neither finding any
    entity is agreement (1.0)."""
    from seqeval.metrics import f1_score
    from seqeval.metrics.sequence_labeling import get_entities

    ref, out = view.tags(ref_batches), view.tags(out_batches)
    entities = len(get_entities(ref))
    if entities == 0 and not get_entities(out):
        return 1.0, 0
    return float(f1_score(ref, out, zero_division=0)), entities


def simple_entities(labels: Sequence[str], tag_ids: Sequence[int]) -> set[tuple[int, int, str]]:
    """The spans (first piece, last piece, type) the runtime's ``simple`` aggregation reports for one text's
    word pieces (special tokens left out): ``B-X`` starts an entity, ``I-X`` (or a tag without prefix)
    continues an adjacent ``X`` or starts one, ``O`` ends it."""
    from pocketbert.runtime.ner import split_tag

    spans, start, kind = set(), None, None
    for i, tag in enumerate(tag_ids):
        label = labels[tag]
        bi, this = split_tag(label)
        if start is not None and (label == "O" or this != kind or bi == "B"):
            spans.add((start, i - 1, kind))
            start = None
        if label != "O" and start is None:
            start, kind = i, this
    if start is not None:
        spans.add((start, len(tag_ids) - 1, kind))
    return spans


def entity_agreement(ref_batches: Sequence[np.ndarray], out_batches: Sequence[np.ndarray],
                     masks: Sequence[np.ndarray], labels: Sequence[str]) -> tuple[float, int]:
    """(F1 of ``out``'s entity spans taking ``ref``'s as the truth, the number of ``ref`` spans), both read as
    the runtime's ``simple`` aggregation reads a text: every word piece between [CLS] and [SEP] (the first and
    last attended position of each row).  Neither finding any entity is agreement (1.0)."""
    found = ref_count = out_count = 0
    for ref, out, mask in zip(ref_batches, out_batches, masks):
        for r, o, m in zip(ref, out, mask):
            n = int(m.sum())
            a = simple_entities(labels, r[1:n - 1].argmax(-1).tolist())
            b = simple_entities(labels, o[1:n - 1].argmax(-1).tolist())
            found, ref_count, out_count = found + len(a & b), ref_count + len(a), out_count + len(b)
    if ref_count + out_count == 0:
        return 1.0, 0
    return 2 * found / (ref_count + out_count), ref_count


@dataclass
class Comparison:
    """How far ``out`` is from ``ref`` over the compared rows (sentences, or tokens for NER)."""

    rows: int
    max_abs: float
    mean_abs: float
    rel_drift: float  # ||out − ref|| / ||ref||
    cosine: float  # cosine similarity of the flattened logit matrices
    top1_agreement: float
    entity_f1: float | None = None  # token classification: the runtime's simple aggregation, see entity_agreement
    entities: int | None = None
    word_entity_f1: float | None = None  # words read at their first piece, see word_entity_agreement

    def to_json(self) -> dict:
        # significant digits, not decimals: a 4e-8 parity must not print as 0
        return {k: (float(f"{v:.5g}") if isinstance(v, float) else v) for k, v in asdict(self).items()
                if v is not None}

    def int8_failure(self, min_cosine: float, min_agreement: float, min_entity_f1: float) -> str | None:
        """Why these figures miss the int8 bar, or None when they meet it."""
        misses = []
        if self.cosine < min_cosine:
            misses.append(f"cosine {self.cosine:.4f} (needs ≥ {min_cosine})")
        if self.top1_agreement < min_agreement:
            misses.append(f"top-1 agreement {self.top1_agreement:.1%} (needs ≥ {min_agreement:.0%})")
        if self.entity_f1 is not None and self.entity_f1 < min_entity_f1:
            misses.append(f"entity F1 against the float model's {self.entities} entities (simple aggregation) "
                          f"{self.entity_f1:.1%} (needs ≥ {min_entity_f1:.0%})")
        return ", ".join(misses) or None


def _rows(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    if logits.ndim == 3:  # token classification: keep real tokens only
        return logits[mask.astype(bool)]
    return logits


def compare(ref_batches: Sequence[np.ndarray], out_batches: Sequence[np.ndarray],
            masks: Sequence[np.ndarray], entities: EntityView | None = None) -> Comparison:
    ref = np.concatenate([_rows(r, m) for r, m in zip(ref_batches, masks)]).astype(np.float64)
    out = np.concatenate([_rows(o, m) for o, m in zip(out_batches, masks)]).astype(np.float64)
    diff = np.abs(out - ref)
    norm = np.linalg.norm(ref) * np.linalg.norm(out)
    entity_f1, count = entity_agreement(ref_batches, out_batches, masks, entities.labels) if entities else (None, None)
    words = word_entity_agreement(ref_batches, out_batches, entities)[0] if entities else None
    return Comparison(
        rows=int(ref.shape[0]),
        max_abs=float(diff.max()),
        mean_abs=float(diff.mean()),
        rel_drift=float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-12)),
        cosine=float((ref * out).sum() / norm) if norm > 0 else 1.0,
        top1_agreement=float((ref.argmax(-1) == out.argmax(-1)).mean()),
        entity_f1=entity_f1,
        entities=count,
        word_entity_f1=words,
    )


@torch.no_grad()
def torch_logits(model: torch.nn.Module, batches: Sequence[dict[str, np.ndarray]]) -> list[np.ndarray]:
    return [model(*[torch.from_numpy(b[name]) for name in model.input_names]).numpy() for b in batches]


@torch.no_grad()
def unpadded_logits(model: torch.nn.Module, batches: Sequence[dict[str, np.ndarray]],
                    computed: dict[bytes, np.ndarray] | None = None) -> list[np.ndarray]:
    """``torch_logits`` without the padding: the batches' rows run sorted by length, a batch's worth at a time,
    each group cut to its longest row (:func:`unpadded_batches`); each row's logits go back to its place, and a
    token's beyond the row's length are zeros (masked positions, never compared).

    The float model masks padding out of attention, so a text's logits do not depend on how far it is
    padded or what it is batched with (up to float summation order, 1e-6): a reference for judging int8 files,
    which pad calibration text to 64 and to every TFLite bucket, costs a fraction of running every padding
    column (the NER demo's 1,024 calibration texts: about a third of 64 positions each).  ``computed``
    (content -> logits) shares the work between lengths: a group of rows the same once trimmed runs once.
    Parity references keep ``torch_logits``, on exactly the exported files' inputs."""
    computed = {} if computed is None else computed
    if not batches:
        return []
    out = [None] * len(batches)
    places = [(index, row) for index, batch in enumerate(batches) for row in range(len(batch["attention_mask"]))]
    lengths = np.concatenate([b["attention_mask"].sum(axis=1) for b in batches])
    grouped = unpadded_batches([{name: b[name] for name in model.input_names} for b in batches])
    for group, chosen in zip(grouped, _by_length(lengths, len(batches[0]["attention_mask"]))):
        trimmed = [np.ascontiguousarray(group[name]) for name in model.input_names]
        key = b"|".join(t.tobytes() for t in trimmed) + repr(trimmed[0].shape).encode()
        if key not in computed:
            computed[key] = model(*[torch.from_numpy(t) for t in trimmed]).numpy()
        for logits, place, length in zip(computed[key], chosen, lengths[chosen]):
            index, row = places[place]
            tokens = logits.ndim == 2  # a row's token logits: (positions, labels)
            if out[index] is None:
                rows = batches[index]["input_ids"].shape if tokens else batches[index]["input_ids"].shape[:1]
                out[index] = np.zeros((*rows, logits.shape[-1]), logits.dtype)
            if tokens:
                out[index][row, :length] = logits[:length]
            else:
                out[index][row] = logits
    return out


def unpadded_batches(batches: Sequence[dict[str, np.ndarray]],
                     size: int | None = None) -> list[dict[str, np.ndarray]]:
    """The batches' rows (padded on the right) sorted by length, longest first, re-batched ``size`` rows at a
    time (default: the first batch's size), each batch cut to its longest row.  Inputs without an attention
    mask are returned as given."""
    if "attention_mask" not in batches[0]:
        return list(batches)
    rows = {name: _stacked([b[name] for b in batches]) for name in batches[0]}
    lengths = rows["attention_mask"].sum(axis=1)
    return [{name: value[chosen, :int(lengths[chosen].max())] for name, value in rows.items()}
            for chosen in _by_length(lengths, size or len(batches[0]["attention_mask"]))]


def regrouped(arrays: Sequence[np.ndarray], batches: Sequence[dict[str, np.ndarray]], *,
              sequence_axis: bool) -> list[np.ndarray]:
    """Per-batch row arrays of ``batches`` (their logits, word starts) regrouped as :func:`unpadded_batches`
    regroups the batches' rows; ``sequence_axis``: the arrays' second axis is the batches' (token logits, word
    starts), cut as each batch is."""
    lengths = np.concatenate([b["attention_mask"].sum(axis=1) for b in batches])
    rows = np.concatenate(arrays)  # the batches of one Judged set: one width
    return [rows[chosen, :int(lengths[chosen].max())] if sequence_axis else rows[chosen]
            for chosen in _by_length(lengths, len(batches[0]["attention_mask"]))]


def _stacked(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """Rows of batches of any widths in one array, each right-padded with zeros (pad id, mask 0) to the widest."""
    width = max(a.shape[1] for a in arrays)
    return np.concatenate([np.pad(a, ((0, 0), (0, width - a.shape[1]))) for a in arrays])


def _by_length(lengths: np.ndarray, size: int) -> list[np.ndarray]:
    """Row indices, longest first (stable), ``size`` at a time."""
    order = np.argsort(-lengths, kind="stable")
    return [order[start:start + size] for start in range(0, len(order), size)]


def runner_logits(runner: Callable, batches: Sequence[dict[str, np.ndarray]]) -> list[np.ndarray]:
    return [runner(b) for b in batches]


def parity_inputs(encode: Callable, texts: Sequence, *, max_length: int, vocab_size: int,
                  special_ids: Sequence[int], seed: int = 0) -> list[dict[str, np.ndarray]]:
    """Fixed inputs for float parity: one text; a padded batch of mixed lengths; sentence pairs;
    long texts; random token ids at the longest length (exercises every position and rare ids)."""
    singles = [t if isinstance(t, str) else t[0] for t in texts]
    longest = min(max_length, 256)
    long_text = " ".join(singles[:64])
    batches = [
        encode(singles[:1]),
        encode(singles[1:5] + ["ok"]),
        encode([(singles[5 % len(singles)], singles[6 % len(singles)]),
                (singles[7 % len(singles)], singles[8 % len(singles)] + " " + singles[9 % len(singles)])]),
        encode([long_text, singles[0]], max_length=longest),
    ]
    rng = np.random.default_rng(seed)
    template = encode(["x"], pad_to=longest)
    ids = rng.integers(0, vocab_size, size=(2, longest), dtype=np.int64)
    ids[:, 0], ids[:, -1] = special_ids[0], special_ids[1]
    rand = {name: np.repeat(value, 2, axis=0) for name, value in template.items()}
    rand["input_ids"] = ids
    rand["attention_mask"] = np.ones_like(ids)
    rand["attention_mask"][1, longest // 2:] = 0  # second row: half padding
    if "token_type_ids" in rand:
        rand["token_type_ids"] = np.zeros_like(ids)
        rand["token_type_ids"][0, longest // 2:] = 1
    batches.append(rand)
    return batches


def fp32_tolerance(ref_batches: Sequence[np.ndarray]) -> float:
    scale = max(float(np.abs(r).max()) for r in ref_batches)
    return FP32_TOLERANCE * max(1.0, scale)


def fp16_tolerance(ref_batches: Sequence[np.ndarray]) -> float:
    """fp16 weights round each weight by up to 2^-11 relative: logits move by ~1e-3 relative."""
    scale = max(float(np.abs(r).max()) for r in ref_batches)
    return FP16_TOLERANCE * max(1.0, scale)
