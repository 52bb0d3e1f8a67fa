"""Broken bundles and artifact choice: every problem is a runtime.errors error naming it and the fix."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from pocketbert import runtime
from pocketbert.runtime import bundle as runtime_bundle
from pocketbert.runtime.errors import BackendUnavailableError, BundleError, ModelError


def copy(bundle: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(bundle, tmp_path / bundle.name))


def edit_manifest(bundle: Path, change) -> None:
    path = bundle / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    change(manifest)
    path.write_text(json.dumps(manifest), encoding="utf-8")


def relist(bundle: Path, name: str) -> None:
    """Record a changed file's size and SHA-256 in the manifest, as if the bundle had been made so."""
    data = (bundle / name).read_bytes()
    edit_manifest(bundle, lambda m: m["files"].__setitem__(
        name, {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}))


def test_default_artifact_is_int8_then_fp32(cls_bundle, ner_bundle):
    assert runtime.load(cls_bundle).artifact.recipe == "onnx:int8-dynamic"
    assert runtime.load(cls_bundle, backend="tflite").artifact.recipe == "tflite:int8-dynamic"
    assert runtime.load(cls_bundle, precision="fp32").artifact.recipe == "onnx:fp32"
    assert runtime.load(cls_bundle, recipe="tflite:fp32").artifact.recipe == "tflite:fp32"
    assert runtime.load(ner_bundle).artifact.recipe == "onnx:fp32"  # no int8 in this bundle


def test_int8_default_agrees_with_fp32(cls_bundle, sst2_sentences):
    texts = sst2_sentences[:200]
    for backend in ("onnx", "tflite"):
        int8 = runtime.load(cls_bundle, backend=backend)(texts)
        fp32 = runtime.load(cls_bundle, backend=backend, precision="fp32")(texts)
        assert sum(a["label"] == b["label"] for a, b in zip(int8, fp32)) / len(texts) >= 0.9


def test_unavailable_artifact_or_backend(cls_bundle, monkeypatch):
    with pytest.raises(BundleError, match="no verified artifact 'onnx:int8-static'.*onnx:fp32, onnx:int8-dynamic"):
        runtime.load(cls_bundle, recipe="onnx:int8-static")
    with pytest.raises(BundleError, match="no verified onnx:fp16"):
        runtime.load(cls_bundle, backend="onnx", precision="fp16")
    with pytest.raises(BundleError, match="unknown backend 'coreml'"):
        runtime.load(cls_bundle, backend="coreml")
    with pytest.raises(BundleError, match="contradicts"):
        runtime.load(cls_bundle, backend="tflite", recipe="onnx:fp32")
    monkeypatch.setattr(runtime_bundle, "backend_installed", lambda name: name != "onnx")
    assert runtime.load(cls_bundle).artifact.backend == "tflite"  # auto moves on to what is installed
    with pytest.raises(BackendUnavailableError, match="pip install onnxruntime"):
        runtime.load(cls_bundle, backend="onnx")


