"""Accuracy recovery in the converter: ``recover`` writes a reloadable nonorm/relu checkpoint, and
``convert --recover`` distils before exporting and records teacher/student scores in the manifest.
(The distillation module itself is tested in test_distill.py.)"""

from __future__ import annotations

import json

import pytest
import torch

from pocketbert.converter.checkpoints import loading
from pocketbert.converter.errors import AccuracyLossRefused, ConverterInputError
from pocketbert.converter.families import is_nonorm
from pocketbert.converter.pipeline import convert
from pocketbert.converter.training import loop
from pocketbert.converter.training.finetune import FinetuneOptions, finetune
from pocketbert.converter.training.recovery import RecoverOptions, recover_checkpoint

from .conftest import DATA


@pytest.fixture(scope="module")
def teacher(tmp_path_factory, checkpoints):
    """A tiny BERT with a classification head trained a little on SST-2 (a teacher with an opinion)."""
    out = tmp_path_factory.mktemp("teacher") / "sst2"
    bare = checkpoints["bert"]["none"]
    finetune(FinetuneOptions(checkpoint=str(bare), task="glue:sst2", out=out, budget=loop.Budget(steps=40), lr=2e-3,
                             batch_size=16, data_dir=DATA, train_limit=640, dev_limit=200, progress=False),
             log=lambda *a: None)
    return out


def _recover_options(**kwargs):
    kwargs.setdefault("budget", loop.Budget(steps=24))
    return RecoverOptions(task="glue:sst2", data_dir=DATA, train_limit=256, dev_limit=200, batch_size=16,
                          progress=False, **kwargs)


def test_recover_writes_a_checkpoint_that_reloads_as_nonorm_relu(teacher, tmp_path):
    out = tmp_path / "recovered"
    path, record = recover_checkpoint(str(teacher), ["nonorm", "relu"], _recover_options(), out, log=lambda *a: None)
    config = json.loads((path / "config.json").read_text())
    assert config["pocketbert"] == {"transforms": ["nonorm", "relu"]}
    loaded = loading.load(str(path))
    norms = loaded.family.norms(loaded.model)
    assert norms and all(is_nonorm(m) for _, m in norms)
    assert all(isinstance(s.activation, torch.nn.ReLU) for s in loaded.family.activation_sites(loaded.model))
    scores = record["dev_scores"]
    assert set(scores) == {"teacher", "without_recovery", "recovered"}
    assert record["delta_vs_teacher"] == pytest.approx(scores["recovered"]["accuracy"] - scores["teacher"]["accuracy"],
                                                       abs=1e-2)
    assert [s["name"] for s in record["distillation"]["stages"]] == ["joint"]
    # the dev score as recovery went: before, at 1/4, 2/4, 3/4 of the 24 steps, and the end
    curve = record["dev_curve"]
    assert [point["steps"] for point in curve] == [0, 6, 12, 18, 24]
    assert curve[0]["accuracy"] == scores["without_recovery"]["accuracy"]
    assert [point.get("fraction") for point in curve] == [None, 0.25, 0.5, 0.75, 1.0]
    # the shipped state is the best check's (a tie: the later), and the card says which and how noisy
    best = max(curve[1:], key=lambda point: (point["accuracy"], point["steps"]))
    assert record["best"]["steps"] == best["steps"] and best["accuracy"] == scores["recovered"]["accuracy"]
    assert record["dev_noise"]["dev_examples"] == 200
    card = (path / "README.md").read_text()
    assert f"at step {best['steps']}" in card and "bootstrap interval" in card
    assert all(a["seconds"] <= b["seconds"] for a, b in zip(curve, curve[1:]))
    # the reloaded checkpoint computes what was evaluated
    from pocketbert.converter.data import load_task
    from pocketbert.converter.training.evaluate import evaluate

    dev = load_task("glue:sst2", "dev", DATA, limit=200).encode(loaded.tokenizer, 512, loaded.labels)
    assert evaluate(loaded.model, dev)["accuracy"] == pytest.approx(scores["recovered"]["accuracy"], abs=1e-3)
    # converting it: nonorm/relu are already there, nothing to refuse; the training record travels along
    bundle = tmp_path / "bundle"
    result = convert(FakeOptions.make(path, bundle, opts="nonorm,relu,fold,int8", int8="dynamic"))
    assert result.manifest["verification"]["transform_damage"] is None
    assert result.manifest["source"]["training"]["dev_scores"]["teacher"] == scores["teacher"]

    # the gates: each artifact scored as the runtime runs it, against the teacher and the float export
    from pocketbert.benchmarks import gates

    rows = gates.check(bundle, limit=200, progress=lambda *a: None)
    by_runner = {r["runner"]: r for r in rows}
    assert set(by_runner) == {"onnx:fp32", "onnx:int8-dynamic"}
    fp32 = by_runner["onnx:fp32"]
    # the exported fp32 model scores what PyTorch scored (max length 128 here vs 512 in PyTorch: same on SST-2)
    assert fp32["score"] == pytest.approx(scores["recovered"]["accuracy"], abs=1e-6)
    assert fp32["passed"] == (fp32["score"] >= scores["teacher"]["accuracy"] - 1.0)
    int8 = by_runner["onnx:int8-dynamic"]
    assert int8["passed"] == (int8["score"] >= fp32["score"] - 0.5)
    assert "| onnx:int8-dynamic |" in gates.table(rows)


