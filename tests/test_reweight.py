"""New weights written into an exported float file (static int8's equalised model) instead of exporting again:
every constant traced to the tensor it was made from, the result what an export of the new model gives, and a
file that cannot be derived refused (the converter then exports again)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch

from pocketbert.converter.backends import get, reweight
from pocketbert.converter.backends.logits_model import LogitsModel
from pocketbert.converter.backends.tflite_weights import float_constants
from pocketbert.converter.checks import verify
from pocketbert.converter.quantize.derived_floats import float_parity
from pocketbert.converter.transforms import equalize

from .conftest import FULL_INTEGER_TEXTS, export_spec, nonorm_model

RNG = np.random.default_rng(0)


def _tensors() -> dict[str, np.ndarray]:
    return {"w": RNG.standard_normal((6, 4)).astype(np.float32), "b": RNG.standard_normal(4).astype(np.float32),
            "pos": RNG.standard_normal((10, 4)).astype(np.float32)}


def test_each_kind_of_constant_is_traced_and_rewritten():
    old, new = _tensors(), _tensors()
    factor = np.float32(0.42)
    constants = {"as-is": old["b"].reshape(1, 1, 4), "transposed": np.ascontiguousarray(old["w"].T),
                 "rows": old["pos"][:3].reshape(1, 3, 4), "scaled": factor * old["w"],
                 "mask": np.full(4, -np.inf, np.float32)}  # the exporter's own: small, traced to nothing
    found = reweight.sources(constants, old)
    assert set(found) == {"as-is", "transposed", "rows", "scaled"}
    out = reweight.rewritten(found, {k: v.shape for k, v in constants.items()}, new)
    np.testing.assert_array_equal(out["as-is"], new["b"].reshape(1, 1, 4))
    np.testing.assert_array_equal(out["transposed"], new["w"].T)
    np.testing.assert_array_equal(out["rows"], new["pos"][:3].reshape(1, 3, 4))
    np.testing.assert_allclose(out["scaled"], factor * new["w"], rtol=1e-6)


def test_an_untraceable_weight_or_an_ambiguous_one_refuses_the_whole_file():
    old = _tensors()
    assert reweight.sources({"folded": old["w"] + 1.0}, old) is None  # made some other way: export again
    twins = {"a": np.ones(4, np.float32), "b": np.ones(4, np.float32)}
    found = reweight.sources({"c": np.ones(4, np.float32)}, twins)
    assert len(found["c"]) == 2
    assert reweight.rewritten(found, {"c": (4,)}, {"a": np.ones(4, np.float32), "b": np.zeros(4, np.float32)}) is None
    assert reweight.rewritten(found, {"c": (4,)}, twins) is not None  # still equal in the new model: no doubt
    assert reweight.rewritten(found, {"c": (4,)}, {"a": np.ones(4, np.float32)}) is None  # "b" gone from the model


def _equalized(checkpoint):
    loaded, spec = nonorm_model(checkpoint, "fold", buckets=(16, 32))
    batches = spec.make_batches(FULL_INTEGER_TEXTS, pad_to=16)
    model, family = loaded.model, loaded.family
    equalized, record = equalize.equalize(model, family, equalize.stream_maxima(model, family, batches))
    assert record["channels_scaled"] > 0
    return spec, type(spec)(**{**spec.__dict__, "model": LogitsModel(equalized, spec.input_names).eval()})


@pytest.mark.parametrize("family_name", ["bert", "distilbert"])  # the families equalisation maps
def test_equalised_weights_written_into_the_tflite_export_equal_its_own_export(checkpoints, family_name, tmp_path):
    plain, equalized = _equalized(checkpoints[family_name]["classification"])
    backend = get("tflite")
    backend.export(plain, tmp_path / "plain.tflite")
    backend.export(equalized, tmp_path / "exported.tflite")
    assert backend.with_weights(tmp_path / "plain.tflite", tmp_path / "derived.tflite",
                                reweight.float_tensors(plain.model), reweight.float_tensors(equalized.model))
    derived, _ = float_constants(tmp_path / "derived.tflite")
    exported, _ = float_constants(tmp_path / "exported.tflite")
    assert derived.keys() == exported.keys()
    for key, value in exported.items():  # scaled constants: the exporter's float32 product, to its rounding
        np.testing.assert_allclose(derived[key], value, rtol=1e-6, atol=1e-7, err_msg=str(key))
    assert float_parity(backend, tmp_path / "derived.tflite", equalized)


def test_a_norm_the_exporter_dropped_fails_the_parity_check(checkpoints, tmp_path):
    """An identity NoNorm (γ = 1, β = 0) is folded away by the exporter: a new γ has no op to go to.  Every
    constant left still traces, so only the logits show it, and the converter exports again."""
    from pocketbert.converter.transforms import OPTS

    loaded, spec = export_spec(checkpoints["bert"]["classification"], buckets=[16])
    for name in ("nonorm", "relu"):
        OPTS[name].apply(loaded.model, loaded.family)
    backend = get("tflite")
    backend.export(spec, tmp_path / "plain.tflite")
    exported = {name: value.copy() for name, value in reweight.float_tensors(spec.model).items()}
    with torch.no_grad():
        for _, norm in loaded.family.norms(loaded.model):
            norm.weight.mul_(1.5)
    assert backend.with_weights(tmp_path / "plain.tflite", tmp_path / "derived.tflite", exported,
                                reweight.float_tensors(spec.model))
    assert not float_parity(backend, tmp_path / "derived.tflite", spec)


def _smoothed(spec, batches, model=None):
    from pocketbert.converter.transforms.smoothquant import activation_maxima, smooth

    model = model if model is not None else spec.model
    family = spec.family
    smoothed, _ = smooth(model.model, family, activation_maxima(model.model, family, batches))
    return type(spec)(**{**spec.__dict__, "model": LogitsModel(smoothed, spec.input_names).eval()})


def test_equalised_smoothed_weights_written_into_the_onnx_export_equal_its_own_export(checkpoints, tmp_path):
    """The two ONNX ladders' smoothed models (static's equalised, dynamic's not): the same graph, so the static
    ladder's float file is the dynamic one's with the other weights written in, initializer by initializer; a
    fused export (Q/K/V packed into one weight) traces to no tensor and is refused."""
    from pocketbert.converter.backends.onnx import export_fused, export_onnx

    plain, equalized = _equalized(checkpoints["bert"]["classification"])
    batches = plain.make_batches(FULL_INTEGER_TEXTS, pad_to=16)
    smoothed = _smoothed(plain, batches)
    both = _smoothed(equalized, batches, model=equalized.model)
    example = plain.make_batches(["a b", "a longer example text"])[0]
    for spec, name in ((smoothed, "smoothed"), (both, "exported")):
        export_onnx(spec.model, example, spec.input_names, output_name=spec.output_name, dest=tmp_path / f"{name}.onnx")
    backend = get("onnx")
    assert backend.with_weights(tmp_path / "smoothed.onnx", tmp_path / "derived.onnx",
                                reweight.float_tensors(smoothed.model), reweight.float_tensors(both.model))
    derived, exported = ({i.name: onnx.numpy_helper.to_array(i) for i in onnx.load(str(tmp_path / f"{name}.onnx"))
                          .graph.initializer} for name in ("derived", "exported"))
    assert derived.keys() == exported.keys()
    for key, value in exported.items():
        np.testing.assert_allclose(derived[key], value, rtol=1e-6, atol=1e-7, err_msg=key)
    assert float_parity(backend, tmp_path / "derived.onnx", both)
    fused = export_fused(plain, tmp_path / "fused.onnx")
    assert fused["applied"]
    assert not backend.with_weights(tmp_path / "fused.onnx", tmp_path / "refused.onnx",
                                    reweight.float_tensors(plain.model), reweight.float_tensors(equalized.model))


@pytest.mark.parametrize("backend_name", ["tflite", "onnx"])
def test_a_smoothed_file_made_from_the_plain_export_equals_the_smoothed_models_own(checkpoints, backend_name,
                                                                                  tmp_path):
    """Smoothing adds a Mul before each Linear: written into a copy of the plain (unfused) export, with the
    smoothed weights, the file computes what the smoothed model's own export computes at every signature, with the
    same ops; a Linear the file has no matmul for refuses the whole file."""
    from pocketbert.converter.backends.onnx import export_onnx
    from pocketbert.converter.backends.tflite import op_histogram
    from pocketbert.converter.quantize.derived_floats import derive
    from pocketbert.converter.transforms.smoothquant import as_unsmoothed

    loaded, plain = nonorm_model(checkpoints["bert"]["classification"], "fold", buckets=(16, 32))
    smoothed = _smoothed(plain, plain.make_batches(FULL_INTEGER_TEXTS, pad_to=16))
    backend, suffix = get(backend_name), "tflite" if backend_name == "tflite" else "onnx"
    example = plain.make_batches(["a b", "a longer example text"])[0]
    for spec, name in ((plain, "plain"), (smoothed, "smoothed")):
        if backend_name == "onnx":  # the plain graph: a fused one packs Q/K/V into one weight
            export_onnx(spec.model, example, spec.input_names, output_name=spec.output_name,
                        dest=tmp_path / f"{name}.onnx")
        else:
            backend.export(spec, tmp_path / f"{name}.tflite")
    assert derive(backend, (tmp_path / f"plain.{suffix}", plain.model), tmp_path / f"derived.{suffix}", smoothed)
    derived, own = (backend.load(tmp_path / f"{name}.{suffix}", plain.input_names) for name in ("derived", "smoothed"))
    for length in (16, 32):
        batches = plain.make_batches(FULL_INTEGER_TEXTS + ["one more, rather longer, text to read"], pad_to=length)
        for mine, theirs in zip(verify.runner_logits(derived, batches), verify.runner_logits(own, batches)):
            np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-5)
    if backend_name == "tflite":
        assert op_histogram(tmp_path / "derived.tflite") == op_histogram(tmp_path / "smoothed.tflite")
    exported, _ = as_unsmoothed(reweight.float_tensors(plain.model))
    new, scales = as_unsmoothed(reweight.float_tensors(smoothed.model))
    assert len(scales) == 13  # 2 layers x 6 Linears and the pooler
    unknown = {**scales, "model.bert.encoder.layer.9.output.dense": next(iter(scales.values()))}
    assert not backend.with_weights(tmp_path / f"plain.{suffix}", tmp_path / f"refused.{suffix}", exported, new,
                                    input_scales=unknown)
    assert not (tmp_path / f"refused.{suffix}").exists()


def _trained_looking(checkpoint, tmp_path):
    """``checkpoint`` with norms and biases no longer at their initial values: a random model's ones and zeros are
    the same constant in many places, which equalisation then changes apart (the derivation refuses that)."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(checkpoint)
    generator = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.ndim == 1:
                parameter.add_(0.3 * torch.randn(parameter.shape, generator=generator))
    model.save_pretrained(tmp_path / "trained")
    AutoTokenizer.from_pretrained(checkpoint).save_pretrained(tmp_path / "trained")
    return tmp_path / "trained"


