"""The convert command's summary ends with where the conversion's time went."""

from __future__ import annotations


def test_the_summary_says_where_the_time_went():
    from pocketbert.converter.cli.render import time_line

    steps = [("load", "Loading", 1.0), ("quantize", "Preparing the calibration text", 5.0),
             ("quantize", "Quantising onnx:int8-static", 30.0), ("verify", "Verifying onnx:fp32", 4.0)]
    line = time_line({"load": 1.0, "quantize": 35.0, "verify": 4.0}, steps)
    assert line == ("Where the time went (40.0 s): quantize 35.0 s (88%; Quantising onnx:int8-static 30.0 s), "
                    "verify 4.0 s (10%), load 1.0 s (2%)")
