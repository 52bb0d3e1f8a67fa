"""The one record a conversion's stages pass along, as ExecuTorch's export stages pass one artifact.

The record holds what the conversion was given (options, plan, staging directory) and one part per
stage, each a small result: ``load`` the checkpoint and the verification inputs, ``transform`` the model
and the reference logits, ``export``/``quantize`` the artifacts, ``metadata`` what the .tflite files
embed, ``verify`` their figures, ``bundle`` the manifest and the committed directory.  Each stage
declares which parts it reads and which it produces (converter/stages/base.py); the pipeline checks the
order against those declarations before anything runs.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pocketbert.runtime.contract import input_length

from .events import Listener, Note, StageFinished, StageStarted
from .inputs.encoding import encode, word_starts
from .options import ConvertOptions, Plan
from .output.staging import Staging

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

    from .backends import ExportedArtifact, ExportSpec
    from .backends.logits_model import LogitsModel
    from .backends.recipes import Recipe
    from .checkpoints.loading import Loaded
    from .checks.dev_gate import DevScores
    from .checks.verify import Comparison, EntityView
    from .training.recovery import PreparedRecovery
    from .transforms import TransformReport


@dataclass
class Encoder:
    """Texts -> model feeds for one tokenizer, with the inputs and length every artifact can take."""

    tokenizer: PreTrainedTokenizerFast
    input_names: tuple[str, ...]
    max_length: int
    #: token classification: the labels entities are read with (None: a classifier, no entities)
    entity_labels: list[str] | None = None

    def __call__(self, batch, max_length: int | None = None, pad_to: int | None = None) -> dict[str, np.ndarray]:
        return encode(self.tokenizer, batch, input_names=self.input_names, max_length=max_length or self.max_length,
                      pad_to=pad_to)

    def batches(self, items, batch_size: int = 32, pad_to: int | None = None) -> list[dict[str, np.ndarray]]:
        return [self(items[i:i + batch_size], pad_to=pad_to) for i in range(0, len(items), batch_size)]

    def word_starts(self, items, batch_size: int = 32, pad_to: int | None = None) -> list[np.ndarray]:
        """Each word's first piece in :meth:`batches` of the same arguments (token classification)."""
        return [word_starts(self.tokenizer, items[i:i + batch_size], max_length=self.max_length, pad_to=pad_to)
                for i in range(0, len(items), batch_size)]

    def entity_view(self, texts, batch_size: int = 32, pad_to: int | None = None) -> EntityView | None:
        """Token classification: how to read entities from :meth:`batches` of the same arguments."""
        if self.entity_labels is None:
            return None
        from .checks.verify import EntityView

        return EntityView(self.word_starts(texts, batch_size, pad_to), list(self.entity_labels))


@dataclass
class Inputs:
    """Verification inputs: real sentences (sorted by length) and fixed parity inputs, in batches."""

    texts: list
    source: str  # where the sentences came from, for the manifest
    batches: list[dict[str, np.ndarray]]
    parity: list[dict[str, np.ndarray]]
    entities: EntityView | None = None  # token classification: how to read entities from the batches
    data_dir: Path | None = None  # the data directory found (--data-dir, $POCKETBERT_DATA, ../shared/data)
    dev_file: Path | None = None  # the dev file of the task the checkpoint records, when it is here

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
    latency_rounds: list[float] | None = None  # the median of each alternating round (``quiet_timing``)
    latency_quiet: bool | None = None  # no other worker of the conversion was alive while it was timed
    seconds: float = 0.0
    details: dict = field(default_factory=dict)


@dataclass
class ConvertResult:
    bundle: Path
    manifest: dict
    artifacts: list[ArtifactResult]
    stage_seconds: dict[str, float]
    notes: list[str]
    steps: list[tuple[str, str, float]] = field(default_factory=list)  # (stage, step, seconds), in order


def verify_length(max_length: int, buckets: list[int], plan: Plan) -> int:
    """Inputs every artifact can take, the bundle's input length every reader uses (contract.input_length)."""
    return input_length(max_length, [buckets] if plan.fixed_lengths else [])


