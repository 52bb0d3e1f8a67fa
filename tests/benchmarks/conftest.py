"""A tiny random bundle (fast mode's model: tiny BERT, onnx + tflite, fp32 + int8-dynamic, bucket 32), built once
for the session (every xdist worker), in the work directory the benchmark commands under test reuse."""

import pytest

from ..shared import once, tiny_bench_bundle


@pytest.fixture(scope="session")
def bench_root(tmp_path_factory):
    return once(tmp_path_factory, "bench", lambda work: work)


@pytest.fixture(scope="session")
def tiny_bundle(bench_root, tmp_path_factory):
    return tiny_bench_bundle(tmp_path_factory)
