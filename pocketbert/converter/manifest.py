"""The manifest a conversion writes, built once from the finished
:class:`~pocketbert.converter.conversion.Conversion`, in the order of the contract's schema
(``contract.MANIFEST_FIELDS``, which the runtime validates against; documented in docs/manifest.md)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING

from pocketbert.runtime import machine
from pocketbert.runtime.contract import INPUT_AXES, SCHEMA_VERSION, in_schema_order

from . import __version__
from .conversion import ArtifactResult, Conversion
from .checkpoints.training_record import training_record

if TYPE_CHECKING:
    from .checkpoints.loading import Loaded


def build(conversion: Conversion) -> dict:
    """The manifest of a conversion whose stages up to verify have run."""
    load, transform = conversion.load, conversion.transform
    loaded = load.loaded
    return in_schema_order({
        "schema_version": SCHEMA_VERSION,
        "pocketbert_version": __version__,
        "task": loaded.task,
        **_head(loaded),
        "family": loaded.family.name,
        "model_type": loaded.config.model_type,
        "architecture": type(loaded.model).__name__,
        "source": _source(loaded),
        "opts": list(conversion.plan.opts),
        "transforms": [r.to_json() for r in transform.reports],
        "max_sequence_length": load.max_length,
        "model_vocab_size": loaded.config.vocab_size,
        "inputs": [{"name": n, "dtype": "int64", "shape": list(INPUT_AXES)} for n in load.encoder.input_names],
        "outputs": [{"name": "logits", "dtype": "float32", "shape": _logits_shape(loaded)}],
        "tokenizer": conversion.export.tokenizer_settings,
        "artifacts": [_artifact(r, conversion) for r in conversion.verify.results],
        "verification": _verification(conversion),
        "notes": conversion.notes,
        "recovery": transform.recovered,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "stage_seconds": {k: round(v, 2) for k, v in conversion.timings.items()},
    })


def _head(loaded: Loaded) -> dict:
    if loaded.task != "classification":
        return {"problem_type": "token_classification", "labels": loaded.labels}
    problem_type = getattr(loaded.config, "problem_type", None)
    if problem_type is None:
        problem_type = "regression" if len(loaded.labels) == 1 else "single_label_classification"
    return {"problem_type": problem_type, "labels": loaded.labels}


def _logits_shape(loaded: Loaded) -> list:
    classes = len(loaded.labels)
    return ["batch", classes] if loaded.task == "classification" else ["batch", "sequence", classes]


def _source(loaded: Loaded) -> dict:
    return {"checkpoint": str(loaded.checkpoint), "builtin": loaded.builtin,
            "head_initialized": loaded.head_initialized,
            "parameters": sum(p.numel() for p in loaded.model.parameters()),
            # how a PocketBERT-trained checkpoint was made (finetune/recover/trim-vocab): scores, recipe
            "training": training_record(loaded.checkpoint)}


def _artifact(r: ArtifactResult, conversion: Conversion) -> dict:
    backend, precision = r.recipe.split(":")
    latency = None
    if r.latency_ms is not None:
        feeds = conversion.transform.latency_feeds
        latency = {"batch": 1, "sequence": int(feeds["input_ids"].shape[1]), "threads": conversion.options.threads,
                   "median": round(r.latency_ms, 3), "rounds_ms": r.latency_rounds, "quiet": r.latency_quiet}
    return {"recipe": r.recipe, "backend": backend, "precision": precision, "file": r.file, "details": r.details,
            "verification": r.verification, "latency_ms": latency}


def _verification(conversion: Conversion) -> dict:
    inputs, damage = conversion.load.inputs, conversion.transform.damage
    return {
        "reference": "PyTorch float32 model after the transforms (original checkpoint for the damage figures)",
        "texts": inputs.source, "samples": len(inputs.texts), "max_length": conversion.load.verify_length,
        "sentence_pairs": bool(inputs.texts) and not isinstance(inputs.texts[0], str),
        "transform_damage": damage.to_json() if damage else None,
        # int8 kernels differ by instruction set: say which ones the figures above came from
        "machine": machine.verifying_machine(),
    }
