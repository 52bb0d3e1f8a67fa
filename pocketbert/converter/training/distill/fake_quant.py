"""Fake quantization that simulates the full-integer (int8-static) TFLite export, for quantization-aware recovery.

What ai-edge-quantizer's ``static_wi8_ai8`` recipe (plus int8 embedding tables, see
:mod:`converter.backends.tflite`) makes of a nonorm/relu BERT, read from the exported flatbuffer:

* every FULLY_CONNECTED weight: int8, per output channel, symmetric (scale = max|w| / 127);
  embedding tables: int8 per row, looked up and dequantised, then the lookup is quantised;
* every activation tensor between integer ops: int8, per tensor, asymmetric, its range calibrated
  as a moving average (factor 0.95) of each calibration row's min and max, widened to hold 0;
* a Linear followed by ReLU is one op with a fused activation: only the ReLU output is quantised;
* NoNorm is a MUL then an ADD, each output quantised; so is the residual ADD before it; their constant
  operands γ and β are int8 too, per tensor, asymmetric over their own min and max;
* attention: the scores (BATCH_MATMUL) are int8, then dequantised: the additive mask and the
  SOFTMAX stay float (:func:`converter.backends.tflite_graph.masked_softmax_ops`), the probabilities are
  quantised again for the second BATCH_MATMUL, whose output is int8;
* the pooler's TANH has TFLite's fixed int8 output scale 1/128; the logits are int8, their range the
  calibration rows' true extremes (the converter widens the exporter's moving average there, see
  :func:`converter.backends.tflite_calibration._widen_output_ranges`).

Rounding uses :func:`torch.fake_quantize_per_tensor_affine` / ``…per_channel_affine``, whose
gradient is the straight-through estimator (1 inside the range, 0 where a value was clipped).
Ranges are not learned: the exporter recalibrates them on its own calibration text, so training
follows the same moving-average min/max the exporter will compute (see :class:`Range`).
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode
from transformers import AttentionInterface
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask

from ...families import Family, is_nonorm

SMOOTHING = 0.95  # ai-edge-quantizer's moving-average factor (utils/qsv_utils.moving_average_update)
ATTENTION = "pocketbert_fake_quant"


class Range:
    """One activation tensor's per-tensor asymmetric int8 quantization, calibrated as the exporter does."""

    def __init__(self, fixed: tuple[float, int] | None = None, extremes: bool = False):
        self.min: Tensor | None = None
        self.max: Tensor | None = None
        self.fixed = fixed  # (scale, zero point) of ops whose output scale TFLite fixes (TANH)
        self.extremes = extremes  # the logits: the exporter widens their range to the true extremes

    def observe(self, x: Tensor) -> None:
        """Update the moving average with each row of ``x`` (dim 0), in order: the exporter calibrates row by row."""
        flat = x.detach().reshape(x.shape[0], -1).float()
        lows, highs = flat.amin(1), flat.amax(1)
        if self.extremes:
            self.min = lows.min() if self.min is None else torch.minimum(self.min, lows.min())
            self.max = highs.max() if self.max is None else torch.maximum(self.max, highs.max())
            return
        n = lows.shape[0]
        if self.min is None:  # the first row is taken as it is
            self.min, self.max, lows, highs, n = lows[0], highs[0], lows[1:], highs[1:], n - 1
        if n:
            weights = (1 - SMOOTHING) * SMOOTHING ** torch.arange(n - 1, -1, -1, dtype=flat.dtype)
            self.min = SMOOTHING ** n * self.min + (weights * lows).sum()
            self.max = SMOOTHING ** n * self.max + (weights * highs).sum()

    def scale_zero_point(self) -> tuple[float, int]:
        """ai-edge-quantizer's ``tensor_zp_scale_from_min_max`` for int8, asymmetric."""
        if self.fixed is not None:
            return self.fixed
        low, high = min(float(self.min), 0.0), max(float(self.max), 0.0)
        scale = max(high - low, 1e-9) / 255.0
        return scale, int(round(-128 - low / scale))

    def __call__(self, x: Tensor, state: "FakeQuant") -> Tensor:
        if state.observing and self.fixed is None:
            self.observe(x)
        if not state.quantizing or (self.min is None and self.fixed is None):
            return x
        scale, zero_point = self.scale_zero_point()
        return torch.fake_quantize_per_tensor_affine(x, scale, zero_point, -128, 127)


