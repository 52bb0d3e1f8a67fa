"""The demo models shipped in demo_models/: size budget, structure, model cards and real dev scores."""

from __future__ import annotations

import json

import pytest
import torch

from pocketbert.converter.checkpoints import loading
from pocketbert.converter.builtin import BUILTIN
from pocketbert.converter.data import load_task
from pocketbert.converter.families import is_nonorm
from pocketbert.converter.training.evaluate import evaluate
from pocketbert.locations import demo_models

from .conftest import DATA
from .test_web_demo import SEED, web_bundles  # noqa: F401  (session fixture: the converted demo bundles)

DEMOS = {"sst2-demo": ("glue:sst2", "accuracy"), "ner-demo": ("conll2003", "f1")}


#: each phone model's checkpoint is held to the size its int4 file must fit (set-up command 1's --max-size)
PHONE_BUDGETS = {"sst2-phone": 8e6, "ner-phone": 10e6}


def _megabytes(folder) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def test_demo_models_fit_their_size_budgets():
    """The two demo models at most 60 MB together; each phone model no larger than its phone file's target."""
    demos = sum(_megabytes(BUILTIN[name].path()) for name in DEMOS)
    assert demos <= 60, f"the two demo models hold {demos:.1f} MB, the budget is 60 MB"
    for name, budget in PHONE_BUDGETS.items():
        size = _megabytes(BUILTIN[name].path())
        assert size <= budget / 1e6, f"{name} holds {size:.1f} MB, more than its {budget / 1e6:.0f} MB file target"
    assert {p.name for p in demo_models().iterdir() if p.is_dir()} == {
        BUILTIN[name].directory for name in [*DEMOS, *PHONE_BUDGETS]}, "a checkpoint outside every budget"


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


#: the phone models: (task, metric, table rank, pieces, feed-forward units, the float model int4-tune distilled them
#: from, int4 weights: 36 block Linears, the table's projection, the head (SST-2: pooler and classifier) and the table)
PHONES = {"sst2-phone": ("glue:sst2", "accuracy", 160, 16000, 768, "sst2-demo", 40),
          "ner-phone": ("conll2003", "f1", 288, 30522, 1024, "ner-demo", 39)}


@pytest.mark.parametrize("name", PHONES)
def test_a_phone_demo_is_narrow_on_the_int4_grid_and_stored_packed(name):
    """sst2-phone and ner-phone: a demo model with factored word embeddings and feed-forward blocks narrowed from 1,536
    units (to 768 and 1,024), tuned through int4 and stored as int4; the card's promise (within 1.0 point of the
    teacher), every int4 weight on its grid as loaded, and the weights on real dev text."""
    from safetensors import safe_open

    from pocketbert.converter.weights import int4_grid
    from pocketbert.converter.weights.int4_packing import KEY, SCALE, VALUES

    task, metric, rank, pieces, units, teacher, tensors = PHONES[name]
    path = BUILTIN[name].path()
    config = json.loads((path / "config.json").read_text())
    assert config["intermediate_size"] == units and config["pocketbert"]["word_embedding_rank"] == rank
    assert config["pocketbert"]["transforms"] == ["nonorm", "relu"]
    record = json.loads((path / "training.json").read_text())
    scores, grid = record["dev_scores"], record["int4_grid"]
    assert scores["shipped"][metric] >= scores["teacher"][metric] - 1.0
    assert record["narrow"]["width_before"] == 1536 and record["narrow"]["width_after"] == units
    assert grid["packed"] and grid["input"]["steps"] > 0 and grid["input"]["teacher"] == teacher
    loaded = loading.load(name)
    assert len(loaded.tokenizer) == pieces and loaded.model.get_input_embeddings().rank == rank
    assert all(b.up.out_features == units for b in loaded.family.feed_forwards(loaded.model))
    quantised = int4_grid.quantised(loaded.model)
    assert config["pocketbert"][KEY]["tensors"] == len(quantised) == tensors
    assert all(int4_grid.on_grid(m.weight.detach().numpy()) for _, m in quantised)
    with safe_open(str(path / "model.safetensors"), framework="pt") as weights:
        keys = set(weights.keys())
    assert {f"{p}.weight{suffix}" for p, _ in quantised for suffix in (VALUES, SCALE)} <= keys
    dev = load_task(task, "dev", DATA, limit=300).encode(loaded.tokenizer, 512, loaded.labels)
    assert evaluate(loaded.model, dev, input_names=loaded.family.input_names)[metric] > {"accuracy": 85, "f1": 82}[metric]


def test_the_phone_ner_demo_tags_the_seed_sentence_as_its_teacher_does(web_bundles):  # noqa: F811
    """ner-phone's int4 file through the runtime: the web page's seed sentence as PER / ORG / LOC, spans and all."""
    from pocketbert import runtime

    ner = runtime.load(web_bundles["ner_phone"], backend="tflite", precision="int4-dynamic", threads=1)
    found = [(e["entity_group"], e["start"], e["end"]) for e in ner(SEED)]
    assert found == [("PER", 0, 9), ("ORG", 37, 43), ("LOC", 47, 57)], found