def test_the_static_ladder_quantises_the_dynamic_ladders_smoothed_float_file(checkpoints, options, monkeypatch,
                                                                              tmp_path):
    """A NoNorm model and a target no attempt reaches: both ONNX ladders smooth.  The smoothed model is exported
    for the dynamic ladder only; the static ladder's (equalised) is that file with its weights written in, and
    neither file is left beside the bundle's."""
    from pocketbert.converter.backends import onnx as onnx_backend
    from pocketbert.converter.pipeline import convert

    events = []
    original_export, original_weights = onnx_backend.export_onnx, onnx_backend.OnnxExportBackend.with_weights

    def export(model, *args, **kwargs):
        events.append("smoothed export" if any("Smoothed" in type(m).__name__ for m in model.modules()) else "export")
        return original_export(model, *args, **kwargs)

    def with_weights(self, source, *args, **kwargs):
        derived = original_weights(self, source, *args, **kwargs)
        events.append(f"{source.name} derived" if derived else "refused")
        return derived

    monkeypatch.setattr(onnx_backend, "export_onnx", export)
    monkeypatch.setattr(onnx_backend.OnnxExportBackend, "with_weights", with_weights)
    trained = _trained_looking(checkpoints["distilbert"]["classification"], tmp_path)
    result = convert(options(trained, opts="nonorm,relu,fold",
                             allow_accuracy_loss=True, recipes="onnx:int8-dynamic,onnx:int8-static",
                             int8_min_cosine=0.0, int8_min_agreement=0.0, int8_target_agreement=1.01))
    derived = events.index(".smoothed-plain-model.onnx derived")
    assert "smoothed export" in events[:derived] and "smoothed export" not in events[derived:]
    assert not [p.name for p in result.bundle.iterdir() if p.name.startswith(".")]


