"""A checkpoint's shapes, read from its config alone, and what they cost: the int4 TFLite file's bytes and the
multiply-adds of one sequence of 128 tokens.

The model is built on torch's ``meta`` device (shapes, no weights, no export), so every registered family is read
the same way: each ``nn.Linear`` with its place (a transformer block, the embedding block, or the task head), the
word table (a factored one as its narrow table and projection), the position and token-type tables, and every other
parameter (the norms).  The levers (:mod:`converter.levers`) change a :class:`Shape`; :func:`file_bytes` and
:func:`macs` price it.

The file model is what ``tflite:int4-dynamic`` writes when every Linear stays at int4 (``int4-tune`` makes sure of
that): each Linear's weight at half a byte, each of its rows a float32 scale and an int64 zero point
(:data:`~converter.levers.size_fit.INT4_ROW_EXTRA`) and a float32 bias; the word table at int4 with the same row
overhead; the position table float32, one slice per signature (bucket); the token-type table and the norms float32;
the graph (:data:`GRAPH_BYTES` a Linear a signature) and the metadata the converter embeds (the vocabulary, about
:data:`VOCAB_FILE_BYTES` a piece, and the quantize stage's reserve).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from .size_fit import INT4_ROW_EXTRA

#: bytes of vocab.txt per piece (the MiniLM vocabulary: 7.6 at 30,522 pieces, 7.1 at the 16,000 kept for SST-2)
VOCAB_FILE_BYTES = 7.4
#: what the metadata stage adds beside the vocabulary (labels and its tables): the quantize stage's reserve
METADATA_RESERVE = 8192
#: flatbuffer bytes per Linear per signature: operators, tensors, names and their int4 quantisation tables, fitted
#: on the shipped phone files (sst2-phone, ner-phone)
GRAPH_BYTES = 1000
#: the sequence length the MAC count is for (and the latency the docs report)
SEQUENCE = 128


@dataclass(frozen=True)
class Linear:
    out: int
    inp: int
    every_token: bool = True  # False: a sequence head's pooled token only


@dataclass(frozen=True)
class Block:
    linears: tuple[Linear, ...]
    ffn: tuple[tuple[int, int], ...]  # (up, down) indices into linears, one pair per feed-forward block
    floats: int  # other parameters (norms)
    attention_width: int  # query/key width: the attention's two matrix products cost 2·S²·width


@dataclass(frozen=True)
class Shape:
    family: str
    task: str  # classification or ner
    vocab: int
    table_width: int  # the word table's width: its rank when factored
    width: int  # the embedding block's output width
    rank: int | None
    positions: int
    types: int
    blocks: tuple[Block, ...]
    outside: tuple[Linear, ...]  # the embedding block's and the head's Linears (a factored table's projection too)
    floats: int  # parameters outside the blocks that are neither tables nor Linears (norms)
    #: the structural --opt names the model has by construction (MobileBERT: NoNorm and ReLU), which no recovery adds
    built_in: tuple[str, ...] = ()

    @property
    def layers(self) -> int:
        return len(self.blocks)

    @property
    def ffn_width(self) -> int | None:
        return self.blocks[0].linears[self.blocks[0].ffn[0][0]].out if self.blocks and self.blocks[0].ffn else None

    def describe(self) -> str:
        table = f"{self.vocab:,} pieces" + (f" (table factored at rank {self.rank})" if self.rank else "")
        return f"{self.layers} blocks × {self.ffn_width} feed-forward units, {self.width} wide, {table}"

    def narrowed(self, width: int) -> Shape:
        return replace(self, blocks=tuple(_narrow_block(b, width) for b in self.blocks))

    def keeping(self, layers: int) -> Shape:
        return replace(self, blocks=self.blocks[:layers])

    def factored(self, rank: int) -> Shape:
        outside = self.outside + ((Linear(self.width, rank),) if self.rank is None else ())
        return replace(self, rank=rank, table_width=rank, outside=outside)

    def trimmed(self, vocab: int) -> Shape:
        return replace(self, vocab=vocab)


def _narrow_block(block: Block, width: int) -> Block:
    linears = list(block.linears)
    for up, down in block.ffn:
        linears[up] = replace(linears[up], out=width)
        linears[down] = replace(linears[down], inp=width)
    return replace(block, linears=tuple(linears))


def linear_bytes(linear: Linear) -> int:
    """An int4 Linear: half a byte a weight, a scale and zero point a row, a float32 bias a row."""
    return linear.out * ((linear.inp + 1) // 2 + INT4_ROW_EXTRA + 4)


def file_bytes(shape: Shape, buckets: tuple[int, ...] = (32, 64, 128, 256)) -> int:
    """The int4 TFLite file of ``shape`` with every Linear at int4, metadata included."""
    buckets = tuple(b for b in buckets if b <= shape.positions) or (min(buckets[0], shape.positions),)
    linears = [lin for block in shape.blocks for lin in block.linears] + list(shape.outside)
    table = shape.vocab * ((shape.table_width + 1) // 2 + INT4_ROW_EXTRA)
    floats = 4 * (sum(buckets) * shape.width + shape.types * shape.width + shape.floats
                  + sum(block.floats for block in shape.blocks))
    graph = GRAPH_BYTES * len(linears) * len(buckets)
    metadata = int(shape.vocab * VOCAB_FILE_BYTES) + METADATA_RESERVE
    return sum(map(linear_bytes, linears)) + table + floats + graph + metadata


def macs(shape: Shape, sequence: int = SEQUENCE) -> int:
    """Multiply-adds of one sequence of ``sequence`` tokens: every Linear at every token it reads, and each block's
    two attention products."""
    total = sum(lin.out * lin.inp * (sequence if lin.every_token else 1) for lin in shape.outside)
    for block in shape.blocks:
        total += sum(lin.out * lin.inp * sequence for lin in block.linears)
        total += 2 * sequence * sequence * block.attention_width
    return total


def read(checkpoint: Path) -> Shape:
    """The shapes of the checkpoint directory ``checkpoint`` (its config.json; no weights are read)."""
    raw = json.loads((Path(checkpoint) / "config.json").read_text(encoding="utf-8"))
    return from_config(raw)


def from_config(raw: dict) -> Shape:
    """The shapes a config.json (as a dict) describes, every Linear found on a model built without weights."""
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoModelForTokenClassification

    from ..families import family_for

    family = family_for(raw.get("model_type", ""))
    task = "ner" if any("TokenClassification" in a for a in raw.get("architectures") or []) else "classification"
    fields = {k: v for k, v in raw.items() if k not in ("architectures", "pocketbert", "transformers_version")}
    config = AutoConfig.for_model(**fields)
    auto = AutoModelForTokenClassification if task == "ner" else AutoModelForSequenceClassification
    with torch.device("meta"):
        model = auto.from_config(config)
    shape = replace(_measured(model, family, task, config), built_in=_built_in(model, family))
    rank = (raw.get("pocketbert") or {}).get("word_embedding_rank")
    return shape.factored(rank) if rank else shape


def _built_in(model, family) -> tuple[str, ...]:
    """The structural opts that change nothing in ``model``, asked of the transforms themselves (on the meta model,
    which is thrown away after)."""
    from ..transforms import OPTS

    return tuple(opt.name for opt in OPTS.all() if opt.structural and opt.apply(model, family).changed == 0)


def _measured(model, family, task: str, config) -> Shape:
    from torch import nn

    table = model.get_input_embeddings()
    embeddings = family.embeddings(model)
    tables = {id(m) for m in embeddings.modules() if isinstance(m, nn.Embedding)}
    ffns = family.feed_forwards(model)
    blocks = []
    inside: set[int] = set()
    for index, layer in enumerate(family.layers(model)):
        linears = [m for m in layer.modules() if isinstance(m, nn.Linear)]
        inside.update(id(m) for m in layer.modules())
        position = {id(m): i for i, m in enumerate(linears)}
        pairs = tuple((position[id(f.up)], position[id(f.down)]) for f in ffns if f.block == index)
        floats = sum(p.numel() for m in layer.modules() if not isinstance(m, nn.Linear)
                     for p in m.parameters(recurse=False))
        query = next((m for m in linears), None)
        blocks.append(Block(tuple(Linear(m.out_features, m.in_features) for m in linears), pairs, floats,
                            query.out_features if query is not None else 0))
    in_embeddings = {id(m) for m in embeddings.modules()}
    outside = tuple(Linear(m.out_features, m.in_features, every_token=task == "ner" or id(m) in in_embeddings)
                    for m in model.modules() if isinstance(m, nn.Linear) and id(m) not in inside)
    floats = sum(p.numel() for m in model.modules() if id(m) not in inside and id(m) not in tables
                 and not isinstance(m, nn.Linear) for p in m.parameters(recurse=False))
    position = getattr(embeddings, "position_embeddings", None)
    types = getattr(embeddings, "token_type_embeddings", None)
    return Shape(family=family.name, task=task, vocab=table.num_embeddings, table_width=table.embedding_dim,
                 width=position.embedding_dim if position is not None else table.embedding_dim, rank=None,
                 positions=position.num_embeddings if position is not None else family.max_positions(config),
                 types=types.num_embeddings if types is not None else 0, blocks=tuple(blocks), outside=outside,
                 floats=floats)
