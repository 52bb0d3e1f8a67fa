"""MobileBERT family (``model_type: mobilebert``): bottlenecks, stacked FFNs, NoNorm and ReLU built in."""

from __future__ import annotations

from transformers import MobileBertConfig

from . import register
from .base import ActivationSite, Family, FeedForward, FoldSite, ScalePair


class MobileBertFamily(Family):
    name = "mobilebert"
    model_types = ("mobilebert",)
    description = "MobileBERT"
    uses_token_type_ids = True

    def layers(self, model):
        return self.base(model).encoder.layer

    def activation_sites(self, model):
        sites = []
        for i, layer in enumerate(self.base(model).encoder.layer):
            sites.append(ActivationSite(f"encoder.layer.{i}.intermediate.intermediate_act_fn",
                                        layer.intermediate, "intermediate_act_fn"))
            for j, ffn in enumerate(getattr(layer, "ffn", None) or []):
                sites.append(ActivationSite(f"encoder.layer.{i}.ffn.{j}.intermediate.intermediate_act_fn",
                                            ffn.intermediate, "intermediate_act_fn"))
        return sites

    def feed_forwards(self, model):
        # each block's stacked feed-forward networks first, then its own (MobileBertLayer.forward's order)
        blocks = []
        for i, layer in enumerate(self.base(model).encoder.layer):
            blocks += [FeedForward(f"encoder.layer.{i}.ffn.{j}", i, ffn.intermediate.dense, ffn.output.dense,
                                   activation=ffn.intermediate.intermediate_act_fn)
                       for j, ffn in enumerate(getattr(layer, "ffn", None) or [])]
            blocks.append(FeedForward(f"encoder.layer.{i}", i, layer.intermediate.dense, layer.output.dense,
                                      activation=layer.intermediate.intermediate_act_fn))
        return blocks

    def value_pairs(self, model):
        return [ScalePair(f"encoder.layer.{i}.attention.output.dense", layer.attention.self.value,
                          layer.attention.output.dense) for i, layer in enumerate(self.base(model).encoder.layer)]

    def fold_sites(self, model):
        base = self.base(model)
        emb = base.embeddings
        # The word embedding is projected by `embedding_transformation` when it is narrower than the
        # hidden size or trigram input is on; otherwise the lookup itself is the summand.
        projected = emb.trigram_input or emb.embedding_size != emb.hidden_size
        first = emb.embedding_transformation if projected else emb.word_embeddings
        sites = [FoldSite("embeddings.LayerNorm", emb, "LayerNorm",
                          [first, emb.position_embeddings, emb.token_type_embeddings],
                          bias_into=emb.token_type_embeddings)]
        # Bottleneck norms follow a Linear with no residual: norm(dense(h)).
        for i, layer in enumerate(base.encoder.layer):
            bottleneck = getattr(layer, "bottleneck", None)
            if bottleneck is None:
                continue
            for part in ("input", "attention"):
                sub = getattr(bottleneck, part, None)
                if sub is not None:
                    sites.append(FoldSite(f"encoder.layer.{i}.bottleneck.{part}.LayerNorm", sub, "LayerNorm",
                                          [sub.dense], bias_into=sub.dense))
        return sites

    def tiny_config(self, vocab_size):
        return MobileBertConfig(vocab_size=vocab_size, hidden_size=64, embedding_size=32,
                                intra_bottleneck_size=32, true_hidden_size=32, num_hidden_layers=2,
                                num_attention_heads=4, intermediate_size=64, num_feedforward_networks=2,
                                max_position_embeddings=128)


register(MobileBertFamily())
