"""The int8 ladder's judge: a full judgement on all the calibration texts at every length it is given, and a
cheap screen on the first texts of the first length, to rank roles by."""

from __future__ import annotations

import numpy as np

from pocketbert.converter.checks import verify
from pocketbert.converter.quantize.calibration_judge import SCREEN_TEXTS, CalibrationJudge, Judged


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


def test_a_full_judgement_reads_every_length_and_a_screen_the_first_texts_of_the_first():
    rng = np.random.default_rng(0)
    lengths = [_judged(64, 64, rng), _judged(64, 128, rng)]  # 1,024 texts at two lengths
    judge, ran = _judge(lengths, flip_after=SCREEN_TEXTS)
    ok, figures = judge.screen(None)  # the screen sees only the texts that agree
    assert ok and figures["screened"] and figures["judged_texts"] == SCREEN_TEXTS == sum(ran)
    ran.clear()
    ok, figures = judge(None)  # the full judgement sees the rest too, and stops at the first length missing the bar
    assert sum(ran) == 1024 and figures["judged_texts"] == 1024 and "screened" not in figures
    assert not ok and not figures["meets_bar"] and figures["top1_agreement"] < 0.2


def test_a_file_meeting_the_bar_is_judged_at_every_length():
    """Stopping early is only for a file that misses the bar (it fails whatever the other lengths give): one that
    meets the bar, short of the target or not, is read at every length, and its figures are the worst length's."""
    rng = np.random.default_rng(1)
    lengths = [_judged(64, 64, rng), _judged(64, 128, rng)]
    for flip_after, passes in ((1024 - 32, False), (1024, True)):  # 96.9% agreement (bar 90%, target 99%); 100%
        judge, ran = _judge(lengths, flip_after=flip_after)
        ok, figures = judge(None)
        assert sum(ran) == 2048 and figures["judged_texts"] == 2048
        assert ok is passes and figures["meets_bar"] and figures["top1_agreement"] == round(flip_after / 1024, 4)


