"""The int8 ladder's time bound: a float-fallback search stops adding Linears to float after ``LADDER_SECONDS``.

The search's cost grows with the Linear roles it screens and the steps it writes (NER demo on an AVX2-only CPU:
up to 191 s for ``onnx:int8-dynamic``); past the bound it stops where it is and ships what it would ship short of its
target (the cheapest step meeting the int8 bar), and ``details.float_fallback.budget`` says when it stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

#: seconds one float-fallback search may take before it stops taking further steps (one search per int8 file).  The
#: NER demo's ONNX ladders took 35-38 s each on an AVX-512 VNNI EPYC (docs/converter.md), so it does not bind there.
#: On an AVX2-only EPYC (family 25 model 1), in a fresh-clone run of set-up command 1, the ladders took 131 and 144 s,
#: shipping none of their search's steps (each ended on a file with every Linear in int8); bounded at a minute, the
#: next run shipped such files again.  The saving is small (those two ladders: 275 s at three minutes, 242 s at one):
#: most of a smoothed ladder's time is its plain attempt, the smoothed model's statistics and its export, outside the
#: search.
LADDER_SECONDS = 60.0


@dataclass
class Deadline:
    """A running search's bound: ``expired()`` once ``seconds`` have passed since it started."""

    seconds: float
    clock: Callable[[], float] = time.monotonic
    start: float = field(init=False)
    stopped_at: str | None = field(default=None, init=False)

    def __post_init__(self):
        self.start = self.clock()

    def elapsed(self) -> float:
        return self.clock() - self.start

    def expired(self, where: str) -> bool:
        """Whether the bound has passed; the first time it has, ``where`` is recorded as the place it stopped."""
        if self.elapsed() < self.seconds:
            return False
        self.stopped_at = self.stopped_at or where
        return True

    def record(self) -> dict:
        return {"seconds": self.seconds, "elapsed": round(self.elapsed(), 1), "stopped": self.stopped_at}


@dataclass(frozen=True)
class LadderBudget:
    """What a judge carries to the search: the bound, and the clock it is read on (a test's fake clock)."""

    seconds: float = LADDER_SECONDS
    clock: Callable[[], float] = time.monotonic

    def begin(self) -> Deadline:
        return Deadline(self.seconds, self.clock)
