"""ONNX Runtime's transformer fusions on the converter's export: which ops each family gets, and that the
fused graph computes what the plain export computes (within the fp32 verification bar, padded rows too)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from pocketbert.converter.checkpoints import loading
from pocketbert.converter.backends import ExportSpec
from pocketbert.converter.backends.onnx import _float_source, export_fused, export_onnx
from pocketbert.converter.backends.onnx_fusion import MICROSOFT, MIN_ORT_VERSION, is_fused
from pocketbert.converter.inputs.encoding import encode
from pocketbert.converter.backends.logits_model import LogitsModel
from pocketbert.converter.transforms import fold, nonorm, relu
from pocketbert.converter.checks.verify import FP32_TOLERANCE

TEXTS = ["a charming and often affecting journey", "dull", "it is what it is, no more and no less than that, alas"]
# family, transforms -> fused ops the graph must hold (MobileBERT: Q/K share a bottleneck input that V does
# not, which ONNX Runtime's Attention op cannot take, and NoNorm leaves no LayerNorm to fuse)
CASES = {
    ("bert", ()): {"Attention", "SkipLayerNormalization", "BiasGelu"},
    ("distilbert", ()): {"Attention", "SkipLayerNormalization", "BiasGelu"},
    ("bert", ("nonorm", "relu", "fold")): {"Attention"},
    ("mobilebert", ()): set(),
}
TRANSFORMS = {"nonorm": nonorm, "relu": relu, "fold": fold}


def _spec(checkpoint, transforms) -> ExportSpec:
    loaded = loading.load(str(checkpoint))
    for name in transforms:
        TRANSFORMS[name].apply(loaded.model, loaded.family)
    names = list(loaded.family.input_names)
    return ExportSpec(model=LogitsModel(loaded.model, names).eval(), family=loaded.family, input_names=names,
                      output_name="logits", max_length=128,
                      make_batches=lambda texts, **kw: [encode(loaded.tokenizer, texts, input_names=names,
                                                                max_length=128, **kw)])


def _run(path, feeds):
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(["logits"], feeds)[0]


@pytest.mark.parametrize(("family", "transforms"), list(CASES), ids=lambda v: ",".join(v) or "plain")
def test_fused_graph_holds_the_fused_ops_and_matches_the_plain_export(family, transforms, checkpoints, tmp_path):
    spec = _spec(checkpoints[family]["classification"], transforms)
    fused, plain = tmp_path / "fused.onnx", tmp_path / "plain.onnx"
    attention = spec.model.model.config._attn_implementation
    record = export_fused(spec, fused)
    export_onnx(spec.model, spec.make_batches(TEXTS)[0], spec.input_names, "logits", plain)
    ops = Counter(n.op_type for n in onnx.load(str(fused)).graph.node)
    assert record["applied"] and CASES[family, transforms] <= set(ops)
    assert record["min_onnxruntime"] == MIN_ORT_VERSION
    assert set(record["contrib_ops"]) == {n.op_type for n in onnx.load(str(fused)).graph.node if n.domain == MICROSOFT}
    if "Attention" in CASES[family, transforms]:  # every layer's attention, the un-fused softmax gone
        assert ops["Attention"] == spec.family.num_layers(spec.model.config) and ops["Softmax"] == 0
    feeds = spec.make_batches(TEXTS)[0]  # padded: the raw 2-D mask must hide padding in every row
    assert feeds["attention_mask"].min() == 0
    got, want = _run(fused, feeds), _run(plain, feeds)
    np.testing.assert_allclose(got, want, atol=FP32_TOLERANCE, rtol=0)
    # the model itself is left as it was (its attention serves the TFLite export and the reference)
    assert spec.model.model.config._attn_implementation == attention


def test_both_int8_methods_quantise_the_fused_graph(checkpoints, tmp_path):
    """Dynamic and static int8 take the float export as it is, fused; without one they export the fused graph."""
    spec = _spec(checkpoints["bert"]["classification"], ())
    fused = tmp_path / "model.onnx"
    export_fused(spec, fused)
    assert is_fused(fused)
    assert _float_source(spec, fused, tmp_path / "a.onnx") == fused
    assert _float_source(spec, None, tmp_path / "b.onnx") == tmp_path / "b.onnx" and is_fused(tmp_path / "b.onnx")
