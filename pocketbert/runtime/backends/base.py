"""The interface every runtime backend implements: named int64 inputs -> float32 logits."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Protocol

import numpy as np


class ArtifactFile(Protocol):
    """What a backend reads of a bundle's artifact (``bundle.Artifact`` is one): typed structurally, so that
    the backends need not import the bundle reader that imports them."""

    recipe: str
    backend: str
    precision: str
    path: Path


class Backend(ABC):
    """One loaded model file.  :meth:`run` may be called from several threads at once.

    A subclass declares, as class attributes, what the runtime needs before it loads anything: its
    ``name`` (the manifest's ``backend``), the package that runs its files, its place in ``auto``'s
    order, and whether its files take fixed input lengths."""

    name: str
    #: the module to import and the pip distribution that provides it
    import_name: str
    pip_package: str
    #: ``auto`` tries backends in this order (lower first) and the fixed rule prefers the lower
    order: int = 100
    #: static shapes: one signature per sequence length, listed in the artifact's ``details.buckets``
    fixed_lengths: bool = False
    #: longest sequence the model file accepts (None: only the manifest's maximum applies)
    max_length: int | None = None
    #: most rows one call runs at once (None: any); the pipeline batches accordingly
    max_batch: int | None = None
    #: fixed input lengths the file runs (None: any length); the pipeline never puts rows of two
    #: buckets in one batch, so a row runs in the bucket it would run in alone
    buckets: list[int] | None = None

    @classmethod
    def open(cls, artifact: ArtifactFile, input_names: list[str], threads: int | None, instances: int = 1) -> Backend:
        """Load ``artifact``'s file (``instances``: how many callers may run it at once, where that costs
        a copy)."""
        return cls(artifact.path, input_names, threads)

    @abstractmethod
    def run(self, feeds: dict[str, np.ndarray], quiet: bool = False) -> np.ndarray:
        """``input_ids``/``attention_mask``/(``token_type_ids``) int64 ``[batch, seq]`` -> float32 logits,
        ``[batch, labels]`` or ``[batch, seq, labels]``.  ``quiet``: an expected failure (the load-time
        probe) should not be logged by the backend."""

    def describe(self) -> str:
        return self.name
