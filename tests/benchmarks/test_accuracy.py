"""accuracy: scores through the runtime's backends with converter.data's metrics; deltas and GLUE average."""

import json

import pytest
from click.testing import CliRunner

from pocketbert.benchmarks import accuracy, schema
from pocketbert.benchmarks.cli import cli


@pytest.fixture(scope="module")
def sst2(tiny_bundle, tmp_path_factory):
    out = tmp_path_factory.mktemp("acc") / "acc.json"
    result = CliRunner().invoke(cli, ["accuracy", str(tiny_bundle), "--task", "glue:sst2", "--limit", "40",
                                      "--fast", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())


def test_every_artifact_scored(sst2):
    assert sst2["schema"] == schema.SCHEMA and sst2["command"] == "accuracy"
    records = sst2["results"]
    assert {r["runner"] for r in records} == {"onnx:fp32", "onnx:int8-dynamic", "tflite:fp32", "tflite:int8-dynamic"}
    for r in records:
        assert r["metric"] == "accuracy" and 0 <= r["score"] <= 100 and r["examples"] == 40
        assert r["max_length"] == 32  # the TFLite bucket, for every artifact of the bundle
    fp32 = {r["runner"]: r["score"] for r in records}
    assert fp32["onnx:fp32"] == pytest.approx(fp32["tflite:fp32"])  # same function, same truncation


def test_deltas_and_glue_average(sst2):
    rows = accuracy.add_deltas(sst2["results"])
    per_task = [r for r in rows if r["task"] == "glue:sst2"]
    assert all(r["delta"] is not None and r["reference"] == "onnx:fp32 (no --opt)" for r in per_task)
    assert next(r for r in per_task if r["runner"] == "onnx:fp32")["delta"] == 0
    average = [r for r in rows if r["task"] == "glue-average"]
    assert len(average) == 4 and "MNLI" in average[0]["notes"][0]


def test_glue_average_over_tasks_by_hand():
    def rec(task, runner, score, opts=""):
        return {"model": "m", "variant_name": "v", "runner": runner, "opts": opts, "task": task, "split": "dev",
                "metric": "x", "score": score, "examples": 10}

    rows = accuracy.add_deltas([rec("glue:sst2", "onnx:fp32", 90.0), rec("glue:cola", "onnx:fp32", 40.0),
                                rec("glue:sst2", "tflite:int8-dynamic", 89.0, "nonorm,relu,fold"),
                                rec("glue:cola", "tflite:int8-dynamic", 37.0, "nonorm,relu,fold")])
    avg = {r["runner"]: r for r in rows if r["task"] == "glue-average"}
    assert avg["onnx:fp32"]["score"] == 65.0 and avg["tflite:int8-dynamic"]["delta"] == pytest.approx(-2.0)


def test_ner_bundle_on_conll(tmp_path):
    """NER logits are cut per example and scored with seqeval's entity F1."""
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from pocketbert.converter.builtin import BUILTIN
    from pocketbert.converter.data.tasks import CONLL_LABELS
    from pocketbert.converter.families import families
    from pocketbert.converter.pipeline import ConvertOptions, convert

    config = next(f for f in families() if f.name == "bert").tiny_config(vocab_size=30522)
    config.num_labels, config.id2label = len(CONLL_LABELS), dict(enumerate(CONLL_LABELS))
    config.label2id = {v: k for k, v in config.id2label.items()}
    torch.manual_seed(0)
    AutoModelForTokenClassification.from_config(config).eval().save_pretrained(tmp_path / "ckpt")
    AutoTokenizer.from_pretrained(BUILTIN["minilm"].path()).save_pretrained(tmp_path / "ckpt")
    convert(ConvertOptions(checkpoint=str(tmp_path / "ckpt"), out=tmp_path / "ner", recipes="onnx:fp32",
                           verify_samples=16, measure_latency=False, allow_accuracy_loss=True))
    data = accuracy.evaluate([tmp_path / "ner"], "conll2003", "dev", limit=30, progress=lambda m: None)
    [record] = data["results"]
    assert record["metric"] == "f1" and set(record["scores"]) == {"f1", "precision", "recall"}
    assert 0 <= record["score"] <= 100 and record["examples"] == 30


def test_task_kind_mismatch_and_unlabelled_split(tiny_bundle):
    with pytest.raises(accuracy.AccuracyError, match="classification model and conll2003"):
        accuracy.evaluate([tiny_bundle], "conll2003", "dev", limit=5, progress=lambda m: None)
    with pytest.raises(accuracy.AccuracyError, match="no labels"):
        accuracy.evaluate([tiny_bundle], "glue:sst2", "test", limit=5, progress=lambda m: None)


def test_cli_needs_a_task():
    result = CliRunner().invoke(cli, ["accuracy", "somewhere"])
    assert result.exit_code == 2 and "--task" in result.output
