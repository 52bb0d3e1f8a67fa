"""Stage 6, bundle: one directory with model file(s), tokenizer, labels and manifest.json.

The bundle is built in a hidden staging directory beside the destination and swapped into place
only when everything has been verified (converter.staging), so an error, Ctrl-C or a killed process
never leaves a partial bundle.  The manifest schema is documented in docs/manifest.md.
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
