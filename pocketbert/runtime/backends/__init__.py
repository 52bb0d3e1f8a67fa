"""Runtime backends, one module each: a :class:`~runtime.backends.base.Backend` subclass that declares
its name, the package that runs its files, its place in ``auto``'s order and whether its files take
fixed input lengths, and registers itself (``register(OnnxBackend)``).  The registry
(runtime/registry.py) finds every module of this package; a backend module imports its package only
when a bundle is opened with it, so ``import runtime`` needs neither onnxruntime nor ai-edge-litert.
"""

from __future__ import annotations

import importlib.util

from ..errors import BundleError
from ..registry import Registry
from .base import ArtifactFile, Backend

#: every runtime backend, in ``auto`` order (the first installed one whose artifact the bundle has)
BACKENDS: Registry[type[Backend]] = Registry("runtime backend", __name__)
register = BACKENDS.register


def installed(name: str) -> bool:
    """The backend ``name`` exists and its package is installed."""
    backend = BACKENDS.get(name)
    return backend is not None and importlib.util.find_spec(backend.import_name) is not None


def fixed_length_backends() -> tuple[str, ...]:
    """Backends whose files run fixed sequence lengths (their artifacts list them in ``details.buckets``)."""
    return tuple(b.name for b in BACKENDS if b.fixed_lengths)


def open_backend(artifact: ArtifactFile, input_names: list[str], threads: int | None, instances: int = 1) -> Backend:
    backend = BACKENDS.get(artifact.backend)
    if backend is None:
        raise BundleError(f"no runtime backend for {artifact.recipe!r}",
                          f"choose an {' or '.join(BACKENDS.names())} artifact")
    return backend.open(artifact, input_names, threads, instances)


__all__ = ["BACKENDS", "Backend", "fixed_length_backends", "installed", "open_backend", "register"]
