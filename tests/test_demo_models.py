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


#: the phone models: (task, metric, table rank, pieces, the float model int4-tune distilled them from, int4 weights:
#: 36 block Linears, the table's projection, the head (SST-2: pooler and classifier) and the table)
PHONES = {"sst2-phone": ("glue:sst2", "accuracy", 160, 16000, "sst2-demo", 40),
          "ner-phone": ("conll2003", "f1", 128, 30522, "ner-demo", 39)}


@pytest.mark.parametrize("name", PHONES)
def test_a_phone_demo_is_narrow_on_the_int4_grid_and_stored_packed(name):
    """sst2-phone and ner-phone: a demo model with factored word embeddings and feed-forward blocks narrowed to 768
    units, tuned through int4 and stored as int4; the card's promise (within 1.0 point of the teacher), every int4
    weight on its grid as loaded, and the weights on real dev text."""
    from safetensors import safe_open

    from pocketbert.converter import int4_grid
    from pocketbert.converter.int4_packing import KEY, SCALE, VALUES

    task, metric, rank, pieces, teacher, tensors = PHONES[name]
    path = BUILTIN[name].path()
    config = json.loads((path / "config.json").read_text())
    assert config["intermediate_size"] == 768 and config["pocketbert"]["word_embedding_rank"] == rank
    assert config["pocketbert"]["transforms"] == ["nonorm", "relu"]
    record = json.loads((path / "training.json").read_text())
    scores, grid = record["dev_scores"], record["int4_grid"]
    assert scores["shipped"][metric] >= scores["teacher"][metric] - 1.0
    assert record["narrow"]["width_before"] == 1536 and record["narrow"]["width_after"] == 768
    assert grid["packed"] and grid["input"]["steps"] > 0 and grid["input"]["teacher"] == teacher
    loaded = loading.load(name)
    assert len(loaded.tokenizer) == pieces and loaded.model.get_input_embeddings().rank == rank
    assert all(b.up.out_features == 768 for b in loaded.family.feed_forwards(loaded.model))
    quantised = int4_grid.quantised(loaded.model)
    assert config["pocketbert"][KEY]["tensors"] == len(quantised) == tensors
    assert all(int4_grid.on_grid(m.weight.detach().numpy()) for _, m in quantised)
    with safe_open(str(path / "model.safetensors"), framework="pt") as weights:
        keys = set(weights.keys())
    assert {f"{p}.weight{suffix}" for p, _ in quantised for suffix in (VALUES, SCALE)} <= keys
    dev = load_task(task, "dev", DATA, limit=300).encode(loaded.tokenizer, 512, loaded.labels)
    assert evaluate(loaded.model, dev, input_names=loaded.family.input_names)[metric] > {"accuracy": 85, "f1": 82}[metric]
