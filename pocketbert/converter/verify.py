"""Stage 5, verify: does each exported model compute what the PyTorch model computes?

* fp32 artifacts: logits on fixed inputs (padding, several lengths, batch > 1, sentence pairs,
  random ids at the longest length) within a tolerance scaled to the logits' magnitude.
* lower precisions: agreement with the float PyTorch model on real sentences: cosine similarity
  of the logit matrices, top-1 agreement, relative and maximum drift.
* nonorm/relu: the same comparison between the original and the transformed PyTorch model, to
  measure (not guess) what they changed.

Logits are compared only where the attention mask is 1 (token classification), per row otherwise.
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


@dataclass
class Comparison:
    """How far ``out`` is from ``ref`` over the compared rows (sentences, or tokens for NER)."""

    rows: int
    max_abs: float
    mean_abs: float
    rel_drift: float  # ||out − ref|| / ||ref||
    cosine: float  # cosine similarity of the flattened logit matrices
    top1_agreement: float

    def to_json(self) -> dict:
        # significant digits, not decimals: a 4e-8 parity must not print as 0
        return {k: (float(f"{v:.5g}") if isinstance(v, float) else v) for k, v in asdict(self).items()}


def _rows(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    if logits.ndim == 3:  # token classification: keep real tokens only
        return logits[mask.astype(bool)]
    return logits


def compare(ref_batches: Sequence[np.ndarray], out_batches: Sequence[np.ndarray],
            masks: Sequence[np.ndarray]) -> Comparison:
    ref = np.concatenate([_rows(r, m) for r, m in zip(ref_batches, masks)]).astype(np.float64)
    out = np.concatenate([_rows(o, m) for o, m in zip(out_batches, masks)]).astype(np.float64)
    diff = np.abs(out - ref)
    norm = np.linalg.norm(ref) * np.linalg.norm(out)
    return Comparison(
        rows=int(ref.shape[0]),
        max_abs=float(diff.max()),
        mean_abs=float(diff.mean()),
        rel_drift=float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-12)),
        cosine=float((ref * out).sum() / norm) if norm > 0 else 1.0,
        top1_agreement=float((ref.argmax(-1) == out.argmax(-1)).mean()),
    )


@torch.no_grad()
def torch_logits(model: torch.nn.Module, batches: Sequence[dict[str, np.ndarray]]) -> list[np.ndarray]:
    return [model(*[torch.from_numpy(b[name]) for name in model.input_names]).numpy() for b in batches]


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
