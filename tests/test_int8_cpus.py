"""int8 artifacts compute the same on every x86 CPU class, checked on emulated CPUs (QEMU user mode).

ONNX Runtime and XNNPACK pick int8 kernels from CPUID; under QEMU the same wheels take the emulated
CPU's kernels.  Haswell is the case that used to break: ONNX Runtime's AVX2 kernel without VNNI adds uint8 x int8
pairs in 16 bits (VPMADDUBSW) and saturated on full-range int8 weights (XNNPACK's sign-extends int8 to 16 bits and
adds pairs in 32: VPMOVSXBW + VPMADDWD).  SandyBridge (no AVX2) takes the
16-bit widening kernels.  The machine running the tests adds its own class (VNNI, AMX or AVX2).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from pocketbert.benchmarks import emulated_cpus
from pocketbert.converter.backends.onnx import _quantize_dynamic, _quantize_static
from pocketbert.converter.inputs.texts import read_texts

from .conftest import DATA
from .runtime.conftest import convert_bundle

CPUS = list(emulated_cpus.CPUS)


@pytest.fixture(scope="module")
def qemu():
    try:
        return emulated_cpus.qemu()
    except emulated_cpus.EmulationUnavailable as exc:
        pytest.skip(f"cannot emulate other x86 CPUs here: {exc.problem} ({exc.fix})")


def _matmul_model(weight: np.ndarray, dest: Path) -> Path:
    """y = x @ W with a constant W: the shape of every Linear the converter quantises."""
    k, m = weight.shape
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="/linear/MatMul")], "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["rows", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["rows", m])],
        [numpy_helper.from_array(weight, "w")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), dest)
    return dest


_RUN = """
import sys, numpy as np, onnxruntime as ort
x = np.load(sys.argv[1])
for path in sys.argv[2:]:
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    print(float(np.abs(s.run(None, {"x": x})[0] - np.load(sys.argv[1].replace("x.npy", "y.npy"))).max()))
"""


def test_int8_linears_cannot_saturate_on_avx2(qemu, tmp_path):
    """Positive activations times large same-sign weights: the worst case for 16-bit pair sums.

    With full-range int8 weights (2 x 255 x 127 > 32767) the Haswell run lost about half of every
    output; the converter's weights (7-bit range) keep every CPU within int8 rounding of float."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0.0, 1.0, (32, 64)).astype(np.float32)
    w = rng.uniform(0.5, 1.0, (64, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", x @ w)
    source = _matmul_model(w, tmp_path / "float.onnx")
    _quantize_dynamic(source, tmp_path / "dynamic.onnx", [])
    _quantize_static(source, tmp_path / "static.onnx", [{"x": x}], [], tmp_path / "cache.json")
    models = [str(tmp_path / "dynamic.onnx"), str(tmp_path / "static.onnx")]
    scale = float(np.abs(x @ w).max())
    runs = {"this CPU": [sys.executable]} | {name: [qemu, "-cpu", cpu.qemu_model, sys.executable]
                                             for name, cpu in emulated_cpus.CPUS.items()}
    for name, prefix in runs.items():
        done = subprocess.run([*prefix, "-c", _RUN, str(tmp_path / "x.npy"), *models], capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        errors = [float(v) for v in done.stdout.split()]
        for model, error in zip(("dynamic", "static"), errors):
            assert error <= 0.02 * scale, f"{model} int8 on {name}: max |Δ| {error:.3f} of {scale:.1f}"


@pytest.fixture(scope="module")
def int8_bundle(checkpoints, tmp_path_factory):
    return convert_bundle(checkpoints["bert"]["ner"], tmp_path_factory.mktemp("cpus") / "ner",
                          recipes="onnx:int8-dynamic,onnx:int8-static,tflite:int8-dynamic", buckets=[32, 64])


def test_every_artifact_agrees_across_cpu_classes(qemu, int8_bundle):
    """Through the runtime's own loader: fp32 to float rounding, int8 to the same tag on every token."""
    texts = read_texts(DATA / "conll2003" / "dev.txt")[:24]
    results = emulated_cpus.check(int8_bundle, texts, CPUS)
    recipes = {r["recipe"] for r in results}
    assert recipes == {"onnx:fp32", "onnx:int8-dynamic", "onnx:int8-static", "tflite:fp32", "tflite:int8-dynamic"}
    assert {r["cpu"] for r in results} == set(CPUS)
    assert {r["int8_kernels"] for r in results if r["cpu"] == "haswell"} == {
        "x86 AVX2/AVX-512 without VNNI (16-bit multiply-adds: ONNX Runtime sums uint8 x int8 pairs in 16 bits, "
        "XNNPACK sign-extends int8 to 16 bits)"}
    for r in results:
        where = f"{r['recipe']} on {r['cpu']}"
        if r["recipe"].endswith(":fp32"):
            assert r["max_abs"] <= 1e-4 * max(1.0, r["max_abs_logit"]), where
        else:
            assert r["top1_agreement"] == 1.0 and r["min_cosine"] >= 0.999, f"{where}: {r}"


def test_the_manifest_states_the_verifying_cpu(int8_bundle):
    import json

    from pocketbert.runtime import machine

    recorded = json.loads((int8_bundle / "manifest.json").read_text())["verification"]["machine"]
    here = machine.verifying_machine()
    assert recorded["matrix_flags"] == here["matrix_flags"] and recorded["int8_kernels"] == here["int8_kernels"]
    assert recorded["versions"]["onnxruntime"] and recorded["architecture"]


def test_cpus_command_prints_the_parity_table(qemu, int8_bundle):
    done = subprocess.run([sys.executable, "-m", "pocketbert.benchmarks", "cpus", str(int8_bundle), "--cpus", "haswell",
                           "--samples", "5"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| onnx:") or line.startswith("| tflite:")]
    assert len(rows) == 5 and all(row.endswith("| yes |") and "haswell" in row for row in rows), done.stdout
    unknown = subprocess.run([sys.executable, "-m", "pocketbert.benchmarks", "cpus", str(int8_bundle), "--cpus", "pentium"],
                             capture_output=True, text=True, timeout=600)
    assert unknown.returncode == 2 and "unknown CPU model(s) pentium" in unknown.stderr
    assert "Traceback" not in unknown.stderr
