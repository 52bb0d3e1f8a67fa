"""A .tflite file's float constants, read and written in place: the bucket signatures share one buffer per
weight, so a weight is one buffer whichever signatures read it (:mod:`converter.backends.reweight` traces each to
the model tensor it came from)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def float_constants(path: Path) -> tuple[dict[int, np.ndarray], dict[int, tuple[int, ...]]]:
    """Buffer index -> its float32 values (a read-only view of the file's bytes), and its tensor shape."""
    data = Path(path).read_bytes()
    values, shapes = {}, {}
    for index, (start, length, shape) in _float_buffers(data).items():
        values[index] = np.frombuffer(data, dtype=np.float32, count=length // 4, offset=start).reshape(shape)
        shapes[index] = shape
    return values, shapes


def write_constants(path: Path, dest: Path, arrays: dict[int, np.ndarray]) -> None:
    """``path`` with the given buffers' bytes replaced (same dtype and size), written to ``dest``."""
    data = bytearray(Path(path).read_bytes())
    where = _float_buffers(bytes(data))
    for index, array in arrays.items():
        start, length, _ = where[index]
        raw = np.ascontiguousarray(array, dtype=np.float32).tobytes()
        if len(raw) != length:
            raise ValueError(f"buffer {index}: {len(raw)} bytes for {length}")
        data[start:start + length] = raw
    Path(dest).write_bytes(bytes(data))


def _float_buffers(data: bytes) -> dict[int, tuple[int, int, tuple[int, ...]]]:
    """Buffer index -> (byte offset in the file, byte length, shape) of every constant float32 tensor's data."""
    from ai_edge_litert import schema_py_generated as schema

    model = schema.Model.GetRootAs(data, 0)
    found = {}
    for s in range(model.SubgraphsLength()):
        graph = model.Subgraphs(s)
        for t in range(graph.TensorsLength()):
            tensor = graph.Tensors(t)
            index = tensor.Buffer()
            if index in found or tensor.Type() != schema.TensorType.FLOAT32:
                continue
            located = _located(model.Buffers(index))
            if located is not None:
                found[index] = (*located, tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ())
    return found


def _located(buffer) -> tuple[int, int] | None:
    """(start, length) of a buffer's bytes in the file: inline data, or an offset past the flatbuffer (files
    over 2 GB); None for an empty buffer (an activation's)."""
    if buffer.Offset() > 1:
        return buffer.Offset(), buffer.Size()
    if buffer.DataLength() == 0:
        return None
    table = buffer._tab
    return table.Vector(table.Offset(4)), buffer.DataLength()
