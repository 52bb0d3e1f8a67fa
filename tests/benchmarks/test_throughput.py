"""benchmarks throughput: real SST-2 sentences through the runtime, natural lengths vs padded to 128."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pocketbert.benchmarks import report, schema
from pocketbert.benchmarks.cli import cli
from pocketbert.benchmarks.throughput import _Timed

from ..conftest import DATA


@pytest.fixture(scope="module")
def results(tiny_bundle, tmp_path_factory):
    out = tmp_path_factory.mktemp("throughput") / "throughput.json"
    result = CliRunner().invoke(cli, ["throughput", str(tiny_bundle), "--limit", "24", "--rounds", "1",
                                      "--threads", "1", "--data-dir", str(DATA), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return schema.read(out), out


def test_every_artifact_in_every_mode(results, tiny_bundle):
    data, _ = results
    recipes = {a["recipe"] for a in json.loads((tiny_bundle / "manifest.json").read_text())["artifacts"]}
    got = {(r["runner"], r["mode"]) for r in data["results"]}
    # ONNX dynamic int8 runs rows alone without padding: no padded mode
    assert got == {(rec, mode) for rec in recipes for mode in ("natural", "padded")} - {
        ("onnx:int8-dynamic", "padded")}
    for r in data["results"]:
        assert r["sentences"] == 24 and r["dataset"] == "SST-2 dev" and r["sentences_per_s"] > 0
        assert 0 < r["model_s"] <= r["wall_s"] and r["overhead_share"] >= 0
        assert r["tokens_median"] < 128 and r["rows_over_128"] == 0
        if r["mode"] == "padded":  # the bundle's input length, for every backend: its largest TFLite bucket, 32
            assert r["vs_padded"] == pytest.approx(1.0) and r["pad_to"] == 32
    assert data["settings"]["limit"] == 24 and not data["fast"]


def test_padding_changes_the_work_not_the_answers(tiny_bundle, sst2_texts):
    from pocketbert import runtime

    natural = runtime.load(tiny_bundle, recipe="onnx:fp32")
    padded = runtime.load(tiny_bundle, recipe="onnx:fp32")
    padded.backend = _Timed(padded.backend, 128)
    a, b = natural(sst2_texts[:16]), padded(sst2_texts[:16])
    assert [x["label"] for x in a] == [x["label"] for x in b]
    assert max(abs(x["score"] - y["score"]) for x, y in zip(a, b)) < 1e-4
    assert padded.backend.seconds > 0


def test_report_section(results, tmp_path):
    _, path = results
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / path.name).write_text(path.read_text())
    text = report.build(tmp_path / "results", tmp_path / "REPORT.md").read_text()
    assert "## Real lengths: sentences/s through the runtime" in text and "| tflite:fp32 | padded to 32 |" in text


@pytest.fixture(scope="module")
def sst2_texts():
    from pocketbert.benchmarks.throughput import texts_for

    return texts_for("classification", DATA)[1]