class FakeOptions:
    @staticmethod
    def make(checkpoint, out, **kwargs):
        from pocketbert.converter.pipeline import ConvertOptions

        return ConvertOptions(checkpoint=str(checkpoint), out=out, formats="onnx", verify_samples=100,
                              measure_latency=False, data_dir=DATA, **kwargs)


def test_convert_recover_records_scores(teacher, tmp_path):
    options = FakeOptions.make(teacher, tmp_path / "bundle", opts="nonorm,relu", recover="glue:sst2",
                               recover_options={"budget": loop.Budget(steps=24), "train_limit": 256, "dev_limit": 200,
                                                "batch_size": 16, "progress": False},
                               max_accuracy_drop=100)
    result = convert(options)
    recovery = result.manifest["recovery"]
    assert recovery["task"] == "glue:sst2" and recovery["recipe"]["schedule"] == "joint"
    assert recovery["recipe"]["qat"] is False  # no full-integer file asked for: recovered in float
    assert recovery["transform_damage_before_recovery"]["top1_agreement"] <= 1.0
    assert result.manifest["verification"]["transform_damage"] is not None


def test_convert_recover_to_full_integer_is_quantization_aware(teacher, tmp_path):
    """Asking for tflite:int8-static with --recover trains through that export's simulation."""
    from pocketbert.converter.pipeline import ConvertOptions

    options = ConvertOptions(checkpoint=str(teacher), out=tmp_path / "bundle", opts="nonorm,relu", recover="glue:sst2",
                             recipes="tflite:int8-static", buckets=[32], verify_samples=50, calibration_samples=32,
                             measure_latency=False, data_dir=DATA, max_accuracy_drop=100, int8_min_cosine=0,
                             int8_min_agreement=0, int8_target_agreement=0,
                             recover_options={"budget": loop.Budget(steps=8), "train_limit": 128, "dev_limit": 64,
                                              "batch_size": 16, "max_length": 32, "progress": False})
    manifest = convert(options).manifest
    recovery = manifest["recovery"]
    assert recovery["recipe"]["qat"] is True and recovery["distillation"]["qat"]["activation_ranges"] > 0
    assert any("quantization-aware recovery" in note for note in manifest["notes"])
    assert [a["recipe"] for a in manifest["artifacts"]] == ["tflite:fp32", "tflite:int8-static"]


def test_convert_recover_refuses_a_large_drop(teacher, tmp_path):
    # Recovery with a 2-step budget on the embeddings cannot win back 0 points of loss on every run:
    # a bar of -100 points (the student must beat the teacher by 100) always refuses.
    options = FakeOptions.make(teacher, tmp_path / "bundle", opts="nonorm,relu", recover="glue:sst2",
                               recover_options={"budget": loop.Budget(steps=9), "train_limit": 64, "dev_limit": 50,
                                                "batch_size": 16, "progress": False},
                               max_accuracy_drop=0)
    try:
        convert(options)
    except AccuracyLossRefused as exc:
        assert "--max-accuracy-drop" in exc.problem and "--recover-budget" in exc.fix
        assert not (tmp_path / "bundle").exists()


@pytest.mark.parametrize("case,kwargs,expect", [
    ("no nonorm/relu", {"opts": "int8", "int8": "dynamic"}, "nothing to recover"),
    ("ner data for a classifier", {"opts": "nonorm,relu", "recover": "conll2003"}, "ner data"),
    ("wrong label count", {"opts": "nonorm,relu", "recover": "glue:stsb"}, "label"),
    ("budget too small", {"opts": "nonorm,relu", "recover_options": {"budget": loop.Budget(steps=0)}}, "too small"),
    ("unknown task", {"opts": "nonorm,relu", "recover": "glue:qqp"}, "unknown task"),
])
def test_convert_recover_bad_input_fails_before_training(teacher, tmp_path, case, kwargs, expect):
    kwargs.setdefault("recover", "glue:sst2")
    with pytest.raises(ConverterInputError) as info:
        convert(FakeOptions.make(teacher, tmp_path / "bundle", **kwargs))
    assert expect in info.value.problem and info.value.fix
    assert not (tmp_path / "bundle").exists()


def test_recover_needs_a_trained_head(checkpoints, tmp_path):
    with pytest.raises(ConverterInputError) as info:
        convert(FakeOptions.make(checkpoints["bert"]["none"], tmp_path / "b", opts="nonorm,relu", recover="glue:sst2",
                                 labels=["negative", "positive"]))
    assert "trained task head" in info.value.problem and "finetune" in info.value.fix
