"""Static int8's calibration: ONNX Runtime's Percentile calibrator on the calibration text without its
padding, its ranges reused by every float-fallback attempt; the static file is the dynamic file's graph with those
ranges in place of run-time ones."""

from __future__ import annotations

import numpy as np
import onnx
from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static
from onnxruntime.quantization.calibrate import load_tensors_data

from pocketbert.converter.backends import onnx as onnx_backend
from pocketbert.converter.backends.onnx import (
    _COMMON,
    CALIBRATED_OPS,
    PERCENTILE,
    _quantize_dynamic,
    _quantize_static,
    export_fused,
)
from pocketbert.converter.checks.verify import unpadded_batches

from .conftest import export_spec

TEXTS = ["a gripping , beautifully acted film", "dull", "the movie was ok but long and the ending dragged on",
         "great fun", "an utterly forgettable mess", "I loved every minute of it , really", "not bad at all",
         "two hours I will never get back"]


class _Reader(CalibrationDataReader):
    def __init__(self, batches):
        self._batches = iter(batches)

    def get_next(self):
        return next(self._batches, None)


def _prepared(checkpoint, tmp_path):
    """The fused float graph static int8 quantises (one Attention per layer)."""
    _, spec = export_spec(checkpoint)
    assert export_fused(spec, tmp_path / "float.onnx")["applied"]
    return tmp_path / "float.onnx", spec


def _stock(source, dest, batches, cache):
    """quantize_static with its own calibrator, with the converter's settings."""
    quantize_static(source, dest, _Reader(batches), quant_format=QuantFormat.QDQ, per_channel=True,
                    reduce_range=True, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    op_types_to_quantize=CALIBRATED_OPS, calibrate_method=CalibrationMethod.Percentile,
                    calibration_cache_path=cache,
                    extra_options=dict(_COMMON["extra_options"], CalibPercentile=PERCENTILE))


def _batches(spec, pad_to):
    return [spec.make_batches(TEXTS[i:i + 2], pad_to=pad_to)[0] for i in range(0, len(TEXTS), 2)]


def test_unpadded_batches_keep_every_rows_tokens_sorted_longest_first():
    mask = np.array([[1] * n + [0] * (32 - n) for n in (3, 17, 9, 30, 12, 5)])
    ids = np.where(mask == 1, np.arange(1, 33)[None, :] * 100 + np.arange(6)[:, None], 0)
    batches = [{"input_ids": ids[i:i + 2], "attention_mask": mask[i:i + 2]} for i in (0, 2, 4)]
    unpadded = unpadded_batches(batches)
    assert [b["input_ids"].shape for b in unpadded] == [(2, 30), (2, 12), (2, 5)]  # rows 30,17 | 12,9 | 5,3
    rows = [row for b in unpadded for row in zip(b["input_ids"], b["attention_mask"])]
    assert [int(m.sum()) for _, m in rows] == [30, 17, 12, 9, 5, 3]
    for row_ids, row_mask in rows:  # every real token kept, in place
        original = next(i for i in range(6) if mask[i].sum() == row_mask.sum())
        assert np.array_equal(row_ids[: row_mask.sum()], ids[original, : row_mask.sum()])


def test_without_padding_the_ranges_are_onnx_runtimes_own(checkpoints, tmp_path):
    """Rows of one length have no padding to cut: the collector given them in another order and batching
    finds exactly the ranges quantize_static's own calibration finds."""
    source, spec = _prepared(checkpoints["bert"]["classification"], tmp_path)
    same_length = [f"word{i} and word{i + 1} again" for i in range(8)]
    batches = [spec.make_batches(same_length[i:i + 4])[0] for i in (0, 4)]
    assert all(b["attention_mask"].all() for b in batches)
    _stock(source, tmp_path / "stock.onnx", batches, tmp_path / "stock.json")
    _quantize_static(source, tmp_path / "ours.onnx", batches, [], tmp_path / "ours.json")
    stock, ours = load_tensors_data(tmp_path / "stock.json"), load_tensors_data(tmp_path / "ours.json")
    assert stock.data.keys() == ours.data.keys()
    for name in stock.data:
        assert np.array_equal(stock.data[name].range_value, ours.data[name].range_value), name
    # the ranges alone make the file: quantised from ONNX Runtime's own, it is the same file
    _quantize_static(source, tmp_path / "from-stock.onnx", [], [], tmp_path / "stock.json")
    assert (tmp_path / "from-stock.onnx").read_bytes() == (tmp_path / "ours.onnx").read_bytes()


def test_ranges_do_not_depend_on_padding_and_cover_what_onnx_runtime_calibrates(checkpoints, tmp_path):
    source, spec = _prepared(checkpoints["bert"]["classification"], tmp_path)
    _quantize_static(source, tmp_path / "short.onnx", _batches(spec, 16), [], tmp_path / "short.json")
    _quantize_static(source, tmp_path / "long.onnx", _batches(spec, 48), [], tmp_path / "long.json")
    short, long = load_tensors_data(tmp_path / "short.json"), load_tensors_data(tmp_path / "long.json")
    assert short.data.keys() == long.data.keys()
    for name in short.data:
        assert np.array_equal(short.data[name].range_value, long.data[name].range_value), name
    assert (tmp_path / "short.onnx").read_bytes() == (tmp_path / "long.onnx").read_bytes()

    # ONNX Runtime's own calibration in quantize_static reads the same tensors
    _stock(source, tmp_path / "stock.onnx", _batches(spec, 16), tmp_path / "stock.json")
    assert load_tensors_data(tmp_path / "stock.json").data.keys() == short.data.keys()


