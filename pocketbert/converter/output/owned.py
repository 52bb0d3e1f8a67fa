"""What ``--overwrite`` may replace: a directory PocketBERT wrote, holding nothing else.

A bundle is known by its manifest.json: written by PocketBERT (it names the ``pocketbert_version``), and
every file it lists there with the size and SHA-256 it records (another tool's manifest.json, or a bundle
edited since, is not ours to delete).  A checkpoint written by finetune, recover, trim-vocab or
share-embeddings is known the same way by its training.json: its ``kind`` names the command, and its
``files`` the size and SHA-256 of every other file PocketBERT wrote there.  A file's name is no proof:
a folder merely shaped like a checkpoint (or one from before checkpoints recorded their files) is not
replaced.  Anything unlisted in the directory (a sub-folder, a symlink, a file of the user's) means it
is not ours to delete.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import NamedTuple

from pocketbert.runtime.contract import MANIFEST, STAGING_MARKER, file_entry, sha256

BUNDLE = "bundle"
CHECKPOINT = "checkpoint"

TRAINING_RECORD = "training.json"
CHECKPOINT_KINDS = ("finetune", "recover", "vocab-trim", "share-embeddings")
SHOWN = 5  # entries named in a refusal
MAX_MARKER_BYTES = 16 << 20


class Refusal(NamedTuple):
    reason: str
    fix: str | None = None  # None: choose another --out


def record_files(directory: Path) -> dict[str, dict]:
    """training.json's ``files``: size and SHA-256 of every file in a checkpoint but the record itself."""
    return {p.name: file_entry(p) for p in sorted(Path(directory).iterdir())
            if p.name not in (TRAINING_RECORD, STAGING_MARKER) and p.is_file() and not p.is_symlink()}


def why_not_replaceable(directory: Path, kind: str) -> Refusal | None:
    """None when ``directory`` holds only a PocketBERT ``kind`` (bundle or checkpoint), else why not."""
    entries = sorted(os.scandir(directory), key=lambda e: e.name)
    marker = MANIFEST if kind == BUNDLE else TRAINING_RECORD
    files = _bundle_files(directory) if kind == BUNDLE else _checkpoint_files(directory)
    if files is None:
        if kind == CHECKPOINT and _checkpoint_kind(directory):
            return Refusal(f"its {TRAINING_RECORD} records no size and SHA-256 of its files (a checkpoint written "
                           "by an older PocketBERT, or a folder made to look like one), so nothing shows that "
                           "PocketBERT wrote what it holds",
                           f"if it is a checkpoint you no longer need, delete {str(directory)!r} yourself; or "
                           "choose another --out path (checkpoints written from now on record their files, and "
                           "--overwrite replaces them)")
        if (_checkpoint_kind(directory) if kind == BUNDLE else _bundle_files(directory) is not None):
            other = CHECKPOINT if kind == BUNDLE else BUNDLE
            return Refusal(f"it is a PocketBERT {other}, not a {kind} (no valid {marker})")
        what = "bundle" if kind == BUNDLE else "checkpoint written by PocketBERT"
        return Refusal(f"it is not a PocketBERT {what} (no valid {marker}); it holds: {_names(entries)}")
    links = [e for e in entries if e.is_symlink() and (e.name in files or e.name == marker)]
    if links:  # a listed name is no proof when the file is elsewhere: PocketBERT writes no links
        return Refusal(_links(Path(directory), links, kind))
    foreign = [e for e in entries if e.is_symlink() or not e.is_file() or e.name not in files and e.name != marker]
    if foreign:
        return Refusal(f"besides the {kind} it holds: {_names(foreign)}")
    changed = _changed_files(directory, files)
    if changed:
        shown = ", ".join(repr(n) for n in changed[:SHOWN]) + (f" (and {len(changed) - SHOWN} more)"
                                                               if len(changed) > SHOWN else "")
        return Refusal(f"files its {marker} lists are missing or changed since PocketBERT wrote them: {shown}")
    return None


def _bundle_files(directory: Path) -> dict | None:
    """The files a PocketBERT manifest lists, or None when there is no such manifest."""
    manifest = _read_json(directory / MANIFEST)
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict) \
            or not isinstance(manifest.get("schema_version"), int) \
            or not isinstance(manifest.get("pocketbert_version"), str):
        return None
    return manifest["files"]


def _checkpoint_kind(directory: Path) -> str | None:
    """The command a training.json names (whether or not it records its files)."""
    record = _read_json(directory / TRAINING_RECORD)
    kind = record.get("kind") if isinstance(record, dict) else None
    return kind if kind in CHECKPOINT_KINDS else None


def _checkpoint_files(directory: Path) -> dict | None:
    """The files a PocketBERT training.json lists, or None when it lists none (or is not PocketBERT's)."""
    record = _read_json(directory / TRAINING_RECORD)
    if not _checkpoint_kind(directory) or not isinstance(record.get("files"), dict) or not record["files"] \
            or not isinstance(record.get("pocketbert_version"), str):
        return None
    return record["files"]


def _changed_files(directory: Path, files: dict) -> list[str]:
    """Listed files that are missing, or differ from their recorded size and SHA-256."""
    return [name for name, entry in files.items()
            if "/" in name or "\0" in name or not _matches(directory / name, entry)]


def _matches(path: Path, entry) -> bool:
    if not isinstance(entry, dict) or path.is_symlink() or not path.is_file():
        return False
    try:
        return path.stat().st_size == entry.get("bytes") and sha256(path) == entry.get("sha256")
    except OSError:
        return False


def _read_json(path: Path):
    """The parsed file, or None when it is missing, not a regular file, too large or not JSON."""
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_MARKER_BYTES:
            return None
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _links(directory: Path, links: list[os.DirEntry], kind: str) -> str:
    """'vocab.txt' is a link out of the bundle folder (to '/elsewhere/vocab.txt'), …"""
    root = directory.resolve()
    said = []
    for entry in links[:SHOWN]:
        target = Path(entry.path).resolve()
        where = "out of" if target == root or not target.is_relative_to(root) else "inside"
        said.append(f"{entry.name!r} is a link {where} the {kind} folder (to {str(target)!r})")
    return "; ".join(said) + ": PocketBERT writes no links, so it did not write this folder as it is"


def _names(entries: list[os.DirEntry]) -> str:
    names = [e.name + ("/" if e.is_dir(follow_symlinks=False) else "") for e in entries[:SHOWN]]
    more = f" (and {len(entries) - SHOWN} more)" if len(entries) > SHOWN else ""
    return ", ".join(repr(n) for n in names) + more
