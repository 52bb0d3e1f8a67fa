"""ONNX backend: torch.export-based ONNX export, ORT graph optimisation, ORT int8 quantisation.

Choices, each measured on this project's models (see README "Measured choices"):

* ``torch.onnx.export(dynamo=True)``: sound with data-dependent code.  The legacy tracer froze
  transformers' "mask is all ones" shortcut for an unpadded example and gave wrong outputs on
  padded batches.
* ORT's transformer fusions, always, offline and portable (:mod:`.onnx_fusion`): one Attention op
  per layer, SkipLayerNormalization, BiasGelu; for NoNorm models attention is anchored on the
  residual Add.  The file then needs ONNX Runtime >= ``onnx_fusion.MIN_ORT_VERSION``.
* int8 weights in a 7-bit range (``reduce_range``), per channel: ORT's u8s8 kernels on x86 CPUs
  without VNNI (AVX2, AVX-512F) multiply with VPMADDUBSW, which adds pairs of uint8 x int8 products
  in 16 bits and saturates when both are large (2 x 255 x 127 > 32767).  With |w| <= 64 no pair can
  saturate, so an int8 artifact computes the same on every CPU (VNNI, AMX and ARM dot-product
  kernels never saturated); measured on the SST-2 demo model, the 7-bit weights lost no agreement.
* int8 dynamic: activations quantised at run time; quantised from the fused graph (Attention becomes
  QAttention: Q/K/V in int8 with the input quantised once, which the un-fused graph computes identically).
* int8 static: the same fused graph and integer kernels as dynamic (QAttention, MatMulInteger), each Linear's
  input quantised with a range calibrated on real text without its padding (:func:`calibrate`) instead of one
  measured at run time.  Softmax, attention's score products, normalisation, GELU and residual adds stay in float,
  where int8 costs accuracy and buys little.  ONNX Runtime's QDQ format was the static file until 2026-12: on the
  plain graph (QDQ pairs around the fused graph's contrib ops are not quantised kernels) its un-fused attention and
  the glue around each QLinearMatMul cost what its int8 Linears saved: on an AVX2-only EPYC the NER demo's QDQ file
  was 1.15× its fp32 file at 2 threads where this one is 1.58× (``docs/speed.md``).
* Accuracy-driven float fallback: when the int8 model misses the agreement target on the
  calibration text, the most sensitive Linear roles go back to float until it meets it (on
  all-MiniLM-L6-v2 static int8: the FFN output projections, whose GELU inputs have token-wise
  outliers that no per-tensor scale fits).
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np
import onnx
import torch
from onnxruntime.quantization import (
    CalibrationDataReader,
    CalibrationMethod,
    QuantType,
    quantize_dynamic,
)
from onnxruntime.quantization.calibrate import (HistogramCollector, create_calibrator, load_tensors_data,
                                                save_tensors_data)
from onnxruntime.quantization.onnx_quantizer import ONNXQuantizer
from onnxruntime.quantization.quant_utils import QuantizationMode, load_model_with_shape_infer, update_opset_version

from . import export_cache, reweight
from ..errors import VerificationError
from ..checks.verify import unpadded_batches
from . import register
from .base import (ExportBackend, ExportedArtifact, ExportSpec, float_fallback_search, judge_file,
                   ladder_rules)
from .onnx_fusion import MICROSOFT, fusable, fuse, is_fused
from .onnx_input_scales import insert_input_scales

OPSET = 20


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
    settings = {"opset": OPSET, "inputs": list(input_names), "output": output_name, "dynamic": ["batch", "sequence"]}
    export_cache.cached(lambda: _export_onnx(model, example, input_names, output_name=output_name, dest=dest), dest,
                        kind="onnx", model=model, settings=settings,
                        examples={"example": {n: example[n] for n in input_names}})


def _export_onnx(model: torch.nn.Module, example: dict[str, np.ndarray], input_names: list[str],
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


class OnnxExportBackend(ExportBackend):
    name = "onnx"
    precisions = {"fp32": "float32 ONNX, dynamic batch and sequence axes",
                  "int8-dynamic": "int8 per-channel weights, activations quantised at run time",
                  "int8-static": "int8 per-channel weights, activations quantised with calibrated ranges"}

    # --- export --------------------------------------------------------------------------
    def export(self, spec: ExportSpec, dest: Path) -> ExportedArtifact:
        details = {"exporter": f"torch.onnx.export(dynamo=True) torch {torch.__version__}", "opset": OPSET,
                   "graph_optimization": export_fused(spec, dest)}
        return ExportedArtifact("onnx:fp32", dest, details)

    def with_weights(self, source, dest, exported, new, input_scales=None) -> bool:
        """Every float initializer traced to the model tensor it was made from (:mod:`..reweight`) and replaced by
        the new model's, and a Mul before each MatMul or Gemm whose weight is a Linear in ``input_scales``.  A
        fused graph's packed Q/K/V weights trace to no one tensor: such a file is refused."""
        model = onnx.load(str(source))
        if any(node.domain == MICROSOFT for node in model.graph.node):
            return False  # fused: packed Q/K/V weights trace to no one tensor (said before tracing them all)
        constants = {init.name: onnx.numpy_helper.to_array(init) for init in model.graph.initializer
                     if init.data_type == onnx.TensorProto.FLOAT}
        traced = reweight.replaced(constants, {k: v.shape for k, v in constants.items()}, exported, new)
        if traced is None:
            return False
        arrays, found = traced
        for init in model.graph.initializer:
            if init.name in arrays:
                init.CopyFrom(onnx.numpy_helper.from_array(arrays[init.name], init.name))
        if input_scales and not insert_input_scales(model.graph, reweight.weights_of(found, input_scales),
                                                     input_scales):
            return False
        onnx.save_model(model, str(dest))
        return True

    def weight_bytes(self, path: Path) -> dict[str, int]:
        totals: dict[str, int] = {}
        for tensor in onnx.load(str(path)).graph.initializer:
            dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type))
            totals[dtype.name] = totals.get(dtype.name, 0) + int(np.prod(tensor.dims)) * dtype.itemsize
        return dict(sorted(totals.items()))

    # --- quantize ------------------------------------------------------------------------
    def quantize(self, spec, precision, dest, calibration, accept=None, float_fallback=True, float_export=None,
                 keep_float=None):
        """Quantise; if ``accept`` rejects the result, keep the most sensitive layer roles in float.

        A role is one kind of Linear across all layers (e.g. every FFN output projection).  Each
        role's sensitivity is measured by quantising with only that role in float; roles then go
        back to float, most helpful first, until ``accept`` passes.
        """
        if precision not in ("int8-dynamic", "int8-static"):
            raise ValueError(f"onnx backend has no precision {precision!r}")
        if precision == "int8-static" and not calibration:
            raise VerificationError("static int8 needs calibration text", "give --calibration")
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            source = _float_source(spec, float_export, tmp / "float.onnx")
            float_graph = "fused (ONNX Runtime transformer fusions)" if is_fused(source) else "plain export"
            exported = source if source != float_export else None
            roles = _roles(onnx.load(str(source)))

            def attempt(excluded_roles: list[str], final: bool, screen: bool = False) -> tuple[bool, dict]:
                out = dest if final else tmp / "candidate.onnx"
                nodes = [n for role in excluded_roles for n in roles[role]]
                if precision == "int8-dynamic":
                    _quantize_dynamic(source, out, nodes)
                else:
                    _quantize_static(source, out, calibration, exclude=nodes, cache=tmp / "calibration-cache.json")
                return judge_file(accept, out, screen)

            fallback = float_fallback_search(roles, attempt, float_fallback, **ladder_rules(accept, dest))
            if keep_float is not None and exported is not None:
                shutil.move(exported, keep_float)
        details = {
            "method": "dynamic" if precision == "int8-dynamic" else "static",
            "weights": WEIGHTS,
            "activations": "uint8 at run time" if precision == "int8-dynamic" else
                           f"uint8, calibrated (percentile {PERCENTILE})",
            # Embedding tables (Gather) too: int8 rows are looked up, then dequantised.
            "quantized_ops": QUANTIZED_OPS,
            "float_graph": float_graph,
            "float_fallback": fallback,
        }
        if precision == "int8-static":
            details["calibration_batches"] = len(calibration)
        return ExportedArtifact(f"onnx:{precision}", dest, details)


