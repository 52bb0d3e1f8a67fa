"""--max-size: the most accurate TFLite recipe whose file fits, or a refusal that says what would fit."""

from __future__ import annotations

import pytest

from pocketbert.converter.errors import ConverterInputError, VerificationError
from pocketbert.converter.options import plan
from pocketbert.converter.pipeline import convert
from pocketbert.converter.backends.recipes import parse_size
from pocketbert.runtime.bundle import read_manifest


@pytest.mark.parametrize("text, size", [("8MB", 8_000_000), ("8.5 MB", 8_500_000), ("750kB", 750_000),
                                        ("2G", 2_000_000_000), ("1234", 1234)])
def test_sizes_are_read_in_decimal_units_as_the_converter_prints_them(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("kwargs, needle", [
    ({"max_size": "eight megabytes"}, "not a size"),
    ({"max_size": "0MB"}, "not a size"),
    ({"max_size": "8MB", "recipes": "tflite:int8-dynamic"}, "both choose"),
    ({"max_size": "8MB", "formats": "onnx"}, "nothing is exported to tflite"),
])
def test_contradictory_or_malformed_max_size_is_refused_before_any_work(kwargs, needle, checkpoints, options):
    with pytest.raises(ConverterInputError, match=needle):
        plan(options(checkpoints["bert"]["classification"], **kwargs))


def test_the_most_accurate_recipe_that_fits_ships_and_the_choice_is_recorded(checkpoints, options):
    ckpt = checkpoints["bert"]["classification"]
    # the tiny model's float weights are ~4 MB (mostly its 30,522-row table): fp16 and int8 cannot fit 1.2 MB
    result = convert(options(ckpt, formats="tflite", max_size="1.2MB", buckets=[16, 32]))
    manifest = read_manifest(result.bundle)
    fp32, small = manifest["artifacts"]
    assert small["recipe"] == "tflite:int4-dynamic" and small["verification"]["passed"]
    assert (result.bundle / small["file"]).stat().st_size <= 1_200_000
    choice = small["details"]["size_choice"]
    assert choice["max_bytes"] == 1_200_000
    assert [t["outcome"] for t in choice["candidates"]] == ["not built: its weights alone exceed the budget"] * 2 + [
        "chosen"]
    assert not list(result.bundle.glob(".candidate-*"))


def test_nothing_fits_names_every_size_and_the_vocabulary_that_would(checkpoints, options):
    ckpt = checkpoints["bert"]["classification"]
    out = options(ckpt, formats="tflite", max_size="400kB", buckets=[16]).out
    with pytest.raises(VerificationError) as caught:
        convert(options(ckpt, formats="tflite", max_size="400kB", buckets=[16]))
    assert "no TFLite recipe fits --max-size 0.4 MB" in caught.value.problem
    assert "tflite:int4-dynamic" in caught.value.problem and "MB (too big)" in caught.value.problem
    assert "trim-vocab" in caught.value.fix and "--size " in caught.value.fix and "shrink" in caught.value.fix
    assert "pocketbert-convert CHECKPOINT --max-size 0.4MB --recover TASK" in caught.value.fix
    assert not out.exists()  # nothing half-written


def test_the_refusal_names_the_vocabulary_and_the_rank_that_would_fit():
    """SST-2 demo shape at int4: 204 bytes a row; 4.7 MB too many leaves 7,482 rows, or rows of rank 76."""
    from pocketbert.converter.levers.size_fit import _table_levers

    shape = {"vocab_size": 30522, "hidden_size": 384, "table_width": 384}
    trim, factor = _table_levers(shape, 4_700_000)
    assert "trim-vocab CHECKPOINT --task TASK --size 7482 " in trim
    assert "factor-embeddings CHECKPOINT --task TASK --rank 76 " in factor
    factored = _table_levers({**shape, "table_width": 160}, 1_000_000)  # already factored: no second factoring
    assert len(factored) == 1 and "trim-vocab" in factored[0]


def test_the_refusal_names_the_feed_forward_width_that_would_fit():
    """6 int4 blocks 384 wide: a feed-forward unit is 400 bytes a block (192 + 192 of weights, a scale and zero point,
    a bias); 1 MB too many is 417 of 1,536 units, 1,088 left in whole tiles of 32. The table alone cannot be
    narrowed to a fit: then no width is named."""
    from pocketbert.converter.levers.size_fit import _narrow_lever

    shape = {"vocab_size": 30522, "hidden_size": 384, "table_width": 384, "ffn_width": 1536, "ffn_blocks": 6}
    (lever,) = _narrow_lever(shape, 1_000_000)
    assert "narrow CHECKPOINT --task TASK --ffn-width 1088 " in lever
    assert _narrow_lever(shape, 4_700_000) == []
