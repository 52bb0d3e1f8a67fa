"""A prediction must not depend on what else is in the batch, nor on padding.

ONNX Runtime's dynamic int8 quantises each MatMul input with one scale for the whole batch tensor, so
the runtime runs those models row by row, unpadded (runtime/backends/onnx.py)."""

from __future__ import annotations

import numpy as np

from pocketbert import runtime
from pocketbert.runtime.backends.onnx import OnnxBackend
from pocketbert.runtime.bundle import Bundle

LONG = "an overlong , meandering , yet at times thrilling and beautifully shot epic " * 4


def test_onnx_int8_dynamic_scores_do_not_depend_on_the_batch(cls_bundle, sst2_sentences):
    clf = runtime.load(cls_bundle, backend="onnx", precision="int8-dynamic")
    assert clf.backend.row_by_row
    alone = [clf(text, top_k=None) for text in sst2_sentences[:6]]
    together = clf(sst2_sentences[:6] + [LONG], top_k=None)[:6]
    assert together == alone  # identical floats, not merely close


def test_row_by_row_keeps_token_logits_in_place(ner_bundle):
    """NER: each row's token logits come back at full width, in place, zeros under padding."""
    bundle = Bundle.open(ner_bundle)
    artifact = bundle.select(backend="onnx", precision="fp32")
    names = bundle.input_names
    batched, rowwise = OnnxBackend(artifact.path, names), OnnxBackend(artifact.path, names, row_by_row=True)
    feeds = {n: np.zeros((2, 9), dtype=np.int64) for n in names}
    feeds["input_ids"][0, :9] = np.arange(100, 109)
    feeds["input_ids"][1, :4] = np.arange(200, 204)
    feeds["attention_mask"][0, :9] = 1
    feeds["attention_mask"][1, :4] = 1
    want, got = batched.run(feeds), rowwise.run(feeds)
    assert got.shape == want.shape
    np.testing.assert_allclose(got[0], want[0], atol=1e-5)
    np.testing.assert_allclose(got[1, :4], want[1, :4], atol=1e-5)
    assert not got[1, 4:].any()


def test_batches_never_mix_buckets():
    from pocketbert.runtime import batching

    lengths = [5, 40, 31, 33, 64, 65, 2, 32, 100, 7, 30]
    batches = batching.plan(lengths, 3, buckets=[32, 64, 128])
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert all(len(b) <= 3 for b in batches)
    bucket = {n: next(e for e in (32, 64, 128) if e >= n) for n in lengths}
    assert all(len({bucket[lengths[i]] for i in b}) == 1 for b in batches), batches
    assert batching.plan(lengths, 3) == batching.plan(lengths, 3, buckets=None)  # no buckets: by size only


def test_tflite_scores_do_not_depend_on_the_batch(cls_bundle, sst2_sentences):
    """TFLite takes batches of one bucket: every row still runs in the bucket it would run in alone."""
    clf = runtime.load(cls_bundle, backend="tflite", precision="int8-dynamic")
    assert len(clf.backend.buckets) > 1
    alone = [clf(text, top_k=None) for text in sst2_sentences[:6]]
    together = clf(sst2_sentences[:6] + [LONG], top_k=None)[:6]
    assert together == alone  # identical floats, not merely close
