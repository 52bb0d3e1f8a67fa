"""Stage 6, bundle: one directory with model file(s), tokenizer, labels and manifest.json.

The bundle is built in a hidden staging directory beside the destination and swapped into place
only when everything has been verified (converter.staging), so an error, Ctrl-C or a killed process
never leaves a partial bundle.  The manifest schema is documented in docs/manifest.md.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .owned import MANIFEST
from .staging import Staging  # noqa: F401  (the converter's writers import it from here)

SCHEMA_VERSION = 1


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_entry(path: Path) -> dict:
    return {"bytes": path.stat().st_size, "sha256": sha256(path)}


def write_manifest(directory: Path, manifest: dict) -> Path:
    """Write manifest.json, adding size and sha256 of every other file in the bundle."""
    manifest = dict(manifest)
    manifest["files"] = {p.name: file_entry(p) for p in sorted(directory.iterdir())
                         if p.is_file() and p.name != MANIFEST}
    path = directory / MANIFEST
    path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read_manifest(directory: Path) -> dict:
    manifest = json.loads((Path(directory) / MANIFEST).read_text(encoding="utf-8"))
    if manifest.get("schema_version", 0) > SCHEMA_VERSION:
        raise ValueError(f"bundle schema {manifest['schema_version']} is newer than this converter "
                         f"({SCHEMA_VERSION}); upgrade pocketbert")
    return manifest
