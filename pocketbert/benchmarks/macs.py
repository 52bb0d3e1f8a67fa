"""The matrix products a BERT-family model computes at one sequence length, and their MAC count.

Counted from the Hugging Face config alone (no weights), per family: every ``nn.Linear`` applied to
the tokens that reach it, plus the two attention products per head (Q·Kᵀ and P·V).  Element-wise work
(norms, activations, softmax, residual adds) and embedding lookups are not multiply-accumulates of a
matrix product and are left out, as in the MobileBERT paper's count (≈ 2.69 G MACs at sequence 128).

The same list of shapes drives the GEMM floor (:mod:`benchmarks.gemm_floor`): each product is timed
at its own shape on this CPU.  ``kind`` says whether a product has a constant weight (``weight``:
int8 in the quantised models) or multiplies two activations (``attention``: float in every variant
we ship, so its floor is always the fp32 one).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Gemm:
    """``count`` products of ``[batch, m, k] @ [batch, k, n]`` (batch 1: a plain matrix product)."""

    name: str
    m: int
    k: int
    n: int
    count: int = 1
    batch: int = 1
    kind: str = "weight"  # weight | attention

    @property
    def macs(self) -> int:
        return self.m * self.k * self.n * self.batch * self.count

    def to_json(self) -> dict:
        return {**asdict(self), "macs": self.macs}


def _get(config, *names, default=None):
    for name in names:
        value = getattr(config, name, None)
        if value is not None:
            return value
    return default


def _attention(prefix: str, tokens: int, seq: int, width: int, heads: int, layers: int, rows: int) -> list[Gemm]:
    head = width // heads
    return [Gemm(f"{prefix}scores Q·Kᵀ", seq, head, seq, count=layers, batch=rows * heads, kind="attention"),
            Gemm(f"{prefix}context P·V", seq, seq, head, count=layers, batch=rows * heads, kind="attention")]


def _head(task: str, hidden: int, labels: int, rows: int, tokens: int, pre: int | None) -> list[Gemm]:
    """Classification: optional pooler/pre-classifier on the first token, then the classifier; NER: per token."""
    if task == "ner":
        return [Gemm("classifier (per token)", tokens, hidden, labels)]
    out = [Gemm("pooler", rows, pre, pre)] if pre else []
    return out + [Gemm("classifier", rows, hidden, labels)]


def gemms(config, seq: int, batch: int = 1, task: str = "classification", labels: int | None = None) -> list[Gemm]:
    """All matrix products of one forward pass of ``batch`` rows of ``seq`` tokens."""
    model_type = getattr(config, "model_type", "")
    tokens = batch * seq
    labels = labels or getattr(config, "num_labels", 2)
    if model_type == "distilbert":
        h, layers, heads, ffn = config.dim, config.n_layers, config.n_heads, config.hidden_dim
        body = [Gemm("q,k,v,out projections", tokens, h, h, count=4 * layers),
                Gemm("ffn in", tokens, h, ffn, count=layers), Gemm("ffn out", tokens, ffn, h, count=layers)]
        return (body + _attention("", tokens, seq, h, heads=heads, layers=layers, rows=batch)
                + _head(task, h, labels, batch, tokens=tokens, pre=h))
    if model_type == "mobilebert":
        return _mobilebert(config, seq, batch, task, labels=labels)
    if model_type in ("bert", "") or hasattr(config, "intermediate_size"):
        h, layers = config.hidden_size, config.num_hidden_layers
        heads, ffn = config.num_attention_heads, config.intermediate_size
        body = [Gemm("q,k,v,out projections", tokens, h, h, count=4 * layers),
                Gemm("ffn in", tokens, h, ffn, count=layers), Gemm("ffn out", tokens, ffn, h, count=layers)]
        return (body + _attention("", tokens, seq, h, heads=heads, layers=layers, rows=batch)
                + _head(task, h, labels, batch, tokens=tokens, pre=h))
    raise ValueError(f"no MAC count for model type {model_type!r}")


def _mobilebert(config, seq: int, batch: int, task: str, labels: int) -> list[Gemm]:
    tokens = batch * seq
    h, layers, heads = config.hidden_size, config.num_hidden_layers, config.num_attention_heads
    emb = config.embedding_size * (3 if config.trigram_input else 1)
    use_bottleneck = config.use_bottleneck
    inner = config.true_hidden_size  # width inside a layer: intra_bottleneck_size, or hidden_size without bottleneck
    out: list[Gemm] = []
    if config.trigram_input or config.embedding_size != h:
        out.append(Gemm("embedding transformation", tokens, emb, h))
    if use_bottleneck:
        shared = config.key_query_shared_bottleneck and not config.use_bottleneck_attention
        out.append(Gemm("bottleneck in", tokens, h, config.intra_bottleneck_size, count=layers * (2 if shared else 1)))
    v_in = inner if config.use_bottleneck_attention else h
    out += [Gemm("q,k projections", tokens, inner, inner, count=2 * layers),
            Gemm("v projection", tokens, v_in, inner, count=layers),
            Gemm("attention out", tokens, inner, inner, count=layers)]
    out += _attention("", tokens, seq, inner, heads=heads, layers=layers, rows=batch)
    ffns = config.num_feedforward_networks
    out += [Gemm("ffn in", tokens, inner, config.intermediate_size, count=ffns * layers),
            Gemm("ffn out", tokens, config.intermediate_size, inner, count=ffns * layers)]
    if use_bottleneck:
        out.append(Gemm("bottleneck out", tokens, inner, h, count=layers))
    pre = h if getattr(config, "classifier_activation", True) else None
    return out + _head(task, h, labels, batch, tokens=tokens, pre=pre)


def count_macs(config, seq: int, batch: int = 1, task: str = "classification", labels: int | None = None) -> int:
    return sum(g.macs for g in gemms(config, seq, batch, task, labels=labels))
