"""TFLite model metadata: labels, vocabulary and tokenizer embedded, read back, and run on raw text by MediaPipe.

Bundles come from the real converter, which embeds the metadata into every .tflite it writes; tests
of ``embed`` itself start from the backend's raw export (no metadata yet).  MediaPipe Tasks
(mediapipe 1.2.2) is the real consumer: its TextClassifier must classify raw strings with our labels
and exactly our logits, and refuse what ``mediapipe_blockers`` says it cannot run.
"""

from __future__ import annotations

import json
import shutil
import stat
import zipfile
from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from ai_edge_litert.interpreter import Interpreter
from transformers import AutoTokenizer

from pocketbert.converter.backends import get, tflite_metadata
from pocketbert.converter.backends.tflite_recipes import quantize_file
from pocketbert.converter.pipeline import ConvertOptions, convert

from .conftest import DATA, export_spec
from .runtime.conftest import MINILM_BUCKET

LONG = " ".join(["the movie was long and the plot was thin but the actors tried hard"] * 5)  # > MINILM_BUCKET tokens
# Capitals, punctuation, a contraction, CJK and truncation: MediaPipe's tokenizer must agree on all.
SENTENCES = ["A gripping, beautifully acted film.", "Dull.", "It's NOT bad -- really (7/10)!", "東京の映画", LONG]


@pytest.fixture(scope="module")
def bundles(tmp_path_factory, checkpoints):
    """Converted bundles, built once: embedding happens on copies (see ``_embedded``)."""
    root = tmp_path_factory.mktemp("metadata-bundles")

    def build(name, checkpoint, **kwargs):
        kwargs.setdefault("formats", None if "recipes" in kwargs else "tflite")
        kwargs.setdefault("int8_target_agreement", 0.0)  # int8 accuracy is not under test here: no ladder
        options = ConvertOptions(checkpoint=str(checkpoint), out=root / name, verify_samples=100,
                                 calibration_samples=32, measure_latency=False, data_dir=DATA, **kwargs)
        return convert(options).bundle

    return {
        # The real MiniLM (trained WordPiece vocabulary) with one bucket: what MediaPipe can run.  The runtime tests'
        # bucket, so that one export of the real model serves both.
        "minilm": build("minilm", "minilm", buckets=[MINILM_BUCKET], recipes="tflite:fp16,tflite:int8-dynamic"),
        "bert-2buckets": build("bert2", checkpoints["bert"]["classification"], buckets=[32, 64]),
        # Full-integer int8: its verification bar is not under test here either.
        "bert-static": build("bert-static", checkpoints["bert"]["classification"], buckets=[32], opts="int8",
                             int8="static", int8_min_cosine=0.0, int8_min_agreement=0.0),
        "distilbert": build("distilbert", checkpoints["distilbert"]["classification"], buckets=[32]),
        "ner": build("ner", checkpoints["bert"]["ner"], buckets=[32]),
    }


def _manifest(bundle: Path) -> dict:
    return json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))


def test_the_real_minilm_converts_to_tflite_within_its_bars(bundles):
    """Real weights (not a tiny random model) through TFLite: float as PyTorch, plain int8 close to it."""
    by_recipe = {a["recipe"]: a for a in _manifest(bundles["minilm"])["artifacts"]}
    assert set(by_recipe) == {"tflite:fp32", "tflite:fp16", "tflite:int8-dynamic"}
    assert by_recipe["tflite:fp32"]["verification"]["fixed_inputs"]["max_abs"] <= 1e-4
    assert by_recipe["tflite:fp32"]["verification"]["real_sentences"]["max_abs"] <= 1e-4
    assert by_recipe["tflite:int8-dynamic"]["verification"]["real_sentences"]["cosine"] >= 0.99


def _embed(bundle: Path, model: Path, **overrides) -> dict:
    """``embed`` with the bundle's own labels, vocabulary and settings, as the pipeline calls it."""
    manifest = _manifest(bundle)
    kwargs = {"task": manifest["task"], "labels": manifest["labels"], "vocab_file": bundle / "vocab.txt",
              "do_lower_case": manifest["tokenizer"]["do_lower_case"],
              "input_names": [i["name"] for i in manifest["inputs"]], "name": "PocketBERT test model",
              "description": "test bundle", "version": "1"}
    return tflite_metadata.embed(model, **{**kwargs, **overrides})


