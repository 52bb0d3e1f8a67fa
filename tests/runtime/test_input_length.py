"""One input length per bundle, whichever artifact runs: ONNX (any sequence length) and TFLite (its largest
bucket) cut a long text into the same NER windows and truncate a classification input at the same token,
so the same bundle gives the same answers in every backend and runtime (docs/runtime.md, "Long texts").
"""

from __future__ import annotations

import copy
import json
import shutil
import warnings

import numpy as np
import pytest

from pocketbert import runtime
from pocketbert.runtime import contract
from pocketbert.runtime.classification import TruncationWarning

from .conftest import convert_bundle

FP32_TOLERANCE = 1e-4
BUCKETS = [32, 64]  # smaller than the tiny models' 128 positions (max_sequence_length)


@pytest.fixture(scope="module")
def bundles(checkpoints, tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("input-length")
    return {task: convert_bundle(checkpoints["bert"][task], root / task, formats="onnx,tflite", buckets=BUCKETS)
            for task in ("ner", "classification")}


@pytest.fixture(scope="module")
def long_text(conll_sentences) -> str:
    """About 300 tokens: several windows of 64, more than the 128 an ONNX row could take."""
    return " ".join(conll_sentences[100:130])


def _manifest(bundle) -> dict:
    return json.loads((bundle / contract.MANIFEST).read_text(encoding="utf-8"))


def test_the_bundle_sets_the_input_length_not_the_backend(bundles):
    manifest = _manifest(bundles["ner"])
    assert manifest["max_sequence_length"] == 128 > max(BUCKETS)
    assert contract.bundle_input_length(manifest) == max(BUCKETS) == manifest["verification"]["max_length"]
    for backend in ("onnx", "tflite"):
        assert runtime.load(bundles["ner"], backend).max_length == max(BUCKETS), backend


def test_onnx_and_tflite_window_a_long_text_alike_and_find_the_same_entities(bundles, long_text):
    onnx, tflite = (runtime.load(bundles["ner"], backend, precision="fp32") for backend in ("onnx", "tflite"))
    windows = {p.backend.name: [w.ids for w in p.encoder.windows([long_text], p.default_stride)[0]]
               for p in (onnx, tflite)}
    assert len(windows["tflite"]) > 2 and windows["onnx"] == windows["tflite"]
    got, want = onnx(long_text), tflite(long_text)
    assert want, "the random head finds no entity: the comparison would be vacuous"
    assert [{k: v for k, v in e.items() if k != "score"} for e in got] == \
           [{k: v for k, v in e.items() if k != "score"} for e in want]
    assert max(abs(g["score"] - w["score"]) for g, w in zip(got, want)) <= FP32_TOLERANCE


def test_onnx_and_tflite_truncate_a_long_classification_input_alike(bundles, long_text):
    onnx, tflite = (runtime.load(bundles["classification"], b, precision="fp32") for b in ("onnx", "tflite"))
    rows = [p.encoder.encode([(long_text, None)])[0].ids for p in (onnx, tflite)]
    assert len(rows[0]) == max(BUCKETS) and rows[0] == rows[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncationWarning)
        np.testing.assert_allclose(onnx.logits(long_text), tflite.logits(long_text), atol=FP32_TOLERANCE)


def test_the_input_length_rule():
    manifest = {"max_sequence_length": 512, "artifacts": [
        {"backend": "onnx", "details": {}}, {"backend": "tflite", "details": {"buckets": [32, 64, 128]}},
        {"backend": "tflite", "details": {"buckets": [32, 64]}}]}
    assert contract.bundle_input_length(manifest) == 64  # every artifact takes it
    assert contract.bundle_input_length({**manifest, "max_sequence_length": 48}) == 48
    assert contract.bundle_input_length({**manifest, "artifacts": manifest["artifacts"][:1]}) == 512
    assert contract.bundle_input_length({**manifest, "artifacts": [{"backend": "tflite"}]}) == 512  # hand-written


def test_buckets_that_are_not_lengths_are_refused(bundles, tmp_path):
    bundle = shutil.copytree(bundles["ner"], tmp_path / "bundle")
    manifest = _manifest(bundle)
    tflite = next(i for i, a in enumerate(manifest["artifacts"]) if a["backend"] == "tflite")
    for bad in ([], ["64"], [0, 64], "32,64"):
        broken = copy.deepcopy(manifest)
        broken["artifacts"][tflite]["details"]["buckets"] = bad
        (bundle / contract.MANIFEST).write_text(json.dumps(broken), encoding="utf-8")
        with pytest.raises(runtime.BundleError, match=rf"artifacts\[{tflite}\]\.details\.buckets' must be a non-empty"):
            runtime.Bundle.open(bundle)


def test_a_tflite_file_whose_buckets_differ_from_its_manifest_entry_is_refused(bundles, tmp_path):
    bundle = shutil.copytree(bundles["ner"], tmp_path / "bundle")
    manifest = _manifest(bundle)
    details = next(a for a in manifest["artifacts"] if a["backend"] == "tflite")["details"]
    details["buckets"], details["signatures"] = [32], ["seq_32"]
    manifest["verification"]["max_length"] = 32  # the manifest agrees with itself; the model file does not
    (bundle / contract.MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(runtime.ModelError, match=r"has buckets \[32, 64\] but the manifest lists \[32\]"):
        runtime.load(bundle, "tflite")
