"""The bundle contract: the names and rules that the converter writes and every reader follows.

One definition, torch-free, owned by the runtime: the converter imports it (and verifies every
artifact through the runtime's own loader and backends), never the reverse.  The Java core
(android_demo/core, ``bundle/``) and the web demo mirror these values; their tests read bundles
this module wrote.  The manifest's fields are documented in docs/manifest.md.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

#: highest manifest schema the readers understand, and the one the converter writes
SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
TASKS = ("classification", "ner")
#: a TFLite file holds one signature per static sequence length: ``seq_<length>``
SIGNATURE_PREFIX = "seq_"
#: every model input a bundle may declare, in graph order; each is int64 [batch, sequence] in the manifest
#: (a family without segment embeddings, e.g. DistilBERT, takes the first two)
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
INPUT_AXES = ("batch", "sequence")


def artifact_file(backend: str, precision: str) -> str:
    """The file name of a ``backend:precision`` artifact: ``model.<backend>`` for fp32, else
    ``model.<precision>.<backend>`` (``model.tflite``, ``model.int8-dynamic.onnx``)."""
    return f"model.{backend}" if precision == "fp32" else f"model.{precision}.{backend}"


def signature_name(bucket: int) -> str:
    return f"{SIGNATURE_PREFIX}{bucket}"


def bucket_of(signature: str) -> int | None:
    """The sequence length of a ``seq_<length>`` signature; None for any other name."""
    digits = signature[len(SIGNATURE_PREFIX):]
    return int(digits) if signature.startswith(SIGNATURE_PREFIX) and digits.isdigit() else None


def smallest_bucket(buckets: list[int], length: int) -> int | None:
    """The bucket a row of ``length`` tokens runs in: the smallest that holds it (None: none does)."""
    return next((b for b in sorted(buckets) if b >= length), None)


def input_length(max_sequence_length: int, tflite_buckets: list[list[int]]) -> int:
    """The longest row any reader feeds a bundle's model: ``max_sequence_length``, or the largest bucket
    of a TFLite artifact when that is smaller (static shapes take no longer row).

    One length for the whole bundle, whichever artifact runs: NER windows and classification truncation
    are then the same in ONNX and TFLite, in Python, Java and the web page, and every artifact was
    verified at it (``verification.max_length``)."""
    return min([max_sequence_length] + [max(buckets) for buckets in tflite_buckets if buckets])


def bundle_input_length(manifest: dict) -> int:
    """:func:`input_length` of a manifest: its ``max_sequence_length`` and its TFLite artifacts'
    ``details.buckets`` (an artifact without them, hand-written, adds no limit)."""
    buckets = [(a.get("details") or {}).get("buckets") or [] for a in manifest["artifacts"]
               if a.get("backend") == "tflite"]
    return input_length(manifest["max_sequence_length"], buckets)


def subset_manifest(manifest: dict, recipes: list[str], files: list[str], cut: dict) -> dict:
    """The manifest of a bundle holding only the artifacts ``recipes`` and the files ``files``: every other
    field as it was (key order too), ``cut`` recorded before ``files``.

    The input length stays the source's: without the TFLite artifacts whose buckets bounded it, the rows
    would grow to ``max_sequence_length``, and the kept artifacts would answer long texts differently
    from the bundle they were verified in (at ``verification.max_length``).  So ``max_sequence_length``
    drops to that length where it would otherwise rise."""
    length = bundle_input_length(manifest)
    out = {key: value for key, value in manifest.items() if key != "files"}
    out["artifacts"] = [a for a in manifest["artifacts"] if a["recipe"] in recipes]
    if bundle_input_length(out) > length:
        out["max_sequence_length"] = length
        if "max_sequence_length" in (out.get("tokenizer") or {}):
            out["tokenizer"] = {**out["tokenizer"], "max_sequence_length": length}
    out["cut"] = cut
    out["files"] = {name: manifest["files"][name] for name in sorted(files)}
    return out


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_entry(path: Path) -> dict:
    """A ``files`` entry of the manifest: size and SHA-256."""
    return {"bytes": path.stat().st_size, "sha256": sha256(path)}


def write_manifest(directory: Path, manifest: dict) -> Path:
    """Write manifest.json with ``files``: size and SHA-256 of every other file in ``directory``.

    Written to a temporary name and renamed, so a reader never sees half a manifest."""
    path = Path(directory) / MANIFEST
    partial = path.with_name(f".{MANIFEST}.partial")
    manifest = dict(manifest)
    manifest["files"] = {p.name: file_entry(p) for p in sorted(Path(directory).iterdir())
                         if p.is_file() and p.name not in (MANIFEST, partial.name)}
    partial.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(partial, path)
    return path