def _embedded(bundle: Path, tmp_path: Path, precision: str = "fp32", **overrides) -> tuple[Path, dict]:
    name = "model.tflite" if precision == "fp32" else f"model.{precision}.tflite"
    model = tmp_path / name
    shutil.copy2(bundle / name, model)
    return model, _embed(bundle, model, **overrides)


def _logits(model: Path, bundle: Path, texts: list[str]) -> dict[str, np.ndarray]:
    """Signature -> logits [texts, …] through the LiteRT Interpreter, inputs from the HF tokenizer."""
    tokenizer = AutoTokenizer.from_pretrained(bundle)
    interpreter = Interpreter(model_path=str(model))
    out = {}
    for key in interpreter.get_signature_list():
        runner = interpreter.get_signature_runner(key)
        length = int(key.removeprefix("seq_"))
        rows = []
        for text in texts:
            enc = tokenizer([text], padding="max_length", max_length=length, truncation=True, return_tensors="np")
            rows.append(runner(**{n: enc[n].astype(np.int32) for n in runner.get_input_details()})["logits"][0])
        out[key] = np.stack(rows)
    return out


def _buffers(path: Path) -> list[tuple[int, int, int]]:
    """(inline bytes, offset, size) per model buffer."""
    model = schema.Model.GetRootAs(path.read_bytes(), 0)
    return [(model.Buffers(i).DataLength(), model.Buffers(i).Offset(), model.Buffers(i).Size())
            for i in range(model.BuffersLength())]


def _metadata_entries(path: Path) -> dict[str, bytes]:
    raw = path.read_bytes()
    model = schema.Model.GetRootAs(raw, 0)
    out = {}
    for i in range(model.MetadataLength()):
        entry = model.Metadata(i)
        buffer = model.Buffers(entry.Buffer())
        out[entry.Name().decode()] = buffer.DataAsNumpy().tobytes() if buffer.DataLength() else b""
    return out


