"""The export cache (POCKETBERT_EXPORT_CACHE, which the suite sets): an equal export is served from the cache, and
anything that changes what the exporter sees (a weight, a buffer, a plain attribute, the forward code, the attention
implementation, the example inputs, the settings) is a different key."""

from __future__ import annotations

import copy

import pytest
import torch

from pocketbert.converter.backends import export_cache
from pocketbert.converter.backends.onnx import _export_onnx
from pocketbert.converter.pipeline import convert
from pocketbert.runtime.bundle import read_manifest

from .conftest import export_spec


@pytest.fixture(scope="module")
def spec(checkpoints):
    return export_spec(checkpoints["bert"]["classification"])[1]


def _example(spec, text="a film worth seeing , twice"):
    batch = spec.make_batches([text], pad_to=16)[0]
    return {"seq_16": {n: batch[n] for n in spec.input_names}}


def _key(model, example, settings="tflite"):
    return export_cache.key(model, settings, example)


def test_equal_inputs_are_one_key_and_every_change_the_exporter_sees_is_another(spec):
    model, example = spec.model, _example(spec)
    reference = _key(model, example)
    assert _key(copy.deepcopy(model), example) == reference

    changed = {}
    weight = copy.deepcopy(model)
    with torch.no_grad():
        next(weight.parameters()).view(-1)[0] += 1e-3
    changed["a weight"] = _key(weight, example)
    buffer = copy.deepcopy(model)
    name, tensor = next((n, b) for n, b in buffer.named_buffers() if b.numel())
    tensor.view(-1)[0] += 1
    changed[f"the buffer {name}"] = _key(buffer, example)
    attribute = copy.deepcopy(model)
    attribute.input_names = list(reversed(attribute.input_names))
    changed["a plain attribute"] = _key(attribute, example)
    code = copy.deepcopy(model)
    code.forward = lambda *args: None  # an instance's own forward: other code
    changed["the forward code"] = _key(code, example)
    attention = copy.deepcopy(model)
    attention.model.set_attn_implementation("eager" if model.model.config._attn_implementation != "eager" else "sdpa")
    changed["the attention implementation"] = _key(attention, example)
    changed["the example's values"] = _key(model, _example(spec, "another sentence"))
    changed["the settings"] = _key(model, example, settings="onnx")
    assert reference not in changed.values() and len(set(changed.values())) == len(changed), changed


def test_an_equal_export_is_served_from_the_cache_only_when_it_is_set(spec, tmp_path, monkeypatch):
    example = _example(spec)["seq_16"]
    calls = []

    def export(dest):
        def run():
            calls.append(dest.name)
            _export_onnx(spec.model, example, spec.input_names, output_name="logits", dest=dest)
        return run

    monkeypatch.delenv(export_cache.ENV, raising=False)
    a = tmp_path / "a.onnx"
    assert not export_cache.cached(export(a), a, kind="onnx", model=spec.model, settings="s", examples={"x": example})
    monkeypatch.setenv(export_cache.ENV, str(tmp_path / "cache"))
    for name in ("b.onnx", "c.onnx"):
        export_cache.cached(export(tmp_path / name), tmp_path / name, kind="onnx", model=spec.model, settings="s",
                            examples={"x": example})
    assert calls == ["a.onnx", "b.onnx"]  # c.onnx came from the cache
    assert (tmp_path / "c.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes()
    assert [p.name.startswith(".") for p in (tmp_path / "cache").iterdir()] == [False]  # one entry, nothing partial


def test_a_bundle_converted_through_the_cache_equals_one_converted_without_it(checkpoints, options, tmp_path,
                                                                             monkeypatch):
    checkpoint = checkpoints["distilbert"]["classification"]
    real, exports = torch.onnx.export, []
    monkeypatch.setattr(torch.onnx, "export", lambda *a, **k: exports.append(1) or real(*a, **k))
    bundles, counts = [], []
    for name, cache in (("first", tmp_path / "cache"), ("second", tmp_path / "cache"), ("uncached", None)):
        if cache:
            monkeypatch.setenv(export_cache.ENV, str(cache))
        else:
            monkeypatch.delenv(export_cache.ENV)
        bundles.append(convert(options(checkpoint, out=tmp_path / name, formats="onnx", opts="int8")).bundle)
        counts.append(len(exports) - sum(counts))
    assert counts[0] > 0 and counts[1] == 0 and counts[2] == counts[0]  # the second conversion exported nothing
    manifests = [read_manifest(bundle) for bundle in bundles]
    models = [{name: entry["sha256"] for name, entry in manifest["files"].items() if name.endswith(".onnx")}
              for manifest in manifests]
    assert len(models[0]) == 2 and models[1] == models[0] and models[2] == models[0]  # fp32 and int8, byte for byte
    for manifest in manifests[1:]:
        for got, want in zip(manifest["artifacts"], manifests[0]["artifacts"], strict=True):
            assert got["recipe"] == want["recipe"] and got["verification"] == want["verification"]


# --- a file of several signatures, kept one signature at a time --------------------------------------------------

def _fake_export(calls):
    def export(examples, dest):
        calls.append(list(examples))
        dest.write_bytes("|".join(examples).encode())
    return export


def test_signatures_are_kept_one_at_a_time_and_only_the_missing_ones_exported(spec, tmp_path, monkeypatch):
    monkeypatch.setenv(export_cache.ENV, str(tmp_path / "cache"))
    model, examples = spec.model, {f"seq_{n}": {"x": torch.full((1, n), 7).numpy()} for n in (16, 32, 64)}
    calls, merges = [], []

    def merge(files):
        merges.append(list(files))
        return b"+".join(files.values())

    def run(*names):
        dest = tmp_path / "model.tflite"
        hit = export_cache.cached_signatures(_fake_export(calls), dest, kind="fake", model=model, settings="s",
                                             examples={n: examples[n] for n in names}, merge=merge)
        return hit, dest.read_bytes()

    assert run("seq_16", "seq_32") == (False, b"seq_16+seq_32")
    assert run("seq_32", "seq_64") == (False, b"seq_32+seq_64")
    assert run("seq_16", "seq_32", "seq_64") == (True, b"seq_16+seq_32+seq_64")
    assert calls == [["seq_16"], ["seq_32"], ["seq_64"]]  # each bucket traced once, whatever file asked for it
    assert merges[-1] == ["seq_16", "seq_32", "seq_64"]  # in the file's order
    assert run("seq_64") == (True, b"seq_64") and len(merges) == 3  # one signature: the entry itself
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "model.tflite"]  # no part left beside it


def test_signatures_that_do_not_merge_are_exported_as_one_file(spec, tmp_path, monkeypatch):
    calls = []
    examples = {f"seq_{n}": {"x": torch.full((1, n), 7).numpy()} for n in (16, 32)}
    for cache in (None, tmp_path / "cache"):
        if cache:
            monkeypatch.setenv(export_cache.ENV, str(cache))
        else:
            monkeypatch.delenv(export_cache.ENV, raising=False)
        hit = export_cache.cached_signatures(_fake_export(calls), tmp_path / "m", kind="fake", model=spec.model,
                                             settings="s", examples=examples, merge=lambda files: None)
        assert not hit and (tmp_path / "m").read_bytes() == b"seq_16|seq_32"
    assert calls == [["seq_16", "seq_32"], ["seq_16"], ["seq_32"], ["seq_16", "seq_32"]]