def fake_quant_weight(weight: Tensor, axis: int = 0) -> Tensor:
    """int8 symmetric per-channel (per row of a Linear's ``[out, in]`` weight or an embedding table)."""
    reduce = [d for d in range(weight.dim()) if d != axis]
    bound = weight.detach().abs().amax(dim=reduce).clamp_min(1e-9)
    scale = (bound / 127.0).float()
    zero = torch.zeros_like(scale, dtype=torch.int32)
    return torch.fake_quantize_per_channel_affine(weight, scale, zero, axis, -127, 127)


def fake_quant_constant(value: Tensor) -> Tensor:
    """A constant operand of an element-wise op (NoNorm's γ of the MUL, β of the ADD): int8 per tensor,
    asymmetric over its own min and max, as the exporter stores it."""
    low, high = min(float(value.detach().min()), 0.0), max(float(value.detach().max()), 0.0)
    scale = max(high - low, 1e-9) / 255.0
    return torch.fake_quantize_per_tensor_affine(value, scale, int(round(-128 - low / scale)), -128, 127)


class FakeQuant:
    """The simulation attached to a model (see the module docstring); detach with :meth:`remove`.

    ``observing``: update the ranges from each forward's activations; ``quantizing``: apply them.
    Calibrate with observing only, train with both (ranges follow the weights as they change), then
    evaluate with quantizing only.
    """

    def __init__(self, model: nn.Module, family: Family):
        self.model, self.family = model, family
        self.observing, self.quantizing = True, False
        self.ranges: dict[str, Range] = {}
        self._patched: list[nn.Module] = []
        self._attention = model.config._attn_implementation
        fused = self._fused_linears()
        linears = [path for path, module in model.named_modules() if isinstance(module, nn.Linear)]
        for path, module in model.named_modules():
            if isinstance(module, nn.Linear):  # the last one is the head's output: the logits
                self._linear(path, module, quantize_output=id(module) not in fused, logits=path == linears[-1])
            elif isinstance(module, nn.Embedding):
                self._embedding(path, module)
            elif is_nonorm(module):
                self._nonorm(path, module)
            elif isinstance(module, nn.Tanh):
                self._output(path, module, Range(fixed=(1 / 128, 0)))
        for site in family.activation_sites(model):
            self._output(site.path, site.activation, self._range(site.path))
        self._hooks = self._embedding_sums(family.embeddings(model))
        for module in model.modules():
            if hasattr(module, "is_causal") and hasattr(module, "scaling"):  # a self-attention module
                module._pocketbert_fake_quant = (self, id(module))
        model.set_attn_implementation(ATTENTION)

    def _fused_linears(self) -> set[int]:
        """The Linears whose output goes straight into the feed-forward activation (one TFLite op)."""
        fused = set()
        for site in self.family.activation_sites(self.model):
            linears = [m for m in site.parent.children() if isinstance(m, nn.Linear)]
            if linears:
                fused.add(id(linears[0]))
        return fused

    def _range(self, name: str, fixed=None, extremes: bool = False) -> Range:
        return self.ranges.setdefault(name, Range(fixed, extremes))

    def _patch(self, module: nn.Module, forward) -> None:
        if module in self._patched:
            raise ValueError(f"{type(module).__name__} is used at two places of the model: its sites cannot be told apart")
        module.forward = types.MethodType(forward, module)
        self._patched.append(module)

    def _linear(self, path: str, module: nn.Linear, quantize_output: bool, logits: bool = False) -> None:
        out = self._range(f"{path}:output", extremes=logits) if quantize_output else None
        state = self

        def forward(self_, x):
            y = F.linear(x, fake_quant_weight(self_.weight) if state.quantizing else self_.weight, self_.bias)
            return out(y, state) if out is not None else y

        self._patch(module, forward)

    def _embedding(self, path: str, module: nn.Embedding) -> None:
        out, state = self._range(f"{path}:output"), self

        def forward(self_, ids):
            table = fake_quant_weight(self_.weight) if state.quantizing else self_.weight
            return out(F.embedding(ids, table, self_.padding_idx), state)

        self._patch(module, forward)

    def _nonorm(self, path: str, module: nn.Module) -> None:
        """The residual (or embedding) ADD feeding it, then its MUL and ADD: three int8 tensors."""
        sum_, product, shifted = (self._range(f"{path}:{n}") for n in ("input", "mul", "add"))
        state = self

        def forward(self_, x):
            weight, bias = (fake_quant_constant(self_.weight), fake_quant_constant(self_.bias)) \
                if state.quantizing else (self_.weight, self_.bias)
            return shifted(product(sum_(x, state) * weight, state) + bias, state)

        self._patch(module, forward)

    def _output(self, path: str, module: nn.Module, range_: Range) -> None:
        original, state = module.forward, self

        def forward(self_, x):
            return range_(original(x), state)

        self._patch(module, forward)

    def _embedding_sums(self, block: nn.Module) -> list:
        """The embedding block adds its lookups inside its own forward: each ADD's output is an int8 tensor."""
        mode = _QuantizeSums(self)

        def enter(module, args):
            mode.__enter__()

        def leave(module, args, output):
            mode.__exit__(None, None, None)

        return [block.register_forward_pre_hook(enter), block.register_forward_hook(leave)]

    def attention_ranges(self, key: int) -> tuple[Range, Range, Range]:
        return tuple(self._range(f"attention{key}:{n}") for n in ("scores", "probabilities", "context"))

    def remove(self) -> None:
        """Detach: the model computes in float again (its weights were never changed)."""
        for module in self._patched:
            del module.forward
            if hasattr(module, "_pocketbert_fake_quant"):
                del module._pocketbert_fake_quant
        for module in self.model.modules():
            if hasattr(module, "_pocketbert_fake_quant"):
                del module._pocketbert_fake_quant
        self._patched.clear()
        for hook in self._hooks:
            hook.remove()
        self.model.set_attn_implementation(self._attention)

    @contextmanager
    def mode(self, *, observing: bool, quantizing: bool) -> Iterator[None]:
        saved = self.observing, self.quantizing
        self.observing, self.quantizing = observing, quantizing
        try:
            yield
        finally:
            self.observing, self.quantizing = saved


