"""Factored word embeddings (factor-embeddings): the SVD start, the re-tuning of the factors alone, the checkpoint
round trip, fold's exactness through the projection, and a TFLite file whose lookup table is the narrow one."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors import safe_open

from pocketbert.converter.checkpoints import loading
from pocketbert.converter.errors import ConverterInputError
from pocketbert.converter.levers.factor_embeddings import FactorOptions, factor_checkpoint
from pocketbert.converter.weights.factored_table import FactoredEmbedding, factor
from pocketbert.converter.pipeline import convert

from .conftest import DATA, build_checkpoint

RANK = 8


@pytest.fixture(scope="module")
def factored(tokenizer, tmp_path_factory):
    root = tmp_path_factory.mktemp("factored")
    source = build_checkpoint(root / "sst2", "bert", tokenizer, labels=("negative", "positive"), seed=1)
    out = root / "model"
    options = FactorOptions(rank=RANK, retune="6steps", train_limit=64, data_dir=DATA)
    path, record = factor_checkpoint(str(source), "glue:sst2", out, options, log=lambda *_: None)
    return source, path, record


def _logits(loaded, texts):
    batch = loaded.tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        return loaded.model(**{k: batch[k] for k in loaded.family.input_names}).logits


def test_a_table_of_low_rank_is_factored_exactly(checkpoints):
    loaded = loading.load(str(checkpoints["bert"]["classification"]))
    embedding = loaded.model.get_input_embeddings()
    vocab, width = embedding.weight.shape
    generator = torch.Generator().manual_seed(0)
    low = torch.randn(vocab, RANK, generator=generator) @ torch.randn(RANK, width, generator=generator)
    with torch.no_grad():
        embedding.weight.copy_(low + torch.randn(width, generator=generator))  # rank RANK plus a shared offset
    before = _logits(loaded, ["a gripping, funny film", "dull"])
    error = factor(loaded.model, RANK)
    table = loaded.model.get_input_embeddings()
    assert isinstance(table, FactoredEmbedding) and table.rank == RANK and table.num_embeddings == vocab
    assert error < 1e-5
    torch.testing.assert_close(_logits(loaded, ["a gripping, funny film", "dull"]), before, rtol=0, atol=1e-4)


def test_row_weights_put_the_error_where_the_text_is(checkpoints):
    errors = {}
    for weighted in (False, True):
        loaded = loading.load(str(checkpoints["bert"]["classification"]))
        table = loaded.model.get_input_embeddings().weight.detach().clone()
        weights = torch.ones(table.shape[0])
        weights[:RANK - 2] = 1e6  # a few pieces the text uses all the time: fewer than the rank
        factor(loaded.model, RANK, weights if weighted else None)
        dense = loaded.model.get_input_embeddings().dense().detach()
        errors[weighted] = ((dense - table)[:RANK - 2].norm() / table[:RANK - 2].norm()).item()
    assert errors[True] < 0.05 < 0.5 < errors[False]


def test_bad_ranks_are_refused(checkpoints):
    loaded = loading.load(str(checkpoints["bert"]["classification"]))
    width = loaded.model.config.hidden_size
    for rank in (0, width):
        with pytest.raises(ConverterInputError, match="--rank"):
            factor(loaded.model, rank)
    factor(loaded.model, RANK)
    with pytest.raises(ConverterInputError, match="already factored"):
        factor(loaded.model, RANK)


def test_only_the_factors_are_re_tuned_and_the_checkpoint_round_trips(factored):
    source, path, record = factored
    config = json.loads((path / "config.json").read_text())
    assert config["pocketbert"]["word_embedding_rank"] == RANK
    with safe_open(str(path / "model.safetensors"), framework="pt") as weights:
        keys = list(weights.keys())
    assert not [k for k in keys if k.endswith("word_embeddings.weight")]
    assert len([k for k in keys if ".word_embeddings." in k]) == 3
    info = record["factored_embeddings"]
    assert info["rank"] == RANK and info["retune"]["steps"] == 6 and record["dev_scores"] == info["dev_after"]
    loaded, original = loading.load(str(path)), loading.load(str(source))
    assert any("factored at rank" in note for note in loaded.notes)
    trained = {k: v for k, v in loaded.model.state_dict().items() if ".word_embeddings." not in k}
    for key, value in original.model.state_dict().items():
        if ".word_embeddings." not in key:
            assert torch.equal(trained[key], value), key
    again = loading.load(str(path))
    texts = ["a gripping film", "dull"]
    torch.testing.assert_close(_logits(loaded, texts), _logits(again, texts), rtol=0, atol=0)


def test_a_factored_checkpoint_missing_a_factor_or_with_a_bad_rank_is_refused(factored, tmp_path):
    _, path, _ = factored
    copy = tmp_path / "copy"
    shutil.copytree(path, copy)
    config = json.loads((copy / "config.json").read_text())
    config["pocketbert"]["word_embedding_rank"] = "eight"
    (copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConverterInputError, match="word_embedding_rank"):
        loading.load(str(copy))
    config["pocketbert"]["word_embedding_rank"] = RANK + 1
    (copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConverterInputError, match="wrong shape"):
        loading.load(str(copy))


def test_folds_exactly_and_exports_the_narrow_table_to_tflite(factored, options, tmp_path):
    """fold pushes the embedding NoNorm's γ/β into the projection (the pipeline compares folded with unfolded);
    the int4 file's lookup table is vocab × rank."""
    from ai_edge_quantizer.utils import tfl_flatbuffer_utils

    _, path, _ = factored
    result = convert(options(path, opts="nonorm,fold", recipes="tflite:int4-dynamic",
                             allow_accuracy_loss=True))
    manifest = json.loads((result.bundle / "manifest.json").read_text())
    assert all(a["verification"]["passed"] for a in manifest["artifacts"])
    vocab = loading.load(str(path)).model.config.vocab_size
    model = tfl_flatbuffer_utils.read_model(str(result.bundle / "model.int4-dynamic.tflite"))
    shapes = {tuple(t.shape) for g in model.subgraphs for t in g.tensors
              if t.buffer and model.buffers[t.buffer].data is not None}
    assert (vocab, RANK) in shapes
    assert not any(len(s) == 2 and s[0] == vocab and s[1] != RANK for s in shapes)