PERCENTILE = 99.999
# Attention: the fused graph's Q/K/V projections (QAttention); Gather: embedding tables, dequantised on lookup.
QUANTIZED_OPS = ["MatMul", "Gemm", "Gather", "Attention"]
# the ops whose float inputs static int8 quantises with calibrated ranges (Gather's input is token ids)
CALIBRATED_OPS = ["MatMul", "Gemm", "Attention"]
WEIGHTS = "int8 per-channel, 7-bit range (reduce_range: no 16-bit saturation in x86 u8s8 kernels without VNNI)"
_COMMON = dict(per_channel=True, reduce_range=True, extra_options={"MatMulConstBOnly": True,
                                                "DefaultTensorType": onnx.TensorProto.FLOAT})


def export_fused(spec: ExportSpec, dest: Path) -> dict:
    """The float export with ONNX Runtime's transformer fusions (:mod:`.onnx_fusion`); the plain export,
    said so, if the model cannot be fused.  Returns ``details["graph_optimization"]``."""
    example = spec.make_batches(["a short one", "a somewhat longer example sentence, with padding"])[0]
    config = spec.model.config
    try:
        with fusable(spec.model) as model:
            export_onnx(model, example, spec.input_names, output_name=spec.output_name, dest=dest)
        return {"applied": True, **fuse(dest, spec.family.num_heads(config), spec.family.hidden_size(config))}
    except Exception as exc:  # an optimizer limit, not the user's problem: the plain export is always valid
        export_onnx(spec.model, example, spec.input_names, output_name=spec.output_name, dest=dest)
        return {"applied": False, "reason": f"fusion failed: {type(exc).__name__}: {str(exc)[:200]}"}


