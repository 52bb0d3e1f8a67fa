"""Export backends, one module each, behind :class:`~converter.backends.base.ExportBackend`."""

from __future__ import annotations

from .base import ExportBackend, ExportedArtifact, ExportSpec, Runner, median_latency_ms

_BACKENDS: dict[str, ExportBackend] = {}


def register(backend: ExportBackend) -> ExportBackend:
    _BACKENDS[backend.name] = backend
    return backend


def get(name: str) -> ExportBackend:
    return _BACKENDS[name]


from . import onnx, tflite  # noqa: E402,F401  (importing registers them)

__all__ = ["ExportedArtifact", "ExportBackend", "ExportSpec", "Runner", "median_latency_ms", "register", "get"]
