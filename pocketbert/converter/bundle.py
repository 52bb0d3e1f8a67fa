"""The bundle contract as the converter's modules and tests use it: the runtime's definitions
(pocketbert/runtime/contract.py), the staging directory, and the manifest read back as the runtime reads
it.  The bundle stage itself is converter/stages/bundle.py; the schema is documented in docs/manifest.md.
"""

from __future__ import annotations

from pathlib import Path

# The contract (names, checksums, the manifest writer) is the runtime's: one definition for the
# converter and every reader.  Re-exported here for the converter's modules.
from pocketbert.runtime.bundle import Bundle
from pocketbert.runtime.contract import MANIFEST, SCHEMA_VERSION, file_entry, sha256, write_manifest  # noqa: F401

from .staging import Staging  # noqa: F401  (the converter's writers import it from here)


def read_manifest(directory: Path) -> dict:
    """A bundle's manifest as the runtime reads it: paths, fields and schema version checked."""
    return Bundle.open(directory).manifest
