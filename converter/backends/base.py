"""The interface every export backend implements (ONNX here; TFLite plugs in the same way)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from torch import nn

from ..families import Family


@dataclass
class ExportSpec:
    """What a backend needs to export one model: the module, its inputs and how to make data."""

    model: nn.Module  # wraps the HF model: forward(*inputs) -> logits
    family: Family
    input_names: list[str]
    output_name: str
    max_length: int
    #: texts -> named int64 inputs (for calibration); ``pad_to`` forces a static sequence length
    make_batches: Callable[..., list[dict[str, np.ndarray]]]
    threads: int = 2
    #: static sequence lengths for backends without dynamic shapes (TFLite signatures)
    buckets: list[int] = field(default_factory=list)


@dataclass
class Artifact:
    """One exported model file and how it was made."""

    recipe: str
    path: Path
    details: dict = field(default_factory=dict)


class Runner(ABC):
    """A loaded model: named int64 inputs -> logits."""

    input_names: Sequence[str]

    @abstractmethod
    def __call__(self, feeds: dict[str, np.ndarray]) -> np.ndarray: ...


class Backend(ABC):
    name: str
    #: precisions this backend can produce, in recipe order
    precisions: tuple[str, ...]

    @abstractmethod
    def export(self, spec: ExportSpec, dest: Path) -> Artifact:
        """Export the float model to ``dest``."""

    @abstractmethod
    def quantize(self, spec: ExportSpec, precision: str, dest: Path,
                 calibration: list[dict[str, np.ndarray]] | None,
                 accept: Callable[[Path], tuple[bool, dict]] | None = None,
                 float_fallback: bool = True, float_export: Path | None = None) -> Artifact:
        """Export ``spec.model`` at a lower precision (``calibration``: static-shape batches).

        ``float_export``, when given, is a plain float export of exactly ``spec.model`` by this
        backend, to quantise instead of exporting the model again.

        ``accept(path)`` judges a candidate on calibration text.  With ``float_fallback`` a backend
        may keep parts of the model in float until it passes; it must record the outcome as
        ``details["float_fallback"]`` with at least ``roles`` and ``accepted``.
        """

    @abstractmethod
    def load(self, path: Path, threads: int = 1) -> Runner:
        """Load an artifact for inference (verification, latency)."""

    def filename(self, precision: str) -> str:
        return f"model.{precision}.{self.name}" if precision != "fp32" else f"model.{self.name}"
