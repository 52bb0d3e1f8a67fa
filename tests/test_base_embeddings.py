"""Checkpoints whose word embeddings come from a base model (share-embeddings): written without the
table, restored exactly on load, refused when the base's table is not the one tuned against."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors import safe_open

from pocketbert.converter.checkpoints import loading
from pocketbert.converter.training.base_embeddings import base_table, share_checkpoint
from pocketbert.converter.errors import ConverterInputError
from pocketbert.converter.pipeline import convert

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
    with pytest.raises(ConverterInputError, match="sha256 differs"):
        loading.load(str(copy))
    config["pocketbert"]["base_embeddings"]["model"] = str(tmp_path / "nowhere")
    (copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConverterInputError, match="not a built-in name or a directory"):
        loading.load(str(copy))


def test_a_table_frozen_through_finetune_and_recovery_ships_without_re_tuning(checkpoints, tmp_path):
    """--freeze-word-embeddings in finetune and recover: the table stays the base's bit for bit while the
    rest learns, so share-embeddings has nothing to re-tune and the shipped scores are the recovered ones."""
    from pocketbert.converter.training import loop
    from pocketbert.converter.training.finetune import FinetuneOptions, finetune
    from pocketbert.converter.training.recovery import RecoverOptions, recover_checkpoint

    base = str(checkpoints["bert"]["none"])
    teacher = tmp_path / "teacher"
    finetune(FinetuneOptions(checkpoint=base, task="glue:sst2", out=teacher, budget=loop.Budget(steps=12), lr=2e-3,
                             batch_size=16, data_dir=DATA, train_limit=320, dev_limit=100, progress=False,
                             freeze_word_embeddings=True), log=lambda *a: None)
    recovered, record = recover_checkpoint(
        str(teacher), ["nonorm", "relu"],
        RecoverOptions(task="glue:sst2", data_dir=DATA, train_limit=128, dev_limit=100, batch_size=16,
                       budget=loop.Budget(steps=16), schedule="progressive", init="lstsq", progress=False,
                       freeze_word_embeddings=True), tmp_path / "recovered", log=lambda *a: None)
    assert record["recipe"]["word_embeddings"] == "frozen"
    table = base_table(base)
    from safetensors.torch import load_file

    before = {k.removeprefix("bert."): v
              for k, v in load_file(str(checkpoints["bert"]["none"] / "model.safetensors")).items()}
    after = loading.load(str(recovered)).model
    assert torch.equal(after.get_input_embeddings().weight, table)
    moved = [k for k, v in after.state_dict().items()
             if k.removeprefix("bert.") in before and not torch.equal(v, before[k.removeprefix("bert.")])]
    assert moved, "nothing was trained"
    assert any("attention" in k for k in moved) and any("position_embeddings" in k for k in moved)

    path, shipped = share_checkpoint(str(recovered), base, "glue:sst2", tmp_path / "shipped", retune="8steps",
                                     train_limit=64, data_dir=DATA, log=lambda *_: None)
    info = shipped["base_embeddings"]
    assert info["relative_change"] == 0 and info["retune"] is None
    # scored on the full dev set here, on 100 examples in recovery: compare with a fresh evaluation
    assert info["dev_after"] == info["dev_before"] == shipped["dev_scores"]["shipped"]
    assert "no re-tuning was needed" in (path / "README.md").read_text()
    assert torch.equal(loading.load(str(path)).model.get_input_embeddings().weight, table)
