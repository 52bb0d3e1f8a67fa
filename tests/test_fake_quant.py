"""Quantization-aware recovery: the fake-quant simulation is faithful to the int8-static TFLite export, and a
tiny QAT recovery runs end to end and narrows the simulated int8 model's gap to its float teacher."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pocketbert.converter.backends import get
from pocketbert.converter.backends.tflite import float_op_histogram
from pocketbert.converter.training.distill.fake_quant import FakeQuant, calibrate

from .conftest import DATA, FULL_INTEGER_TEXTS, FULL_INTEGER_UNSEEN, build_checkpoint, nonorm_model

TEXTS, UNSEEN = FULL_INTEGER_TEXTS, FULL_INTEGER_UNSEEN



@pytest.fixture(scope="module")
def nonorm_relu(tmp_path_factory, tokenizer):
    """A tiny nonorm/relu BERT with weights of realistic magnitude and NoNorms that are not the identity
    (an identity MUL/ADD would be folded away by the exporter and test nothing)."""
    directory = build_checkpoint(tmp_path_factory.mktemp("fq") / "bert", "bert", tokenizer,
                                 labels=("negative", "positive"), initializer_range=0.2)
    loaded, spec = nonorm_model(directory)
    return loaded, spec


def _logits(model, batch) -> np.ndarray:
    with torch.no_grad():
        return model(**{k: torch.from_numpy(v) for k, v in batch.items()}).logits.numpy()


def test_simulation_matches_the_exported_full_integer_model(nonorm_relu, tmp_path):
    """Both calibrate on the same rows (one at a time, padded to the bucket, as the exporter does); on unseen
    text the simulation's logits are closer to the TFLite model's than the float model's are: mean error at most
    two thirds of float's (measured 0.059 against 0.104, a logit step 0.0094), and the same argmax (what training
    optimises must be what ships)."""
    loaded, spec = nonorm_relu
    calibration = spec.make_batches(TEXTS * 2, pad_to=16)
    path = tmp_path / "model.int8-static.tflite"
    get("tflite").quantize(spec, "int8-static", path, calibration, None, float_fallback=False)
    test = spec.make_batches(UNSEEN, pad_to=16)[0]
    exported = get("tflite").load(path, spec.input_names, "int8-static")(test)
    # what stays float: the embedding tables' dequantisation and lookups, the mask (SELECT_V2, one ADD per
    # layer), the softmax and the scores' dequantisation before it; no matmul, no NoNorm, no residual
    layers = loaded.model.config.num_hidden_layers
    assert float_op_histogram(path) == {"ADD": layers, "DEQUANTIZE": 2 + layers, "EMBEDDING_LOOKUP": 2, "SELECT_V2": 1,
                               "SOFTMAX": layers}
    model = loaded.model.eval()
    float_logits = _logits(model, test)

    fq = FakeQuant(model, loaded.family)
    rows = [{k: v[i:i + 1] for k, v in calibration[0].items()} for i in range(calibration[0]["input_ids"].shape[0])]
    calibrate(fq, rows, lambda batch: _logits(model, batch))
    with fq.mode(observing=False, quantizing=True):
        simulated = _logits(model, test)
    step = fq.ranges["classifier:output"].scale_zero_point()[0]  # the int8 logits' quantization step
    fq.remove()
    assert np.array_equal(_logits(model, test), float_logits)  # detached: float again

    sim_error = np.abs(simulated - exported)
    float_error = np.abs(float_logits - exported)
    print(f"simulation vs int8 model: max {sim_error.max():.4f}, mean {sim_error.mean():.4f}; float vs int8 model: "
          f"max {float_error.max():.4f}, mean {float_error.mean():.4f}; logit step {step:.4f}")
    assert float_error.max() > 5 * step  # quantization changed the logits: there is something to simulate
    assert sim_error.mean() <= 2 / 3 * float_error.mean()
    assert (simulated.argmax(-1) == exported.argmax(-1)).all()


def test_straight_through_gradients_reach_every_weight(nonorm_relu):
    loaded, spec = nonorm_relu
    model = loaded.model
    batch = {k: torch.from_numpy(v) for k, v in spec.make_batches(TEXTS, pad_to=16)[0].items()}
    fq = FakeQuant(model, loaded.family)
    try:
        calibrate(fq, [batch], lambda b: model(**b))
        with fq.mode(observing=True, quantizing=True):
            model.zero_grad()
            model(**batch).logits.square().sum().backward()
        without_gradient = [n for n, p in model.named_parameters()
                            if p.grad is None or not p.grad.abs().sum() > 0]
        # only the table rows and token types that no text used have no gradient
        assert without_gradient == []
    finally:
        model.zero_grad()
        fq.remove()


def test_tiny_qat_recovery_narrows_the_simulated_int8_gap(tmp_path, tokenizer, options):
    """recover --qat end to end on a tiny model: trained through the simulation, converted to full integer,
    measured by ``benchmarks full-integer`` (which labels the bundle QAT and lists its float ops)."""
    from pocketbert.converter.training.loop import Budget
    from pocketbert.converter.training.recovery import RecoverOptions, recover_checkpoint

    torch.manual_seed(0)
    teacher = build_checkpoint(tmp_path / "teacher", "bert", tokenizer, labels=("negative", "positive"),
                               initializer_range=0.2)
    recover_options = RecoverOptions(task="glue:sst2", budget=Budget(steps=40), batch_size=8, train_limit=320, dev_limit=64,
                             max_length=32, data_dir=DATA, qat=True, progress=False, lr=3e-4)
    path, record = recover_checkpoint(str(teacher), ["nonorm", "relu"], recover_options, tmp_path / "out", threads=1,
                                      log=lambda message: None)
    distillation = record["distillation"]
    qat = distillation["qat"]
    assert record["recipe"]["qat"] and qat["activation_ranges"] > 30
    # the gap after training is the simulated int8 model's; it must be below plain post-training quantization's
    assert distillation["gap_after"]["logit_mse"] < qat["gap_post_training"]["logit_mse"]
    assert (path / "model.safetensors").exists()
    assert "## Quantization-aware recovery" in (path / "README.md").read_text()  # the model card says so

    from pocketbert.benchmarks.full_integer import measure
    from pocketbert.converter.pipeline import convert

    bundle = convert(options(path, recipes="tflite:int8-static", buckets=[32], int8_min_cosine=0,
                             int8_min_agreement=0, int8_target_agreement=0)).bundle
    rows = {r["runner"]: r for r in measure([bundle], limit=24, data_dir=DATA, progress=lambda message: None)["results"]}
    static = rows["tflite:int8-static"]
    assert static["training"] == "qat" and static["examples"] == 24 and static["float_score"] is not None
    assert static["float_ops"] == sum(static["float_op_list"].values()) > 0
    assert "FULLY_CONNECTED" not in static["float_op_list"] and static["latency_ms"] > 0
    assert 0.5 <= static["top1_agreement_with_float"] <= 1

    from pocketbert.benchmarks.full_integer_levers import VARIANTS
    from pocketbert.benchmarks.full_integer_levers import measure as measure_levers

    levers = measure_levers(bundle, calibration_rows=8, limit=24, data_dir=DATA, progress=lambda m: None)["results"]
    assert [r["variant"] for r in levers] == list(VARIANTS) and all(r["examples"] == 24 for r in levers)
    assert all(0.5 <= r["top1_agreement_with_float"] <= 1 and r["latency_ms"] > 0 for r in levers)
    assert not list(bundle.glob(".lever-*"))  # the experiment's files are removed


def test_report_section_tables_each_model_with_ptq_and_qat_rows():
    from pocketbert.benchmarks.full_integer_report import section

    def row(bundle, training, runner, score, **extra):
        backend, precision = runner.split(":")
        return {"model": "sst2-demo", "bundle": bundle, "training": training, "runner": runner, "backend": backend,
                "precision": precision, "task": "glue:sst2", "metric": "accuracy", "score": score,
                "float_score": 89.0, "delta_vs_float": score - 89.0, "top1_agreement_with_float": 0.99,
                "examples": 872, "size_bytes": 12_000_000, "float_ops": None, "linears_in_float": 0,
                "latency_ms": 20.0, "threads": 1, "seq_len": 128, **extra}

    old = {"command": "full-integer", "created": "2026-01-01T00:00:00", "_path": "a/full-integer-old.json",
           "results": [row("ptq", "post-training", "tflite:int8-static", 10.0)]}
    new = {"command": "full-integer", "created": "2026-02-01T00:00:00", "_path": "a/full-integer.json",
           "results": [row("ptq", "post-training", "tflite:fp32", 89.0),
                       row("ptq", "post-training", "tflite:int8-static", 85.0, float_ops=23),
                       row("qat", "qat", "tflite:int8-static", 88.7, float_ops=23)]}
    equalized = {"command": "full-integer", "created": "2026-03-01T00:00:00", "_path": "a/full-integer-eq.json",
                 "results": [row("eq", "post-training", "tflite:fp32", 89.0, latency_ms=19.0),
                             row("eq", "post-training", "tflite:int8-static", 88.9, float_ops=23, equalized=True,
                                 calibration_texts=1024)]}
    text = "\n".join(section([old, new, equalized, {"command": "latency", "results": []}]))
    assert ("| tflite:int8-static (post-training, equalised) | 88.90 | -0.10 | 99.00% | 12.0 | 23 | 0 | 1,024 | "
            "20.0 |") in text
    assert text.count("| tflite:fp32 |") == 1  # one float row per model, from the later file
    assert "| tflite:fp32 | 89.00 | +0.00 | 99.00% | 12.0 | – | 0 | – | 19.0 |" in text
    assert "### sst2-demo: glue:sst2 dev (accuracy, 872 examples)" in text
    assert "| tflite:int8-static (post-training) | 85.00 | -4.00 |" in text  # the later file's row replaced 10.00
    assert "| tflite:int8-static (QAT) | 88.70 | -0.30 | 99.00% | 12.0 | 23 | 0 | not recorded | 20.0 |" in text
    assert "not the target of full-integer models" in text
    assert section([{"command": "latency", "results": []}]) == []
    levers = {"command": "full-integer-levers", "created": "2026-02-01", "_path": "a/l.json", "bundle": "b/ptq",
              "results": [{"variant": v, "task": "glue:sst2", "metric": "accuracy", "score": s, "size_bytes": 2e7,
                           "top1_agreement_with_float": a, "latency_ms": 9.0} for v, s, a in
                          [("a8", 85.0, 0.95), ("a16-residual", 88.0, 0.99)]]}
    assert "| a16-residual | 88.00 | 99.00% | 20.0 | 9.0 |" in "\n".join(section([levers]))
