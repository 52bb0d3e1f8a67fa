"""The demo models shipped in demo_models/: size budget, structure, model cards and real dev scores."""

from __future__ import annotations

import json

import pytest
import torch

from pocketbert.converter import loading
from pocketbert.converter.builtin import BUILTIN
from pocketbert.converter.data import load_task
from pocketbert.converter.families import is_nonorm
from pocketbert.converter.training.evaluate import evaluate
from pocketbert.locations import demo_models

from .conftest import DATA

DEMOS = {"sst2-demo": ("glue:sst2", "accuracy"), "ner-demo": ("conll2003", "f1")}


def test_demo_models_fit_the_size_budget():
    total = sum(p.stat().st_size for p in demo_models().rglob("*") if p.is_file())
    assert total <= 60e6, f"demo_models/ holds {total / 1e6:.1f} MB, the budget is 60 MB"


@pytest.mark.parametrize("name", DEMOS)
def test_demo_model_is_recovered_nonorm_relu_with_a_card(name):
    path = BUILTIN[name].path()
    record = json.loads((path / "training.json").read_text())
    task, metric = DEMOS[name]
    assert record["kind"] == "recover" and record["task"] == task and record["transforms"] == ["nonorm", "relu"]
    scores = record["dev_scores"]
    # what the card promises: the recovered model within 1.0 point of its teacher, and the shipped one too
    assert scores["recovered"][metric] >= scores["teacher"][metric] - 1.0
    assert scores["shipped"][metric] >= scores["teacher"][metric] - 1.0
    card = (path / "README.md").read_text()
    assert "license: apache-2.0" in card and f"{scores['shipped'][metric]:.2f}" in card
    config = json.loads((path / "config.json").read_text())
    assert config["dtype"] == "float16" and config["pocketbert"]["transforms"] == ["nonorm", "relu"]
    assert config["pocketbert"]["base_embeddings"]["model"] == "minilm"  # the table is not stored


@pytest.mark.parametrize("name", DEMOS)
def test_demo_model_scores_on_real_dev_data(name):
    """The shipped weights, as loaded by the converter, on the first 300 dev examples."""
    task, metric = DEMOS[name]
    loaded = loading.load(name)
    assert all(is_nonorm(m) for _, m in loaded.family.norms(loaded.model))
    assert all(isinstance(s.activation, torch.nn.ReLU) for s in loaded.family.activation_sites(loaded.model))
    dev = load_task(task, "dev", DATA, limit=300).encode(loaded.tokenizer, 512, loaded.labels)
    torch.set_num_threads(2)
    score = evaluate(loaded.model, dev, input_names=loaded.family.input_names)[metric]
    assert score > {"accuracy": 85, "f1": 82}[metric]


def test_the_phone_demo_stores_its_factors_and_takes_the_rest_from_the_sst2_demo():
    """sst2-phone: the SST-2 demo with 16,000 pieces and rank-160 factored word embeddings; its card's promise (the
    shipped model within 1.0 point of the teacher) and the weights as loaded, on real dev text."""
    from safetensors import safe_open

    path = BUILTIN["sst2-phone"].path()
    config = json.loads((path / "config.json").read_text())["pocketbert"]
    assert config["word_embedding_rank"] == 160 and config["base_weights"]["model"] == "sst2-demo"
    with safe_open(str(path / "model.safetensors"), framework="pt") as weights:
        assert all(".word_embeddings." in key for key in weights.keys())
    record = json.loads((path / "training.json").read_text())
    scores = record["dev_scores"]
    assert scores["shipped"]["accuracy"] >= scores["teacher"]["accuracy"] - 1.0
    assert record["factored_embeddings"]["rows"] == 16000
    loaded, demo = loading.load("sst2-phone"), loading.load("sst2-demo")
    assert len(loaded.tokenizer) == 16000 and loaded.model.get_input_embeddings().rank == 160
    body = {k: v for k, v in loaded.model.state_dict().items() if ".word_embeddings." not in k}
    assert all(torch.equal(v, demo.model.state_dict()[k]) for k, v in body.items())
    dev = load_task("glue:sst2", "dev", DATA, limit=300).encode(loaded.tokenizer, 512, loaded.labels)
    assert evaluate(loaded.model, dev, input_names=loaded.family.input_names)["accuracy"] > 85


def test_the_ner_phone_demo_is_on_the_int4_grid_and_stored_packed():
    """ner-phone: the NER demo with rank-128 factored word embeddings, tuned through int4 and stored as int4; its
    card's promise, every int4 weight on its grid as loaded, and the weights on real dev text."""
    from safetensors import safe_open

    from pocketbert.converter import int4_grid
    from pocketbert.converter.int4_packing import KEY, SCALE, VALUES

    path = BUILTIN["ner-phone"].path()
    config = json.loads((path / "config.json").read_text())["pocketbert"]
    assert config["word_embedding_rank"] == 128 and config["transforms"] == ["nonorm", "relu"]
    record = json.loads((path / "training.json").read_text())
    scores, grid = record["dev_scores"], record["int4_grid"]
    assert scores["shipped"]["f1"] >= scores["teacher"]["f1"] - 1.0
    assert grid["packed"] and grid["input"]["steps"] > 0 and grid["input"]["teacher"] == "ner-demo"
    loaded = loading.load("ner-phone")
    quantised = int4_grid.quantised(loaded.model)
    assert config[KEY]["tensors"] == len(quantised) == 39  # 36 block Linears, the projection, the head, the table
    assert all(int4_grid.on_grid(m.weight.detach().numpy()) for _, m in quantised)
    with safe_open(str(path / "model.safetensors"), framework="pt") as weights:
        keys = set(weights.keys())
    assert {f"{p}.weight{suffix}" for p, _ in quantised for suffix in (VALUES, SCALE)} <= keys
    dev = load_task("conll2003", "dev", DATA, limit=300).encode(loaded.tokenizer, 512, loaded.labels)
    assert evaluate(loaded.model, dev, input_names=loaded.family.input_names)["f1"] > 82
