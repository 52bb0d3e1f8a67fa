"""The int8 ladder's judge: a cheap screen on the first calibration texts, a full judgement on all of them
at every length, and only the full one accepts."""

from __future__ import annotations

import numpy as np

from pocketbert.converter import verify
from pocketbert.converter.quantization import SCREEN_TEXTS, CalibrationJudge, Judged


def _judged(batches: int, length: int, rng) -> Judged:
    inputs = [{"input_ids": np.zeros((16, length), np.int64), "attention_mask": np.ones((16, length), np.int64)}
              for _ in range(batches)]
    return Judged(inputs, [rng.normal(size=(16, 2)) for _ in range(batches)])


def _judge(lengths: list[Judged], flip_after: int) -> tuple[CalibrationJudge, list[int]]:
    """A judge whose candidate agrees with the reference on the first ``flip_after`` texts of each length
    and flips the top-1 of every later text; it records how many texts each judgement ran."""
    ran: list[int] = []

    def load(_path):
        def run(batch):
            index = next(i for j in lengths for i, b in enumerate(j.batches) if b is batch)
            reference = next(j.reference[index] for j in lengths if any(b is batch for b in j.batches))
            ran.append(batch["input_ids"].shape[0])
            return reference if index * 16 < flip_after else -reference
        return run

    bars = verify.Bars(min_cosine=0.5, min_agreement=0.9, target_agreement=0.99, min_entity_f1=0.9)
    return CalibrationJudge(load, lengths, bars), ran


def test_a_candidate_clean_on_the_screen_is_judged_in_full_and_can_still_be_refused():
    rng = np.random.default_rng(0)
    lengths = [_judged(64, 64, rng), _judged(64, 128, rng)]  # 1,024 texts at two lengths
    judge, ran = _judge(lengths, flip_after=SCREEN_TEXTS)
    ok, figures = judge(None)
    assert sum(ran) == SCREEN_TEXTS + 2 * 1024  # the screen, then everything
    assert not ok and not figures["meets_bar"] and "screened" not in figures
    assert figures["judged_texts"] == 2048 and figures["top1_agreement"] < 0.2


def test_a_candidate_failing_its_screen_is_not_judged_in_full():
    rng = np.random.default_rng(1)
    judge, ran = _judge([_judged(64, 64, rng)], flip_after=0)
    ok, figures = judge(None)
    assert not ok and figures["screened"] and figures["judged_texts"] == SCREEN_TEXTS == sum(ran)
    ran.clear()
    assert judge.screen(None)[1]["screened"] and sum(ran) == SCREEN_TEXTS
    ran.clear()
    ok, figures = judge.full(None)
    assert sum(ran) == 1024 and "screened" not in figures


def test_little_calibration_text_is_judged_in_full_at_once():
    """With no more than twice the screen's texts, a screen would save little: every judgement is full."""
    rng = np.random.default_rng(2)
    judge, ran = _judge([_judged(2 * SCREEN_TEXTS // 16, 64, rng)], flip_after=10_000)
    ok, figures = judge(None)
    assert ok and sum(ran) == 2 * SCREEN_TEXTS and "screened" not in figures
    ran.clear()
    assert judge.screen(None)[0] and sum(ran) == 2 * SCREEN_TEXTS
