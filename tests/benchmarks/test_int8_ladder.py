"""The MiniLM int8 ladder's bars (python -m pocketbert.benchmarks.int8_ladder): every bar is checked, and a
manifest that misses one is named.  The real run (minutes) is the benchmark's; the ladder's mechanics are
tested on tiny models in tests/test_convert.py."""

from __future__ import annotations

import copy

import pytest

from pocketbert.benchmarks import int8_ladder


def _manifest() -> dict:
    """The shape of a passing MiniLM --int8 all manifest (figures as a real run gives them)."""
    float_check = {"fixed_inputs": {"max_abs": 3e-6}, "real_sentences": {"max_abs": 5e-6, "cosine": 1.0,
                                                                         "top1_agreement": 1.0}}
    dynamic = {"verification": {"passed": True, "real_sentences": {"cosine": 0.996, "top1_agreement": 0.98}},
               "details": {"unsmoothed_attempt": {"cosine": 0.99, "top1_agreement": 0.94},
                           "smoothing": {"method": "smoothquant"},
                           "float_fallback": {"search": [{"meets_bar": True}], "accepted": True, "roles": []}}}
    static = {"verification": {"passed": True, "real_sentences": {"cosine": 0.995, "top1_agreement": 0.97}}}
    return {"verification": {"samples": 872, "texts": "glue/SST-2/dev.tsv"},
            "artifacts": [{"recipe": "onnx:fp32", "verification": float_check}, dynamic, static],
            "source": {"builtin": "minilm", "head_initialized": True, "parameters": 22_713_216}}


def test_a_passing_run_passes():
    assert int8_ladder.check(_manifest()) == []


@pytest.mark.parametrize("path, value, named", [
    (("verification", "samples"), 200, "not all of SST-2 dev"),
    (("artifacts", 0, "verification", "real_sentences", "max_abs"), 2e-4, "fp32 differs"),
    (("artifacts", 0, "verification", "fixed_inputs", "max_abs"), 2e-4, "fixed inputs"),
    (("artifacts", 1, "verification", "real_sentences", "cosine"), 0.98, "cosine is below 0.99"),
    (("artifacts", 1, "details", "unsmoothed_attempt"), {"cosine": 0.999, "top1_agreement": 0.999},
     "ladder was not exercised"),
    (("artifacts", 1, "details", "smoothing", "method"), None, "did not smooth"),
    (("artifacts", 1, "details", "float_fallback", "accepted"), False, "shipped no file"),
    (("artifacts", 2, "verification", "real_sentences", "top1_agreement"), 0.9, "int8-static misses"),
    (("source", "builtin"), None, "not the built-in MiniLM"),
    (("source", "parameters"), 110_000_000, "parameters"),
])
def test_each_missed_bar_is_named(path, value, named):
    manifest = copy.deepcopy(_manifest())
    target = manifest
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    failures = int8_ladder.check(manifest)
    assert len(failures) == 1 and named in failures[0], failures


def test_the_tflite_bars():
    fp32 = {"verification": {"fixed_inputs": {"max_abs": 2e-6}}}
    dynamic = {"verification": {"real_sentences": {"cosine": 0.995}}}
    assert int8_ladder.check_tflite({"artifacts": [fp32, dynamic]}) == []
    dynamic["verification"]["real_sentences"]["cosine"] = 0.97
    fp32["verification"]["fixed_inputs"]["max_abs"] = 1e-3
    assert len(int8_ladder.check_tflite({"artifacts": [fp32, dynamic]})) == 2