def test_little_calibration_text_is_judged_in_full_even_when_screened():
    """With no more than twice the screen's texts, a screen would save little: it is a full judgement."""
    rng = np.random.default_rng(2)
    judge, ran = _judge([_judged(2 * SCREEN_TEXTS // 16, 64, rng)], flip_after=10_000)
    ok, figures = judge.screen(None)
    assert ok and sum(ran) == 2 * SCREEN_TEXTS and "screened" not in figures


def test_the_judges_reference_runs_only_the_columns_a_batch_uses(checkpoints):
    """The float reference the judge compares with, computed on trimmed batches, equals the padded one (the model
    masks padding out) for sentence and token logits; a batch the same once trimmed runs once for all lengths."""
    from pocketbert.converter.checkpoints import loading
    from pocketbert.converter.inputs.encoding import encode
    from pocketbert.converter.backends.logits_model import LogitsModel

    texts = ["a short one", "a somewhat longer sentence, with more pieces in it than the first"] * 8
    for head in ("classification", "ner"):
        loaded = loading.load(str(checkpoints["bert"][head]))
        names = ["input_ids", "attention_mask", "token_type_ids"]
        model = LogitsModel(loaded.model, names).eval()
        calls = []
        model.register_forward_pre_hook(lambda _m, args: calls.append(args[0].shape[1]))
        batches = {length: [encode(loaded.tokenizer, texts, input_names=names, max_length=length, pad_to=length)]
                   for length in (32, 64)}
        computed: dict = {}
        for length, padded in batches.items():
            trimmed = verify.unpadded_logits(model, padded, computed)
            calls_before = len(calls)
            full = verify.torch_logits(model, padded)
            assert trimmed[0].shape == full[0].shape
            real = padded[0]["attention_mask"].astype(bool) if full[0].ndim == 3 else slice(None)
            np.testing.assert_allclose(trimmed[0][real], full[0][real], atol=1e-5)  # padding is never compared
            del calls[calls_before:]
        longest = int(batches[32][0]["attention_mask"].sum(1).max())
        assert calls == [longest] and longest < 32  # one run, at the longest text's length, for both lengths


def test_a_backend_with_dynamic_shapes_is_judged_unpadded_with_the_same_figures(checkpoints):
    """Rows sorted by length and cut to each batch's longest: the reference and the entity starts follow their
    rows, so a candidate that differs from the reference (here: the model with noise in its weights) gets the
    figures the padded judgement gives, from far fewer positions."""
    import copy

    import torch

    from pocketbert.converter.checkpoints import loading
    from pocketbert.converter.inputs.encoding import encode, word_starts
    from pocketbert.converter.backends.logits_model import LogitsModel

    from .conftest import NER_LABELS

    rng = np.random.default_rng(5)
    words = "the film was a long and quiet story about Paris in winter , told well".split()
    texts = [" ".join(rng.choice(words, size=int(n))) for n in rng.integers(2, 20, size=48)]
    bars = verify.Bars(min_cosine=0.5, min_agreement=0.5, target_agreement=0.99, min_entity_f1=0.5)
    for head in ("classification", "ner"):
        loaded = loading.load(str(checkpoints["bert"][head]))
        names = ["input_ids", "attention_mask", "token_type_ids"]
        model = LogitsModel(loaded.model, names).eval()
        noisy = copy.deepcopy(model)
        with torch.no_grad():
            for weight in noisy.parameters():
                weight.add_(torch.randn_like(weight) * 0.05)
        batches = [encode(loaded.tokenizer, texts[i:i + 16], input_names=names, max_length=64, pad_to=64)
                   for i in range(0, 48, 16)]
        entities = verify.EntityView([word_starts(loaded.tokenizer, texts[i:i + 16], max_length=64, pad_to=64)
                                      for i in range(0, 48, 16)], NER_LABELS) if head == "ner" else None
        judged = Judged(batches, verify.torch_logits(model, batches), entities)
        widths: list[int] = []

        def load(_path):
            return lambda batch: widths.append(batch["input_ids"].shape[1]) or verify.torch_logits(noisy, [batch])[0]

        padded = CalibrationJudge(load, [judged], bars)(None)[1]
        unpadded = CalibrationJudge(load, [judged], bars, unpadded=True)(None)[1]
        assert padded == unpadded and padded["top1_agreement"] < 1.0, head
        assert widths[:3] == [64] * 3 and max(widths[3:]) < 32 and widths[3:] == sorted(widths[3:], reverse=True)


def test_the_reference_runs_rows_sorted_by_length_and_puts_each_back(checkpoints):
    """Rows of batches in text order run longest first, each group cut to its longest row; every row's logits
    come back to its batch and place (padding positions zero), equal to the padded batches' own."""
    from pocketbert.converter.checkpoints import loading
    from pocketbert.converter.inputs.encoding import encode
    from pocketbert.converter.backends.logits_model import LogitsModel

    rng = np.random.default_rng(7)
    texts = [" ".join(["word"] * int(n)) for n in rng.integers(1, 40, size=40)]
    for head in ("classification", "ner"):
        loaded = loading.load(str(checkpoints["bert"][head]))
        names = ["input_ids", "attention_mask", "token_type_ids"]
        model = LogitsModel(loaded.model, names).eval()
        widths: list[int] = []
        model.register_forward_pre_hook(lambda _m, args: widths.append(args[0].shape[1]))
        batches = [encode(loaded.tokenizer, texts[i:i + 16], input_names=names, max_length=64, pad_to=64)
                   for i in range(0, 40, 16)]  # 16, 16 and 8 rows
        found = verify.unpadded_logits(model, batches)
        assert widths == sorted(widths, reverse=True) and len(widths) == 3 and widths[-1] < 20
        widths.clear()
        for batch, reference, logits in zip(batches, verify.torch_logits(model, batches), found, strict=True):
            assert logits.shape == reference.shape
            real = batch["attention_mask"].astype(bool) if head == "ner" else slice(None)
            np.testing.assert_allclose(logits[real], reference[real], atol=1e-5)
            if head == "ner":
                assert not logits[~real].any()
