"""``pocketbert-bench avx2-instructions``: instructions per inference on the kernels of a CPU without AVX-512 or
VNNI, counted under valgrind on whatever CPU runs the tests.

The model is one embedding lookup and one Linear (384 -> 1,536 at 64 tokens: 37.7 M multiply-adds), big enough that
an inference's count stands far above the few million instructions two identical processes differ by, small enough
that valgrind runs it in seconds.  AVX2's widest float multiply-add does 8 per instruction and AVX-512's 16: a count
below MACs / 8 would mean kernels wider than AVX2's ran.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from pocketbert.benchmarks import avx2_instructions
from pocketbert.benchmarks.latency import make_inputs

SEQ, WIDTH, OUT, VOCAB = 64, 384, 1536, 2000
MACS = SEQ * WIDTH * OUT


def _linear_model(dest):
    rng = np.random.default_rng(0)
    table = numpy_helper.from_array(rng.standard_normal((VOCAB, WIDTH)).astype(np.float32), "table")
    weight = numpy_helper.from_array((rng.standard_normal((WIDTH, OUT)) / 20).astype(np.float32), "weight")
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["x"]),
         helper.make_node("MatMul", ["x", "weight"], ["logits"], name="/linear/MatMul")], "linear",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, SEQ])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, SEQ, OUT])], [table, weight])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), dest)
    return dest


@pytest.fixture(scope="module")
def counted(tmp_path_factory):
    try:
        avx2_instructions.valgrind(log=lambda line: print(line, file=sys.stderr))  # installed here when root
    except avx2_instructions.InstructionCountUnavailable as exc:
        pytest.fail(f"{exc.problem}: {exc.fix}")
    work = tmp_path_factory.mktemp("avx2")
    manifest = {"tokenizer": {"vocab_size": VOCAB, "special_tokens": {}}}
    spec = {"kind": "onnx", "path": str(_linear_model(work / "fp32.onnx")), "threads": 1, "seq_len": SEQ,
            "batch": 1, "inputs": str(make_inputs(work, manifest, SEQ, 1))}
    return avx2_instructions.per_inference(spec, k=2)  # two processes at once: the time of one under valgrind


def test_the_libraries_see_avx2_and_no_avx512_under_valgrind(counted):
    assert counted["cpu_seen"]["AVX2"] and counted["cpu_seen"]["FMA3"], counted
    assert not counted["cpu_seen"]["AVX512F"] and not counted["cpu_seen"]["AVX512VNNI"], counted


def test_a_float_inference_takes_at_least_one_avx2_instruction_per_eight_multiply_adds(counted):
    # at most 8 per instruction (AVX-512 would do 16); at most MACs: the inference, not start-up noise
    assert MACS / 8 <= counted["instructions"] <= MACS, (counted, MACS)
