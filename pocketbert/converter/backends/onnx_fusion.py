"""ONNX Runtime's transformer fusions on the converter's ONNX export, done offline and kept portable.

``onnxruntime.transformers.optimizer.optimize_model`` rewrites a BERT-like graph into ONNX Runtime's
fused CPU kernels: one ``Attention`` per layer (Q/K/V projections, scaling, mask, softmax and the
context product in one op), ``SkipLayerNormalization`` (residual add + bias + LayerNorm),
``BiasGelu`` and ``EmbedLayerNormalization``.  Two things stand between it and a dynamo export:

* the attention pattern.  ``sdpa`` attention exports as a decomposition the optimizer does not
  match, and transformers' boolean mask builder as a Where/And/GatherND tree it does not match
  either.  So the model is exported for fusion with *eager* attention and the classic additive
  mask, ``(1 - mask[:, None, None, :]) * finfo.min`` (what BERT itself computed for years, and the
  pattern the optimizer knows); :func:`fusable` does that for the export only.
* the exporter's graph optimiser merges the mask's two ``Unsqueeze`` into one, which the
  optimizer's mask pattern then misses; :func:`_split_unsqueeze` splits it again (same values).

Portability: the optimizer runs with ``opt_level=0`` (no ONNX Runtime session optimisation is
baked into the file: those are applied again by every session at load, for the CPU it runs on),
the attention mask stays a raw 2-D mask (exact for any padding, not only right padding), GELU is
never approximated, and :func:`fuse` refuses a graph holding an op outside the ONNX and
``com.microsoft`` domains.  Every fused op is in ONNX Runtime's CPU execution provider.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path

import onnx
import torch
from torch import nn

#: Oldest ONNX Runtime that loads an optimised file: the export's IR version 10 (opset 20) needs 1.18, and the
#: contrib ops written here exist there with the attributes set.  Checked: 1.18.1 loads and runs fused fp32
#: and int8 (QAttention) files of BERT and NoNorm BERT (fp32 within 1e-7 of 1.32); 1.17.3 refuses IR 10.
MIN_ORT_VERSION = "1.18"
MICROSOFT = "com.microsoft"


class _AdditiveMask(nn.Module):
    """The exported signature unchanged (int64 ids and 2-D mask), attention fed an additive 4-D mask.

    Holds the Hugging Face model as ``model``, as LogitsModel does, so that node names (which follow
    module paths) are the plain export's."""

    def __init__(self, logits_model: nn.Module):
        super().__init__()
        self.model = logits_model.model
        self.config = logits_model.config
        self._forward = type(logits_model).forward

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        # transformers passes a 4-D mask through untouched and adds it to the attention scores.  Built as
        # transformers' former _expand_mask (Where, not Mul: eager attention scales the scores with a Mul,
        # and the optimizer's pattern takes the first Mul feeding the score Add as the mask).
        batch, length = attention_mask.shape
        expanded = attention_mask[:, None, None, :].expand(batch, 1, length, length).to(torch.float32)
        inverted = 1.0 - expanded
        additive = inverted.masked_fill(inverted.to(torch.bool), torch.finfo(torch.float32).min)
        return self._forward(self, input_ids, additive, token_type_ids)


@contextlib.contextmanager
def fusable(model: nn.Module) -> Iterator[nn.Module]:
    """``model`` (a LogitsModel) as the optimizer can fuse it: eager attention, additive mask.

    The model's own attention implementation is restored afterwards (the TFLite export and the
    verification reference use it)."""
    hf_model = model.model
    previous = hf_model.config._attn_implementation
    hf_model.set_attn_implementation("eager")
    try:
        yield _AdditiveMask(model).eval()
    finally:
        hf_model.set_attn_implementation(previous)


def _split_unsqueeze(model: onnx.ModelProto) -> int:
    """``Unsqueeze(mask, [1, 2])`` -> ``Unsqueeze(Unsqueeze(mask, [1]), [1])``: the optimizer's mask pattern."""
    inputs = {i.name for i in model.graph.input}
    constants = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
    split = 0
    for node in list(model.graph.node):
        axes = constants.get(node.input[1]) if node.op_type == "Unsqueeze" and len(node.input) > 1 else None
        if node.input[0] not in inputs or axes is None or list(axes) != [1, 2]:
            continue
        one = f"{node.name}_axis1"
        model.graph.initializer.append(onnx.numpy_helper.from_array(axes[:1].copy(), one))
        first = onnx.helper.make_node("Unsqueeze", [node.input[0], one], [f"{node.output[0]}_half"], f"{node.name}_a")
        second = onnx.helper.make_node("Unsqueeze", [first.output[0], one], list(node.output), f"{node.name}_b")
        position = list(model.graph.node).index(node)
        model.graph.node.remove(node)
        model.graph.node.insert(position, second)
        model.graph.node.insert(position, first)
        split += 1
    return split


