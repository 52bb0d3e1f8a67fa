"""A factored word-embedding table: a narrow table and a learned projection, as MobileBERT's 128-wide embedding.

In a 6-block, 384-wide MiniLM with int4 Linears the blocks are 5.3 MB and the int4 word-embedding table
6.2 MB (192 bytes of weights and 12 of scale and zero point per row).  ``E ≈ T·Pᵀ + b`` with ``T`` of
``rank`` columns stores ``rank / 2 + 12`` bytes per int4 row and one ``rank × width`` Linear.

:func:`factor` starts from the rank-``rank`` approximation that is best where the text is: the SVD of the
centred table with each row weighted by the square root of how often the task's text uses it (a row never
used is approximated, not dropped).  Without training that costs accuracy (SST-2 demo, 16,000 pieces,
rank 160: 89.22 → 88.19), which ``factor-embeddings --retune`` wins back by distillation.

A checkpoint records the rank in config.json (``pocketbert.word_embedding_rank``) and stores the two
factors; the loader (:func:`rebuild`) builds the same module and loads them.  Exported graphs hold a row
lookup on the narrow table and a fully connected layer, which every backend runs as it is.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from ..errors import ConverterInputError
from .int4_packing import unpacked

KEY = "word_embedding_rank"  # inside config.json's "pocketbert" entry
_PARTS = ("table.weight", "projection.weight", "projection.bias")


class FactoredEmbedding(nn.Module):
    """``ids → projection(table[ids])``: a drop-in for ``nn.Embedding(vocab, width)``."""

    def __init__(self, vocab: int, rank: int, width: int):
        super().__init__()
        self.table = nn.Embedding(vocab, rank)
        self.projection = nn.Linear(rank, width)

    @property
    def num_embeddings(self) -> int:
        return self.table.num_embeddings

    @property
    def embedding_dim(self) -> int:
        return self.projection.out_features

    @property
    def rank(self) -> int:
        return self.table.embedding_dim

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.projection(self.table(ids))

    @torch.no_grad()
    def scale_output(self, factor: torch.Tensor) -> None:
        """Multiply every row this module computes by ``factor`` (``[width]``): exact, in the projection."""
        self.projection.weight.mul_(factor[:, None])
        self.projection.bias.mul_(factor)

    @torch.no_grad()
    def add_to_output(self, bias: torch.Tensor) -> None:
        """Add ``bias`` (``[width]``) to every row this module computes."""
        self.projection.bias.add_(bias)

    def dense(self) -> torch.Tensor:
        """The full table this module computes, ``[vocab, width]``."""
        return self.projection(self.table.weight)


def rank_of(model) -> int | None:
    """The rank of ``model``'s factored word embeddings, or None for a whole table."""
    embedding = model.get_input_embeddings()
    return embedding.rank if isinstance(embedding, FactoredEmbedding) else None


def whole_table(model, command: str) -> torch.Tensor:
    """``model``'s word-embedding table as one tensor, or a refusal naming ``command`` when it is factored."""
    embedding = model.get_input_embeddings()
    if isinstance(embedding, FactoredEmbedding):
        raise ConverterInputError(f"{command} needs a whole word-embedding table, but this checkpoint's is factored "
                                  f"(rank {embedding.rank})",
                                  f"run {command} on the checkpoint factor-embeddings started from, then factor its "
                                  "result again")
    return embedding.weight


@torch.no_grad()
def factor(model, rank: int, row_weights: torch.Tensor | None = None) -> float:
    """Replace ``model``'s word embeddings (in place) by their best rank-``rank`` factoring, rows weighted by
    ``row_weights`` (e.g. 1 + each piece's count in the task's text); returns the weighted relative error."""
    embedding = model.get_input_embeddings()
    if isinstance(embedding, FactoredEmbedding):
        raise ConverterInputError("the word embeddings are already factored", "factor the unfactored checkpoint")
    table = embedding.weight.detach().float()
    vocab, width = table.shape
    if not 1 <= rank < width:
        raise ConverterInputError(f"--rank {rank} must be between 1 and the embedding width ({width}) - 1",
                                  f"choose a rank below {width}, e.g. {width // 3}")
    weights = torch.ones(vocab) if row_weights is None else row_weights.float()
    mean = (table * weights[:, None]).sum(0) / weights.sum()
    centred = table - mean
    root = weights.sqrt()[:, None]
    _, _, vh = torch.linalg.svd(centred * root, full_matrices=False)
    basis = vh[:rank]  # [rank, width], orthonormal rows
    factored = FactoredEmbedding(vocab, rank, width)
    factored.table.weight.copy_(centred @ basis.T)
    factored.projection.weight.copy_(basis.T)
    factored.projection.bias.copy_(mean)
    error = ((factored.dense() - table) * root).norm() / (table * root).norm()
    model.set_input_embeddings(factored)
    return error.item()


def rebuild(model, rank: int, checkpoint: Path, missing: list[str]) -> list[str]:
    """Give ``model`` (built by transformers with a full table) the factored module of a checkpoint written by
    ``factor-embeddings`` and load its factors; returns ``missing`` without the full table's key."""
    from safetensors import safe_open  # only for factored checkpoints

    embedding = model.get_input_embeddings()
    factored = FactoredEmbedding(embedding.num_embeddings, rank, embedding.embedding_dim)
    files = sorted(Path(checkpoint).glob("*.safetensors"))
    found: dict[str, torch.Tensor] = {}
    for file in files:
        with safe_open(str(file), framework="pt") as weights:
            tensors = {key: lambda key=key: weights.get_tensor(key) for key in weights.keys()}
            tensors.update({key: lambda t=t: t for key, t in unpacked(tensors.items()).items()})  # int4_packing
            for key, get in tensors.items():
                for part in _PARTS:
                    if key.endswith("word_embeddings." + part):
                        found[part] = get().float()
    absent = [part for part in _PARTS if part not in found]
    if absent:
        raise ConverterInputError(f"config.json says the word embeddings are factored (rank {rank}), but the weights "
                                  f"lack word_embeddings.{absent[0]}",
                                  "the weights do not belong to this config.json; use the matching pair")
    state = {part: found[part] for part in _PARTS}
    try:
        factored.load_state_dict(state)
    except RuntimeError as exc:
        raise ConverterInputError(f"the factored word embeddings have the wrong shape for rank {rank}: "
                                  f"{str(exc)[:200]}", "use the config.json saved with these weights") from exc
    model.set_input_embeddings(factored)
    return [k for k in missing if not k.endswith("word_embeddings.weight")]
