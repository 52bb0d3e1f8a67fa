"""Full-integer TFLite calibration runs each signature on the last ``RANGE_ROWS`` calibration rows only: the
quantizer's moving average of each row's min and max gives every earlier row a weight of at most 0.95^256 (about
2e-6) in total, so the ranges are those all the rows give."""

from __future__ import annotations

import numpy as np

from pocketbert.converter.backends import get, tflite_calibration
from pocketbert.converter.inputs.texts import read_texts

from .conftest import DATA, nonorm_model

RANGE_ROWS = tflite_calibration.RANGE_ROWS


def _ranges(monkeypatch, rows: int, spec, path, calibration) -> dict:
    monkeypatch.setattr(tflite_calibration, "RANGE_ROWS", rows)
    return get("tflite")._calibrate(spec, path, calibration, float_ops=[])


def test_the_last_rows_give_the_ranges_every_row_gives(checkpoints, monkeypatch, tmp_path):
    _, spec = nonorm_model(checkpoints["bert"]["classification"], "fold", buckets=(16, 32))
    get("tflite").export(spec, tmp_path / "float.tflite")
    texts = read_texts(DATA / "glue" / "SST-2" / "train.tsv")[:RANGE_ROWS + 64]
    calibration = spec.make_batches(texts, pad_to=32)
    every = _ranges(monkeypatch, 10**6, spec, tmp_path / "float.tflite", calibration)

    def worst(ranges) -> float:
        """The largest difference from every row's ranges, relative to each tensor's range width."""
        return max(float(np.max(np.abs(ranges[name][end] - every[name][end])
                                / np.maximum(every[name]["max"] - every[name]["min"], 1e-6)))
                   for name in every for end in ("min", "max"))

    assert worst(_ranges(monkeypatch, RANGE_ROWS, spec, tmp_path / "float.tflite", calibration)) < 1e-5
    assert worst(_ranges(monkeypatch, 16, spec, tmp_path / "float.tflite", calibration)) > 1e-3  # it can fail


def test_two_processes_calibrate_exactly_what_one_does(checkpoints, monkeypatch, tmp_path):
    """A second process calibrating the longest signatures gives, merged, exactly one process's ranges; if it
    fails, this process calibrates its signatures too, with the same result."""
    import sys

    _, spec = nonorm_model(checkpoints["bert"]["classification"], "fold", buckets=(16, 32, 64))
    get("tflite").export(spec, tmp_path / "float.tflite")
    calibration = spec.make_batches(read_texts(DATA / "glue" / "SST-2" / "train.tsv")[:48], pad_to=32)
    one = _ranges(monkeypatch, RANGE_ROWS, spec, tmp_path / "float.tflite", calibration)
    assert tflite_calibration.longest_half([16, 32, 64]) == ["seq_64"]
    monkeypatch.setattr(tflite_calibration, "MIN_PARAMETERS", 0)
    two = _ranges(monkeypatch, RANGE_ROWS, spec, tmp_path / "float.tflite", calibration)
    monkeypatch.setattr(sys, "executable", "/bin/false")  # the second process fails at once
    fallen_back = _ranges(monkeypatch, RANGE_ROWS, spec, tmp_path / "float.tflite", calibration)
    for found in (two, fallen_back):
        assert found.keys() == one.keys()
        assert all(np.array_equal(found[name][end], one[name][end]) for name in one for end in ("min", "max"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["float.tflite"]  # the second process's files are gone
