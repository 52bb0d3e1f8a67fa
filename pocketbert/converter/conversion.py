"""The one record a conversion's stages pass along, as ExecuTorch's export stages pass one artifact.

Each stage reads what the stages before it left and adds its own part: ``load`` the checkpoint and
the verification inputs, ``transform`` the model and the reference logits, ``export``/``quantize``
the artifacts, ``verify`` their figures, ``bundle`` the manifest and the committed directory.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pocketbert.runtime.contract import input_length

from .encoding import encode, word_starts
from .events import Listener, Note, StageFinished, StageStarted
from .options import ConvertOptions, Plan
from .staging import Staging

if TYPE_CHECKING:
    from .backends import ExportedArtifact, ExportSpec
    from .loading import Loaded
    from .logits_model import LogitsModel
    from .recipes import Recipe
    from .transforms import TransformReport
    from .verify import Comparison, EntityView


@dataclass
class Encoder:
    """Texts -> model feeds for one tokenizer, with the inputs and length every artifact can take."""

    tokenizer: Any
    input_names: tuple[str, ...]
    max_length: int

    def __call__(self, batch, max_length: int | None = None, pad_to: int | None = None) -> dict[str, np.ndarray]:
        return encode(self.tokenizer, batch, input_names=self.input_names, max_length=max_length or self.max_length,
                      pad_to=pad_to)

    def batches(self, items, batch_size: int = 32, pad_to: int | None = None) -> list[dict[str, np.ndarray]]:
        return [self(items[i:i + batch_size], pad_to=pad_to) for i in range(0, len(items), batch_size)]

    def word_starts(self, items, batch_size: int = 32, pad_to: int | None = None) -> list[np.ndarray]:
        """Each word's first piece in :meth:`batches` of the same arguments (token classification)."""
        return [word_starts(self.tokenizer, items[i:i + batch_size], max_length=self.max_length, pad_to=pad_to)
                for i in range(0, len(items), batch_size)]


@dataclass
class Inputs:
    """Verification inputs: real sentences (sorted by length) and fixed parity inputs, in batches."""

    texts: list
    source: str  # where the sentences came from, for the manifest
    batches: list[dict[str, np.ndarray]]
    parity: list[dict[str, np.ndarray]]
    entities: EntityView | None = None  # token classification: how to read entities from the batches

    @property
    def masks(self) -> list[np.ndarray]:
        return [b["attention_mask"] for b in self.batches]

    @property
    def parity_masks(self) -> list[np.ndarray]:
        return [b["attention_mask"] for b in self.parity]


@dataclass
class Built:
    """An artifact written into the staging directory, and the seconds its export or quantisation took."""

    recipe: Recipe
    artifact: ExportedArtifact
    seconds: float


@dataclass
class ArtifactResult:
    recipe: str
    file: str
    bytes: int
    verification: dict
    passed: bool
    latency_ms: float | None = None
    seconds: float = 0.0
    details: dict = field(default_factory=dict)


@dataclass
class ConvertResult:
    bundle: Path
    manifest: dict
    artifacts: list[ArtifactResult]
    stage_seconds: dict[str, float]
    notes: list[str]


@dataclass
class Conversion:
    options: ConvertOptions
    plan: Plan
    staging: Staging
    emit: Listener
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # load
    loaded: Loaded | None = None
    max_length: int = 0
    buckets: list[int] = field(default_factory=list)
    encoder: Encoder | None = None
    inputs: Inputs | None = None
    recovery: Any = None  # training.recovery.PreparedRecovery when --recover was given
    # transform
    model: LogitsModel | None = None
    reports: list[TransformReport] = field(default_factory=list)
    damage: Comparison | None = None
    recovered: dict | None = None
    parity_ref: list | None = None
    verify_ref: list | None = None
    spec: ExportSpec | None = None
    latency_feeds: dict[str, np.ndarray] | None = None
    # export, quantize
    tokenizer_settings: dict | None = None
    built: list[Built] = field(default_factory=list)
    float_exports: dict[str, Path] = field(default_factory=dict)  # backend -> plain float file to quantise
    # verify, bundle
    results: list[ArtifactResult] = field(default_factory=list)
    manifest: dict | None = None
    bundle: Path | None = None

    @property
    def verify_length(self) -> int:
        """Inputs every artifact can take, the bundle's input length every reader uses (contract.input_length)."""
        return input_length(self.max_length, [self.buckets] if self.plan.fixed_lengths else [])

    @contextlib.contextmanager
    def step(self, stage: str, description: str) -> Iterator[None]:
        """Time one step of ``stage`` (added to the stage's seconds) and tell the listener."""
        start = time.perf_counter()
        self.emit(StageStarted(stage, description))
        yield
        seconds = time.perf_counter() - start
        self.timings[stage] = self.timings.get(stage, 0.0) + seconds
        self.emit(StageFinished(stage, description, seconds))

    def note(self, message: str, warning: bool = False, keep: bool = False) -> None:
        """Tell the listener; ``keep`` also records it in the manifest's notes."""
        self.emit(Note(message, warning))
        if keep:
            self.notes.append(message)

    def entity_view(self, texts, batch_size: int = 32, pad_to: int | None = None) -> EntityView | None:
        """Token classification: how to read entities from ``encoder.batches`` of the same arguments."""
        if self.loaded.task != "ner":
            return None
        from .verify import EntityView

        return EntityView(self.encoder.word_starts(texts, batch_size, pad_to), list(self.loaded.labels))

    def result(self) -> ConvertResult:
        return ConvertResult(bundle=self.bundle, manifest=self.manifest, artifacts=self.results,
                             stage_seconds=self.timings, notes=self.notes)
