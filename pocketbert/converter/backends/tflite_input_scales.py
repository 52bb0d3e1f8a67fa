"""A smoothed model's .tflite made from the unsmoothed model's export, without exporting again.

Smoothing (:mod:`..transforms.smoothquant`) rescales each Linear's weight and puts one element-wise Mul before
it.  litert-torch exports exactly that: a MUL by a constant, then the FULLY_CONNECTED, in every bucket
signature; every other op is the unsmoothed graph's.  Exporting the smoothed model took as long as the float
export (24-layer MobileBERT shape, four signatures: 148-205 s); writing the MULs into a copy of the float export
takes seconds.  The caller writes the new weights' bytes (:mod:`..reweight` traces each constant to its model
tensor) and checks the result's logits against the smoothed model at every signature
(:func:`..quantize.derived_floats.derive`), so a graph this does not understand is refused, never shipped.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write_with_input_scales(source: Path, dest: Path, arrays: dict[int, np.ndarray], *, linear_of: dict[int, str],
                            scales: dict[str, np.ndarray]) -> bool:
    """Write ``dest``: ``source`` with buffers ``arrays`` (index -> float32 values) replaced and, before every
    FULLY_CONNECTED whose weight buffer is Linear ``linear_of[buffer]``, a MUL of its input by ``scales[linear]``.
    False (nothing written) when a Linear in ``scales`` is no FULLY_CONNECTED's weight, or the file keeps
    buffers outside its flatbuffer."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    data = Path(source).read_bytes()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(data, 0))
    if any(buffer.offset > 1 for buffer in model.buffers):
        return False
    for index, array in arrays.items():
        model.buffers[index].data = np.frombuffer(np.ascontiguousarray(array, np.float32).tobytes(), np.uint8)
    inserter = _MulInserter(model, scales)
    for subgraph in model.subgraphs:
        inserter.insert(subgraph, linear_of)
    if inserter.scaled != set(scales):
        return False
    builder = flatbuffers.Builder(len(data) + 1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    Path(dest).write_bytes(bytes(builder.Output()))
    return True


class _MulInserter:
    """MUL ops (and their tensors) added to one model: one constant buffer per Linear's scale, shared by the
    signatures, as litert-torch shares a weight's buffer."""

    def __init__(self, model, scales: dict[str, np.ndarray]):
        from ai_edge_litert import schema_py_generated as schema

        self.schema, self.model, self.scales = schema, model, scales
        self.opcode = self._opcode(schema.BuiltinOperator.MUL)
        self.fully_connected = [i for i, code in enumerate(model.operatorCodes)
                                if max(code.builtinCode, code.deprecatedBuiltinCode)
                                == schema.BuiltinOperator.FULLY_CONNECTED]
        self.scale_buffers: dict[str, int] = {}
        self.scaled: set[str] = set()
        self.inserted = 0

    def insert(self, subgraph, linear_of: dict[int, str]) -> None:
        operators = []
        for op in subgraph.operators:
            linear = None
            if op.opcodeIndex in self.fully_connected and len(op.inputs) > 1:
                linear = linear_of.get(subgraph.tensors[op.inputs[1]].buffer)
            if linear in self.scales:
                operators.append(self._mul(subgraph, op, linear))
                self.scaled.add(linear)
            operators.append(op)
        subgraph.operators = operators

    def _mul(self, subgraph, op, linear: str):
        """A MUL of ``op``'s input by the Linear's scale; ``op`` then reads its output."""
        schema = self.schema
        self.inserted += 1
        where = f"{linear}/{self.inserted}"  # ai-edge-quantizer needs every tensor name unique across the model
        source = subgraph.tensors[op.inputs[0]]
        rank = len(source.shape)
        constant = self._tensor(f"{where};input_scale".encode(), [1] * (rank - 1) + [len(self.scales[linear])],
                                self._scale_buffer(linear))
        output = self._tensor(f"{where};scaled_input".encode(), list(source.shape), self._buffer(None))
        if source.shapeSignature is not None:
            output.shapeSignature = list(source.shapeSignature)
        first = len(subgraph.tensors)
        subgraph.tensors += [constant, output]
        mul = schema.OperatorT()
        mul.opcodeIndex, mul.inputs, mul.outputs = self.opcode, [op.inputs[0], first], [first + 1]
        mul.builtinOptionsType = schema.BuiltinOptions.MulOptions
        mul.builtinOptions = schema.MulOptionsT()
        op.inputs = [first + 1, *list(op.inputs)[1:]]
        return mul

    def _tensor(self, name: bytes, shape: list[int], buffer: int):
        tensor = self.schema.TensorT()
        tensor.name, tensor.shape, tensor.buffer = name, np.array(shape, np.int32), buffer
        tensor.type = self.schema.TensorType.FLOAT32
        return tensor

    def _scale_buffer(self, linear: str) -> int:
        if linear not in self.scale_buffers:
            self.scale_buffers[linear] = self._buffer(np.asarray(self.scales[linear], np.float32))
        return self.scale_buffers[linear]

    def _buffer(self, values: np.ndarray | None) -> int:
        buffer = self.schema.BufferT()
        if values is not None:
            buffer.data = np.frombuffer(values.tobytes(), np.uint8)
        self.model.buffers.append(buffer)
        return len(self.model.buffers) - 1

    def _opcode(self, builtin: int) -> int:
        for index, code in enumerate(self.model.operatorCodes):
            if max(code.builtinCode, code.deprecatedBuiltinCode) == builtin:
                return index
        code = self.schema.OperatorCodeT()
        code.builtinCode, code.deprecatedBuiltinCode, code.version = builtin, min(builtin, 127), 1
        self.model.operatorCodes.append(code)
        return len(self.model.operatorCodes) - 1
