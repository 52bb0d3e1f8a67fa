"""``pocketbert-bench avx2-instructions``: instructions per inference on the kernels of a CPU without AVX-512 or
VNNI, counted under valgrind on whatever CPU runs the tests.

The model is one embedding lookup and one Linear (384 -> 1,536 at 64 tokens: 37.7 M multiply-adds) in a TFLite file
(XNNPACK, the phone files' kernels; LiteRT also loads in a third of ONNX Runtime's time under valgrind), big enough
that an inference's count stands far above the few million instructions two identical processes differ by.  AVX2's
float multiply-add does 8 per instruction, so an inference takes at least MACs / 8 instructions on AVX2's kernels;
SSE has no fused multiply-add and 4 lanes, so its kernels take at least MACs / 2: a count between the two is
8-wide kernels' work (measured 10.4 M, against 4.7 M and 18.9 M), and the CPU the libraries saw rules out AVX-512.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from pocketbert.benchmarks import avx2_instructions
from pocketbert.benchmarks.latency import make_inputs
from pocketbert.converter.backends.tflite_signatures import converted

SEQ, WIDTH, OUT, VOCAB = 64, 384, 1536, 2000
MACS = SEQ * WIDTH * OUT


class _Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.table, self.linear = torch.nn.Embedding(VOCAB, WIDTH), torch.nn.Linear(WIDTH, OUT)

    def forward(self, input_ids, attention_mask):
        return self.linear(self.table(input_ids))


def _linear_model(dest):
    ids = np.ones((1, SEQ), np.int32)
    dest.write_bytes(converted(_Linear().eval(), {f"seq_{SEQ}": {"input_ids": ids, "attention_mask": ids}}))
    return dest


@pytest.fixture(scope="module")
def counted(tmp_path_factory):
    try:
        avx2_instructions.valgrind(log=lambda line: print(line, file=sys.stderr))  # installed here when root
    except avx2_instructions.InstructionCountUnavailable as exc:
        pytest.fail(f"{exc.problem}: {exc.fix}")
    work = tmp_path_factory.mktemp("avx2")
    manifest = {"tokenizer": {"vocab_size": VOCAB, "special_tokens": {}}}
    spec = {"kind": "tflite", "path": str(_linear_model(work / "fp32.tflite")), "threads": 1, "seq_len": SEQ,
            "batch": 1, "inputs": str(make_inputs(work, manifest, SEQ, 1))}
    # two processes at once (the time of one under valgrind), 1 and 1 + 8 inferences: the two processes' start-up
    # counts differ by a few million instructions, which over 2 extra inferences once put one at 4.4 M, under MACS / 8
    return avx2_instructions.per_inference(spec, k=8)


def test_the_libraries_see_avx2_and_no_avx512_under_valgrind(counted):
    assert counted["cpu_seen"]["AVX2"] and counted["cpu_seen"]["FMA3"], counted
    assert not counted["cpu_seen"]["AVX512F"] and not counted["cpu_seen"]["AVX512VNNI"], counted


def test_a_float_inference_counts_as_eight_wide_kernels_work(counted):
    assert MACS / 8 <= counted["instructions"] < MACS / 2, (counted, MACS)


def test_a_recipe_no_bundle_holds_is_refused_before_any_counting(tiny_bundle):
    from click.testing import CliRunner

    from pocketbert.benchmarks.cli import cli

    done = CliRunner().invoke(cli, ["avx2-instructions", str(tiny_bundle), "--recipes", "onnx:fp32,onnx:int4"],
                              terminal_width=400)
    assert done.exit_code == 3, done.output
    assert "no bundle given holds a verified onnx:int4" in done.output and "onnx:int8-dynamic" in done.output