@pytest.fixture(scope="module")
def phone(tokenizer, tmp_path_factory):
    """Trimmed, factored and sharing its body with the (float32) checkpoint it came from; the factors in float16."""
    root = tmp_path_factory.mktemp("phone")
    source = build_checkpoint(root / "sst2", "bert", tokenizer, labels=("negative", "positive"), seed=2)
    options = FactorOptions(rank=RANK, vocab_size=3000, retune="4steps", share_body=True, fp16=True, train_limit=64,
                            data_dir=DATA)
    path, record = factor_checkpoint(str(source), "glue:sst2", root / "model", options, log=lambda *_: None)
    return source, path, record


def test_a_shared_body_checkpoint_stores_the_factors_and_loads_the_rest_from_its_source(phone):
    source, path, record = phone
    with safe_open(str(path / "model.safetensors"), framework="pt") as weights:
        assert sorted(weights.keys()) == sorted(f"bert.embeddings.word_embeddings.{p}"
                                                for p in ("table.weight", "projection.weight", "projection.bias"))
    body = json.loads((path / "config.json").read_text())["pocketbert"]["base_weights"]
    assert body["model"] == str(source.resolve()) and body["tensors"] > 10
    assert record["factored_embeddings"]["vocab_trim"]["vocab_size_after"] <= 3000
    loaded, original = loading.load(str(path)), loading.load(str(source))
    assert loaded.model.get_input_embeddings().num_embeddings == len(loaded.tokenizer) <= 3000
    assert any("come from" in note for note in loaded.notes)
    for key, value in original.model.state_dict().items():
        if ".word_embeddings." not in key:
            assert torch.equal(loaded.model.state_dict()[key], value), key


def test_a_shared_body_that_changed_is_refused_at_load_and_at_save(phone, tmp_path):
    from pocketbert.converter.weights import shared_body

    source, path, _ = phone
    copy = tmp_path / "copy"
    shutil.copytree(path, copy)
    config = json.loads((copy / "config.json").read_text())
    config["pocketbert"]["base_weights"]["sha256"] = "0" * 64
    (copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConverterInputError, match="sha256 differs"):
        loading.load(str(copy))
    loaded = loading.load(str(path))
    with torch.no_grad():
        loaded.model.classifier.bias.add_(1.0)
    with pytest.raises(ConverterInputError, match="only the word embeddings may change"):
        shared_body.reference(loaded.model, str(source))


