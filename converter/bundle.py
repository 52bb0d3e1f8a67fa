"""Stage 6, bundle: one directory with model file(s), tokenizer, labels and manifest.json.

The bundle is built in a hidden staging directory beside the destination and moved into place
with a rename only when everything has been verified, so an error or Ctrl-C never leaves a
partial bundle.  The manifest schema is documented in docs/manifest.md.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from .errors import OutputError

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_entry(path: Path) -> dict:
    return {"bytes": path.stat().st_size, "sha256": sha256(path)}


class Staging:
    """A staging directory that becomes ``dest`` on :meth:`commit` and vanishes otherwise.

    Use as a context manager: leaving the block without commit (error, Ctrl-C) removes it.
    """

    def __init__(self, dest: Path, overwrite: bool):
        self.dest = Path(dest).resolve()
        self.overwrite = overwrite
        self.path: Path | None = None
        self._created: list[Path] = []  # parent directories we made, removed again on failure
        self._check()

    def _check(self) -> None:
        dest = self.dest
        if dest.exists() and not dest.is_dir():
            raise OutputError(f"output {str(dest)!r} exists and is a file", "choose another --out path")
        if dest.is_dir() and any(dest.iterdir()) and not self.overwrite:
            raise OutputError(f"output directory {str(dest)!r} exists and is not empty",
                              "pass --overwrite to replace it, or choose another --out path")
        parent = dest.parent
        while not parent.exists():
            parent = parent.parent
        if not parent.is_dir():
            raise OutputError(f"cannot create {str(dest)!r}: {str(parent)!r} is a file",
                              "choose an --out path inside a directory")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise OutputError(f"cannot write to {str(parent)!r} (permission denied)",
                              "choose an --out path in a directory you can write to")

    def __enter__(self) -> Staging:
        try:
            missing = [p for p in [self.dest.parent, *self.dest.parent.parents] if not p.exists()]
            self.dest.parent.mkdir(parents=True, exist_ok=True)
            self._created = missing  # deepest first
            self.path = Path(tempfile.mkdtemp(prefix=f".{self.dest.name}.partial-", dir=self.dest.parent))
        except OSError as exc:
            raise OutputError(f"cannot create the output directory: {exc.strerror}: {exc.filename}",
                              "choose an --out path in a directory you can write to") from exc
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.path is not None and self.path.exists():
            shutil.rmtree(self.path, ignore_errors=True)
            for directory in self._created:
                with contextlib.suppress(OSError):
                    directory.rmdir()  # only if still empty

    def commit(self) -> Path:
        """Atomically replace ``dest`` with the staged directory."""
        assert self.path is not None
        backup = None
        if self.dest.exists():
            backup = self.dest.with_name(f".{self.dest.name}.old-{os.getpid()}")
            self.dest.rename(backup)
        try:
            self.path.rename(self.dest)
        except BaseException:  # includes Ctrl-C between the two renames: put the old bundle back
            if backup is not None:
                backup.rename(self.dest)
            raise
        self.path = None
        if backup is not None:
            shutil.rmtree(backup, ignore_errors=True)
        return self.dest


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
