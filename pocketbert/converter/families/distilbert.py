"""DistilBERT family (``model_type: distilbert``): no token types, different module names."""

from __future__ import annotations

from transformers import DistilBertConfig

from . import register
from .base import ActivationSite, Family, FeedForward, FoldSite, ResidualStream, ScalePair


class DistilBertFamily(Family):
    name = "distilbert"
    model_types = ("distilbert",)
    description = "DistilBERT"
    uses_token_type_ids = False
    ffn_width_key = "hidden_dim"

    def layers(self, model):
        return self.base(model).transformer.layer

    def activation_sites(self, model):
        layers = self.base(model).transformer.layer
        return [ActivationSite(f"transformer.layer.{i}.ffn.activation", layer.ffn, "activation")
                for i, layer in enumerate(layers)]

    def feed_forwards(self, model):
        return [FeedForward(f"transformer.layer.{i}.ffn", i, layer.ffn.lin1, layer.ffn.lin2,
                            activation=layer.ffn.activation)
                for i, layer in enumerate(self.base(model).transformer.layer)]

    def value_pairs(self, model):
        return [ScalePair(f"transformer.layer.{i}.attention.out_lin", layer.attention.v_lin, layer.attention.out_lin)
                for i, layer in enumerate(self.base(model).transformer.layer)]

    def fold_sites(self, model):
        # embeddings = word[ids] + position[pos], then the norm.
        emb = self.base(model).embeddings
        return [FoldSite("embeddings.LayerNorm", emb, "LayerNorm",
                         [emb.word_embeddings, emb.position_embeddings], bias_into=emb.position_embeddings)]

    def residual_streams(self, model):
        base = self.base(model)
        emb = base.embeddings
        streams, path, norm = [], "embeddings.LayerNorm", emb.LayerNorm
        summands = [emb.word_embeddings, emb.position_embeddings]
        for i, layer in enumerate(base.transformer.layer):
            attention, prefix = layer.attention, f"transformer.layer.{i}"
            streams.append(ResidualStream(path, norm, [attention.q_lin, attention.k_lin, attention.v_lin],
                                          attention.out_lin, next_norm=layer.sa_layer_norm, summands=summands))
            streams.append(ResidualStream(f"{prefix}.sa_layer_norm", layer.sa_layer_norm, [layer.ffn.lin1],
                                          layer.ffn.lin2, next_norm=layer.output_layer_norm))
            path, norm, summands = f"{prefix}.output_layer_norm", layer.output_layer_norm, []
        # sequence heads read the first token through pre_classifier; token heads read every token
        head = [model.pre_classifier] if hasattr(model, "pre_classifier") else [model.classifier]
        return streams + [ResidualStream(path, norm, head, summands=summands)]

    def num_heads(self, config):
        return config.n_heads

    def hidden_size(self, config):
        return config.dim

    def num_layers(self, config):
        return config.n_layers

    def tiny_config(self, vocab_size):
        return DistilBertConfig(vocab_size=vocab_size, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                                max_position_embeddings=128)


register(DistilBertFamily())