@pytest.mark.parametrize("name", ["bert-2buckets", "ner"])
def test_embed_keeps_the_model_and_reads_back(name, bundles, checkpoints, tmp_path):
    bundle = bundles[name]
    manifest = _manifest(bundle)
    # The backend's export before the pipeline embeds anything: litert-torch's own metadata only.
    raw = tmp_path / "raw" / "model.tflite"
    raw.parent.mkdir()
    checkpoint = checkpoints["bert"]["ner" if name == "ner" else "classification"]
    buckets = [a for a in manifest["artifacts"] if a["recipe"] == "tflite:fp32"][0]["details"]["buckets"]
    get("tflite").export(export_spec(checkpoint, buckets)[1], raw)
    before = _logits(raw, bundle, SENTENCES[:2])
    model = tmp_path / "model.tflite"
    shutil.copy2(raw, model)
    summary = _embed(bundle, model)

    # Same signatures, bit-identical logits: the metadata and the zip change nothing the interpreter runs.
    after = _logits(model, bundle, SENTENCES[:2])
    assert list(after) == list(before)
    for key in before:
        np.testing.assert_array_equal(after[key], before[key])
    original = _metadata_entries(raw)
    entries = _metadata_entries(model)
    assert "TFLITE_METADATA" not in original and set(entries) == set(original) | {"TFLITE_METADATA"}
    assert all(entries[k] == v for k, v in original.items())  # litert-torch's min_runtime_version etc. kept
    assert stat.S_IMODE(model.stat().st_mode) == stat.S_IMODE(raw.stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == [model.name, "raw"]  # the temp file was renamed
    # The pipeline's embedding of the same model: same metadata apart from name/description/version.
    assert tflite_metadata.read(bundle / "model.tflite")["labels"] == manifest["labels"]

    vocab = (bundle / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert summary["labels"] == manifest["labels"] and summary["vocab_size"] == len(vocab)
    assert summary["inputs"] == ["ids", "mask", "segment_ids"] and summary["outputs"] == ["logits"]
    assert summary["packed_files"] == ["labels.txt", "vocab.txt"] and summary["tokenizer"] == "BertTokenizer"
    assert summary["min_parser_version"] == "1.5.0" and summary["do_lower_case"] is True

    meta = tflite_metadata.read(model)
    assert meta["name"] == "PocketBERT test model" and meta["version"] == "1"
    assert meta["subgraph_metadata"] == 1 and meta["subgraph"]["name"] == "seq_32"
    assert meta["vocab_head"] == vocab[:5] and meta["labels"] == manifest["labels"]
    assert meta["tokenizer"]["vocab_file"][0] == {"name": "vocab.txt", "type": "VOCABULARY",
                                                  "description": "WordPiece vocabulary: line n is token id n"}
    (labels_file,) = meta["outputs"][0]["associated_files"]
    assert labels_file["name"] == "labels.txt" and labels_file["type"] == "TENSOR_AXIS_LABELS"
    settings = meta["custom"]["pocketbert"]
    assert settings["task"] == manifest["task"] and settings["signatures"] == list(before)
    assert settings["inputs"] == {"ids": "input_ids", "mask": "attention_mask", "segment_ids": "token_type_ids"}

    # Embedding again replaces the metadata and the zip, and gives the same bytes.
    first = model.read_bytes()
    _embed(bundle, model)
    assert model.read_bytes() == first


@pytest.mark.parametrize("name", ["bert-2buckets", "ner"])
def test_mediapipe_metadata_schema_reads_it(name, bundles, tmp_path):
    """Read with MediaPipe's generated schema code, independently of our writer's slot numbers."""
    # mediapipe 1.2.2's metadata.MetadataDisplayer cannot be imported (its wheel lacks
    # _pywrap_metadata_version); the displayer only wraps this generated code and zipfile.
    from mediapipe.tasks.metadata import metadata_schema_py_generated as fb
    from mediapipe.tasks.metadata import schema_py_generated as tfl
    bundle = bundles[name]
    model_path, _ = _embedded(bundle, tmp_path)
    raw = model_path.read_bytes()
    model = tfl.ModelT.InitFromObj(tfl.Model.GetRootAs(raw, 0))
    (entry,) = [m for m in model.metadata if m.name.decode() == "TFLITE_METADATA"]
    buf = bytes(model.buffers[entry.buffer].data)
    assert fb.ModelMetadata.ModelMetadataBufferHasIdentifier(buf, 0)
    meta = fb.ModelMetadataT.InitFromObj(fb.ModelMetadata.GetRootAs(buf, 0))
    assert meta.name.decode() == "PocketBERT test model" and meta.minParserVersion.decode() == "1.5.0"
    (subgraph,) = meta.subgraphMetadata
    assert [t.name.decode() for t in subgraph.inputTensorMetadata] == ["ids", "mask", "segment_ids"]
    assert all(t.content.contentPropertiesType == fb.ContentProperties.FeatureProperties
               for t in subgraph.inputTensorMetadata)
    (tokenizer,) = subgraph.inputProcessUnits
    assert tokenizer.optionsType == fb.ProcessUnitOptions.BertTokenizerOptions
    (vocab,) = tokenizer.options.vocabFile
    assert vocab.name.decode() == "vocab.txt" and vocab.type == fb.AssociatedFileType.VOCABULARY
    (output,) = subgraph.outputTensorMetadata
    (labels,) = output.associatedFiles
    assert output.name.decode() == "logits"
    assert labels.name.decode() == "labels.txt" and labels.type == fb.AssociatedFileType.TENSOR_AXIS_LABELS
    (custom,) = subgraph.customMetadata
    assert custom.name.decode() == "pocketbert"
    assert json.loads(bytes(custom.data))["do_lower_case"] is True
    with zipfile.ZipFile(model_path) as archive:
        assert all(i.compress_type == zipfile.ZIP_STORED for i in archive.infolist())  # readers mmap them
        assert archive.read("labels.txt").decode().splitlines() == _manifest(bundle)["labels"]
        assert archive.read("vocab.txt") == (bundle / "vocab.txt").read_bytes()


def test_embed_keeps_quantizer_external_buffers(bundles, checkpoints, tmp_path):
    # ai-edge-quantizer stores weights behind the flatbuffer (offset/size from the file start).
    bundle = bundles["bert-2buckets"]
    # the quantiser's own output (the backend then compacts it, moving such buffers inside)
    source = tmp_path / "raw" / "model.int8-dynamic.tflite"
    source.parent.mkdir()
    float_path = tmp_path / "raw" / "model.tflite"
    get("tflite")._convert(export_spec(checkpoints["bert"]["classification"], [32, 64])[1], float_path)
    quantize_file(float_path, source, "int8-dynamic", [])
    before = _buffers(source)
    assert sum(offset > 1 for _, offset, _ in before) > 10
    model = tmp_path / source.name
    shutil.copy2(source, model)
    summary = _embed(bundle, model)
    after = _buffers(model)
    assert len(after) == len(before) + 1  # plus the metadata buffer, inline
    assert [(n, size) for n, _, size in after[:-1]] == [(n, size) for n, _, size in before]
    raw, original = model.read_bytes(), source.read_bytes()
    for (_, new, size), (_, old, _) in zip(after, before):
        if old > 1:
            assert new % 16 == 0 and raw[new:new + size] == original[old:old + size]
    np.testing.assert_array_equal(_logits(model, bundle, SENTENCES[:2])["seq_64"],
                                  _logits(source, bundle, SENTENCES[:2])["seq_64"])
    (blocker,) = summary["mediapipe_blockers"]
    assert blocker.startswith("2 subgraphs")  # two buckets; nothing else stands in MediaPipe's way


def _classifier(model: Path):
    from mediapipe.tasks.python import text
    from mediapipe.tasks.python.core.base_options import BaseOptions

    options = text.TextClassifierOptions(base_options=BaseOptions(model_asset_path=str(model)))
    return text.TextClassifier.create_from_options(options)


def _mediapipe_scores(model: Path, texts: list[str], labels: list[str]) -> np.ndarray:
    """MediaPipe's category scores per text, in logit order; checks the categories are our labels."""
    rows = []
    with _classifier(model) as classifier:
        for text in texts:
            (head,) = classifier.classify(text).classifications
            assert head.head_name == "logits" and head.head_index == 0
            scores = [c.score for c in head.categories]
            assert scores == sorted(scores, reverse=True)  # sorted best first
            by_index = sorted(head.categories, key=lambda c: c.index)
            assert [c.category_name for c in by_index] == labels
            rows.append([c.score for c in by_index])
    return np.array(rows)


@pytest.mark.parametrize("precision", ["fp32", "fp16", "int8-dynamic"])
def test_mediapipe_text_classifier_runs_raw_text(precision, bundles, tmp_path):
    # The converter's own file, as it ships: the pipeline embedded the metadata.
    bundle = bundles["minilm"]
    manifest = _manifest(bundle)
    labels = manifest["labels"]
    (artifact,) = [a for a in manifest["artifacts"] if a["recipe"] == f"tflite:{precision}"]
    model = bundle / artifact["file"]
    assert artifact["details"]["metadata"]["mediapipe_blockers"] == []
    ours = _logits(model, bundle, SENTENCES)[f"seq_{MINILM_BUCKET}"]
    # The fresh head's logits are ~1e-2 and differ between these sentences by far more than the
    # tolerance, so agreement means MediaPipe fed the same tokens (and cut LONG at the bucket like we do).
    spread = min(np.abs(ours[i] - ours[j]).max() for i in range(len(ours)) for j in range(i))
    assert spread > 1e-4
    # Scores are the raw logits: no softmax (no score calibration in the metadata).
    np.testing.assert_allclose(_mediapipe_scores(model, SENTENCES, labels), ours, rtol=0, atol=1e-6)


def test_mediapipe_tokenizer_does_not_strip_accents(bundles, tmp_path):
    """Known difference: MediaPipe lower-cases ASCII only and keeps accents; Hugging Face strips them."""
    bundle = bundles["minilm"]
    model, _ = _embedded(bundle, tmp_path)
    texts = ["Café naïve résumé", "ÉCOLE"]
    got = _mediapipe_scores(model, texts, _manifest(bundle)["labels"])
    assert np.abs(got - _logits(model, bundle, texts)[f"seq_{MINILM_BUCKET}"]).max(axis=1).min() > 1e-3


REFUSALS = {
    "bert-2buckets": ("2 subgraphs", "assumed to have a single subgraph"),
    "distilbert": ("2 inputs", "exactly 3 or 1 input tensors, but found 2"),
    "bert-static": ("int8 logits", "UINT8 or FLOAT32 or BOOL, found INT8"),
    "ner": ("task ner", r"num_classes == GetLabelMap\(cc\).size\(\) \(288 vs. 9\)"),  # 32 tokens x 9 labels
    "no-metadata": ("no TFLITE_METADATA", "No metadata or input process unit found"),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_mediapipe_refuses_what_the_blockers_name(case, bundles, checkpoints, tmp_path):
    bundle = bundles["bert-static" if case == "no-metadata" else case]
    precision = "int8-static" if case == "bert-static" else "fp32"
    if case == "no-metadata":  # the backend's export alone, before the pipeline embeds metadata
        model = tmp_path / "model.tflite"
        get("tflite").export(export_spec(checkpoints["bert"]["classification"])[1], model)
        blockers = tflite_metadata.mediapipe_blockers(model)
    else:
        model, summary = _embedded(bundle, tmp_path, precision)
        assert summary["labels"] == _manifest(bundle)["labels"]  # the metadata is written all the same
        blockers = summary["mediapipe_blockers"]
    expected, message = REFUSALS[case]
    assert len(blockers) == 1 and blockers[0].startswith(expected)
    if case != "ner":
        with pytest.raises(ValueError, match=message):
            _classifier(model)
        return
    classifier = _classifier(model)  # NER logits fail at run time, in the label lookup
    with pytest.raises(RuntimeError, match=message):
        classifier.classify("A gripping, beautifully acted film.")
    # mediapipe 1.2.2: after a failed run close() raises, and a later close() (e.g. from __del__) hangs.
    with pytest.raises(RuntimeError):
        classifier.close()
    classifier._classifier_handle = None


def test_cased_tokenizer_is_flagged(bundles, tmp_path):
    model, summary = _embedded(bundles["minilm"], tmp_path, do_lower_case=False)
    assert summary["do_lower_case"] is False
    assert summary["mediapipe_blockers"] == ["cased tokenizer: MediaPipe lower-cases all input text before WordPiece"]


def test_quantizing_an_embedded_model_loses_the_metadata_so_embed_after(bundles, tmp_path):
    """ai-edge-quantizer accepts a model with metadata, but moves TFLITE_METADATA behind the
    flatbuffer and drops the zip: readers (MediaPipe) cannot use it, so the pipeline embeds after
    quantizing.  mediapipe 1.2.2 crashes (SIGSEGV) on that output, so it is never given it here."""
    from ai_edge_quantizer import quantizer, recipe

    bundle = bundles["bert-static"]  # its fp32 model: one bucket, tiny
    embedded, _ = _embedded(bundle, tmp_path)
    quantized = tmp_path / "model.int8-dynamic.tflite"
    result = quantizer.Quantizer(str(embedded), recipe.dynamic_wi8_afp32()).quantize(enable_progress_report=False)
    result.export_model(str(quantized), overwrite=True)
    assert tflite_metadata.read(quantized)["min_parser_version"] == "1.5.0"  # still there, but:
    assert tflite_metadata.packed_files(quantized) == {}
    (blocker,) = tflite_metadata.mediapipe_blockers(quantized)
    assert "outside the flatbuffer" in blocker

    summary = _embed(bundle, quantized)
    assert summary["mediapipe_blockers"] == [] and summary["packed_files"] == ["labels.txt", "vocab.txt"]
    np.testing.assert_allclose(_mediapipe_scores(quantized, SENTENCES[:2], _manifest(bundle)["labels"]),
                               _logits(quantized, bundle, SENTENCES[:2])["seq_32"], rtol=0, atol=1e-6)


@pytest.mark.parametrize("name", ["minilm", "bert-static", "ner"])
def test_every_tflite_artifact_of_a_bundle_carries_its_metadata(name, bundles):
    """The pipeline embeds after quantising, into every .tflite, and the manifest hashes the result."""
    import hashlib

    bundle = bundles[name]
    manifest = _manifest(bundle)
    vocab = (bundle / "vocab.txt").read_text(encoding="utf-8").splitlines()
    tflite = [a for a in manifest["artifacts"] if a["backend"] == "tflite"]
    assert len(tflite) == {"minilm": 3, "bert-static": 2, "ner": 1}[name]
    for artifact in tflite:
        path = bundle / artifact["file"]
        embedded = tflite_metadata.read(path)
        assert embedded["labels"] == manifest["labels"] == artifact["details"]["metadata"]["labels"]
        assert embedded["vocab_size"] == len(vocab) == manifest["tokenizer"]["vocab_size"]
        assert tflite_metadata.packed_files(path)["vocab.txt"] == (bundle / "vocab.txt").read_bytes()
        assert manifest["files"][artifact["file"]]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
