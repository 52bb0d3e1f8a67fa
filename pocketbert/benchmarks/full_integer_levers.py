"""``pocketbert-bench full-integer-levers``: 16-bit activations where int8 hurts, measured, not assumed.

    pocketbert-bench full-integer-levers BUNDLE [--calibration-rows 256] [--limit N] [--threads 1]

The bundle's float TFLite export (``model.tflite``) is quantized by ai-edge-quantizer three ways, all with
int8 per-channel weights, int8 embedding tables and the attention mask and softmax in float (as
``tflite:int8-static`` ships):

* ``a8``: every activation int8 (``static_wi8_ai8``: what the converter ships);
* ``a16-residual``: the residual stream in int16 (each ADD and MUL: the residual adds and NoNorm), int8
  elsewhere (the matmuls' inputs and outputs), the mixed a16w8/a8w8 recipe;
* ``a16``: every activation int16 (``static_wi8_ai16``), the upper bound of what 16 bits can buy.

Each is calibrated on the task's first training sentences and scored on the dev split beside the float
export (score, top-1 agreement, size, latency at batch 1 on this CPU).  Results: ``command:
"full-integer-levers"``, one record per variant.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np

from . import schema
from .accuracy import AccuracyError, bundle_tokenizer, load_artifact, logits_per_example, open_bundle
from .full_integer import SEQ_LEN, _agreement, _latency_ms
from .gates import dev_data, recovery_record

VARIANTS = ("a8", "a16-residual", "a16")


def _recipe(variant: str, float_ops: list[tuple[str, str]]):
    from ai_edge_quantizer import qtyping, recipe
    from ai_edge_quantizer.recipe_manager import RecipeManager

    manager = RecipeManager()
    manager.load_quantization_recipe(recipe.static_wi8_ai16() if variant == "a16" else recipe.static_wi8_ai8())
    manager.add_weight_only_config(regex=".*", operation_name=qtyping.TFLOperationName.EMBEDDING_LOOKUP, num_bits=8)
    if variant == "a16-residual":
        for op in (qtyping.TFLOperationName.ADD, qtyping.TFLOperationName.MUL):
            manager.add_static_config(regex=".*", operation_name=op, activation_num_bits=16, weight_num_bits=8)
    for operation, scope in float_ops:  # the mask path and softmax, as the converter keeps them
        manager.add_quantization_config(regex=f"^{re.escape(scope)}$", operation_name=operation,
                                        algorithm_key=recipe.AlgorithmName.NO_QUANTIZE)
    return manager.get_quantization_recipe()


def _calibration(bundle, buckets: list[int], tokenizer, texts: list[str]) -> dict[str, list[dict]]:
    """signature -> rows of int32 inputs padded to its bucket (one row per sentence, as the converter calibrates);
    every signature of the file needs its own ranges."""
    from pocketbert.runtime.buckets import signature_name

    out = {}
    for bucket in buckets:
        encoded = tokenizer(texts, truncation=True, max_length=bucket, padding="max_length", return_tensors="np")
        out[signature_name(bucket)] = [{name: encoded[name][i:i + 1].astype(np.int32) for name in bundle.input_names}
                                       for i in range(len(texts))]
    return out


def quantize(float_path: Path, dest: Path, variant: str, calibration: dict) -> None:
    from ai_edge_quantizer import quantizer

    from pocketbert.converter.backends.tflite_graph import masked_softmax_ops, model_bytes
    from pocketbert.converter.backends.tflite_recipes import quiet as _quiet

    qt = quantizer.Quantizer(model_bytes(float_path), _recipe(variant, masked_softmax_ops(float_path)))
    with _quiet():
        calibrated = qt.calibrate(calibration)
        qt.quantize(calibrated, enable_progress_report=False).export_model(str(dest), overwrite=True)


def _float_tflite(path: Path, bundle, threads: int):
    """The runtime pipeline of the bundle's verified tflite:fp32, the file every lever quantizes."""
    if not any(a.recipe == "tflite:fp32" and a.passed for a in bundle.artifacts):
        raise AccuracyError(f"{path} has no verified tflite:fp32 artifact to quantize",
                            "convert with --format tflite (the float TFLite file is always built with it)")
    return load_artifact(path, "tflite:fp32", threads)


def measure(bundle_path: Path, *, calibration_rows: int = 256, limit: int | None = None, threads: int = 1,
            data_dir: str | None = None, progress: Callable[[str], None] = print) -> dict:
    import dataclasses

    from pocketbert.converter.data import load_task
    from pocketbert.converter.data.metrics import score
    from pocketbert.converter.quiet import silenced
    from pocketbert.runtime.backends import open_backend
    from pocketbert.runtime.machine import describe

    bundle = open_bundle(bundle_path)
    record = recovery_record(bundle.manifest)
    if record is None:
        raise AccuracyError(f"{bundle_path} records no task (not made from a recovered checkpoint)",
                            "convert a checkpoint written by `pocketbert-convert recover`")
    float_pipe = _float_tflite(bundle_path, bundle, threads)
    fp32 = float_pipe.artifact  # its path is the one the runtime checked (size, SHA-256)
    tokenizer = bundle_tokenizer(bundle)
    train = load_task(record["task"], "train", data_dir, limit=calibration_rows)
    texts = [" ".join(t) if isinstance(t, (list, tuple)) else t for t in train.texts]  # NER words, pairs
    examples = load_task(dev_data(record, bundle=bundle_path), "dev", data_dir, limit=limit)
    features = examples.encode(tokenizer, max_length=max(fp32.details["buckets"]), label_names=bundle.labels)
    data = schema.new_file("full-integer-levers", fast=limit is not None, machine=describe(), bundle=str(bundle_path))
    with silenced():
        reference = logits_per_example(float_pipe.backend, features, bundle.input_names)
    calibration = _calibration(bundle, fp32.details["buckets"], tokenizer, texts)
    for variant in VARIANTS:
        dest = Path(bundle_path) / f".lever-{variant}.tflite"
        try:
            quantize(fp32.path, dest, variant, calibration)
            artifact = dataclasses.replace(fp32, recipe=f"tflite:{variant}", precision="int8-static", path=dest)
            with silenced():
                backend = open_backend(artifact, bundle.input_names, threads)
                logits = logits_per_example(backend, features, bundle.input_names)
                latency = _latency_ms(backend, bundle.input_names, min(SEQ_LEN, max(fp32.details["buckets"])))
            value = score(features, logits)[examples.metric]
            data["results"].append({"bundle": str(bundle_path), "variant": variant, "task": record["task"],
                                    "metric": examples.metric, "score": value, "examples": len(features),
                                    "top1_agreement_with_float": _agreement(logits, reference),
                                    "size_bytes": dest.stat().st_size, "latency_ms": latency, "threads": threads})
            progress(f"  {variant}: {examples.metric} {value:.2f}, agreement "
                     f"{data['results'][-1]['top1_agreement_with_float']:.4f}, {latency:.1f} ms")
        finally:
            dest.unlink(missing_ok=True)
    return data
