"""``backend="auto"``: measured per machine, cached, explained, overridden by pinning.

Which artifact wins depends on the CPU, so no test here asserts a winner of a real measurement: the
measured choice must be one of the measured artifacts, and the rule itself is checked with injected
figures (TFLite faster here, ONNX faster there)."""

from __future__ import annotations

import json

import pytest

from pocketbert import runtime
from pocketbert.runtime import choice


@pytest.fixture
def measuring(monkeypatch, tmp_path):
    """Measurement on (the test session defaults to the deterministic rule), a cache of the test's own."""
    monkeypatch.delenv(choice.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "pocketbert" / "choices"


def test_auto_measures_every_candidate_caches_and_explains(cls_bundle, measuring):
    pipe = runtime.load(cls_bundle, threads=1)
    info = pipe.info()["choice"]
    recipes = {a["recipe"] for a in json.loads((cls_bundle / "manifest.json").read_text())["artifacts"]}
    assert info["rule"] == "measured" and set(info["figures"]) == recipes
    assert info["recipe"] == pipe.artifact.recipe == min(info["figures"], key=info["figures"].get)
    assert all(ms > 0 for ms in info["figures"].values()) and "fastest of 4 artifacts" in info["reason"]
    cached = json.loads((measuring / next(p.name for p in measuring.iterdir())).read_text())
    assert cached["recipe"] == info["recipe"] and info["cache_file"]
    again = runtime.load(cls_bundle, threads=1).info()["choice"]
    assert again["rule"] == "cached" and again["recipe"] == info["recipe"]
    # another thread count is another measurement (its own cache entry)
    runtime.load(cls_bundle, threads=2)
    assert len(list(measuring.iterdir())) == 2
    assert pipe(["a fine film"])[0]["label"] in pipe.labels


@pytest.mark.parametrize("fastest", ["tflite:int8-dynamic", "onnx:fp32"])
def test_the_measured_fastest_artifact_wins(cls_bundle, measuring, fastest):
    bundle = runtime.Bundle.open(cls_bundle)
    figures = {a.recipe: (1.0 if a.recipe == fastest else 5.0) for a in bundle.artifacts}
    artifact, why = choice.choose(bundle, None, 1, timer=lambda arts: {a.recipe: figures[a.recipe] for a in arts})
    assert artifact.recipe == fastest and why.rule == "measured" and "5.00x ahead" in why.reason


def test_precision_constrains_the_candidates(cls_bundle, measuring):
    info = runtime.load(cls_bundle, precision="fp32", threads=1).info()["choice"]
    assert set(info["figures"]) == {"onnx:fp32", "tflite:fp32"} and info["recipe"].endswith(":fp32")


def test_pinning_overrides_and_does_not_measure(cls_bundle, measuring):
    for kwargs, recipe in [({"backend": "tflite"}, "tflite:int8-dynamic"), ({"recipe": "onnx:fp32"}, "onnx:fp32"),
                           ({"backend": "onnx", "precision": "fp32"}, "onnx:fp32")]:
        pipe = runtime.load(cls_bundle, **kwargs)
        assert pipe.artifact.recipe == recipe and pipe.info()["choice"]["rule"] == "pinned"
    assert not measuring.exists()


def test_static_mode_is_deterministic(cls_bundle, measuring, monkeypatch):
    assert runtime.load(cls_bundle, measure=False).info()["choice"]["rule"] == "fixed rule"
    monkeypatch.setenv(choice.ENV, "static")
    pipe = runtime.load(cls_bundle)
    assert pipe.artifact.recipe == "onnx:int8-dynamic" and pipe.info()["choice"]["rule"] == "fixed rule"
    assert not measuring.exists()


def test_damaged_cache_is_measured_again(cls_bundle, measuring):
    runtime.load(cls_bundle, threads=1)
    entry = next(measuring.iterdir())
    entry.write_text('{"recipe": "coreml:fp32"}')
    assert runtime.load(cls_bundle, threads=1).info()["choice"]["rule"] == "measured"