def _float_source(spec: ExportSpec, float_export: Path | None, scratch: Path) -> Path:
    """The float graph to quantise: the fused graph (its Attention becomes QAttention, with the same per-channel
    7-bit weights, and computes what the un-fused int8 graph computes)."""
    if float_export is not None:
        return float_export
    export_fused(spec, scratch)
    return scratch


def _roles(model: onnx.ModelProto) -> dict[str, list[str]]:
    """Quantisable Linear nodes (MatMul/Gemm with a constant weight, fused Attention's Q/K/V weights)
    grouped by role across layers."""
    constants = {init.name for init in model.graph.initializer}
    roles: dict[str, list[str]] = {}
    for node in model.graph.node:
        if node.op_type in ("MatMul", "Gemm", "Attention") and len(node.input) > 1 and node.input[1] in constants:
            roles.setdefault(re.sub(r"/layer/\d+/", "/layer/*/", node.name), []).append(node.name)
    return roles


def _quantize_dynamic(source: Path, dest: Path, exclude: list[str]) -> None:
    quantize_dynamic(source, dest, weight_type=QuantType.QInt8, op_types_to_quantize=QUANTIZED_OPS,
                     nodes_to_exclude=exclude, **_COMMON)


class _Batches(CalibrationDataReader):
    def __init__(self, calibration):
        self._batches = iter(calibration)

    def get_next(self):
        return next(self._batches, None)


