"""The phone-sized TFLite file: int4 weights, its int8 fallback, and the lossless compaction of every
quantised file."""

from __future__ import annotations

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter

from pocketbert.converter.backends import get
from pocketbert.converter.backends.tflite_compact import compact, table_count
from pocketbert.converter.backends.tflite_recipes import nonpositive_scales
from pocketbert.converter.pipeline import convert
from pocketbert.runtime.bundle import precision_rank, read_manifest

from .conftest import export_spec

TEXTS = ["A gripping , beautifully acted film .", "Dull ."]
FFN_OUT = 9  # TensorType.INT8


def _logits_per_signature(path) -> list[np.ndarray]:
    interpreter = Interpreter(model_path=str(path), num_threads=1)
    out = []
    rng = np.random.default_rng(0)
    for name in sorted(interpreter.get_signature_list()):
        runner = interpreter.get_signature_runner(name)
        length = int(name.removeprefix("seq_"))
        feeds = {k: np.ones((1, length), np.int32) for k in runner.get_input_details()}
        feeds["input_ids"] = rng.integers(5, 90, (1, length)).astype(np.int32)
        out.append(runner(**feeds)["logits"])
    return out


def test_int4_file_is_verified_int4_and_a_little_over_half_the_int8_one(checkpoints, options):
    result = convert(options(checkpoints["bert"]["classification"], recipes="tflite:int8-dynamic,tflite:int4-dynamic",
                             buckets=[16, 32]))
    manifest = read_manifest(result.bundle)
    fp32, int8, int4 = manifest["artifacts"]
    assert int4["recipe"] == "tflite:int4-dynamic" and int4["verification"]["passed"]
    assert int4["verification"]["tolerance"]["min_cosine"] == 0.95  # int4's own bar, the int8 ones beside it
    assert int4["verification"]["tolerance"]["min_top1_agreement"] == int8["verification"]["tolerance"][
        "min_top1_agreement"]
    weights, fallback = int4["details"]["weight_bytes"], int4["details"]["float_fallback"]
    assert weights.get("int4", 0) > 0
    # int8 bytes are exactly the Linears the ladder kept (which it may on a CPU whose kernels round differently)
    assert (weights.get("int8", 0) > 0) == bool(fallback["roles"])
    assert not [op for op in int4["details"]["op_histogram"] if op.startswith("CUSTOM")]  # builtins only
    assert fallback["kept_as"] == "int8"
    size = {a["recipe"]: (result.bundle / a["file"]).stat().st_size for a in (int8, int4)}
    assert size["tflite:int4-dynamic"] < 0.7 * size["tflite:int8-dynamic"]
    assert nonpositive_scales(result.bundle / int4["file"]) == []  # the padding row is all zeros
    assert int4["details"]["clipping"] == "octav" and int4["details"]["weights_on_int4_grid"] is False
    assert precision_rank("int8-static") < precision_rank("int4-dynamic") < precision_rank("fp16")


def test_int4_fallback_keeps_the_chosen_role_in_int8_not_float(checkpoints, tmp_path):
    """The shared accuracy ladder on int4: a judge that wants the FFN output projections at higher precision
    gets them in int8 (a quarter of float's bytes)."""
    from ai_edge_quantizer.utils import tfl_flatbuffer_utils as tfl

    from pocketbert.converter.backends.tflite_graph import model_bytes

    loaded, spec = export_spec(checkpoints["bert"]["classification"], buckets=[16])
    ffn_out = list(loaded.model.bert.encoder.layer[0].output.dense.weight.shape)

    def ffn_types(path):
        model = tfl.read_model(model_bytes(path))
        return [subgraph.tensors[op.inputs[1]].type for subgraph in model.subgraphs for op in subgraph.operators
                if len(op.inputs) > 1 and list(subgraph.tensors[op.inputs[1]].shape) == ffn_out]

    def accept(path):
        types = ffn_types(path)
        return all(t == FFN_OUT for t in types), {"cosine": sum(t == FFN_OUT for t in types) / len(types)}

    artifact = get("tflite").quantize(spec, "int4-dynamic", tmp_path / "q.tflite", [], accept)
    fallback = artifact.details["float_fallback"]
    assert fallback["accepted"] and fallback["roles"] == ["bert.encoder.layer.*.output.dense"]
    assert fallback["kept_as"] == "int8" and fallback["linears_in_int8"] == 2
    assert set(ffn_types(tmp_path / "q.tflite")) == {FFN_OUT}


def test_compaction_is_lossless_and_writes_each_quantisation_table_once(checkpoints, tmp_path):
    from pocketbert.converter.backends.tflite_recipes import quantize_file

    loaded, spec = export_spec(checkpoints["bert"]["ner"], buckets=[16, 32, 64])
    float_path, path = tmp_path / "f.tflite", tmp_path / "q.tflite"
    get("tflite")._convert(spec, float_path)
    quantize_file(float_path, path, "int4-dynamic", [])
    before = _logits_per_signature(path)
    tables_before = table_count(path)
    size_before, size_after = compact(path)
    assert size_after == path.stat().st_size < size_before
    for a, b in zip(before, _logits_per_signature(path), strict=True):
        np.testing.assert_array_equal(a, b)  # bit for bit
    tables_after = table_count(path)
    assert tables_after[0] == tables_before[0]  # every tensor still has its table...
    assert tables_after[1] <= tables_before[1] // 3 + 1  # ...shared between the three signatures
    interpreter = Interpreter(model_path=str(path))
    runner = interpreter.get_signature_runner("seq_16")
    assert sorted(runner.get_input_details()) == sorted(spec.input_names)  # signature names untouched


@pytest.mark.parametrize("precision", ["int8-dynamic", "int4-dynamic"])
def test_compacted_file_keeps_its_tables_shared_through_the_metadata_writer(precision, checkpoints, options):
    """The metadata stage rewrites every TFLite artifact: a compacted file must stay compacted."""
    result = convert(options(checkpoints["bert"]["classification"], recipes=f"tflite:{precision}",
                             buckets=[16, 32]))
    art = read_manifest(result.bundle)["artifacts"][1]
    assert art["details"]["metadata"]  # written by the metadata stage
    count, distinct = table_count(result.bundle / art["file"])
    assert distinct <= count // 2 + 1
