"""Stage 7, bundle: the manifest, a last check that the runtime opens the bundle as written, and the
swap of the staging directory into place (converter.output.staging): nothing partial is ever visible."""

from __future__ import annotations

from pathlib import Path

from pocketbert.runtime.bundle import Bundle
from pocketbert.runtime.contract import write_manifest
from pocketbert.runtime.errors import BundleError

from .. import manifest
from ..conversion import BundleResult, Conversion
from ..errors import VerificationError
from .base import Stage


class BundleStage(Stage):
    name = "bundle"
    reads = ("options", "plan", "staging", "load", "transform", "export", "verify")
    produces = ("bundle",)

    def run(self, conversion: Conversion) -> None:
        with conversion.step(self.name, "Writing bundle"):
            written = manifest.build(conversion)
            write_manifest(conversion.staging.path, written)
            readable_by_the_runtime(conversion.staging.path)
            conversion.bundle = BundleResult(manifest=written, path=conversion.staging.commit())


def readable_by_the_runtime(directory: Path) -> None:
    """The bundle as every reader will open it: a manifest the runtime refuses is never shipped."""
    try:
        Bundle.open(directory)
    except BundleError as exc:
        raise VerificationError(f"the runtime refuses the bundle the converter wrote: {exc.problem}",
                                "please report it: the converter and the runtime disagree on the bundle "
                                "contract") from exc
