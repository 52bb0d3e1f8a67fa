"""A tiny random bundle (fast mode's model: tiny BERT, onnx + tflite, fp32 + int8-dynamic, bucket 32), built once
for the session (every xdist worker), in the work directory the benchmark commands under test reuse."""

import pytest

from pocketbert.benchmarks import models

from ..shared import once


@pytest.fixture(scope="session")
def bench_root(tmp_path_factory):
    return once(tmp_path_factory, "bench", lambda work: work)


@pytest.fixture(scope="session")
def tiny_bundle(bench_root, tmp_path_factory):
    def build(_):
        [bundle] = models.build_bundles(["tiny-bert"], ["plain-int8"], bench_root, [32], log=lambda m: None,
                                        verify_samples=32)
        return bundle
    return once(tmp_path_factory, "bench-tiny", build)
