"""ONNX backend: torch.export-based ONNX export, ORT graph optimisation, ORT int8 quantisation.

Choices, each measured on this project's models (see README "Measured choices"):

* ``torch.onnx.export(dynamo=True)``: sound with data-dependent code.  The legacy tracer froze
  transformers' "mask is all ones" shortcut for an unpadded example and gave wrong outputs on
  padded batches.
* Graph optimisation with ORT's transformer optimizer (fused attention/LayerNorm/GELU) is kept only
  when it makes the float model measurably faster.
* int8 dynamic: int8 per-channel weights, activations quantised at run time; quantised from the
  un-fused graph (faster than quantising the fused one here).
* int8 static: QDQ, per-channel int8 weights, uint8 activations calibrated on real text with
  fixed-length batches; only MatMul/Gemm are quantised; Softmax, normalisation, GELU and residual
  adds stay in float, where int8 costs accuracy and buys little.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch

from ..errors import VerificationError
from . import register
from .base import Artifact, Backend, ExportSpec, Runner

OPSET = 20
# Keep an optimised graph only if it is at least this much faster: below that, noise decides.
MIN_SPEEDUP = 1.05


class OrtRunner(Runner):
    def __init__(self, path: Path, threads: int = 1):
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.input_names = [i.name for i in self.session.get_inputs()]

    def __call__(self, feeds):
        return self.session.run(None, {name: feeds[name] for name in self.input_names})[0]


def median_latency_ms(runner: Runner, feeds: dict[str, np.ndarray], runs: int = 30, warmup: int = 5) -> float:
    for _ in range(warmup):
        runner(feeds)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        runner(feeds)
        times.append(time.perf_counter() - start)
    return float(np.median(times) * 1000)


def interleaved_latency_ms(runners: list[Runner], feeds: dict[str, np.ndarray], rounds: int = 30) -> list[float]:
    """Median latency of several runners measured in alternation, so that machine noise (other
    processes, frequency changes) hits all of them alike and their ratio is meaningful."""
    for runner in runners:
        for _ in range(3):
            runner(feeds)
    times: list[list[float]] = [[] for _ in runners]
    for _ in range(rounds):
        for i, runner in enumerate(runners):
            start = time.perf_counter()
            runner(feeds)
            times[i].append(time.perf_counter() - start)
    return [float(np.median(t) * 1000) for t in times]


def _strip_initializer_value_info(model: onnx.ModelProto) -> None:
    # The dynamo exporter stores value_info for initializers; ORT's quantizer re-infers their
    # shapes and fails with a ShapeInferenceError when both are present.
    initializers = {init.name for init in model.graph.initializer}
    keep = [vi for vi in model.graph.value_info if vi.name not in initializers]
    del model.graph.value_info[:]
    model.graph.value_info.extend(keep)


def _name_nodes_by_module(model: onnx.ModelProto) -> None:
    """Rename nodes after the PyTorch module they came from: readable graphs, stable exclusions."""
    used: dict[str, int] = {}
    for node in model.graph.node:
        scopes = next((p.value for p in node.metadata_props if p.key == "pkg.torch.onnx.name_scopes"), None)
        if not scopes:
            continue
        parts = [s.strip(" '\"") for s in scopes.strip("[]").split(",")]
        # name_scopes ends with the fx node name; the entry before it is the module path
        module = next((p for p in reversed(parts[:-1]) if p and not p.startswith("_")), "")
        module = module.removeprefix("model.")
        base = f"/{module.replace('.', '/')}/{node.op_type}" if module else f"/{node.op_type}"
        used[base] = used.get(base, 0) + 1
        node.name = base if used[base] == 1 else f"{base}_{used[base] - 1}"


def export_onnx(model: torch.nn.Module, example: dict[str, np.ndarray], input_names: list[str],
                output_name: str, dest: Path) -> None:
    args = tuple(torch.from_numpy(example[name]) for name in input_names)
    batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence")
    dynamic = tuple({0: batch, 1: sequence} for _ in input_names)
    # The exporter narrates every step on stdout; keep the user's terminal for our own progress.
    with contextlib.redirect_stdout(io.StringIO()), torch.no_grad():
        program = torch.onnx.export(model, args, input_names=input_names, output_names=[output_name],
                                    dynamo=True, dynamic_shapes=dynamic, opset_version=OPSET,
                                    external_data=False, verbose=False)
    proto = program.model_proto
    _strip_initializer_value_info(proto)
    _name_nodes_by_module(proto)
    onnx.checker.check_model(proto)
    onnx.save_model(proto, str(dest))


class OnnxBackend(Backend):
    name = "onnx"
    precisions = ("fp32", "int8-dynamic", "int8-static")

    def load(self, path, threads=1):
        return OrtRunner(path, threads)

    # --- export --------------------------------------------------------------------------
    def export(self, spec: ExportSpec, dest: Path) -> Artifact:
        example = spec.make_batches(["a short one", "a somewhat longer example sentence, with padding"])[0]
        export_onnx(spec.model, example, spec.input_names, spec.output_name, dest)
        details = {"exporter": f"torch.onnx.export(dynamo=True) torch {torch.__version__}", "opset": OPSET,
                   "graph_optimization": self._maybe_optimize(spec, dest)}
        return Artifact("onnx:fp32", dest, details)

    def _maybe_optimize(self, spec: ExportSpec, path: Path) -> dict:
        """Apply ORT's transformer optimizer only where it measurably speeds the model up."""
        from onnxruntime.transformers.optimizer import optimize_model

        config = spec.model.config
        feeds = spec.make_batches(["x"], pad_to=min(128, spec.max_length))[0]
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                optimized = optimize_model(str(path), model_type="bert",
                                           num_heads=spec.family.num_heads(config),
                                           hidden_size=spec.family.hidden_size(config))
            fused = {k: v for k, v in optimized.get_fused_operator_statistics().items() if v}
        except Exception as exc:  # the optimizer is best-effort; the plain export is always valid
            return {"applied": False, "reason": f"optimizer failed: {type(exc).__name__}"}
        if not fused:
            return {"applied": False, "reason": "nothing to fuse"}
        with tempfile.TemporaryDirectory() as tmp:
            candidate = Path(tmp) / "optimized.onnx"
            optimized.save_model_to_file(str(candidate))
            base_runner, opt_runner = OrtRunner(path, spec.threads), OrtRunner(candidate, spec.threads)
            base_ms, opt_ms = interleaved_latency_ms([base_runner, opt_runner], feeds)
            base_out, opt_out = base_runner(feeds), opt_runner(feeds)
            drift = float(np.abs(base_out - opt_out).max())
            result = {"fused": fused, "plain_ms": round(base_ms, 2), "optimized_ms": round(opt_ms, 2),
                      "max_abs_change": drift}
            if base_ms / opt_ms >= MIN_SPEEDUP and drift <= 1e-4 * max(1.0, float(np.abs(base_out).max())):
                candidate.replace(path)
                return {"applied": True, **result}
        return {"applied": False, "reason": f"not ≥{MIN_SPEEDUP:.2f}x faster", **result}

    # --- quantize ------------------------------------------------------------------------
    def quantize(self, spec, precision, dest, calibration):
        from onnxruntime.quantization import QuantType, quantize_dynamic

        with tempfile.TemporaryDirectory() as tmp:
            # Quantise from an un-fused float graph: fused contrib ops quantise worse and ran slower.
            source = Path(tmp) / "float.onnx"
            export_onnx(spec.model, spec.make_batches(["a b", "a longer example text"])[0], spec.input_names,
                        spec.output_name, source)
            common = dict(per_channel=True, op_types_to_quantize=["MatMul", "Gemm"],
                          extra_options={"MatMulConstBOnly": True,
                                         "DefaultTensorType": onnx.TensorProto.FLOAT})
            if precision == "int8-dynamic":
                # Embedding tables (Gather) too: int8 rows are looked up, then dequantised: 4x smaller.
                quantize_dynamic(source, dest, weight_type=QuantType.QInt8,
                                 **dict(common, op_types_to_quantize=["MatMul", "Gemm", "Gather"]))
                details = {"method": "dynamic", "weights": "int8 per-channel", "activations": "uint8 at run time",
                           "quantized_ops": ["MatMul", "Gemm", "Gather"]}
            elif precision == "int8-static":
                details = self._quantize_static(source, dest, calibration, common, Path(tmp))
            else:
                raise ValueError(f"onnx backend has no precision {precision!r}")
        details.setdefault("quantized_ops", ["MatMul", "Gemm"])
        return Artifact(f"onnx:{precision}", dest, details)

    def _quantize_static(self, source: Path, dest: Path, calibration, common: dict, tmp: Path) -> dict:
        from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                              quantize_static)
        from onnxruntime.quantization.shape_inference import quant_pre_process

        if not calibration:
            raise VerificationError("static int8 needs calibration batches", "give --calibration")

        class Reader(CalibrationDataReader):
            def __init__(self):
                self._batches = iter(calibration)

            def get_next(self):
                return next(self._batches, None)

        prepared = tmp / "prepared.onnx"
        quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
        extra = dict(common["extra_options"], CalibPercentile=PERCENTILE)
        with contextlib.redirect_stdout(io.StringIO()):  # the calibrator prints its histogram progress
            quantize_static(prepared, dest, Reader(), quant_format=QuantFormat.QDQ,
                            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                            calibrate_method=CalibrationMethod.Percentile,
                            **dict(common, extra_options=extra))
        return {"method": "static QDQ", "weights": "int8 per-channel", "activations": "uint8 calibrated",
                "calibration": f"percentile {PERCENTILE}", "calibration_batches": len(calibration)}


PERCENTILE = 99.999

register(OnnxBackend())
