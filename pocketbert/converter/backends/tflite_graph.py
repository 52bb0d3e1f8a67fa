"""Where in a converted .tflite the quantizer's recipes apply: the PyTorch Linear behind every
FULLY_CONNECTED op (the float-fallback search keeps whole roles in float), the attention-mask path of
every SOFTMAX (kept in float by the full-integer recipe) and the small lookup tables (kept in float in the int4
file of weights on the int4 grid).  Ops are named by their scope, the key ai-edge-quantizer's recipes match."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import torch


def model_bytes(path: Path) -> bytearray:
    """The model file's bytes, for ai-edge-quantizer: given a path, its mmap helper (ai-edge-litert
    tools.mmap_utils) never closes the descriptor it maps, so every call would leak one."""
    return bytearray(Path(path).read_bytes())


def masked_softmax_ops(path: Path) -> list[tuple[str, str]]:
    """The attention-mask path of every SOFTMAX, as (operation name, scope), to keep in float.

    The additive mask holds the float minimum (-3.4e38) where tokens are padding.  int8 cannot hold
    it beside scores of a few units: calibrated over that range the quantised mask became ~0 (scale
    3.9e-12) and padding was attended to (SST-2 demo, one bucket of 64: top-1 agreement with float
    88.0%, 95.3% once fixed).  So the ops that build the mask from ``attention_mask``, the op that
    applies it (ADD, or SELECT_V2 for a masked_fill) and the SOFTMAX stay float: a few element-wise
    ops; the matmuls around them stay int8.
    """
    from ai_edge_quantizer.utils import tfl_flatbuffer_utils as tfl

    flatbuffer = tfl.read_model(model_bytes(path))
    names = {code: name for name, code in tfl.TFL_OP_NAME_TO_CODE.items()}
    codes = [names.get(max(c.builtinCode, c.deprecatedBuiltinCode)) for c in flatbuffer.operatorCodes]
    ops = tfl.qtyping.TFLOperationName
    passthrough, apply_mask = {ops.RESHAPE, ops.TRANSPOSE}, {ops.ADD, ops.SELECT_V2, ops.SELECT}
    found: dict[tuple[str, str], None] = {}
    for subgraph in flatbuffer.subgraphs:
        producer = {out: op for op in subgraph.operators for out in op.outputs}

        def mask_ops(tensor: int) -> list:
            """The ops computing ``tensor`` if it is the mask (from model inputs and constants only,
            no matmul on the way), else []: the scores input stops at its first matmul."""
            seen, stack = {}, [tensor]
            while stack:
                op = producer.get(stack.pop())
                if op is None or id(op) in seen:
                    continue
                if codes[op.opcodeIndex] in (ops.FULLY_CONNECTED, ops.BATCH_MATMUL):
                    return []
                seen[id(op)] = op
                stack += [t for t in op.inputs if t >= 0]
            return list(seen.values())

        for op in subgraph.operators:
            if codes[op.opcodeIndex] != ops.SOFTMAX:
                continue
            chain = [op]
            while (source := producer.get(chain[-1].inputs[0])) is not None \
                    and codes[source.opcodeIndex] in passthrough:
                chain.append(source)
            if source is not None and codes[source.opcodeIndex] in apply_mask:
                chain.append(source)
                for tensor in source.inputs:
                    chain += mask_ops(tensor) if tensor >= 0 else []
            for o in chain:
                if codes[o.opcodeIndex] is not None:
                    found[(codes[o.opcodeIndex], tfl.get_op_scope(o, subgraph.tensors))] = None
    return list(found)


#: a lookup table with fewer rows stays float in the int4 file of a model int4-tune put on the grid: it was trained
#: with them in float (int4_grid rounds the Linears and the word table), its bytes are nothing beside the word
#: table's (token types: 2 rows, 3 KB at 384 wide), and read by every token, its rounding would shift every token
SMALL_TABLE_ROWS = 1024


def small_lookup_ops(path: Path) -> list[tuple[str, str]]:
    """Every EMBEDDING_LOOKUP whose table has fewer than :data:`SMALL_TABLE_ROWS` rows, as (operation name, scope)."""
    from ai_edge_quantizer.utils import tfl_flatbuffer_utils as tfl

    flatbuffer = tfl.read_model(model_bytes(path))
    lookup = tfl.qtyping.TFLOperationName.EMBEDDING_LOOKUP
    code = tfl.TFL_OP_NAME_TO_CODE[lookup]
    codes = [max(c.builtinCode, c.deprecatedBuiltinCode) for c in flatbuffer.operatorCodes]
    found: dict[tuple[str, str], None] = {}
    for subgraph in flatbuffer.subgraphs:
        for op in subgraph.operators:
            if codes[op.opcodeIndex] == code and subgraph.tensors[op.inputs[1]].shape[0] < SMALL_TABLE_ROWS:
                found[(lookup, tfl.get_op_scope(op, subgraph.tensors))] = None
    return list(found)


def linear_roles(path: Path, model: torch.nn.Module) -> dict[str, list[str]]:
    """FULLY_CONNECTED ops with a constant weight, grouped by role across layers and signatures.

    Each op is matched to the PyTorch Linear it came from by its weight: tensor names are fused
    location lists that do not say which Linear an op is.  litert-torch folds a preceding
    LayerNorm's γ into the weight (W·diag(γ)), so a match is "equal up to a per-column scale".
    The role is the Linear's module path with layer indices starred
    (``bert.encoder.layer.*.output.dense``).  An op is identified by its scope: the key
    ai-edge-quantizer's recipes match.
    """
    linears = [(re.sub(r"\.\d+\.", ".*.", name.removeprefix("model.")), module.weight.detach().float().numpy())
               for name, module in model.named_modules() if isinstance(module, torch.nn.Linear)]
    # a weight the exporter kept as it is matches exactly; the signatures share each weight's buffer: each buffer
    # is matched once (24-layer MobileBERT shape, four signatures: 62 s of least squares per call, on every one)
    exact: dict[bytes, str] = {}
    for role, weight in linears:  # equal weights: the first Linear's role, as _role_of breaks its ties
        exact.setdefault(weight.tobytes(), role)
    by_buffer: dict[int, str] = {}
    roles: dict[str, list[str]] = {}
    for scope, buffer, weight in _fully_connected_weights(path):
        if buffer not in by_buffer:
            by_buffer[buffer] = exact.get(weight.tobytes()) or _role_of(weight, linears)
        roles.setdefault(by_buffer[buffer], []).append(scope)
    return roles


def fully_connected_weights(path: Path) -> list[np.ndarray]:
    """Every FULLY_CONNECTED op's constant float weight, once per buffer (the signatures share them)."""
    return list({buffer: weight for _, buffer, weight in _fully_connected_weights(path)}.values())


