"""Export backends, one module each, behind :class:`~converter.backends.base.Backend`."""

from __future__ import annotations

from .base import Artifact, Backend, ExportSpec, Runner, median_latency_ms

_BACKENDS: dict[str, Backend] = {}


def register(backend: Backend) -> Backend:
    _BACKENDS[backend.name] = backend
    return backend


def get(name: str) -> Backend:
    return _BACKENDS[name]


from . import onnx, tflite  # noqa: E402,F401  (importing registers them)

__all__ = ["Artifact", "Backend", "ExportSpec", "Runner", "median_latency_ms", "register", "get"]
