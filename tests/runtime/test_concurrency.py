"""One loaded pipeline shared by several threads, and batching that never changes a result."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import pytest

from pocketbert import runtime

from .test_parity import assert_same_entities


@pytest.mark.parametrize("backend, instances", [("onnx", 1), ("tflite", 1), ("tflite", 3)])
def test_threads_share_one_pipeline(ner_bundle, conll_sentences, backend, instances):
    texts = conll_sentences[:240]
    ner = runtime.load(ner_bundle, backend=backend, precision="fp32", instances=instances)
    alone = [ner(texts[i:i + 8]) for i in range(0, len(texts), 8)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        shared = list(pool.map(ner, [texts[i:i + 8] for i in range(0, len(texts), 8)]))
    assert shared == alone
    if backend == "tflite":
        assert 1 <= ner.backend._created <= instances


def test_batching_and_order_do_not_change_results(ner_bundle, cls_bundle, conll_sentences):
    texts = conll_sentences[:64]
    shuffled = list(range(len(texts)))
    random.Random(0).shuffle(shuffled)
    reference = runtime.load(ner_bundle, batch_size=1)(texts)
    for batch_size in (7, 64):
        ner = runtime.load(ner_bundle, batch_size=batch_size)
        assert_same_entities(ner(texts), reference)
        again = ner([texts[i] for i in shuffled])
        assert_same_entities([again[shuffled.index(i)] for i in range(len(texts))], reference)
    clf_one, clf_many = runtime.load(cls_bundle, batch_size=1), runtime.load(cls_bundle, batch_size=32)
    assert [r["label"] for r in clf_one(texts)] == [r["label"] for r in clf_many(texts)]
