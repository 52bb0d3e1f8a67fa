"""MAC counting from configs: a hand count, the MobileBERT paper's figure, and PyTorch's own FLOP counter."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode
from transformers import (
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    BertConfig,
    MobileBertConfig,
)

from pocketbert.benchmarks.macs import count_macs, gemms
from pocketbert.converter.families import families


def test_tiny_bert_by_hand():
    config = BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
    seq, h, ffn, layers, heads, labels = 16, 32, 64, 2, 4, 3
    projections = 4 * seq * h * h * layers  # q, k, v, attention output
    feed_forward = 2 * seq * h * ffn * layers
    attention = 2 * seq * (h // heads) * seq * heads * layers  # Q·Kᵀ and P·V per head
    head = h * h + h * labels  # pooler on [CLS], classifier
    assert count_macs(config, seq, task="classification", labels=labels) == \
        projections + feed_forward + attention + head == 296032


def test_mobilebert_matches_the_paper():
    # MobileBERT paper: 5.36 G FLOPs at sequence 128, i.e. ≈ 2.69 G multiply-accumulates
    assert count_macs(MobileBertConfig(), 128) == pytest.approx(2.69e9, rel=0.005)


def test_batch_scales_linearly():
    config = MobileBertConfig()
    assert count_macs(config, 64, batch=8) == 8 * count_macs(config, 64)


@pytest.mark.parametrize("family", [f.name for f in families()])
@pytest.mark.parametrize("task", ["classification", "ner"])
def test_weight_products_match_torch_flop_counter(family, task):
    """PyTorch's FlopCounterMode counts every Linear; CPU attention (SDPA) is not counted by it."""
    config = next(f for f in families() if f.name == family).tiny_config(vocab_size=500)
    config.num_labels = 3
    cls = AutoModelForTokenClassification if task == "ner" else AutoModelForSequenceClassification
    torch.manual_seed(0)
    model = cls.from_config(config).eval()
    ids = torch.randint(5, 400, (2, 24))
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(input_ids=ids, attention_mask=torch.ones_like(ids))
    products = gemms(config, 24, batch=2, task=task, labels=3)
    weights = sum(g.macs for g in products if g.kind == "weight")
    assert weights == counter.get_total_flops() // 2
