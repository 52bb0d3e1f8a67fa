"""The best of a recovery's dev checks: its score, where in the run it came, and its training state.

Recovery scores the student on the dev split at a quarter, half, three quarters and the end of its budget;
the score can fall at the end (a small dev set, a learning rate still high, distillation that fits the
teacher's logits rather than the labels).  The state shipped is the check with the highest score of the
metric the gate uses.  On a tie the later check wins: it has trained longer towards the teacher for the same
dev score, and it is the state that would have shipped anyway, so an earlier state replaces the end only
when it is strictly better on the dev set.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Check:
    step: int
    fraction: float  # of the budget used
    seconds: float
    score: float

    def to_json(self, metric: str, teacher: float) -> dict:
        return {"steps": self.step, "fraction": round(self.fraction, 4), "seconds": round(self.seconds, 1),
                metric: round(self.score, 3), "delta_vs_teacher": round(self.score - teacher, 3)}


@dataclass
class BestState:
    """Offer each check in order; :attr:`best` is the one to ship and :attr:`state` its training state."""

    metric: str
    teacher: float
    checks: list[Check] = field(default_factory=list)
    best: Check | None = None
    state: dict | None = None  # the loop's state at the best check (weights, optimiser, step, clock, rng)

    def offer(self, check: Check, state) -> bool:
        """Record ``check``; keep ``state()`` when it is the best so far (ties: the later).  True if kept."""
        self.checks.append(check)
        if self.best is not None and check.score < self.best.score:
            return False
        self.best, self.state = check, state()
        return True

    @property
    def end(self) -> Check | None:
        return self.checks[-1] if self.checks else None

    def to_json(self) -> dict:
        best = self.best
        return {**best.to_json(self.metric, self.teacher), "checks": len(self.checks),
                "rule": f"the highest dev {self.metric} of the checks; on a tie the later check"}

    def where(self) -> str:
        """'step 18, 3/4 of the budget' for the log."""
        best = self.best
        return f"step {best.step}, {_fraction_words(best.fraction)} of the budget"


def _fraction_words(fraction: float) -> str:
    for words, value in (("a quarter", 0.25), ("half", 0.5), ("three quarters", 0.75), ("all", 1.0)):
        if abs(fraction - value) < 0.01:
            return words
    return f"{fraction:.0%}"