def test_the_static_probe_and_its_plain_file_quantise_one_export_of_the_equalised_model(checkpoints, options,
                                                                                       monkeypatch, tmp_path):
    """ONNX static int8 of a NoNorm model quantises the equalised model, whose weights a fused export cannot take
    (packed Q/K/V): it is exported once, and the probe (timed first) and the plain file both quantise that export;
    no float file is left beside the bundle."""
    from pocketbert.converter.backends import onnx as onnx_backend
    from pocketbert.converter.pipeline import convert
    from pocketbert.converter.quantize.quantization import Quantizer
    from pocketbert.converter.stages import STAGES
    from pocketbert.converter.stages.quantize import QuantizeStage

    exports, built = [], []
    original_export, original_plain = onnx_backend.export_onnx, Quantizer.plain
    monkeypatch.setattr(onnx_backend, "export_onnx", lambda *a, **k: exports.append(k["dest"])
                        or original_export(*a, **k))
    monkeypatch.setattr(Quantizer, "plain", lambda self, recipe, dest, probe=False: built.append(probe)
                        or original_plain(self, recipe, dest, probe))
    twice_as_fast = lambda runners, feeds: [[5.0] * 5, [10.0] * 5]  # noqa: E731  (the int8 file, then fp32's)
    stages = tuple(QuantizeStage(timer=twice_as_fast) if isinstance(s, QuantizeStage) else s for s in STAGES)
    trained = _trained_looking(checkpoints["distilbert"]["classification"], tmp_path)
    result = convert(options(trained, opts="nonorm,relu,fold", recipes="onnx:int8-static", verify_samples=20,
                             measure_latency=True, allow_accuracy_loss=True, int8_min_cosine=0.0, int8_min_agreement=0.0,
                             int8_target_agreement=0.0), stages=stages)
    static = next(a for a in result.artifacts if a.recipe == "onnx:int8-static")
    assert built == [True, False] and static.details["equalization"]["float_file"] == "exported again"
    assert len(exports) == 2  # the bundle's float file, then the equalised model's, once
    assert not [p.name for p in result.bundle.iterdir() if p.name.startswith(".")]


