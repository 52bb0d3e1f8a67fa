"""Export backends, one module each: an :class:`~converter.backends.base.ExportBackend` subclass that
declares the precisions it writes (each one a recipe, ``backend:precision``, with its description) and
registers itself (``register(OnnxExportBackend())``).  The registry (runtime/registry.py) finds every
module of this package; helpers (``onnx_fusion``, ``tflite_*``) register nothing.

Each export backend has a runtime backend of the same name (runtime/backends/), which declares what the
reader needs (package, ``auto`` order, fixed input lengths) and loads every file the export backend
writes, for verification as for users.
"""

from __future__ import annotations

from pocketbert.runtime.backends import BACKENDS as RUNTIME_BACKENDS
from pocketbert.runtime.registry import Registry

from .base import ExportBackend, ExportedArtifact, ExportSpec, Runner, median_latency_ms

#: every export backend, in the runtime's ``auto`` order (the order of --format and of the recipes)
EXPORT_BACKENDS: Registry[ExportBackend] = Registry("export backend", __name__)


def register(backend: ExportBackend) -> ExportBackend:
    """Add an export backend (called by its module when it is imported); the runtime must read its files."""
    if backend.name not in RUNTIME_BACKENDS:
        raise ValueError(f"export backend {backend.name!r} has no runtime backend of that name to load its files "
                         "(add one in pocketbert/runtime/backends/)")
    return EXPORT_BACKENDS.register(backend)


def get(name: str) -> ExportBackend:
    return EXPORT_BACKENDS[name]


__all__ = ["EXPORT_BACKENDS", "ExportedArtifact", "ExportBackend", "ExportSpec", "Runner", "median_latency_ms",
           "register", "get"]
