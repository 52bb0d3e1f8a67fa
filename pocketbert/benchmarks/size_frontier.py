"""``pocketbert-bench size-frontier``: size, dev score and latency of every TFLite file of phone-sized bundles.

    pocketbert-bench size-frontier BUNDLE… [--threads 1] [--seq-len 128] [--rounds 20] [--limit N] [--out DIR]

Phones run TFLite, so only each bundle's verified TFLite artifacts are measured (every precision, whichever
backend the bundle also has).  Per file: its size on disk (the whole .tflite, metadata included), its dev
score through the runtime on the task its recovery record names (as ``benchmarks gates`` scores it), the
teacher's score from that record, and the median latency of one row of ``--seq-len`` tokens.  The latency of
all the files, across all the bundles, is measured in alternating rounds (the converter's
``interleaved_latency_ms``), so the speed-ups against each bundle's ``tflite:fp32`` are ratios of one run.

Records (``command: "size-frontier"``)::

    {"bundle", "bundle_name", "task", "metric", "runner", "precision", "buckets", "size_bytes", "score",
     "teacher", "delta_vs_teacher", "gate", "examples", "truncated", "threads", "seq_len", "batch": 1,
     "p50_ms", "speedup_vs_fp32": float | null, "notes": [str]}
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from . import schema
from .accuracy import AccuracyError, bundle_tokenizer, check_files, load_artifact, logits_per_example, open_bundle
from .gates import MAX_DROP, dev_data, recovery_record

FP32 = "tflite:fp32"


def plan(bundle_paths: list[Path], seq_len: int) -> list[tuple]:
    """(path, bundle, recovery record, TFLite artifacts) of each bundle, or the first refusal: every bundle, and
    the size and SHA-256 of every file to be measured, is checked before minutes of scoring start."""
    planned = []
    for path in bundle_paths:
        bundle = open_bundle(Path(path))
        arts = [a for a in bundle.artifacts if a.passed and a.backend == "tflite"]
        if not arts:
            have = ", ".join(a.recipe + ("" if a.passed else " (not verified)") for a in bundle.artifacts)
            raise AccuracyError(f"{path} has no verified TFLite artifact (it has: {have or 'none'}); phones run "
                                "TFLite, so there is nothing to put on the frontier",
                                "convert it with --format tflite (e.g. --recipes tflite:fp32,tflite:int4-dynamic)")
        record = recovery_record(bundle.manifest)
        if record is None:
            raise AccuracyError(f"{path} records no teacher score (not made from a recovered checkpoint), so its "
                                "files' scores have nothing to be held against",
                                "convert a checkpoint written by `pocketbert-convert recover`, or convert with "
                                "--recover")
        if seq_len > bundle.input_length:
            raise AccuracyError(f"--seq-len {seq_len} is longer than {path} takes (its largest TFLite bucket is "
                                f"{bundle.input_length})", f"pass --seq-len {bundle.input_length} or less")
        check_files(bundle, arts)
        planned.append((Path(path), bundle, record, arts))
    return planned


def _feeds(bundle, seq_len: int) -> dict[str, np.ndarray]:
    """One row of ``seq_len`` attended tokens (ids inside the vocabulary), the same for every file of a bundle."""
    vocab = int(bundle.manifest.get("model_vocab_size") or 1000)
    ids = np.random.default_rng(0).integers(1000 if vocab > 2000 else 1, vocab, size=(1, seq_len))
    feeds = {name: np.ones((1, seq_len), dtype=np.int64) for name in bundle.input_names}
    feeds["input_ids"] = ids.astype(np.int64)
    if "token_type_ids" in feeds:
        feeds["token_type_ids"][:] = 0
    return feeds


def measure(bundle_paths: list[Path], *, threads: int = 1, seq_len: int = 128, rounds: int = 20,
            limit: int | None = None, data_dir: str | None = None, progress: Callable[[str], None] = print) -> dict:
    from pocketbert.converter.backends.base import interleaved_latency_ms
    from pocketbert.converter.data import load_task
    from pocketbert.converter.data.metrics import score
    from pocketbert.converter.errors import ConverterInputError
    from pocketbert.converter.quiet import silenced
    from pocketbert.runtime import machine

    planned = plan(bundle_paths, seq_len)
    command = (f"pocketbert-bench size-frontier {' '.join(map(str, bundle_paths))} --threads {threads} "
               f"--seq-len {seq_len} --rounds {rounds}" + (f" --limit {limit}" if limit else ""))
    data = schema.new_file("size-frontier", fast=False, machine=machine.describe(), command_line=command,
                           settings={"threads": threads, "seq_len": seq_len, "batch": 1, "rounds": rounds,
                                     "limit": limit})
    rows, runners = [], []
    for path, bundle, record, arts in planned:
        metric, teacher = record["metric"], record["dev_scores"]["teacher"][record["metric"]]
        try:
            examples = load_task(dev_data(record, bundle=path), "dev", data_dir, limit=limit)
            max_length = min(128, bundle.input_length)  # as every runtime truncates this bundle (accuracy.py)
            features = examples.encode(bundle_tokenizer(bundle), max_length=max_length, label_names=bundle.labels)
        except ConverterInputError as exc:
            raise AccuracyError(exc.problem, exc.fix) from exc
        feeds = _feeds(bundle, seq_len)
        for art in arts:
            backend = load_artifact(path, art.recipe, threads).backend
            with silenced():
                value = score(features, logits_per_example(backend, features, bundle.input_names))[metric]
            runners.append(lambda _, run=backend.run, feeds=feeds: run(feeds))
            rows.append({"bundle": str(path), "bundle_name": path.name, "task": record["task"], "metric": metric,
                         "runner": art.recipe, "precision": art.precision, "buckets": art.details.get("buckets"),
                         "size_bytes": art.path.stat().st_size, "score": value, "teacher": teacher,
                         "delta_vs_teacher": value - teacher, "gate": teacher - MAX_DROP,
                         "examples": len(features), "truncated": features.truncated, "threads": threads,
                         "seq_len": seq_len, "batch": 1, "notes": []})
            progress(f"  {path.name} {art.recipe}: {art.path.stat().st_size / 1e6:.1f} MB, {metric} {value:.2f} "
                     f"(teacher {teacher:.2f}, {len(features)} examples)")
    progress(f"latency: {len(runners)} files, batch 1 × {seq_len} tokens, {threads} thread(s), {rounds} alternating "
             "rounds")
    with silenced():
        medians = interleaved_latency_ms(runners, {}, rounds=rounds)
    for row, ms in zip(rows, medians):
        row["p50_ms"] = ms
    for row in rows:
        fp32 = next((r for r in rows if r["bundle"] == row["bundle"] and r["runner"] == FP32), None)
        row["speedup_vs_fp32"] = fp32["p50_ms"] / row["p50_ms"] if fp32 else None
        if fp32 is None:
            row["notes"].append(f"{row['bundle_name']} has no {FP32} file: no speed-up against it")
    data["machine"]["load_average_end"] = machine.load_average()
    data["results"] = rows
    return data