class _QuantizeSums(TorchFunctionMode):
    """Quantises the output of every float tensor addition made while it is active (the n-th addition of a
    forward is the same site every time)."""

    ADDS = {torch.add, Tensor.add, Tensor.__add__, Tensor.__radd__}

    def __init__(self, state: FakeQuant):
        super().__init__()
        self.state, self.count = state, 0

    def __enter__(self):
        self.count = 0
        return super().__enter__()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in self.ADDS and isinstance(out, Tensor) and out.is_floating_point() and out.dim() == 3:
            out = self.state._range(f"embeddings:add{self.count}")(out, self.state)
            self.count += 1
        return out


def _attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Eager attention with the exporter's int8 points: scores and context int8, mask and softmax float,
    probabilities quantised before the second matmul."""
    state, key_id = module._pocketbert_fake_quant
    scores_q, probs_q, context_q = state.attention_ranges(key_id)
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    scores = scores_q(torch.matmul(query, key.transpose(2, 3)) * scaling, state)
    if attention_mask is not None:
        scores = scores + attention_mask
    probabilities = torch.softmax(scores, dim=-1)
    probabilities = F.dropout(probabilities, p=dropout, training=module.training)
    context = context_q(torch.matmul(probs_q(probabilities, state), value), state)
    return context.transpose(1, 2).contiguous(), probabilities


AttentionInterface.register(ATTENTION, _attention)
# the additive float mask of eager attention (an unregistered name would get no mask at all)
ALL_MASK_ATTENTION_FUNCTIONS.register(ATTENTION, eager_mask)


def calibrate(fq: FakeQuant, batches, forward) -> None:
    """Ranges from scratch on ``batches`` (``forward(batch)`` runs the model), in float, as the exporter calibrates."""
    for range_ in fq.ranges.values():
        range_.min = range_.max = None
    with fq.mode(observing=True, quantizing=False), torch.no_grad():
        for batch in batches:
            forward(batch)
