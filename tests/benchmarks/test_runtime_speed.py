"""The runtime speed benchmark names what sets an int8 file's speed: the Linear layers it kept in float."""

from pathlib import Path

from pocketbert.benchmarks.runtime_speed import label
from pocketbert.runtime.bundle import Artifact


def _artifact(details: dict) -> Artifact:
    return Artifact(recipe="tflite:int8-dynamic", backend="tflite", precision="int8-dynamic",
                    file="model.tflite", path=Path("model.tflite"), details=details, passed=True)


def test_a_file_with_linears_in_float_says_how_many():
    fallback = {"roles": ["/layer/*/output/dense"], "linears_in_float": 6, "linears": 37}
    assert label("ner", _artifact({"float_fallback": fallback})) == \
        "ner tflite:int8-dynamic (6 of 37 Linear in float)"


def test_an_all_int8_or_float_file_is_named_by_its_recipe_alone():
    assert label("classification", _artifact({"float_fallback": {"roles": [], "linears_in_float": 0,
                                                                  "linears": 37}})) == \
        "classification tflite:int8-dynamic"
    assert label("classification", _artifact({})) == "classification tflite:int8-dynamic"