def test_not_a_bundle(tmp_path):
    with pytest.raises(BundleError, match="does not exist"):
        runtime.load(tmp_path / "nope")
    with pytest.raises(BundleError, match="has no manifest.json"):
        runtime.load(tmp_path)
    (tmp_path / "manifest.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(BundleError, match="not valid JSON"):
        runtime.load(tmp_path)


def test_newer_schema_is_refused(ner_bundle, tmp_path):
    bundle = copy(ner_bundle, tmp_path)
    edit_manifest(bundle, lambda m: m.__setitem__("schema_version", 2))
    with pytest.raises(BundleError, match="bundle schema 2 is newer than this runtime reads \\(1\\)") as info:
        runtime.load(bundle)
    assert "upgrade pocketbert" in info.value.fix


def test_manifest_without_required_fields(ner_bundle, tmp_path):
    bundle = copy(ner_bundle, tmp_path)
    edit_manifest(bundle, lambda m: m.pop("labels"))
    with pytest.raises(BundleError, match="'labels' must be a non-empty list"):
        runtime.load(bundle)


@pytest.mark.parametrize("name", ["model.onnx", "model.tflite", "tokenizer.json"])
def test_missing_file(ner_bundle, tmp_path, name):
    bundle = copy(ner_bundle, tmp_path)
    (bundle / name).unlink()
    backend = "tflite" if name.endswith("tflite") else "onnx"
    with pytest.raises(BundleError, match=f"the bundle is missing {name}") as info:
        runtime.load(bundle, backend=backend)
    assert "copy the complete bundle" in info.value.fix


@pytest.mark.parametrize("name", ["model.onnx", "model.tflite"])
def test_corrupt_model_file(ner_bundle, tmp_path, name):
    bundle = copy(ner_bundle, tmp_path)
    backend = name.rsplit(".", 1)[1]
    data = bytearray((bundle / name).read_bytes())
    (bundle / name).write_bytes(bytes(data[: len(data) // 2]))
    with pytest.raises(BundleError, match=f"{name} is corrupt or truncated"):
        runtime.load(bundle, backend=backend)
    data[8:4096] = bytes(4088)  # same size, garbage header
    (bundle / name).write_bytes(bytes(data))
    with pytest.raises(BundleError, match=f"{name} is corrupt: its SHA-256 differs"):
        runtime.load(bundle, backend=backend)
    # without the checksum the backend itself refuses the file: still a clear error, not a crash
    with pytest.raises(ModelError, match="cannot load " + name) as info:
        runtime.load(bundle, backend=backend, verify=False)
    assert "damaged" in info.value.fix


def _wordpiece(vocab: dict[str, int]) -> Tokenizer:
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return tok


def test_tokenizer_of_another_vocabulary_size(ner_bundle, tmp_path):
    bundle = copy(ner_bundle, tmp_path)
    _wordpiece({t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello"])}).save(
        str(bundle / "tokenizer.json"))
    relist(bundle, "tokenizer.json")
    with pytest.raises(BundleError, match="'tokenizer.vocab_size' is 30522 but tokenizer.json holds 5 tokens"):
        runtime.load(bundle)


def forget_metadata(manifest: dict) -> None:
    """Drop the record of what the TFLite files embed (labels, vocabulary size): it would disagree first."""
    for artifact in manifest["artifacts"]:
        (artifact.get("details") or {}).pop("metadata", None)


def test_tokenizer_larger_than_the_model_is_caught_by_the_model_check(ner_bundle, tmp_path):
    """Even if the manifest agrees with the tokenizer, ids past the embedding table are caught at load,
    by running the model once, instead of failing inside the backend on the first unlucky text."""
    bundle = copy(ner_bundle, tmp_path)
    tok = Tokenizer.from_file(str(bundle / "tokenizer.json"))
    tok.add_tokens(["brandnewtoken"])
    tok.save(str(bundle / "tokenizer.json"))
    relist(bundle, "tokenizer.json")
    with open(bundle / "vocab.txt", "a", encoding="utf-8") as f:
        f.write("brandnewtoken\n")
    relist(bundle, "vocab.txt")
    # no model_vocab_size: the manifest's own word-table size would refuse it before the model runs
    def larger(m):
        m["tokenizer"]["vocab_size"] = 30523
        m.pop("model_vocab_size")
        forget_metadata(m)
    edit_manifest(bundle, larger)
    with pytest.raises(ModelError, match="rejects token id 30522: the tokenizer and the model do not belong"):
        runtime.load(bundle, backend="onnx")
    # a TFLite file packs the vocabulary it was converted with: that differs first
    with pytest.raises(ModelError, match="model.tflite was converted with another vocabulary than the bundle's"):
        runtime.load(bundle, backend="tflite")


def test_labels_that_do_not_match_the_model(ner_bundle, tmp_path):
    bundle = copy(ner_bundle, tmp_path)
    (bundle / "labels.txt").write_text("O\nB-PER\nI-PER\n", encoding="utf-8")
    relist(bundle, "labels.txt")  # manifest and files agree (and declare no logits shape): the model refuses
    def fewer(m):
        m["labels"] = ["O", "B-PER", "I-PER"]
        m.pop("outputs")
        forget_metadata(m)
    edit_manifest(bundle, fewer)
    with pytest.raises(ModelError, match=r"shape \[1, 3, 9\], but a ner model with 3 labels"):
        runtime.load(bundle)


def _artifact(recipe: str, passed: bool = True) -> dict:
    backend, precision = recipe.split(":")
    return {"recipe": recipe, "backend": backend, "precision": precision, "file": f"{recipe}.bin",
            "verification": {"passed": passed}}


@pytest.mark.parametrize("recipes, backend, precision, chosen", [
    (["onnx:fp32", "onnx:int8-static", "tflite:fp32"], "auto", None, "onnx:int8-static"),  # --int8 auto shipped static
    (["onnx:fp32", "onnx:int8-static", "onnx:int8-dynamic"], "auto", None, "onnx:int8-dynamic"),
    (["tflite:fp32", "tflite:fp16", "onnx:fp32"], "tflite", None, "tflite:fp16"),
    (["coreml:fp32", "tflite:fp32", "onnx:int8-dynamic"], "auto", "fp32", "tflite:fp32"),  # unknown backends ignored
    (["onnx:fp32", "onnx:int8-dynamic!"], "auto", None, "onnx:fp32"),  # "!": failed verification, never chosen
])
def test_artifact_choice_rule(tmp_path, monkeypatch, recipes, backend, precision, chosen):
    monkeypatch.setattr(runtime_bundle, "backend_installed", lambda name: True)
    artifacts = [_artifact(r.rstrip("!"), passed=not r.endswith("!")) for r in recipes]
    bundle = runtime.Bundle(tmp_path, {"task": "classification", "labels": ["a", "b"], "max_sequence_length": 8,
                                       "inputs": [{"name": "input_ids"}], "tokenizer": {}, "artifacts": artifacts})
    assert bundle.select(backend, precision=precision).recipe == chosen
