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
    if choice.within_noise(info["figures"]):  # a near thing is measured again (test_a_near_thing_…)
        assert again["rule"] == "measured" and len(again["measurements"]) == 2
    else:
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


def _counting(figures: list[dict]):
    """A timer giving ``figures[i]`` at its i-th call (the last one after that), and its calls."""
    calls = []

    def timer(arts):
        calls.append(len(arts))
        return dict(figures[min(len(calls), len(figures)) - 1])
    return timer, calls


def test_a_near_thing_is_measured_again_at_later_loads(cls_bundle, measuring):
    """Two fastest figures within NOISE (as a loaded machine can make them): the next load measures again, and the
    choice follows the medians; once they are clear apart, the choice stands; near things stop at MAX_MEASUREMENTS."""
    bundle = runtime.Bundle.open(cls_bundle)
    names = [a.recipe for a in bundle.artifacts]
    loaded = {names[0]: 10.0, names[1]: 10.5, **{n: 50.0 for n in names[2:]}}  # first load: a near thing
    quiet = {names[0]: 20.0, names[1]: 10.0, **{n: 50.0 for n in names[2:]}}
    timer, calls = _counting([loaded, quiet])
    first = choice.choose(bundle, None, 1, timer=timer)[1]
    assert first.recipe == names[0] and choice.within_noise(first.figures)
    second = choice.choose(bundle, None, 1, timer=timer)[1]
    assert second.rule == "measured" and second.recipe == names[1] and "median of 2 measurements" in second.reason
    assert second.figures[names[1]] == 10.25 and len(second.measurements) == 2
    third = choice.choose(bundle, None, 1, timer=timer)[1]
    assert third.rule == "cached" and third.recipe == names[1] and len(calls) == 2

    measuring_again = _counting([loaded])  # a near thing every time: measured MAX_MEASUREMENTS times, then it stands
    for path in measuring.iterdir():
        path.unlink()
    rules = [choice.choose(bundle, None, 1, timer=measuring_again[0])[1].rule
             for _ in range(choice.MAX_MEASUREMENTS + 1)]
    assert rules == ["measured"] * choice.MAX_MEASUREMENTS + ["cached"]


def test_a_clear_choice_stays_cached_unless_asked_to_measure_again(cls_bundle, measuring, monkeypatch):
    bundle = runtime.Bundle.open(cls_bundle)
    names = [a.recipe for a in bundle.artifacts]
    clear = {n: 10.0 * (i + 1) for i, n in enumerate(names)}
    timer, calls = _counting([clear, {**clear, names[0]: 90.0}])
    assert choice.choose(bundle, None, 1, timer=timer)[1].rule == "measured"
    assert choice.choose(bundle, None, 1, timer=timer)[1].rule == "cached" and len(calls) == 1
    monkeypatch.setenv(choice.ENV, "measure")
    asked = choice.choose(bundle, None, 1, timer=timer)[1]
    assert asked.rule == "measured" and len(calls) == 2 and len(asked.measurements) == 1  # a fresh history
    assert asked.recipe == names[1]
