"""This CPU's GEMM throughput at a model's own matrix shapes: the floor under every latency figure.

For each product in :func:`benchmarks.macs.gemms` we time the fastest implementation this machine
has, alone and hot in cache, at the same shape and thread count:

* fp32: ``torch.mm``/``torch.bmm`` (oneDNN/MKL) and ONNX Runtime's ``MatMul`` (MLAS);
* int8: ONNX Runtime's ``MatMulInteger`` (uint8 × int8, MLAS: the kernel its dynamic int8 models run,
  using AVX512-VNNI/AVX-VNNI or AMX when the CPU has them) and ``torch._int_mm``.

Each time is the call minus the same method's empty-call overhead (a 32×8×8 product: Python dispatch,
``session.run``), which a runtime executing a whole graph does not pay per product; the raw call times
are kept too (``call_ms``); at most half of a call is put down to overhead.  The floor of a model at
(sequence, batch, threads) is the sum over its products of count × best compute time (fp32 floor:
every product in fp32; int8 floor: weight products in int8, the attention products — activation ×
activation, float in every model we ship — in fp32).  A latency can then be reported as
``floor / latency``: the fraction of this CPU's matrix throughput the runtime achieves.  Everything a
real model does besides GEMMs (norms, softmax, GELU, quantising activations, memory traffic between
ops) is what separates it from 1.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .macs import Gemm

FP32_METHODS = ("torch.mm", "ort.MatMul")
INT8_METHODS = ("ort.MatMulInteger", "torch._int_mm")


def best_seconds(fn: Callable[[], object], min_seconds: float, repeats: int = 3) -> float:
    """Seconds per call: the best of ``repeats`` chunks of calls, each lasting at least ``min_seconds``."""
    for _ in range(3):
        fn()
    best = float("inf")
    for _ in range(repeats):
        calls, start = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds:
                break
        best = min(best, elapsed / calls)
    return best


def _ort_session(op: str, a_shape, b_shape, threads: int, b_const: np.ndarray | None):
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    a_type = TensorProto.UINT8 if op == "MatMulInteger" else TensorProto.FLOAT
    out_type = TensorProto.INT32 if op == "MatMulInteger" else TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("A", a_type, list(a_shape))]
    inits = []
    if b_const is not None:
        inits.append(numpy_helper.from_array(b_const, "B"))  # a weight: constant, pre-packed by MLAS
    else:
        inputs.append(helper.make_tensor_value_info("B", TensorProto.FLOAT, list(b_shape)))
    graph = helper.make_graph([helper.make_node(op, ["A", "B"], ["Y"])], "gemm", inputs,
                              [helper.make_tensor_value_info("Y", out_type, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _callable(method: str, g: Gemm, threads: int) -> Callable[[], object]:
    rng = np.random.default_rng(0)
    a_shape = (g.batch, g.m, g.k) if g.batch > 1 else (g.m, g.k)
    b_shape = (g.batch, g.k, g.n) if g.batch > 1 else (g.k, g.n)
    if method.startswith("torch"):
        import torch

        torch.set_num_threads(threads)
        if method == "torch.mm":
            a, b = torch.randn(a_shape), torch.randn(b_shape)
            op = torch.bmm if g.batch > 1 else torch.mm
            return lambda: op(a, b)
        if g.batch > 1:
            raise ValueError("torch._int_mm has no batched form")
        a = torch.randint(-128, 127, a_shape, dtype=torch.int8)
        b = torch.randint(-128, 127, b_shape, dtype=torch.int8)
        torch._int_mm(a, b)  # raises on shapes it does not support (e.g. m ≤ 16)
        return lambda: torch._int_mm(a, b)
    if method == "ort.MatMul":
        weight = rng.standard_normal(b_shape, dtype=np.float32) if g.kind == "weight" else None
        session = _ort_session("MatMul", a_shape, b_shape, threads, b_const=weight)
        feeds = {"A": rng.standard_normal(a_shape, dtype=np.float32)}
        if weight is None:
            feeds["B"] = rng.standard_normal(b_shape, dtype=np.float32)
        return lambda: session.run(None, feeds)
    if method == "ort.MatMulInteger":
        if g.batch > 1:
            raise ValueError("int8 is only timed for weight products")
        session = _ort_session("MatMulInteger", a_shape, b_shape, threads,
                               b_const=rng.integers(-128, 127, b_shape, dtype=np.int8))
        feeds = {"A": rng.integers(0, 255, a_shape, dtype=np.uint8)}
        return lambda: session.run(None, feeds)
    raise ValueError(f"unknown GEMM method {method!r}")


def shape_key(g: Gemm) -> str:
    return f"{g.batch}x{g.m}x{g.k}x{g.n}"


@dataclass
class ShapeTiming:
    ms: float  # compute: one call minus the method's empty-call overhead
    call_ms: float  # one call as timed, dispatch overhead included
    method: str
    gmacs_per_s: float
    tried: dict  # method -> compute ms, or the reason it could not run


# A product too small to cost anything (2 K MACs): timing it gives the method's per-call overhead
# (Python dispatch, session.run), which a runtime executing a whole graph does not pay per product.
_PROBE = Gemm("overhead probe", 32, 8, 8)
_PROBE_BATCHED = Gemm("overhead probe", 32, 8, 8, batch=2, kind="attention")


class GemmFloor:
    """Measures each distinct (shape, precision, threads) once and sums floors for models."""

    def __init__(self, min_seconds: float = 0.2):
        self.min_seconds = min_seconds
        self.timings: dict[tuple[str, str, int], ShapeTiming] = {}
        self.overheads: dict[tuple[str, int, bool], float] = {}

    def overhead_ms(self, method: str, threads: int, batched: bool) -> float:
        key = (method, threads, batched)
        if key not in self.overheads:
            probe = _PROBE_BATCHED if batched else _PROBE
            self.overheads[key] = best_seconds(_callable(method, probe, threads), self.min_seconds) * 1000
        return self.overheads[key]

    def time_shape(self, g: Gemm, precision: str, threads: int) -> ShapeTiming:
        methods = INT8_METHODS if precision == "int8" else FP32_METHODS
        tried: dict = {}
        calls: dict = {}
        for method in methods:
            try:
                calls[method] = best_seconds(_callable(method, g, threads), self.min_seconds) * 1000
                # At most half a call is put down to overhead: a probe slower than that was disturbed
                # (another process on the core), and the product's own time is the safer figure.
                overhead = min(self.overhead_ms(method, threads, g.batch > 1), calls[method] / 2)
                tried[method] = calls[method] - overhead
            except Exception as exc:  # a method that cannot run this shape here is skipped, and says why
                text = str(exc).splitlines()[0][:80] if str(exc) else ""
                tried[method] = f"unavailable: {type(exc).__name__}: {text}"
        timed = {m: v for m, v in tried.items() if isinstance(v, float)}
        if not timed:
            raise RuntimeError(f"no {precision} GEMM implementation ran shape {shape_key(g)}: {tried}")
        method = min(timed, key=timed.get)
        ms = timed[method]
        one = g.m * g.k * g.n * g.batch
        return ShapeTiming(ms=ms, call_ms=calls[method], method=method,
                           gmacs_per_s=one / (ms / 1000) / 1e9 if ms > 0 else float("inf"), tried=tried)

    def timing(self, g: Gemm, precision: str, threads: int) -> ShapeTiming:
        key = (shape_key(g), precision, threads)
        if key not in self.timings:
            self.timings[key] = self.time_shape(g, precision, threads)
        return self.timings[key]

    def floor(self, products: list[Gemm], precision: str, threads: int) -> dict:
        """Floor milliseconds for one forward pass; ``precision`` fp32 or int8 (int8: weight products only)."""
        total_ms, with_calls, macs, parts = 0.0, 0.0, 0, []
        for g in products:
            p = "int8" if precision == "int8" and g.kind == "weight" else "fp32"
            t = self.timing(g, p, threads)
            total_ms += t.ms * g.count
            with_calls += t.call_ms * g.count
            macs += g.macs
            parts.append({"name": g.name, "shape": shape_key(g), "count": g.count, "precision": p,
                          "ms_each": round(t.ms, 5), "method": t.method})
        return {"precision": precision, "threads": threads, "ms": total_ms, "ms_with_call_overhead": with_calls,
                "macs": macs, "gmacs_per_s": macs / (total_ms / 1000) / 1e9 if total_ms else None, "products": parts}

    def to_json(self) -> list[dict]:
        shapes = [{"shape": shape, "precision": p, "threads": t, "ms": round(v.ms, 5), "call_ms": round(v.call_ms, 5),
                   "method": v.method, "gmacs_per_s": round(v.gmacs_per_s, 1), "tried": v.tried}
                  for (shape, p, t), v in sorted(self.timings.items())]
        probes = [{"overhead_probe": method, "threads": t, "batched": b, "call_ms": round(ms, 5)}
                  for (method, t, b), ms in sorted(self.overheads.items())]
        return shapes + probes


def floor_precision(precision: str) -> str:
    """Which floor a variant is held to: int8 for int8-* artifacts, fp32 for the float ones."""
    return "int8" if precision.startswith("int8") else "fp32"
