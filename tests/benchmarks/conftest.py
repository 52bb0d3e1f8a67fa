"""A tiny random bundle (fast mode's model: tiny BERT, onnx + tflite, fp32 + int8-dynamic, bucket 32), built once."""

import pytest

from pocketbert.benchmarks import models


@pytest.fixture(scope="session")
def bench_root(tmp_path_factory):
    return tmp_path_factory.mktemp("bench")


@pytest.fixture(scope="session")
def tiny_bundle(bench_root):
    [bundle] = models.build_bundles(["tiny-bert"], ["plain-int8"], bench_root, [32], log=lambda m: None,
                                    verify_samples=32)
    return bundle
