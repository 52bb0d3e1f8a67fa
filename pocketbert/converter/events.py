"""What a conversion tells its caller while it runs.

The stages never print: they emit these events, carrying data, and the caller decides what to show
(the CLI draws spinners, a summary table and warnings; tests and the benchmarks ignore them or keep
them).  Text in an event holds user values (paths, labels, task names): a renderer prints it as it is,
never as markup.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class StageStarted:
    stage: str  # load, transform, recover, export, quantize, metadata, verify, bundle
    description: str
    quiet: bool = False  # a step that times files: a listener draws nothing that moves (no spinner) until it ends


@dataclass(frozen=True)
class StageFinished:
    stage: str
    description: str
    seconds: float


@dataclass(frozen=True)
class Note:
    message: str
    warning: bool = False


@dataclass(frozen=True)
class ArtifactBuilt:
    recipe: str
    details: dict  # the backend's record: int8 selection, float fallback, …
    int8_target: float | None = None  # the accuracy ladder's top-1 agreement target on calibration text


@dataclass(frozen=True)
class ArtifactVerified:
    recipe: str
    verification: dict  # real_sentences / fixed_inputs figures, tolerance, passed, failure


Event = StageStarted | StageFinished | Note | ArtifactBuilt | ArtifactVerified
Listener = Callable[[Event], None]


def ignore(event: Event) -> None:
    pass