def calibrate(source: Path, calibration: list[dict[str, np.ndarray]], cache: Path) -> None:
    """Activation ranges of ``source`` on the calibration text, written to ``cache`` (every float-fallback attempt
    then reuses them): ONNX Runtime's own Percentile calibrator, settings as ``quantize_static`` gives it, fed the
    texts without their padding.

    The calibration batches are padded to one length (64 tokens), since ONNX Runtime's calibrator stacks
    every batch of a tensor into one array.  On the demo tasks' text about two thirds of every tensor, and
    more of attention's score tensors, were padding (NER demo: about 14 GB of activations by the tensors'
    sizes).  Here the rows are sorted by length and each batch is cut to its longest row
    (``verify.unpadded_batches``), and the calibrator's histogram collector takes each tensor's batches of
    different lengths as if they were one array (:class:`RaggedHistogramCollector`).  A padded
    position's activations never reach a real token's output, so they have no place in its range either.
    """
    with tempfile.TemporaryDirectory(prefix="calibration.") as tmp:
        calibrator = create_calibrator(source, CALIBRATED_OPS,
                                       augmented_model_path=str(Path(tmp) / "augmented.onnx"),
                                       calibrate_method=CalibrationMethod.Percentile,
                                       extra_options={"percentile": PERCENTILE})
        calibrator.collector = RaggedHistogramCollector(
            method=calibrator.method, symmetric=calibrator.symmetric, num_bins=calibrator.num_bins,
            num_quantized_bins=calibrator.num_quantized_bins, percentile=calibrator.percentile,
            scenario=calibrator.scenario)
        calibrator.collect_data(_Batches(unpadded_batches(calibration)))
        save_tensors_data(calibrator.compute_data(), cache)


class RaggedHistogramCollector(HistogramCollector):
    """ONNX Runtime's histogram collector, for batches of different lengths: each tensor's histogram over the
    values of all its batches, exactly as ONNX Runtime computes it from equal-shaped batches (it stacks them and
    bins the absolute values between their least and greatest).

    Percentile calibration (absolute values) bins each batch alone between the overall least and greatest
    absolute value and adds the counts: a value's bin depends only on it and those two edges, so the sum is the
    stacked array's histogram, without copying every activation of the calibration text into one array (on the
    NER demo that copy took as long as the histograms).  Other methods get one flat array per tensor."""

    def collect(self, name_to_arr):
        rest = {}
        for name, arrays in name_to_arr.items():
            if not isinstance(arrays, list):
                rest[name] = arrays
            elif (self.method == "percentile" and self.symmetric and name not in self.histogram_dict
                  and any(a.size for a in arrays)):
                self.histogram_dict[name] = _absolute_histogram(arrays, self.num_bins)
            else:
                rest[name] = np.concatenate([np.ravel(a) for a in arrays])
        return super().collect(rest)


def _absolute_histogram(arrays: list[np.ndarray], bins: int) -> tuple:
    """``HistogramCollector.collect_absolute_value``'s first record of a tensor, from its batches one by one:
    (counts, edges, least value, greatest value)."""
    arrays = [np.ravel(a) for a in arrays if a.size]
    absolute = [np.absolute(a) for a in arrays]
    low, high = min(a.min() for a in absolute), max(a.max() for a in absolute)
    counts = sum(np.histogram(a, bins=bins, range=(low, high))[0] for a in absolute)
    edges = np.histogram_bin_edges(absolute[0][:1], bins=bins, range=(low, high)).astype(absolute[0].dtype)
    return counts, edges, min(np.nanmin(a) for a in arrays), max(np.nanmax(a) for a in arrays)


def _quantize_static(source: Path, dest: Path, calibration, exclude: list[str], cache: Path) -> None:
    """``quantize_dynamic``'s graph, with each quantised input's range read from the calibration (``cache``, written
    once for every attempt of a ladder): ONNX Runtime's own quantiser in its integer-ops mode, told the ranges
    (``static``), so each QAttention and MatMulInteger takes a QuantizeLinear of constant scale instead of a
    DynamicQuantizeLinear.  ``quantize_static`` offers that quantiser only in QLinear and QDQ formats, which have
    no quantised Attention."""
    with contextlib.redirect_stdout(io.StringIO()):  # the calibrator prints its histogram progress
        if not cache.exists():
            calibrate(source, calibration, cache)
    model = update_opset_version(load_model_with_shape_infer(source), QuantType.QInt8)
    quantizer = ONNXQuantizer(model, True, True, QuantizationMode.IntegerOps, True, QuantType.QInt8,
                              QuantType.QUInt8, load_tensors_data(cache), None, exclude, QUANTIZED_OPS,
                              dict(_COMMON["extra_options"]))
    quantizer.quantize_model()
    quantizer.model.save_model_to_file(str(dest))


register(OnnxExportBackend())
