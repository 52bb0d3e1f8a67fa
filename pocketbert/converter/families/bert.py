"""BERT family: BERT, TinyBERT and MiniLM checkpoints (``model_type: bert``)."""

from __future__ import annotations

from transformers import BertConfig

from . import register
from .base import ActivationSite, Family, FeedForward, FoldSite, ResidualStream, ScalePair


class BertFamily(Family):
    name = "bert"
    model_types = ("bert",)
    description = "BERT, TinyBERT, MiniLM"
    uses_token_type_ids = True

    def layers(self, model):
        return self.base(model).encoder.layer

    def activation_sites(self, model):
        layers = self.base(model).encoder.layer
        return [ActivationSite(f"encoder.layer.{i}.intermediate.intermediate_act_fn", layer.intermediate,
                               "intermediate_act_fn") for i, layer in enumerate(layers)]

    def feed_forwards(self, model):
        return [FeedForward(f"encoder.layer.{i}", i, layer.intermediate.dense, layer.output.dense,
                            activation=layer.intermediate.intermediate_act_fn)
                for i, layer in enumerate(self.base(model).encoder.layer)]

    def value_pairs(self, model):
        return [ScalePair(f"encoder.layer.{i}.attention.output.dense", layer.attention.self.value,
                          layer.attention.output.dense) for i, layer in enumerate(self.base(model).encoder.layer)]

    def fold_sites(self, model):
        # embeddings = word[ids] + token_type[tt] + position[pos], then the norm: a pure sum of
        # lookups.  Every other norm in BERT follows a residual add and cannot fold.
        emb = self.base(model).embeddings
        return [FoldSite("embeddings.LayerNorm", emb, "LayerNorm",
                         [emb.word_embeddings, emb.token_type_embeddings, emb.position_embeddings],
                         bias_into=emb.token_type_embeddings)]

    def residual_streams(self, model):
        base = self.base(model)
        emb = base.embeddings
        streams, path, norm = [], "embeddings.LayerNorm", emb.LayerNorm
        summands = [emb.word_embeddings, emb.token_type_embeddings, emb.position_embeddings]
        for i, layer in enumerate(base.encoder.layer):
            attention, prefix = layer.attention, f"encoder.layer.{i}"
            streams.append(ResidualStream(path, norm, [attention.self.query, attention.self.key, attention.self.value],
                                          attention.output.dense, next_norm=attention.output.LayerNorm,
                                          summands=summands))
            streams.append(ResidualStream(f"{prefix}.attention.output.LayerNorm", attention.output.LayerNorm,
                                          [layer.intermediate.dense], layer.output.dense,
                                          next_norm=layer.output.LayerNorm))
            path, norm, summands = f"{prefix}.output.LayerNorm", layer.output.LayerNorm, []
        # sequence heads read the pooler (the first token); token heads read every token
        head = [base.pooler.dense] if getattr(base, "pooler", None) is not None else [model.classifier]
        return streams + [ResidualStream(path, norm, head, summands=summands)]

    def tiny_config(self, vocab_size):
        return BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=64, max_position_embeddings=128)


register(BertFamily())
