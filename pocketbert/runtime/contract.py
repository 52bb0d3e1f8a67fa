"""The bundle contract: the names and rules that the converter writes and every reader follows.

One definition, torch-free, owned by the runtime: the converter imports it (and verifies every
artifact through the runtime's own loader and backends), never the reverse.  Here: the file names, the
artifact file name rule, the tasks and problem types, the inputs, the TFLite signature and bucket rules,
checksums, and the manifest's schema (:data:`MANIFEST_FIELDS`: the converter writes the fields in its
order, :func:`validate_manifest` checks them for every Python reader).  The Java core
(android_demo/core, ``bundle/``) and the web demo mirror these values; their tests read bundles
this module wrote.  The manifest's fields are documented in docs/manifest.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .backends import fixed_length_backends
from .errors import BundleError

#: highest manifest schema the readers understand, and the one the converter writes
SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
#: the bundle's other fixed files: label names (one per line, in logit order), the WordPiece vocabulary
#: (line i is token id i), the fast tokenizer and the file that lets transformers' AutoTokenizer load it
LABELS_FILE = "labels.txt"
VOCAB_FILE = "vocab.txt"
TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
#: the file by which the converter knows a folder it is still writing as its own (converter/output/staging.py);
#: never a bundle or checkpoint file, so the lists of written files leave it out
STAGING_MARKER = ".pocketbert-staging.json"
TASKS = ("classification", "ner")
PROBLEM_TYPES = ("single_label_classification", "multi_label_classification", "regression", "token_classification")
#: largest max_sequence_length accepted: far above any BERT's position embeddings (512); more is a damaged
#: or hostile manifest, which would otherwise surface as an allocation failure inside a backend
MAX_SEQUENCE_LENGTH = 65536
SHA256_HEX = re.compile(r"[0-9a-f]{64}")
#: every model input a bundle may declare, in graph order; each is int64 [batch, sequence] in the manifest
#: (a family without segment embeddings, e.g. DistilBERT, takes the first two)
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
INPUT_AXES = ("batch", "sequence")


def artifact_file(backend: str, precision: str) -> str:
    """The file name of a ``backend:precision`` artifact: ``model.<backend>`` for fp32, else
    ``model.<precision>.<backend>`` (``model.tflite``, ``model.int8-dynamic.onnx``)."""
    return f"model.{backend}" if precision == "fp32" else f"model.{precision}.{backend}"


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
               if a.get("backend") in fixed_length_backends()]
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
                         if p.is_file() and p.name not in (MANIFEST, partial.name, STAGING_MARKER)}
    partial.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(partial, path)
    return path


# --- the manifest's schema ------------------------------------------------------------------------

REBUILD = "convert the model again with this version of pocketbert (pocketbert-convert …)"
DAMAGED = "copy the bundle again (the manifest is damaged or was edited), or " + REBUILD
_MISSING = object()
#: ``need(ok, field, rule, value)``: a BundleError "'field' must be rule, not value" unless ``ok``
Need = Callable[[bool, str, str, object], None]


@dataclass(frozen=True)
class ManifestField:
    """One top-level field of manifest.json (each is described in docs/manifest.md).

    ``check(value, need)`` states what readers rely on (None: written for people and tools, relied on by no
    reader); a field that is not ``required`` may be absent, and null too if ``nullable``."""

    required: bool = False
    check: Callable[[object, Need], None] | None = None
    nullable: bool = True


def shown(value: object) -> str:
    """A value as an error message quotes it: repr, cut at 80 characters."""
    text = "missing" if value is _MISSING else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _one_of(field: str, names: tuple[str, ...]) -> Callable[[object, Need], None]:
    return lambda value, need: need(value in names, field, f"one of {', '.join(names)}", value)


def _check_labels(labels: object, need: Need) -> None:
    need(isinstance(labels, list) and len(labels) > 0 and all(isinstance(x, str) for x in labels), "labels",
         "a non-empty list of strings", labels)


def _check_length(length: object, need: Need) -> None:
    need(_is_int(length) and 2 <= length <= MAX_SEQUENCE_LENGTH, "max_sequence_length",
         f"an integer from 2 to {MAX_SEQUENCE_LENGTH}", length)


def _check_inputs(inputs: object, need: Need) -> None:
    need(isinstance(inputs, list) and len(inputs) > 0 and all(
        isinstance(i, dict) and i.get("name") in INPUT_NAMES for i in inputs), "inputs",
        f"a list of model inputs named {', '.join(INPUT_NAMES)}", inputs)


def _check_tokenizer(tokenizer: object, need: Need) -> None:
    need(isinstance(tokenizer, dict), "tokenizer", "an object of tokenizer settings", tokenizer)
    need(isinstance(tokenizer.get("tokenizer_file"), str), "tokenizer.tokenizer_file", "a file name",
         tokenizer.get("tokenizer_file", _MISSING))
    vocab_size = tokenizer.get("vocab_size")  # absent and null mean the same for optional fields
    need(vocab_size is None or _is_int(vocab_size) and vocab_size >= 1, "tokenizer.vocab_size", "a positive integer",
         vocab_size)
    special = tokenizer.get("special_tokens") or {}
    need(isinstance(special, dict), "tokenizer.special_tokens", "an object", special)
    for name, token in special.items():
        need(isinstance(token, dict) and isinstance(token.get("token"), str) and _is_int(token.get("id"))
             and token["id"] >= 0, f"tokenizer.special_tokens.{name}",
             '{"token": string, "id": non-negative integer}', token)


def _check_artifacts(artifacts: object, need: Need) -> None:
    need(isinstance(artifacts, list), "artifacts", "a list of objects", artifacts)
    for i, a in enumerate(artifacts):
        need(isinstance(a, dict), f"artifacts[{i}]", "an object", a)
        for key in ("recipe", "backend", "precision", "file"):
            need(isinstance(a.get(key), str), f"artifacts[{i}].{key}", "a string", a.get(key, _MISSING))
        for key in ("details", "verification"):
            need(a.get(key) is None or isinstance(a[key], dict), f"artifacts[{i}].{key}", "an object", a.get(key))
        # a fixed-length artifact's buckets set the input length of the whole bundle (input_length)
        buckets = (a.get("details") or {}).get("buckets") if a["backend"] in fixed_length_backends() else None
        need(buckets is None or isinstance(buckets, list) and len(buckets) > 0 and all(
            _is_int(b) and 1 <= b <= MAX_SEQUENCE_LENGTH for b in buckets), f"artifacts[{i}].details.buckets",
            f"a non-empty list of integers from 1 to {MAX_SEQUENCE_LENGTH}", buckets)


def _check_files(files: object, need: Need) -> None:
    need(isinstance(files, dict), "files", "an object mapping file names to their size and SHA-256", files)
    for name, listing in files.items():
        field = f"files[{name!r}]"
        need(isinstance(listing, dict), field, 'an object {"bytes": …, "sha256": …}', listing)
        need(_is_int(listing.get("bytes")) and listing["bytes"] >= 0, f"{field}.bytes", "a non-negative integer",
             listing.get("bytes", _MISSING))
        need(isinstance(listing.get("sha256"), str) and bool(SHA256_HEX.fullmatch(listing["sha256"])),
             f"{field}.sha256", "64 lower-case hexadecimal digits", listing.get("sha256", _MISSING))


def _check_notes(notes: object, need: Need) -> None:
    need(isinstance(notes, list) and all(isinstance(x, str) for x in notes), "notes", "a list of strings", notes)


#: every top-level field, in the order the converter writes them (converter/manifest.py)
MANIFEST_FIELDS: dict[str, ManifestField] = {
    "schema_version": ManifestField(required=True),  # checked first, on its own: see validate_manifest
    "pocketbert_version": ManifestField(),
    "task": ManifestField(True, _one_of("task", TASKS)),
    "problem_type": ManifestField(False, _one_of("problem_type", PROBLEM_TYPES)),
    "labels": ManifestField(True, _check_labels),
    "family": ManifestField(),
    "model_type": ManifestField(),
    "architecture": ManifestField(),
    "source": ManifestField(),
    "opts": ManifestField(),
    "transforms": ManifestField(),
    "max_sequence_length": ManifestField(True, _check_length),
    "model_vocab_size": ManifestField(),
    "inputs": ManifestField(True, _check_inputs),
    "outputs": ManifestField(),
    "tokenizer": ManifestField(True, _check_tokenizer),
    "artifacts": ManifestField(True, _check_artifacts),
    "verification": ManifestField(),
    "notes": ManifestField(False, _check_notes),
    "recovery": ManifestField(),
    "created": ManifestField(),
    "stage_seconds": ManifestField(),
    "cut": ManifestField(),  # only in a bundle written by `pocketbert-convert cut`
    "files": ManifestField(False, _check_files, nullable=False),  # written by write_manifest, last
}


def in_schema_order(fields: dict) -> dict:
    """The manifest the converter writes: ``fields`` in :data:`MANIFEST_FIELDS` order.  A field the schema does
    not describe is a converter bug (readers would not know it), so it raises ValueError."""
    unknown = [key for key in fields if key not in MANIFEST_FIELDS]
    if unknown:
        raise ValueError(f"manifest fields {unknown} are not in contract.MANIFEST_FIELDS; describe them there "
                         "and in docs/manifest.md")
    return {key: fields[key] for key in MANIFEST_FIELDS if key in fields}


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    out = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def parse_manifest(data: bytes, where: Path) -> dict:
    """manifest.json's bytes as a JSON object, or a BundleError saying why not.  A key given twice in one object
    is refused: JSON parsers differ on which one they keep, so two readers of one bundle could use different
    labels."""
    try:
        manifest = json.loads(data.decode("utf-8"), object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise BundleError(f"{where} gives the key {shown(exc.args[0])} twice in one object: readers differ on which "
                          "one they use", DAMAGED) from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise BundleError(f"{where} is not valid JSON ({exc})", REBUILD) from exc
    except ValueError as exc:  # an integer of thousands of digits: Python refuses to convert it (int_max_str_digits)
        raise BundleError(f"{where} holds an integer of more than {sys.get_int_max_str_digits()} digits, which "
                          "Python does not read and no field of a manifest needs", DAMAGED) from exc
    if not isinstance(manifest, dict):
        raise BundleError(f"{where} does not hold a JSON object", REBUILD)
    return manifest


def validate_manifest(m: dict, where: Path) -> None:
    """The schema version, then the fields readers rely on, with their types and ranges: a BundleError naming
    the field and its value instead of a KeyError, or a failure inside a backend, later."""
    _check_schema_version(m.get("schema_version", _MISSING), where)

    def need(ok: bool, field: str, rule: str, value: object) -> None:
        if not ok:
            raise BundleError(f"{where}: '{field}' must be {rule}, not {shown(value)}", DAMAGED)

    for key, field in MANIFEST_FIELDS.items():
        value = m.get(key, _MISSING)
        absent = value is _MISSING or value is None and field.nullable
        if field.check is not None and (field.required or not absent):
            field.check(value, need)


def _check_schema_version(version: object, where: Path) -> None:
    """First, before any other field: a newer schema may have renamed anything."""
    if version is _MISSING:
        raise BundleError(f"{where}: 'schema_version' is missing", DAMAGED)
    if not _is_int(version) or version < 1:
        raise BundleError(f"{where}: 'schema_version' must be a positive integer, not {shown(version)}", DAMAGED)
    if version > SCHEMA_VERSION:
        raise BundleError(f"bundle schema {version} is newer than this runtime reads ({SCHEMA_VERSION})",
                          "upgrade pocketbert (pip install -U pocketbert), or convert with the version you have")
