"""TFLite (LiteRT) backend: litert-torch export, ai-edge-quantizer recipes, builtin ops only.

* Static shapes, batch 1 (phones run batch 1): one signature per sequence-length bucket in one
  .tflite, named ``seq_<length>``; inputs ``input_ids``, ``attention_mask`` (and
  ``token_type_ids``) as int32 ``[1, length]``, output ``logits``.  The runner pads each input to
  the smallest bucket that fits.  (litert-torch's ``dynamic_shapes`` failed here, so buckets.)
* After every conversion the flatbuffer is inspected: a Flex (SELECT_TF_OPS) or custom op fails the
  conversion, naming the op; the builtin-op histogram goes into the manifest.
* fp16 = float casting of the Linear and embedding weights (half the size, float arithmetic).
* int8-dynamic = ai-edge-quantizer ``dynamic_wi8_afp32`` (int8 weights, float activations: the fast
  kernels on this CPU); int8-static = ``static_wi8_ai8`` plus int8 embedding tables (full integer,
  calibrated per signature on real text, once; its logits are int8 and the runner dequantises them
  with the output's scale).  Both take part in the shared float-fallback search: Linear roles are
  found by matching each FULLY_CONNECTED weight to its PyTorch Linear (:mod:`.tflite_graph`).
* int4-dynamic = ``dynamic_wi4_afp32`` (int4 per-channel Linear weights, activations quantised to int8 at
  run time: XNNPACK's qd8-f32-qc4w kernels) with int4 word-embedding rows: the phone-sized file.  Its
  fallback search keeps the sensitive Linear roles in int8, not float.  (LiteRT has no 2-bit kernels, and
  blockwise int4 spends more on scales than channelwise int4 at this width.)
* Every quantised file is compacted losslessly (:mod:`.tflite_compact`: quantisation tables shared
  between the bucket signatures, internal tensor names cut): int8-dynamic 27.0 -> 24.4 MB on the SST-2 demo.
* An op litert-torch cannot lower to builtins is an :class:`ConverterInputError` naming the op and the fix.
"""

from __future__ import annotations

import collections
import functools
import logging
import re
from pathlib import Path

from pocketbert.runtime.buckets import signature_name, smallest_bucket

from ..errors import ConverterInputError, VerificationError
from . import export_cache, register, reweight, tflite_calibration, tflite_weights
from .base import ExportBackend, ExportedArtifact, ExportSpec, float_fallback_search, judge_file, ladder_rules
from .tflite_compact import compact
from .tflite_graph import linear_roles, masked_softmax_ops, small_lookup_ops
from .tflite_input_scales import write_with_input_scales
from .tflite_recipes import QUANTIZER_RECIPES, on_int4_grid, quantize_file, recipe_for
from .tflite_signatures import converted, export_in_two_processes, merged_signatures, one_signature, two_processes_pay


def op_histogram(path: Path) -> dict[str, int]:
    """Operator name -> count over all subgraphs; custom/Flex ops appear as 'CUSTOM:<name>'."""
    from ai_edge_litert import schema_py_generated as schema

    model = schema.Model.GetRootAs(Path(path).read_bytes(), 0)
    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    codes = []
    for i in range(model.OperatorCodesLength()):
        code = model.OperatorCodes(i)
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if builtin == schema.BuiltinOperator.CUSTOM:
            codes.append(f"CUSTOM:{code.CustomCode().decode()}")
        else:
            codes.append(names.get(builtin, str(builtin)))
    histogram: collections.Counter = collections.Counter()
    for s in range(model.SubgraphsLength()):
        subgraph = model.Subgraphs(s)
        for o in range(subgraph.OperatorsLength()):
            histogram[codes[subgraph.Operators(o).OpcodeIndex()]] += 1
    return dict(sorted(histogram.items()))


