"""Smoothing's Mul written into a copy of the unsmoothed model's ONNX export (the ONNX half of
:mod:`.tflite_input_scales`): the exporter writes a smoothed Linear as a Mul by a constant before its MatMul (or
Gemm), the rest of the graph unchanged.  The caller writes the smoothed weights and checks the logits."""

from __future__ import annotations

import numpy as np
import onnx


def insert_input_scales(graph, linear_of: dict[str, str], scales: dict[str, np.ndarray]) -> bool:
    """A Mul by ``scales[linear]`` before each MatMul or Gemm whose weight initializer is ``linear_of``'s Linear
    (smoothing's Mul, as the exporter writes it for a smoothed model); False if a Linear has no such node."""
    nodes, scaled = [], set()
    for node in graph.node:
        linear = linear_of.get(node.input[1]) if node.op_type in ("MatMul", "Gemm") and len(node.input) > 1 else None
        if linear in scales:
            name = f"{linear}.input_scale"
            if linear not in scaled:
                graph.initializer.append(onnx.numpy_helper.from_array(np.asarray(scales[linear], np.float32), name))
            scaled.add(linear)
            output = f"{node.input[0]}/scaled/{len(nodes)}"
            nodes.append(onnx.helper.make_node("Mul", [node.input[0], name], [output], name=f"{name}/mul/{len(nodes)}"))
            node.input[0] = output
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    return scaled == set(scales)