def _name_attention(model: onnx.ModelProto) -> None:
    """``Attention_3`` -> ``/bert/encoder/layer/3/attention/self/Attention``: named after the module it
    replaced (from the output projection it feeds), as the exporter names every other node; the int8
    float-fallback groups nodes by these names."""
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in model.graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    for node in model.graph.node:
        if node.domain != MICROSOFT or node.op_type != "Attention":
            continue
        after = [c.name for c in consumers.get(node.output[0], []) if "/output/" in c.name]
        if len(after) == 1:
            node.name = after[0].rsplit("/output/", 1)[0] + "/self/Attention"


def is_fused(path: Path) -> bool:
    """Whether an ONNX file holds ops of ONNX Runtime's contrib domain (written by :func:`fuse`)."""
    return any(n.domain == MICROSOFT for n in onnx.load(str(path), load_external_data=False).graph.node)


def _foreign_ops(model: onnx.ModelProto) -> list[str]:
    return sorted({f"{n.domain}:{n.op_type}" for n in model.graph.node if n.domain not in ("", "ai.onnx", MICROSOFT)})


def fuse(path: Path, num_heads: int, hidden_size: int) -> dict:
    """Fuse the export at ``path`` in place; returns what was fused (the manifest's record)."""
    from onnxruntime import __version__ as ort_version
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    proto = onnx.load(str(path))
    _split_unsqueeze(proto)
    options = FusionOptions("bert")
    options.use_raw_attention_mask(True)  # exact for any padding; the 1-D mask index assumes right padding
    options.enable_gelu_approximation = False
    # EmbedLayerNormalization would take the embedding tables out of reach of int8 Gather quantisation
    # (the largest tensors of a small model) and saves one LayerNorm per model
    options.enable_embed_layer_norm = False
    with contextlib.redirect_stdout(io.StringIO()):  # the optimizer prints its progress
        optimized = optimize_model(proto, model_type="bert", num_heads=num_heads, hidden_size=hidden_size,
                                   optimization_options=options, opt_level=0)
        nonorm_attention = _fuse_attention_after_adds(optimized, num_heads, hidden_size)
    fused = {k: v for k, v in optimized.get_fused_operator_statistics().items() if v}
    foreign = _foreign_ops(optimized.model)
    if foreign:  # never ship an op a stock ONNX Runtime CPU build cannot run
        raise RuntimeError(f"the optimizer wrote ops outside ONNX and {MICROSOFT}: {', '.join(foreign)}")
    _name_attention(optimized.model)
    optimized.save_model_to_file(str(path))
    contrib = sorted({n.op_type for n in optimized.model.graph.node if n.domain == MICROSOFT})
    return {"tool": f"onnxruntime.transformers.optimizer {ort_version} (model_type bert, opt_level 0)",
            "fused": fused, "contrib_ops": contrib, "attention_mask": "raw 2-D (any padding)",
            "min_onnxruntime": MIN_ORT_VERSION,
            **({"attention_anchor": "residual Add (NoNorm: no LayerNorm to anchor on)"} if nonorm_attention else {})}


def _fuse_attention_after_adds(optimized, num_heads: int, hidden_size: int) -> int:
    """Attention fusion anchored on residual Adds, for NoNorm models: the optimizer looks for attention
    only above a LayerNorm, and NoNorm is a Mul and an Add.  The pattern matched is the optimizer's own
    (``FusionAttention``: Q/K/V projections of one input, mask, softmax, context)."""
    from onnxruntime.transformers.fusion_attention import AttentionMask, FusionAttention
    from onnxruntime.transformers.fusion_options import AttentionMaskFormat

    if not any(n.op_type == "Softmax" for n in optimized.model.graph.node):
        return 0  # every attention already fused
    mask = AttentionMask(optimized)
    mask.set_mask_format(AttentionMaskFormat.AttentionMask)
    fusion = FusionAttention(optimized, hidden_size, num_heads, mask, search_op_types=["Add"])
    fusion.apply()
    optimized.prune_graph()
    return sum(1 for n in fusion.nodes_to_add if n.op_type == "Attention")