def float_op_histogram(path: Path) -> dict[str, int]:
    """Operator name -> count of the ops computing in float: those with a float32 output (a QUANTIZE,
    float in and int8 out, is the boundary and not counted).  For a full-integer model these are what
    an int8-only accelerator cannot take (docs/full-integer.md: which ones an NNAPI/QNN delegate rejects)."""
    from ai_edge_litert import schema_py_generated as schema

    model = schema.Model.GetRootAs(Path(path).read_bytes(), 0)
    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    codes = [names.get(max(model.OperatorCodes(i).BuiltinCode(), model.OperatorCodes(i).DeprecatedBuiltinCode()))
             for i in range(model.OperatorCodesLength())]
    counts: collections.Counter = collections.Counter()
    for s in range(model.SubgraphsLength()):
        subgraph = model.Subgraphs(s)
        for o in range(subgraph.OperatorsLength()):
            op = subgraph.Operators(o)
            outputs = [subgraph.Tensors(op.Outputs(k)).Type() for k in range(op.OutputsLength())]
            if schema.TensorType.FLOAT32 in outputs:
                counts[codes[op.OpcodeIndex()]] += 1
    return dict(sorted(counts.items()))


def check_builtin_only(path: Path) -> dict[str, int]:
    histogram = op_histogram(path)
    custom = sorted(op for op in histogram if op.startswith("CUSTOM:"))
    if custom:
        hints = " (GELU's Erf: add relu to --opt)" if any("Erf" in op for op in custom) else ""
        raise VerificationError(f"the TFLite model needs non-builtin ops {', '.join(custom)}{hints}; "
                                "phones' builtin-only interpreters cannot run it",
                                "apply the transform that removes the op, or convert with --format onnx")
    return histogram


def _unconvertible(exc: Exception, spec: ExportSpec) -> ConverterInputError:
    """litert-torch fails on ops with no builtin TFLite lowering ("Lowering not found: aten.X", or an
    op the legaliser must reject): name the op, where it comes from and the transform that avoids it."""
    text = str(exc)
    op = (re.search(r"Lowering not found: (aten\.[\w.]+)", text)
          or re.search(r"failed to legalize operation '([\w.]+)'", text))
    where = re.search(r"([\w/.-]+\.py):(\d+)", text)
    if op is None:
        raise exc  # not an unsupported-op failure: a bug to report as it is
    source = f" (from {Path(where.group(1)).name}:{where.group(2)})" if where else ""
    config = getattr(spec.model, "config", None)
    activation = getattr(config, "hidden_act", None) or getattr(config, "activation", None)
    from_activation = (where and where.group(1).endswith("activations.py")) or "erf" in op.group(1)
    if from_activation and activation is not None:
        problem = (f"the model's activation {activation!r} has no builtin TFLite lowering: {op.group(1)}{source}; "
                   "phones' builtin-only interpreters could not run it")
        fix = "add relu to --opt (GELU-style activations -> ReLU; measure the cost), or convert with --format onnx"
    else:
        problem = f"the model needs {op.group(1)}{source}, which has no builtin TFLite lowering"
        fix = "convert with --format onnx, or change the model so that it avoids this op"
    return ConverterInputError(problem, fix)


