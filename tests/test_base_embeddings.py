"""Checkpoints whose word embeddings come from a base model (share-embeddings): written without the
table, restored exactly on load, refused when the base's table is not the one tuned against."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors import safe_open

from converter import loading
from converter.base_embeddings import base_table, share_checkpoint
from converter.errors import InputError
from converter.pipeline import convert

from .conftest import DATA, build_checkpoint


@pytest.fixture(scope="module")
def shared(checkpoints, tokenizer, tmp_path_factory):
    base = str(checkpoints["bert"]["none"])  # same config and vocabulary, other random weights
    root = tmp_path_factory.mktemp("shared")
    tuned = build_checkpoint(root / "sst2", "bert", tokenizer, labels=("negative", "positive"), seed=1)
    out = root / "model"
    path, record = share_checkpoint(str(tuned), base, "glue:sst2", out,
                                    retune="8steps", train_limit=64, data_dir=DATA, log=lambda *_: None)
    return base, path, record


def test_written_without_the_table_and_restored_exactly(shared):
    base, path, record = shared
    with safe_open(str(path / "model.safetensors"), framework="pt") as weights:
        assert not [k for k in weights.keys() if "word_embeddings" in k]
    reference = json.loads((path / "config.json").read_text())["pocketbert"]["base_embeddings"]
    assert reference["model"] == base and len(reference["sha256"]) == 64
    loaded = loading.load(str(path))
    assert torch.equal(loaded.model.get_input_embeddings().weight, base_table(base))
    assert any("word embeddings come from the base model" in note for note in loaded.notes)
    info = record["base_embeddings"]
    assert info["retune"]["steps"] == 8 and "accuracy" in info["dev_after"]
    assert record["dev_scores"] == info["dev_after"]


def test_reload_computes_what_was_trained_and_converts(shared, options, tmp_path):
    _, path, _ = shared
    loaded = loading.load(str(path))
    batch = loaded.tokenizer(["a gripping, funny film", "dull"], padding=True, return_tensors="pt")
    again = loading.load(str(path))
    with torch.no_grad():
        torch.testing.assert_close(loaded.model(**batch).logits, again.model(**batch).logits, rtol=0, atol=0)
    result = convert(options(path, out=tmp_path / "bundle"))
    manifest = json.loads((result.bundle / "manifest.json").read_text())
    assert manifest["artifacts"] and all(a["verification"]["passed"] for a in manifest["artifacts"])


def test_a_different_base_table_is_refused(shared, tmp_path):
    _, path, _ = shared
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(path, copy)
    config = json.loads((copy / "config.json").read_text())
    config["pocketbert"]["base_embeddings"]["sha256"] = "0" * 64
    (copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(InputError, match="sha256 differs"):
        loading.load(str(copy))
    config["pocketbert"]["base_embeddings"]["model"] = str(tmp_path / "nowhere")
    (copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(InputError, match="not a built-in name or a directory"):
        loading.load(str(copy))
