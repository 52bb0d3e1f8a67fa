"""``pocketbert-bench full-integer``: what full-integer int8 costs and keeps, per artifact of each bundle.

    pocketbert-bench full-integer BUNDLE… [--limit N] [--threads 1] [--out results/full-integer.json]

Every artifact of each bundle is scored on its task's dev split as the runtime runs it (the scoring of
:mod:`benchmarks.accuracy`), beside the bundle's own float export of the same backend: dev score, its delta,
top-1 agreement with the float export (per sentence, or per real token for NER), file size, the ops left
in float (``details.float_ops`` of TFLite int8-static artifacts), the Linears kept in float by the
accuracy ladder, and the median latency at batch 1, sequence 128 (or the bundle's largest bucket if shorter), on this CPU.  A bundle converted from a
``recover --qat`` checkpoint is labelled "QAT", any other "post-training".

Records (``command: "full-integer"``)::

    {"model", "bundle", "training": "post-training" | "qat", "runner", "backend", "precision", "task",
     "metric", "score", "float_score", "delta_vs_float", "top1_agreement_with_float", "examples",
     "size_bytes", "float_ops": int | null, "float_op_list": {op: count} | null, "linears_in_float": int | null,
     "equalized": bool | null (int8-static: residual stream equalised), "calibration_texts": int | null
     (int8-static: the texts its activation ranges were calibrated on), "latency_ms": float, "threads": int,
     "seq_len": 128}
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from . import schema
from .accuracy import AccuracyError, bundle_tokenizer, check_files, load_artifact, logits_per_example, open_bundle
from .gates import dev_data, recovery_record

SEQ_LEN = 128


def _agreement(logits: list[np.ndarray], reference: list[np.ndarray]) -> float:
    """Share of equal argmaxes: one per sentence, or one per token (logits are cut to each example's length)."""
    same = [np.argmax(a, -1) == np.argmax(b, -1) for a, b in zip(logits, reference)]
    return float(np.concatenate([np.atleast_1d(s) for s in same]).mean())


def _latency_ms(backend, input_names: list[str], length: int, runs: int = 20) -> float:
    """Median wall time of one row of ``length`` attended tokens (batch 1)."""
    feeds = {name: np.ones((1, length), dtype=np.int64) for name in input_names}
    if "token_type_ids" in feeds:
        feeds["token_type_ids"][:] = 0
    backend.run(feeds)  # first run: allocation, delegate set-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        backend.run(feeds)
        times.append((time.perf_counter() - start) * 1000)
    return float(np.median(times))


def _is_qat(manifest: dict) -> bool:
    record = recovery_record(manifest) or {}
    return bool((record.get("recipe") or {}).get("qat"))


def measure_bundle(path: Path, *, limit: int | None = None, threads: int = 1, data_dir: str | None = None,
                   progress: Callable[[str], None] = print) -> list[dict]:
    from pocketbert.converter.data import load_task
    from pocketbert.converter.data.metrics import score
    from pocketbert.converter.quiet import silenced

    bundle = open_bundle(path)
    record = recovery_record(bundle.manifest)
    if record is None:
        raise AccuracyError(f"{path} records no task (not made from a recovered checkpoint)",
                            "convert a checkpoint written by `pocketbert-convert recover`")
    examples = load_task(dev_data(record, bundle=path), "dev", data_dir, limit=limit)
    tokenizer = bundle_tokenizer(bundle)
    arts = [a for a in bundle.artifacts if a.passed]
    max_length = min(128, bundle.input_length)  # as every runtime truncates this bundle
    features = examples.encode(tokenizer, max_length=max_length, label_names=bundle.labels)
    measured = {}
    for art in arts:
        backend = load_artifact(path, art.recipe, threads).backend
        with silenced():
            logits = logits_per_example(backend, features, bundle.input_names)
            latency = _latency_ms(backend, bundle.input_names, min(SEQ_LEN, max_length))
        measured[art.recipe] = (art, logits, score(features, logits)[examples.metric], latency)
        progress(f"  {path.name} {art.recipe}: {examples.metric} {measured[art.recipe][2]:.2f}, {latency:.1f} ms")
    return [{**_record(bundle, path, record, examples.metric, features=features, measured=measured, recipe=recipe,
                       threads=threads),
             "seq_len": min(SEQ_LEN, max_length)} for recipe in measured]


def _record(bundle, path: Path, record: dict, metric: str, features, measured: dict, recipe: str,
            threads: int) -> dict:
    art, logits, value, latency = measured[recipe]
    float_art, float_logits, float_score, _ = measured.get(f"{art.backend}:fp32", (None, None, None, None))
    float_ops = art.details.get("float_ops")
    fallback = art.details.get("float_fallback") or {}
    return {"model": bundle.manifest.get("source", {}).get("builtin") or Path(path).name,
            "bundle": str(path), "training": "qat" if _is_qat(bundle.manifest) else "post-training",
            "runner": recipe, "backend": art.backend, "precision": art.precision, "task": record["task"],
            "metric": metric, "score": value, "float_score": float_score,
            "delta_vs_float": None if float_score is None else value - float_score,
            "top1_agreement_with_float": None if float_logits is None else _agreement(logits, float_logits),
            "examples": len(features), "size_bytes": art.path.stat().st_size,
            "float_ops": float_ops["count"] if float_ops else None,
            "float_op_list": float_ops["ops"] if float_ops else None,
            "linears_in_float": fallback.get("linears_in_float"),
            "equalized": bool(art.details.get("equalization")) if art.precision == "int8-static" else None,
            "calibration_texts": art.details.get("calibration_texts") if art.precision == "int8-static" else None,
            "latency_ms": latency, "threads": threads}


def measure(bundles: list[Path], *, limit: int | None = None, threads: int = 1, data_dir: str | None = None,
            progress: Callable[[str], None] = print) -> dict:
    from pocketbert.runtime.machine import describe

    data = schema.new_file("full-integer", fast=limit is not None, machine=describe(), limit=limit,
                           command_line=f"pocketbert-bench full-integer {' '.join(map(str, bundles))} "
                                        f"--threads {threads}" + (f" --limit {limit}" if limit else ""))
    for path in bundles:  # every bundle's files checked before the first is measured
        bundle = open_bundle(Path(path))
        check_files(bundle, [a for a in bundle.artifacts if a.passed])
    for path in bundles:
        data["results"] += measure_bundle(Path(path), limit=limit, threads=threads, data_dir=data_dir,
                                          progress=progress)
    return data