def _fully_connected_weights(path: Path):
    """``(op scope, buffer index, float32 weight)`` of each FULLY_CONNECTED op with a constant weight, every
    signature."""
    from ai_edge_quantizer.utils import tfl_flatbuffer_utils as tfl

    flatbuffer = tfl.read_model(model_bytes(path))
    codes = [max(c.builtinCode, c.deprecatedBuiltinCode) for c in flatbuffer.operatorCodes]
    fully_connected = tfl.TFL_OP_NAME_TO_CODE[tfl.qtyping.TFLOperationName.FULLY_CONNECTED]
    weights: dict[int, np.ndarray] = {}
    for subgraph in flatbuffer.subgraphs:
        for op in subgraph.operators:
            if codes[op.opcodeIndex] != fully_connected or len(op.inputs) < 2:
                continue
            tensor = subgraph.tensors[op.inputs[1]]
            data = flatbuffer.buffers[tensor.buffer].data
            if data is None:  # activation x activation
                continue
            if tensor.buffer not in weights:
                raw = np.asarray(data, dtype=np.uint8).tobytes()
                weights[tensor.buffer] = np.frombuffer(raw, dtype=np.float32).reshape(tensor.shape)
            yield tfl.get_op_scope(op, subgraph.tensors), tensor.buffer, weights[tensor.buffer]


def _role_of(weight: np.ndarray, linears: list[tuple[str, np.ndarray]]) -> str:
    """The role of the Linear whose weight equals ``weight`` up to a per-column scale (else "other")."""
    best, best_residual = "other", 1e-3
    for role, candidate in linears:
        if candidate.shape != weight.shape:
            continue
        # least-squares column scale c_j = <w_j, W_j> / <W_j, W_j>, then the relative residual
        scale = (weight * candidate).sum(0) / np.maximum((candidate * candidate).sum(0), 1e-30)
        residual = np.linalg.norm(weight - candidate * scale) / max(np.linalg.norm(weight), 1e-30)
        if residual < best_residual:
            best, best_residual = role, residual
    return best
