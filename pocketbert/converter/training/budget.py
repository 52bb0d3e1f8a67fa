"""A training budget: steps, seconds or epochs, whichever is reached first, and its command-line form
(``500steps``, ``2epochs``, ``90s``, ``20m``, ``1.5h``)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from ..errors import ConverterInputError


@dataclass
class Budget:
    """Whichever limit is hit first ends training; at least one must be set."""

    steps: int | None = None
    seconds: float | None = None
    epochs: float | None = None

    def check(self, batches_per_epoch: int) -> None:
        if self.steps is None and self.seconds is None and self.epochs is None:
            raise ConverterInputError("no training budget given", "give a step, time or epoch budget")
        if (self.steps is not None and self.steps < 1) or (self.seconds is not None and self.seconds <= 0) or (
                self.epochs is not None and self.epochs <= 0):
            raise ConverterInputError(f"training budget {self.describe()} is too small to train anything",
                                      "give at least one step (e.g. --budget 10m or --budget 500steps)")
        if self.epochs is not None and self.epochs * batches_per_epoch < 1:
            raise ConverterInputError(f"{self.epochs} epoch(s) of {batches_per_epoch} batches is less than one step",
                                      "give a larger budget")

    def fraction(self, step: int, seconds: float, batches_per_epoch: int) -> float:
        parts = [0.0]
        if self.steps is not None:
            parts.append(step / self.steps)
        if self.seconds is not None:
            parts.append(seconds / self.seconds)
        if self.epochs is not None:
            parts.append(step / (self.epochs * batches_per_epoch))
        return max(parts)

    def scaled(self, share: float) -> Budget:
        """A part of this budget (a stage of a schedule)."""
        return Budget(steps=None if self.steps is None else max(1, round(self.steps * share)),
                      seconds=None if self.seconds is None else self.seconds * share,
                      epochs=None if self.epochs is None else self.epochs * share)

    def describe(self) -> str:
        parts = []
        if self.steps is not None:
            parts.append(f"{self.steps} steps")
        if self.epochs is not None:
            parts.append(f"{self.epochs:g} epochs")
        if self.seconds is not None:
            parts.append(f"{self.seconds:.0f} s")
        return " or ".join(parts) or "none"

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


_BUDGET_PART = re.compile(r"^(\d+(?:\.\d+)?)\s*(steps?|epochs?|s|m|min|h)$")
_SECONDS = {"s": 1, "m": 60, "min": 60, "h": 3600}


def parse_budget(text: str) -> Budget:
    """``500steps``, ``2epochs``/``0.5epoch``, ``90s``, ``20m``, ``1.5h``; comma-separated: first limit wins."""
    budget = Budget()
    parts = [p.strip().lower() for p in str(text).split(",") if p.strip()]
    if not parts:
        raise ConverterInputError("empty training budget", "write e.g. 500steps, 2epochs, 90s, 20m or 1.5h")
    for part in parts:
        match = _BUDGET_PART.match(part)
        if not match:
            raise ConverterInputError(f"cannot read budget {part!r}", "write e.g. 500steps, 2epochs, 90s, 20m or 1.5h")
        value, unit = float(match.group(1)), match.group(2)
        if unit.startswith("step"):
            budget.steps = int(value)
        elif unit.startswith("epoch"):
            budget.epochs = value
        else:
            budget.seconds = value * _SECONDS[unit]
    return budget
