"""The manifest a conversion writes, built once from the finished
:class:`~pocketbert.converter.conversion.Conversion`, in the order of the contract's schema
(``contract.MANIFEST_FIELDS``, which the runtime validates against; documented in docs/manifest.md)."""

from __future__ import annotations

from datetime import datetime, timezone

from pocketbert.runtime import machine
from pocketbert.runtime.contract import INPUT_AXES, SCHEMA_VERSION, in_schema_order

from . import __version__
from .conversion import ArtifactResult, Conversion
from .training_record import training_record


def build(c: Conversion) -> dict:
    loaded = c.loaded
    return in_schema_order({
        "schema_version": SCHEMA_VERSION,
        "pocketbert_version": __version__,
        "task": loaded.task,
        **_head(c),
        "family": loaded.family.name,
        "model_type": loaded.config.model_type,
        "architecture": type(loaded.model).__name__,
        "source": _source(c),
        "opts": list(c.plan.opts),
        "transforms": [r.to_json() for r in c.reports],
        "max_sequence_length": c.max_length,
        "model_vocab_size": loaded.config.vocab_size,
        "inputs": [{"name": n, "dtype": "int64", "shape": list(INPUT_AXES)} for n in c.encoder.input_names],
        "outputs": [{"name": "logits", "dtype": "float32", "shape": _logits_shape(c)}],
        "tokenizer": c.tokenizer_settings,
        "artifacts": [_artifact(r, c) for r in c.results],
        "verification": _verification(c),
        "notes": c.notes,
        "recovery": c.recovered,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "stage_seconds": {k: round(v, 2) for k, v in c.timings.items()},
    })


def _head(c: Conversion) -> dict:
    loaded = c.loaded
    if loaded.task != "classification":
        return {"problem_type": "token_classification", "labels": loaded.labels}
    problem_type = getattr(loaded.config, "problem_type", None)
    if problem_type is None:
        problem_type = "regression" if len(loaded.labels) == 1 else "single_label_classification"
    return {"problem_type": problem_type, "labels": loaded.labels}


def _logits_shape(c: Conversion) -> list:
    classes = len(c.loaded.labels)
    return ["batch", classes] if c.loaded.task == "classification" else ["batch", "sequence", classes]


def _source(c: Conversion) -> dict:
    loaded = c.loaded
    return {"checkpoint": str(loaded.checkpoint), "builtin": loaded.builtin,
            "head_initialized": loaded.head_initialized,
            "parameters": sum(p.numel() for p in loaded.model.parameters()),
            # how a PocketBERT-trained checkpoint was made (finetune/recover/trim-vocab): scores, recipe
            "training": training_record(loaded.checkpoint)}


def _artifact(r: ArtifactResult, c: Conversion) -> dict:
    backend, precision = r.recipe.split(":")
    latency = None
    if r.latency_ms is not None:
        latency = {"batch": 1, "sequence": int(c.latency_feeds["input_ids"].shape[1]), "threads": c.options.threads,
                   "median": round(r.latency_ms, 3)}
    return {"recipe": r.recipe, "backend": backend, "precision": precision, "file": r.file, "details": r.details,
            "verification": r.verification, "latency_ms": latency}


def _verification(c: Conversion) -> dict:
    return {
        "reference": "PyTorch float32 model after the transforms (original checkpoint for the damage figures)",
        "texts": c.inputs.source, "samples": len(c.inputs.texts), "max_length": c.verify_length,
        "sentence_pairs": bool(c.inputs.texts) and not isinstance(c.inputs.texts[0], str),
        "transform_damage": c.damage.to_json() if c.damage else None,
        # int8 kernels differ by instruction set: say which ones the figures above came from
        "machine": machine.verifying_machine(),
    }