@dataclass
class LoadResult:
    """The load stage's part: the checkpoint, its lengths, how texts become feeds, the verification inputs."""

    loaded: Loaded
    max_length: int
    buckets: list[int]  # TFLite sequence-length buckets
    verify_length: int  # see verify_length()
    encoder: Encoder
    inputs: Inputs
    recovery: PreparedRecovery | None = None  # --recover: the task data, read and checked


@dataclass
class TransformResult:
    """The transform stage's part: the model as exported, what the rewrites did, the reference logits."""

    model: LogitsModel
    spec: ExportSpec  # what the backends export
    parity_ref: list[np.ndarray]  # PyTorch logits on the fixed parity inputs
    verify_ref: list[np.ndarray]  # and on the verification sentences
    latency_feeds: dict[str, np.ndarray]  # the input the latency figures time
    reports: list[TransformReport] = field(default_factory=list)
    damage: Comparison | None = None  # nonorm/relu: the change measured against the original model
    recovered: dict | None = None  # --recover: the recovery job's record


@dataclass
class ExportResult:
    """The export stage's part: the bundle's tokenizer settings and each backend's float file."""

    tokenizer_settings: dict
    built: list[Built]
    float_exports: dict[str, Path]  # backend -> plain float file to quantise


@dataclass
class QuantizeResult:
    """The quantize stage's part: the int8/fp16 files, each chosen and judged on the calibration text."""

    built: list[Built] = field(default_factory=list)
    #: the task's dev split and the files scored on it so far (None: no dev split here)
    dev_scores: DevScores | None = None


@dataclass
class MetadataResult:
    """The metadata stage's part: recipe -> what its .tflite now embeds (also in the artifact's details)."""

    embedded: dict[str, dict] = field(default_factory=dict)


@dataclass
class VerifyResult:
    """The verify stage's part: every artifact's figures, in plan order."""

    results: list[ArtifactResult]


@dataclass
class BundleResult:
    """The bundle stage's part: the manifest written and the committed bundle directory."""

    manifest: dict
    path: Path


#: the record's parts given before any stage runs
GIVEN = ("options", "plan", "staging")
#: the record's parts a stage produces, each one result
PARTS = ("load", "transform", "export", "quantize", "metadata", "verify", "bundle")


@dataclass
class Conversion:
    options: ConvertOptions
    plan: Plan
    staging: Staging
    emit: Listener
    timings: dict[str, float] = field(default_factory=dict)
    steps: list[tuple[str, str, float]] = field(default_factory=list)  # every timed step: (stage, step, seconds)
    notes: list[str] = field(default_factory=list)
    load: LoadResult | None = None
    transform: TransformResult | None = None
    export: ExportResult | None = None
    quantize: QuantizeResult | None = None
    metadata: MetadataResult | None = None
    verify: VerifyResult | None = None
    bundle: BundleResult | None = None

    def produced(self) -> set[str]:
        """The parts present now: what was given and what the stages so far produced."""
        return set(GIVEN) | {part for part in PARTS if getattr(self, part) is not None}

    @property
    def built(self) -> list[Built]:
        """Every artifact written so far: the float exports, then the quantised files."""
        return [*(self.export.built if self.export else []), *(self.quantize.built if self.quantize else [])]

    @contextlib.contextmanager
    def step(self, stage: str, description: str, quiet: bool = False) -> Iterator[None]:
        """Time one step of ``stage`` (added to the stage's seconds) and tell the listener (``quiet``: a step that
        times files, during which the listener draws nothing that moves)."""
        start = time.perf_counter()
        self.emit(StageStarted(stage, description, quiet))
        yield
        seconds = time.perf_counter() - start
        self.timings[stage] = self.timings.get(stage, 0.0) + seconds
        self.steps.append((stage, description, seconds))
        self.emit(StageFinished(stage, description, seconds))

    def note(self, message: str, warning: bool = False, keep: bool = False) -> None:
        """Tell the listener; ``keep`` also records it in the manifest's notes."""
        self.emit(Note(message, warning))
        if keep:
            self.notes.append(message)

    def result(self) -> ConvertResult:
        return ConvertResult(bundle=self.bundle.path, manifest=self.bundle.manifest, artifacts=self.verify.results,
                             stage_seconds=self.timings, notes=self.notes, steps=self.steps)