class TfliteExportBackend(ExportBackend):
    name = "tflite"
    precisions = {"fp32": "float32 LiteRT, one signature per sequence-length bucket, batch 1",
                  "fp16": "float16 weights (half the size), dequantised at load; float arithmetic",
                  "int8-dynamic": "ai-edge-quantizer dynamic_wi8_afp32: int8 weights, float activations",
                  "int8-static": "ai-edge-quantizer static_wi8_ai8: full integer, calibrated, int8 logits",
                  "int4-dynamic": "ai-edge-quantizer dynamic_wi4_afp32 and int4 embedding rows: half int8's size, "
                                  "for phones"}
    size_ladder = ("fp16", "int8-dynamic", "int4-dynamic")
    length_specific = frozenset({"int8-static"})  # calibrated per signature (_calibrate)

    def _convert(self, spec: ExportSpec, dest: Path) -> None:
        examples = {signature_name(b): spec.make_batches(["x"], pad_to=b)[0] for b in spec.buckets}
        examples = {name: {n: example[n] for n in spec.input_names} for name, example in examples.items()}
        export_cache.cached_signatures(functools.partial(self._export, spec), dest, kind="tflite", model=spec.model,
                                       settings="litert-torch, int32 inputs", examples=examples,
                                       merge=functools.partial(merged_signatures, examples=examples))

    def _export(self, spec: ExportSpec, examples: dict, dest: Path) -> None:
        try:
            if two_processes_pay(spec.model, len(examples), spec.threads) and \
                    export_in_two_processes(spec.model, examples, dest):
                return
            content = converted(spec.model, examples)
        except (RuntimeError, ValueError) as exc:
            raise _unconvertible(exc, spec) from exc
        # Written here, not by the exporter: its writer exits the process on a full disk (LLVM's
        # fatal-error handler), where Python's raises OSError and the user gets a message.
        Path(dest).write_bytes(content)

    def export(self, spec: ExportSpec, dest: Path) -> ExportedArtifact:
        self._convert(spec, dest)
        return ExportedArtifact("tflite:fp32", dest, self._describe(spec, dest, {"converter": "litert-torch"}))

    def with_weights(self, source, dest, exported, new, input_scales=None) -> bool:
        values, shapes = tflite_weights.float_constants(source)
        traced = reweight.replaced(values, shapes, exported, new)
        if traced is None:
            return False
        arrays, found = traced
        if input_scales:
            return write_with_input_scales(source, dest, arrays, linear_of=reweight.weights_of(found, input_scales),
                                           scales=input_scales)
        tflite_weights.write_constants(source, dest, arrays)
        return True

    def _describe(self, spec: ExportSpec, path: Path, details: dict) -> dict:
        return {**details, "buckets": list(spec.buckets), "batch": 1,
                "signatures": [signature_name(b) for b in spec.buckets],
                "input_dtype": "int32", "op_histogram": check_builtin_only(path)}

    def weight_bytes(self, path: Path) -> dict[str, int]:
        """Every buffer once (the bucket signatures share their weights), by the type of a tensor using it."""
        from ai_edge_litert import schema_py_generated as schema

        model = schema.Model.GetRootAs(Path(path).read_bytes(), 0)
        types = {v: k.lower() for k, v in vars(schema.TensorType).items() if not k.startswith("_")}
        owner: dict[int, str] = {}
        for s in range(model.SubgraphsLength()):
            subgraph = model.Subgraphs(s)
            for t in range(subgraph.TensorsLength()):
                tensor = subgraph.Tensors(t)
                owner.setdefault(tensor.Buffer(), types.get(tensor.Type(), str(tensor.Type())))
        totals: dict[str, int] = {}
        for index, dtype in owner.items():
            buffer = model.Buffers(index)
            size = buffer.DataLength() or buffer.Size()  # large models keep buffers after the flatbuffer
            if size:
                totals[dtype] = totals.get(dtype, 0) + int(size)
        return dict(sorted(totals.items()))

    def quantize(self, spec, precision, dest, calibration, accept=None, float_fallback=True, float_export=None,
                 keep_float=None):
        """fp16 weights, or int8 (dynamic, static) with the shared float-fallback search over Linear roles."""
        if precision not in QUANTIZER_RECIPES:
            raise ValueError(f"tflite backend has no precision {precision!r}")
        if precision == "int8-static" and not calibration:
            raise VerificationError("static int8 needs calibration text", "give --calibration")
        float_path = float_export or dest.with_name(dest.name + ".float.tflite")
        candidate = dest.with_name(dest.name + ".candidate.tflite")
        screens = ScreenFile(float_path, spec.buckets, calibration)  # written at the first screen, if any
        try:
            if float_export is None:
                self._convert(spec, float_path)
            logging.getLogger("absl").setLevel(logging.ERROR)
            integer = precision.startswith(("int8", "int4"))
            roles = linear_roles(float_path, spec.model) if integer else {}
            static = precision == "int8-static"
            float_ops = masked_softmax_ops(float_path) if static else []
            # weights int4-tune put on the int4 grid were trained with the small lookup tables in float: kept so
            on_grid = precision == "int4-dynamic" and on_int4_grid(float_path)
            float_ops += small_lookup_ops(float_path) if on_grid else []
            calibrated = self._calibrate(spec, float_path, calibration, float_ops) if static else None

            clipping: dict[bool, str] = {}

            def attempt(float_roles: list[str], final: bool, screen: bool = False) -> tuple[bool, dict]:
                out = dest if final else candidate
                scopes = [scope for role in float_roles for scope in roles[role]]
                clipping[final] = quantize_file(screens.path() if screen else float_path, out, precision, scopes,
                                                calibrated=calibrated, float_ops=float_ops, on_grid=on_grid)
                return judge_file(accept, out, screen)

            fallback = float_fallback_search(roles, attempt, float_fallback and integer,
                                             kept_as="int8" if precision == "int4-dynamic" else "float",
                                             **ladder_rules(accept, dest))
            before, after = compact(dest)
            if keep_float is not None and float_export is None:
                float_path.replace(keep_float)
        finally:
            candidate.unlink(missing_ok=True)
            screens.remove()
            if float_export is None:
                float_path.unlink(missing_ok=True)
        details = self._describe(spec, dest, {"method": precision.split("-", 1)[-1],
                                              "quantizer": f"ai-edge-quantizer {QUANTIZER_RECIPES[precision]}",
                                              "compacted": {"bytes_before": before, "bytes_after": after}})
        if precision != "fp16":
            details["clipping"] = clipping[True]
        if precision == "int4-dynamic":  # then min-max clipping, and the small lookup tables float
            details["weights_on_int4_grid"] = on_grid
        if precision == "int8-static":
            details["calibration_rows"] = sum(b["input_ids"].shape[0] for b in calibration)
            # the rows the ranges come from
            details["range_rows"] = min(tflite_calibration.RANGE_ROWS, details["calibration_rows"])
            found = float_op_histogram(dest)
            details["float_ops"] = {"count": sum(found.values()), "ops": found}
        if integer:
            details["float_fallback"] = fallback
        return ExportedArtifact(f"tflite:{precision}", dest, details)

    def _calibrate(self, spec: ExportSpec, float_path: Path, calibration: list, float_ops: list):
        """Activation ranges for every signature (:mod:`.tflite_calibration`), computed once and reused by every
        float-fallback attempt (keeping ops in float needs no new ranges)."""
        return tflite_calibration.calibrate(spec, float_path, calibration, recipe_for("int8-static", [], float_ops))


class ScreenFile:
    """The float file with only the signature a screening judgement reads (``calibration_judge.SCREEN_TEXTS`` of the
    calibration batches, run at the smallest bucket holding their length), written at the first screen: the
    float-fallback search quantises it for each role it ranks instead of every signature (24-layer MobileBERT
    shape, four signatures: each screen's quantisation a quarter of the work).  The screened signature's
    quantisation is the full file's, bit for bit (tests/test_tflite.py)."""

    def __init__(self, float_path: Path, buckets: list[int], calibration: list | None):
        self.float_path = Path(float_path)
        length = calibration[0]["input_ids"].shape[1] if calibration else None
        self.bucket = smallest_bucket(buckets, length) if length and len(buckets) > 1 else None
        self._written: Path | None = None

    def path(self) -> Path:
        if self.bucket is None:
            return self.float_path
        if self._written is None:
            screen = self.float_path.with_name(f".{self.float_path.name}.screen.tflite")
            self._written = screen if one_signature(self.float_path, screen, signature_name(self.bucket)) \
                else self.float_path
        return self._written

    def remove(self) -> None:
        if self._written is not None and self._written != self.float_path:
            self._written.unlink(missing_ok=True)


register(TfliteExportBackend())
