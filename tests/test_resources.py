"""A conversion releases what it opened: a long-lived process (a notebook, a service, the test run)
must not keep descriptors or mappings of the bundle's files or of deleted intermediates."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

from pocketbert.converter.pipeline import convert

# the exporters' own files are among what must be released: every export runs (none from the suite's cache)
pytestmark = [pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs Linux /proc"),
              pytest.mark.usefixtures("fresh_exports")]

#: names of the converter's intermediate files (staging directory, quantiser inputs and candidates)
INTERMEDIATE = (".partial-", ".float.tflite", ".candidate", ".candidate-")


def _open_files() -> list[str]:
    targets = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            targets.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # closed while listing (the listing's own descriptor)
            pass
    return targets


def _mapped_files() -> list[str]:
    lines = Path("/proc/self/maps").read_text().splitlines()
    return [line.split(maxsplit=5)[5] for line in lines if len(line.split(maxsplit=5)) == 6]


def _ours(paths: list[str], root: Path) -> list[str]:
    return sorted({p for p in paths if p.startswith(str(root))
                   or (p.endswith("(deleted)") and any(mark in p for mark in INTERMEDIATE))})


def test_conversion_leaves_no_descriptor_or_mapping_behind(checkpoints, options, tmp_path):
    """Every int8 path (ladder judges, quantiser inputs, verification runners) of both formats."""
    result = convert(options(checkpoints["bert"]["classification"], opts="int8", int8="all", formats="onnx,tflite",
                             buckets=[32],
                             calibration_samples=32, verify_samples=50))
    assert {a.recipe for a in result.artifacts} >= {"onnx:int8-dynamic", "onnx:int8-static", "tflite:int8-dynamic"}
    # Objects in reference cycles (e.g. the frames of another test's caught exception) are freed by the
    # collector, not at once: collect them, so that what remains is what nothing will ever release.
    gc.collect()
    assert _ours(_open_files(), tmp_path) == []
    assert _ours(_mapped_files(), tmp_path) == []