def test_a_factored_model_saved_by_any_command_keeps_its_rank_and_drops_a_stale_body_record(phone, tmp_path):
    """save_trained records the rank from the model itself, and never carries the input's base_weights over to
    weights that are stored whole (a later command may have trained the body)."""
    from pocketbert.converter.training import checkpoint_job as job

    _, path, record = phone
    loaded = loading.load(str(path))
    out = job.write(loaded.model, loaded.tokenizer, tmp_path / "again", overwrite=False, record=record)
    config = json.loads((out / "config.json").read_text())
    assert config["pocketbert"] == {"word_embedding_rank": RANK}
    again = loading.load(str(out))
    texts = ["a gripping film", "dull"]
    torch.testing.assert_close(_logits(again, texts), _logits(loaded, texts), rtol=0, atol=0)


def test_commands_that_need_a_whole_table_refuse_a_factored_one_with_a_fix(phone, tmp_path):
    from pocketbert.converter.training.base_embeddings import share_checkpoint
    from pocketbert.converter.levers.vocab_trim import trim

    source, path, _ = phone
    loaded = loading.load(str(path))
    with pytest.raises(ConverterInputError, match="trim-vocab needs a whole word-embedding table") as caught:
        trim(loaded.model, loaded.tokenizer, ["a text"], 500)
    assert "factor-embeddings started from" in caught.value.fix
    with pytest.raises(ConverterInputError, match="share-embeddings needs a whole word-embedding table"):
        share_checkpoint(str(path), str(source), "glue:sst2", tmp_path / "out", retune="2steps", train_limit=8,
                         data_dir=DATA, log=lambda *_: None)


def test_residual_stream_equalisation_stays_exact_through_the_projection(factored):
    """Static int8's equalisation divides the first stream's producers by its factors: for a folded model with a
    factored table that is the projection, and the logits must not move."""
    import copy

    from pocketbert.converter.transforms import equalize

    from .conftest import FULL_INTEGER_TEXTS, nonorm_model

    _, path, _ = factored
    loaded, spec = nonorm_model(path, "fold")
    model, family = loaded.model, loaded.family
    assert isinstance(model.get_input_embeddings(), FactoredEmbedding)
    batches = spec.make_batches(FULL_INTEGER_TEXTS)
    maxima = equalize.stream_maxima(model, family, batches)
    generator = torch.Generator().manual_seed(2)
    factors = [torch.exp(torch.rand(m.shape, generator=generator) * 4.6) for m in maxima]
    equalized = copy.deepcopy(model)
    equalize.apply_scales(equalized, family, factors)

    def logits(m):
        with torch.no_grad():
            return torch.cat([m(**{k: torch.from_numpy(v) for k, v in b.items()}).logits for b in batches])

    before = logits(model)
    torch.testing.assert_close(logits(equalized), before, rtol=1e-4, atol=1e-4 * before.abs().max().item())


def test_converts_to_onnx_fp32_and_both_int8_recipes(factored, options):
    _, path, _ = factored
    result = convert(options(path, opts="nonorm,fold", recipes="onnx:fp32,onnx:int8-dynamic,onnx:int8-static",
                             allow_accuracy_loss=True))
    manifest = json.loads((result.bundle / "manifest.json").read_text())
    assert [a["recipe"] for a in manifest["artifacts"]] == ["onnx:fp32", "onnx:int8-dynamic", "onnx:int8-static"]
    assert all(a["verification"]["passed"] for a in manifest["artifacts"])


def test_a_checkpoint_written_whole_from_a_shared_body_one_no_longer_says_it_takes_the_body(phone, tmp_path):
    """A later command that stores every weight (int4-tune, narrow) must not keep the factoring's "only the word
    embeddings are stored" in its record and card."""
    from pocketbert.converter.checkpoints import loading
    from pocketbert.converter.training import checkpoint_job as job

    _, path, _ = phone
    loaded = loading.load(str(path))
    record = json.loads((path / "training.json").read_text())
    out = job.write(loaded.model, loaded.tokenizer, tmp_path / "whole", overwrite=False, record=record,
                    transforms=job.saved_transforms(loaded.config))
    assert json.loads((out / "training.json").read_text())["factored_embeddings"]["base_weights"] is None
    assert "Only the word embeddings are stored" not in (out / "README.md").read_text()
    assert "base_weights" not in json.loads((out / "config.json").read_text())["pocketbert"]
    assert "Only the word embeddings are stored" in (path / "README.md").read_text()
