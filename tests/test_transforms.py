"""Transforms on the PyTorch model: what they change, measured; fold exactness; registry coverage."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from transformers import AutoModelForSequenceClassification

from pocketbert.converter.families import families, is_nonorm
from pocketbert.converter.transforms import OPTS, fold, nonorm, relu
from pocketbert.converter.transforms.smoothquant import activation_maxima, smooth

from .conftest import FAMILY_NAMES, _family

TEXTS = ["the film is a charming , often affecting journey", "Peter Blackburn visited Zürich on Monday .",
         "an unflinchingly bleak and desperate mess", "ok"]


def _load(path):
    return AutoModelForSequenceClassification.from_pretrained(path).eval()


def _logits(model, tokenizer, texts=TEXTS):
    enc = tokenizer(texts, padding=True, return_tensors="pt")
    if model.config.model_type == "distilbert":
        enc.pop("token_type_ids", None)
    with torch.no_grad():
        return model(**enc).logits


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_nonorm_replaces_every_layernorm(family, checkpoints, tokenizer):
    model = _load(checkpoints[family]["classification"])
    fam = _family(family)
    report = nonorm.apply(model, fam)
    norms = fam.norms(model)
    assert norms and all(is_nonorm(m) for _, m in norms)
    assert not any(isinstance(m, nn.LayerNorm) for m in fam.base(model).modules())
    if family == "mobilebert":  # trained with NoNorm: nothing to do, function unchanged
        assert report.noop and report.exact
    else:
        assert report.changed == len(norms) and not report.exact


@pytest.mark.parametrize("family", ["bert", "distilbert"])
def test_nonorm_and_relu_change_the_function_measurably(family, checkpoints, tokenizer):
    model = _load(checkpoints[family]["classification"])
    before = _logits(model, tokenizer)
    relu_report = relu.apply(model, _family(family))
    after_relu = _logits(model, tokenizer)
    assert relu_report.changed == 2  # both tiny layers had GELU
    assert not torch.allclose(before, after_relu, atol=1e-6)
    nonorm.apply(model, _family(family))
    assert not torch.allclose(after_relu, _logits(model, tokenizer), atol=1e-4)


def test_nonorm_math_is_elementwise_affine():
    layer_norm = nn.LayerNorm(8)
    with torch.no_grad():
        layer_norm.weight.copy_(torch.linspace(0.5, 2, 8))
        layer_norm.bias.copy_(torch.linspace(-1, 1, 8))
    module = nonorm.NoNorm(layer_norm.weight, layer_norm.bias)
    x = torch.randn(3, 8)
    assert torch.allclose(module(x), x * layer_norm.weight + layer_norm.bias)


def test_mobilebert_relu_is_noop(checkpoints):
    model = _load(checkpoints["mobilebert"]["classification"])
    report = relu.apply(model, _family("mobilebert"))
    # tiny config: 2 layers x (1 + num_feedforward_networks - 1 extra FFN) activation sites, all ReLU already
    assert report.sites == 4 and report.noop


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_fold_is_exact(family, checkpoints, tokenizer):
    model = _load(checkpoints[family]["classification"])
    fam = _family(family)
    nonorm.apply(model, fam)
    # give γ/β non-trivial values so that a wrong fold cannot pass by accident
    torch.manual_seed(1)
    with torch.no_grad():
        for _, norm in fam.norms(model):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.5, 0.5)
    expected = _logits(model, tokenizer)
    norms_before = len(fam.norms(model))
    report = fold.apply(model, fam)
    folded = _logits(model, tokenizer)
    assert torch.allclose(folded, expected, atol=1e-5, rtol=1e-5), (folded - expected).abs().max()
    expected_sites = {"bert": 1, "distilbert": 1, "mobilebert": 1 + 2 * 2}[family]  # MobileBERT: 2 bottlenecks/layer
    assert report.changed == expected_sites
    assert len(fam.norms(model)) == norms_before - expected_sites


def test_fold_refuses_layernorm(checkpoints):
    from pocketbert.converter.errors import ConverterInputError

    model = _load(checkpoints["bert"]["classification"])
    with pytest.raises(ConverterInputError, match="nonorm"):
        fold.apply(model, _family("bert"))


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_smoothing_is_exact_in_float(family, checkpoints, tokenizer):
    model = _load(checkpoints[family]["classification"])
    fam = _family(family)
    enc = tokenizer(TEXTS, padding=True, return_tensors="np")
    if family == "distilbert":
        enc.pop("token_type_ids")
    maxima = activation_maxima(model, fam, [dict(enc)])
    smoothed, count = smooth(model, fam, maxima, alpha=0.75)
    assert count == sum(isinstance(m, nn.Linear) for m in fam.base(model).modules())
    assert torch.allclose(_logits(smoothed, tokenizer), _logits(model, tokenizer), atol=1e-5)
    # the original model is not modified
    assert not any(type(m).__name__ == "SmoothedLinear" for m in model.modules())


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_folded_smoothing_is_exact_in_float_and_adds_no_module(family, checkpoints, tokenizer):
    model = _load(checkpoints[family]["classification"])
    fam = _family(family)
    relu.apply(model, fam)  # GELU does not commute with a scale: its feed-forward outputs would not fold
    enc = tokenizer(TEXTS, padding=True, return_tensors="np")
    if family == "distilbert":
        enc.pop("token_type_ids")
    maxima = activation_maxima(model, fam, [dict(enc)])
    smoothed, count = smooth(model, fam, maxima, alpha=0.75, folded=True)
    blocks = fam.num_layers(model.config)
    assert count == blocks + len(fam.feed_forwards(model))  # every attention output and feed-forward output
    assert [type(m) for m in smoothed.modules()] == [type(m) for m in model.modules()]
    assert torch.allclose(_logits(smoothed, tokenizer), _logits(model, tokenizer), atol=1e-5)
    # the scales moved real range: every folded reader's input columns changed
    readers = {id(p.reader) for p in fam.scale_pairs(model)}
    names = [n for n, m in fam.base(model).named_modules() if id(m) in readers]
    before, after = fam.base(model), fam.base(smoothed)
    assert all(not torch.equal(before.get_submodule(n).weight, after.get_submodule(n).weight) for n in names)


def test_folded_smoothing_leaves_gelu_feed_forwards_alone(checkpoints):
    """GELU does not commute with a scale: only the attention outputs fold until relu has run."""
    fam = _family("bert")
    model = _load(checkpoints["bert"]["classification"])
    blocks = fam.num_layers(model.config)
    assert [p.path for p in fam.scale_pairs(model)] == [f"encoder.layer.{i}.attention.output.dense"
                                                         for i in range(blocks)]
    relu.apply(model, fam)
    assert len(fam.scale_pairs(model)) == 2 * blocks


def test_registry_lists_every_transform_and_family():
    assert [o.name for o in OPTS if o.apply] == ["nonorm", "relu", "fold"]
    assert {f.name for f in families()} >= {"bert", "distilbert", "mobilebert"}
    for family in families():
        assert family.tiny_config(vocab_size=100).model_type in family.model_types
