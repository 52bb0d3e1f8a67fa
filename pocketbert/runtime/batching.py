"""Dynamic padding with length bucketing: rows of similar length share a batch, padded to its longest.

Sorting by length before cutting batches keeps padding (wasted model work) small without changing any
result: padded positions are masked out and the rows are returned in their original order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .buckets import smallest_bucket


def plan(lengths: Sequence[int], batch_size: int, buckets: Sequence[int] | None = None) -> list[list[int]]:
    """Row indices grouped into batches of at most ``batch_size`` rows of similar length; with
    ``buckets``, no batch holds rows of two buckets (a row's bucket: the smallest that holds it)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    if not buckets:
        return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    bucket_of = {n: smallest_bucket(list(buckets), n) for n in set(lengths)}
    batches: list[list[int]] = []
    for i in order:
        if not batches or len(batches[-1]) == batch_size or bucket_of[lengths[i]] != bucket_of[lengths[batches[-1][0]]]:
            batches.append([])
        batches[-1].append(i)
    return batches


def pad(rows: Sequence[tuple[Sequence[int], Sequence[int]]], input_names: Sequence[str],
        pad_id: int) -> dict[str, np.ndarray]:
    """``(ids, type_ids)`` rows -> named int64 arrays ``[batch, longest]`` (mask 0 on padding)."""
    if len(rows) == 1:  # one row (TFLite, dynamic int8 ONNX): nothing to pad, and this path runs per row
        row_ids, row_types = rows[0]
        ids = np.array([row_ids], dtype=np.int64)
        arrays = {"input_ids": ids, "attention_mask": np.ones_like(ids),
                  "token_type_ids": np.array([row_types], dtype=np.int64)}
        return {name: arrays[name] for name in input_names}
    longest = max(len(ids) for ids, _ in rows)
    ids = np.full((len(rows), longest), pad_id, dtype=np.int64)
    types = np.zeros((len(rows), longest), dtype=np.int64)
    mask = np.zeros((len(rows), longest), dtype=np.int64)
    for i, (row_ids, row_types) in enumerate(rows):
        n = len(row_ids)
        ids[i, :n] = row_ids
        types[i, :n] = row_types
        mask[i, :n] = 1
    arrays = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    return {name: arrays[name] for name in input_names}
