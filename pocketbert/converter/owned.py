"""What ``--overwrite`` may replace: a directory PocketBERT wrote, holding nothing else.

A bundle is known by its manifest.json: written by PocketBERT (it names the ``pocketbert_version``), and
every file it lists there with the size and SHA-256 it records (another tool's manifest.json, or a bundle
edited since, is not ours to delete).  A checkpoint written by
finetune, recover, trim-vocab or share-embeddings is known by its training.json (whose ``kind`` names
the command) beside the files of a Hugging Face checkpoint.  Anything else in the directory (a
sub-folder, a symlink, a file of the user's) means it is not ours to delete.
"""

from __future__ import annotations

import fnmatch
import json
import os
from pathlib import Path

from pocketbert.runtime.contract import MANIFEST, sha256

BUNDLE = "bundle"
CHECKPOINT = "checkpoint"

TRAINING_RECORD = "training.json"
CHECKPOINT_KINDS = ("finetune", "recover", "vocab-trim", "share-embeddings")
# What model.save_pretrained + tokenizer.save_pretrained + save_trained write.
CHECKPOINT_FILES = ("config.json", "generation_config.json", TRAINING_RECORD, "README.md", "*.safetensors",
                    "*.safetensors.index.json", "pytorch_model*.bin", "pytorch_model.bin.index.json",
                    "tokenizer*.json", "special_tokens_map.json", "added_tokens.json", "vocab.txt", "vocab.json",
                    "merges.txt", "*.model", "chat_template.jinja")
SHOWN = 5  # entries named in a refusal
MAX_MARKER_BYTES = 16 << 20


def why_not_replaceable(directory: Path, kind: str) -> str | None:
    """None when ``directory`` holds only a PocketBERT ``kind`` (bundle or checkpoint), else the reason."""
    entries = sorted(os.scandir(directory), key=lambda e: e.name)
    if kind == BUNDLE:
        marker, allowed = MANIFEST, _bundle_files(directory)
    else:
        marker, allowed = TRAINING_RECORD, _checkpoint_files(directory)
    if allowed is None:
        other = CHECKPOINT if kind == BUNDLE else BUNDLE
        if (_checkpoint_files if other == CHECKPOINT else _bundle_files)(directory) is not None:
            return f"it is a PocketBERT {other}, not a {kind} (no valid {marker})"
        what = "bundle" if kind == BUNDLE else "checkpoint written by PocketBERT"
        return f"it is not a PocketBERT {what} (no valid {marker}); it holds: {_names(entries)}"
    foreign = [e for e in entries if e.is_symlink() or not e.is_file() or not allowed(e.name)]
    if foreign:
        return f"besides the {kind} it holds: {_names(foreign)}"
    changed = _changed_files(directory) if kind == BUNDLE else []
    if changed:
        shown = ", ".join(repr(n) for n in changed[:SHOWN]) + (f" (and {len(changed) - SHOWN} more)"
                                                               if len(changed) > SHOWN else "")
        return f"files its {MANIFEST} lists are missing or changed since PocketBERT wrote them: {shown}"
    return None


def _bundle_files(directory: Path):
    manifest = _read_json(directory / MANIFEST)
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict) \
            or not isinstance(manifest.get("schema_version"), int) \
            or not isinstance(manifest.get("pocketbert_version"), str):
        return None
    listed = {MANIFEST, *manifest["files"]}
    return listed.__contains__


def _changed_files(directory: Path) -> list[str]:
    """Files the manifest lists that are missing, or differ from its recorded size and SHA-256."""
    changed = []
    for name, entry in _read_json(directory / MANIFEST)["files"].items():
        if "/" in name or not _matches(directory / name, entry):
            changed.append(name)
    return changed


def _matches(path: Path, entry) -> bool:
    if not isinstance(entry, dict) or path.is_symlink() or not path.is_file():
        return False
    try:
        return path.stat().st_size == entry.get("bytes") and sha256(path) == entry.get("sha256")
    except OSError:
        return False


def _checkpoint_files(directory: Path):
    record = _read_json(directory / TRAINING_RECORD)
    if not isinstance(record, dict) or record.get("kind") not in CHECKPOINT_KINDS:
        return None
    return lambda name: any(fnmatch.fnmatchcase(name, pattern) for pattern in CHECKPOINT_FILES)


def _read_json(path: Path):
    """The parsed file, or None when it is missing, not a regular file, too large or not JSON."""
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_MARKER_BYTES:
            return None
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _names(entries: list[os.DirEntry]) -> str:
    names = [e.name + ("/" if e.is_dir(follow_symlinks=False) else "") for e in entries[:SHOWN]]
    more = f" (and {len(entries) - SHOWN} more)" if len(entries) > SHOWN else ""
    return ", ".join(repr(n) for n in names) + more