def test_the_static_file_is_the_dynamic_files_graph_with_calibrated_ranges(checkpoints, tmp_path):
    """The same integer kernels (QAttention, MatMulInteger) and weights as dynamic int8; only where each quantised
    input's scale comes from differs: a QuantizeLinear of the calibrated scale, not a DynamicQuantizeLinear.  (The
    classification head's Gemms, one row per text, stay float: ONNX Runtime's quantiser turns a Gemm into an
    integer MatMul only when it quantises at run time.)"""
    source, spec = _prepared(checkpoints["bert"]["classification"], tmp_path)
    _quantize_static(source, tmp_path / "static.onnx", _batches(spec, 16), [], tmp_path / "cache.json")
    _quantize_dynamic(source, tmp_path / "dynamic.onnx", [])
    static, dynamic = (onnx.load(str(tmp_path / f"{name}.onnx")).graph for name in ("static", "dynamic"))
    kinds = [[n.op_type for n in graph.node if n.op_type in ("QAttention", "MatMulInteger") and "Gemm" not in n.name]
             for graph in (static, dynamic)]
    assert [n.op_type for n in static.node if "Gemm" in n.name] == ["Gemm", "Gemm"]
    assert kinds[0] == kinds[1] and "QAttention" in kinds[0] and "MatMulInteger" in kinds[0]
    assert "DynamicQuantizeLinear" not in {n.op_type for n in static.node}
    quantized = [n for n in static.node if n.op_type == "QuantizeLinear"]
    constants = {i.name: i for i in static.initializer}
    assert quantized and all(n.input[1] in constants for n in quantized)  # a scale fixed in the file
    weights = [{i.name: onnx.numpy_helper.to_array(i).tobytes() for i in g.initializer if i.data_type == 3}
               for g in (static, dynamic)]
    assert len(weights[0]) > 10 and weights[0].items() <= weights[1].items()  # int8 weights, byte for byte


def test_every_float_fallback_attempt_reuses_the_ranges(checkpoints, tmp_path, monkeypatch):
    source, spec = _prepared(checkpoints["bert"]["classification"], tmp_path)
    calls = []
    real = onnx_backend.calibrate
    monkeypatch.setattr(onnx_backend, "calibrate", lambda *a: calls.append(a) or real(*a))
    linear = next(n.name for n in onnx.load(str(source)).graph.node if n.op_type == "MatMul")
    _quantize_static(source, tmp_path / "a.onnx", _batches(spec, 16), [], tmp_path / "cache.json")
    _quantize_static(source, tmp_path / "b.onnx", _batches(spec, 16), [linear], tmp_path / "cache.json")
    assert len(calls) == 1
    kept = [n for n in onnx.load(str(tmp_path / "b.onnx")).graph.node if n.name == linear]
    assert kept and kept[0].op_type == "MatMul"
    assert any(n.op_type == "MatMulInteger" and n.name.startswith(linear)
               for n in onnx.load(str(tmp_path / "a.onnx")).graph.node)


def test_ragged_histograms_equal_onnx_runtimes_on_the_stacked_values():
    """Batches binned one by one between the overall edges: the same counts, edges and extremes as ONNX Runtime's
    collector given all their values as one array (for every tensor, at a few bin counts)."""
    rng = np.random.default_rng(3)
    tensors = {f"t{i}": [rng.standard_t(3, size=(2, n, 8)).astype(np.float32) * (i + 1) for n in (5, 17, 1, 9)]
               for i in range(3)}
    tensors["constant"] = [np.full((1, n, 4), 2.5, np.float32) for n in (3, 6)]  # one value: numpy widens the edges
    for bins in (7, 2048):
        settings = dict(method="percentile", symmetric=True, num_bins=bins, num_quantized_bins=128,
                        percentile=PERCENTILE, scenario="same")
        ours, stock = onnx_backend.RaggedHistogramCollector(**settings), onnx_backend.HistogramCollector(**settings)
        ours.collect({name: list(arrays) for name, arrays in tensors.items()})
        stock.collect({name: np.concatenate([a.ravel() for a in arrays]) for name, arrays in tensors.items()})
        for name in tensors:
            for found, expected in zip(ours.histogram_dict[name], stock.histogram_dict[name], strict=True):
                assert np.asarray(found).dtype == np.asarray(expected).dtype
                assert np.array_equal(found, expected), (name, bins)
        ranges = ours.compute_collection_result(), stock.compute_collection_result()
        assert all(np.array_equal(ranges[0][n], ranges[1][n]) for n in tensors)