def test_a_tflite_quantisation_keeps_the_float_file_it_exported_when_asked(checkpoints, tmp_path):
    """``keep_float``: the float file a ladder exported is kept for the backend's next ladder, which quantises it
    instead of exporting again (the same file out); a given float file stays the caller's, and without
    ``keep_float`` nothing but the quantised file is left.  (ONNX: the pipeline test above.)"""
    _, spec = export_spec(checkpoints["bert"]["classification"], buckets=[16])
    calibration = spec.make_batches(FULL_INTEGER_TEXTS[:8], pad_to=16)
    backend = get("tflite")
    name = backend.filename("int8-dynamic")

    def quantize(directory, **kwargs):
        directory.mkdir()
        backend.quantize(spec, "int8-dynamic", directory / name, calibration, float_fallback=False, **kwargs)
        return sorted(p.name for p in directory.iterdir())

    assert quantize(tmp_path / "a") == [name]
    kept = tmp_path / "kept"
    assert quantize(tmp_path / "b", keep_float=kept) == [name] and float_parity(backend, kept, spec)
    assert quantize(tmp_path / "c", float_export=kept, keep_float=tmp_path / "unused") == [name]
    assert kept.exists() and not (tmp_path / "unused").exists()
    assert (tmp_path / "b" / name).read_bytes() == (tmp_path / "c" / name).read_bytes()


def test_both_tflite_ladders_smooth_without_exporting_again(checkpoints, options, monkeypatch, tmp_path):
    """A NoNorm model and a target no attempt reaches: both TFLite ladders smooth, static's model equalised too.
    litert-torch exports the model once: the dynamic ladder's smoothed file is the float export with the Muls and
    weights written in, and the static ladder's is that file with the equalised weights."""
    from pocketbert.converter.backends.tflite import TfliteExportBackend
    from pocketbert.converter.pipeline import convert
    from pocketbert.converter.quantize.derived_floats import FloatFiles

    exported, smoothed = [], []
    convert_file, smoothed_float = TfliteExportBackend._convert, FloatFiles.smoothed

    def convert_counted(self, spec, dest):
        exported.append(dest.name)
        return convert_file(self, spec, dest)

    def smoothed_recorded(self, backend, spec, equalised):
        path, how = smoothed_float(self, backend, spec, equalised)
        smoothed.append(("int8-static" if equalised else "int8-dynamic", path and path.name, how))
        return path, how

    monkeypatch.setattr(TfliteExportBackend, "_convert", convert_counted)
    monkeypatch.setattr(FloatFiles, "smoothed", smoothed_recorded)
    trained = _trained_looking(checkpoints["distilbert"]["classification"], tmp_path)
    result = convert(options(trained, opts="nonorm,relu,fold", allow_accuracy_loss=True, buckets=[16],
                             recipes="tflite:int8-dynamic,tflite:int8-static",
                             int8_min_cosine=0.0, int8_min_agreement=0.0, int8_target_agreement=1.01))
    assert exported == ["model.tflite"]
    assert smoothed == [
        ("int8-dynamic", ".smoothed-plain-model.tflite",
         "the float export with a Mul before each Linear and the smoothed weights written in"),
        ("int8-static", ".smoothed-equalised-model.tflite",
         "the other int8 ladder's smoothed float file, with this model's weights written in")]
    assert not [p.name for p in result.bundle.iterdir() if p.name.startswith(".")]
