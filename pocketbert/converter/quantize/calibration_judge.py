"""The int8 ladders' judge: a candidate file's logits on the calibration text against the float model's, with
the bars a file must meet (:class:`CalibrationJudge`), and the text it reads (:class:`Judged`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..checks import verify


@dataclass
class Judged:
    """Calibration text padded to one length, with what the int8 judge compares against."""

    batches: list[dict[str, np.ndarray]]
    reference: list[np.ndarray]  # PyTorch logits on them
    entities: verify.EntityView | None = None  # token classification: how to read their entities

    def head(self, count: int) -> Judged:
        """The first ``count`` batches and what they are judged against."""
        entities = self.entities and verify.EntityView(self.entities.word_starts[:count], self.entities.labels)
        return Judged(self.batches[:count], self.reference[:count], entities)

    def unpadded(self) -> Judged:
        """The same rows sorted by length, each batch cut to its longest row (``verify.unpadded_batches``), with
        their reference and entity starts: for a backend with dynamic shapes, which need not run the padding
        (on the NER demo's calibration text about two thirds of the positions at 64 tokens)."""
        reference = verify.regrouped(self.reference, self.batches, sequence_axis=self.reference[0].ndim == 3)
        entities = self.entities and verify.EntityView(
            verify.regrouped(self.entities.word_starts, self.batches, sequence_axis=True), self.entities.labels)
        return Judged(verify.unpadded_batches(self.batches), reference, entities)


#: calibration texts a screening judgement reads (the first length only): enough to rank Linear roles by their
#: cosine, at an eighth of a full judgement's cost; never enough to accept or refuse a file near the target
#: (on the NER demo's 128 texts one entity decides 0.5 points of entity F1)
SCREEN_TEXTS = 128


@dataclass
class CalibrationJudge:
    """accept(path) -> (meets the int8 target on the calibration text?, figures): a full judgement, on all the
    calibration text at every length it is given (a per-length quantised file's every signature), up to the
    first length at which the file misses the bar (``judged_texts`` says how far it read).

    ``screen(path)``: the same figures on ``SCREEN_TEXTS`` texts at the first length, which the float-fallback
    search uses to rank roles (each role's candidate judged once, so screening them saves most of the
    ladder's judging time).  Only a full judgement accepts a file.

    ``figures["meets_bar"]``: good enough to ship (the verification bar) if no attempt of the ladder
    reaches the target; the float-fallback search then keeps the cheapest such attempt.
    ``figures["judged_texts"]``: how many calibration texts the figures come from; ``figures["screened"]``:
    they come from a screen.
    """

    load: Callable[[Path], Callable]
    lengths: list[Judged]
    bars: verify.Bars
    #: judge each length's rows unpadded (:meth:`Judged.unpadded`): a backend with dynamic shapes
    unpadded: bool = False
    #: an int8 file's speed check against the bundle's fp32 file (``speed_rule.SpeedCheck``; None: not timed)
    speed: Callable[[Path], tuple[bool, dict]] | None = None
    #: the ladder's time bound (``ladder_budget.LadderBudget``; None: unbounded)
    budget: object | None = None

    def __call__(self, path: Path) -> tuple[bool, dict]:
        return self._judge(path, self.lengths)

    def screen(self, path: Path) -> tuple[bool, dict]:
        screen = self._screen_set()
        if screen is None:
            return self(path)
        ok, figures = self._judge(path, screen)
        return ok, {**figures, "screened": True}

    def _screen_set(self) -> list[Judged] | None:
        """The first length's first texts, or None when that is (nearly) all there is to judge."""
        first = self.lengths[0]
        size = first.batches[0]["input_ids"].shape[0]
        count = max(1, SCREEN_TEXTS // size)
        if len(self.lengths) == 1 and count * 2 >= len(first.batches):
            return None
        return [first.head(count)]

    def _judge(self, path: Path, lengths: list[Judged]) -> tuple[bool, dict]:
        """Length by length, stopping at the first that misses the bar: the file then misses the bar and the
        target whatever the lengths left give (its figures are the worst of any length), and a ladder's failing
        rungs cost one length's judgement instead of every length's."""
        runner, bars = self.load(path), self.bars
        lengths = [judged.unpadded() for judged in lengths] if self.unpadded else lengths
        found = []
        for j in lengths:
            found.append(verify.compare(j.reference, verify.runner_logits(runner, j.batches),
                                        [b["attention_mask"] for b in j.batches], j.entities))
            if found[-1].int8_failure(bars.min_cosine, bars.min_agreement, bars.min_entity_f1) is not None:
                break
        lengths = lengths[:len(found)]
        meets_bar = all(c.int8_failure(bars.min_cosine, bars.min_agreement, bars.min_entity_f1) is None
                        for c in found)
        # the target holds for what the task reports: for NER its entities as well as its tokens
        reported = min(c.top1_agreement if c.entity_f1 is None else min(c.top1_agreement, c.entity_f1)
                       for c in found)
        # the worst length's figures: a file is as good as its worst signature
        figures = {"cosine": round(min(c.cosine for c in found), 5),
                   "top1_agreement": round(min(c.top1_agreement for c in found), 4)}
        if found[0].entity_f1 is not None:
            figures["entity_f1"] = round(min(c.entity_f1 for c in found), 4)
        figures["judged_texts"] = sum(b["input_ids"].shape[0] for j in lengths for b in j.batches)
        return meets_bar and reported >= bars.target_agreement, {**figures, "meets_bar": meets_bar}
