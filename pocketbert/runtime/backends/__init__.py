"""Runtime backends, one module each behind :class:`~runtime.backends.base.Backend`.

A backend module is imported only when a bundle is opened with it, so ``import runtime`` needs
neither onnxruntime nor ai-edge-litert.
"""

from __future__ import annotations

from ..bundle import Artifact
from ..errors import BundleError
from .base import Backend


def open_backend(artifact: Artifact, input_names: list[str], threads: int | None, instances: int = 1) -> Backend:
    if artifact.backend == "onnx":
        from .onnx import OnnxBackend

        return OnnxBackend(artifact.path, input_names, threads, row_by_row=artifact.precision == "int8-dynamic")
    if artifact.backend == "tflite":
        from .tflite import TfliteBackend

        return TfliteBackend(artifact.path, input_names, threads, instances)
    raise BundleError(f"no runtime backend for {artifact.recipe!r}", "choose an onnx or tflite artifact")


__all__ = ["Backend", "open_backend"]
