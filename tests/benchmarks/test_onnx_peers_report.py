"""The REPORT.md section pairing our fastest ONNX file with ONNX Runtime's optimizer peers."""

from __future__ import annotations


def test_onnx_peers_section_pairs_our_fastest_file_with_the_peer():
    from pocketbert.benchmarks import onnx_peers_report

    def rec(runner, ms, precision, variant="bundle", opts=""):
        return {"model": "m", "runner": runner, "backend": "onnx", "precision": precision, "variant": variant,
                "opts": opts, "threads": 2, "seq_len": 128, "batch": 1, "skipped": None,
                "timed": {"p50_ms": ms, "mean_ms": ms}}

    rows = onnx_peers_report.rows([rec("onnx:fp32", 10.0, "fp32"), rec("onnx:fp32", 8.0, "fp32", opts="nonorm"),
                                   rec("peer:ort-optimum-fp32", 12.0, "fp32", "peer"),
                                   rec("onnx:int8-dynamic", 6.0, "int8-dynamic"),
                                   rec("peer:ort-optimum-int8-dynamic", 4.5, "int8-dynamic", "peer")])
    assert rows == ["| m | t2 s128 b1 | fp32 | 10.00 | 1.20x | onnx:fp32 +nonorm | 8.00 | 12.00 | 1.50x |",
                    "| m | t2 s128 b1 | int8 | 6.00 | 0.75x | onnx:int8-dynamic | 6.00 | 4.50 | 0.75x |",
                    "| m | t2 s128 b1 | best | – | – | onnx:int8-dynamic | 6.00 | 4.50 (int8-dynamic) | 0.75x |"]
    # a TFLite file takes part in the best row only, and a model measured without peers gets no rows
    tflite = {**rec("tflite:int8-dynamic", 4.0, "int8-dynamic"), "backend": "tflite"}
    with_tflite = onnx_peers_report.rows([rec("onnx:fp32", 10.0, "fp32"), tflite,
                                          rec("peer:ort-optimum-fp32", 12.0, "fp32", "peer"),
                                          rec("peer:ort-optimum-int8-dynamic", 4.5, "int8-dynamic", "peer")])
    assert with_tflite[-1] == "| m | t2 s128 b1 | best | – | – | tflite:int8-dynamic | 4.00 | 4.50 (int8-dynamic) | 1.12x |"
    assert onnx_peers_report.rows([rec("onnx:fp32", 10.0, "fp32")]) == []
