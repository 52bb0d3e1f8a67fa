"""Residual-stream equalisation before static int8: exact in float for every family that maps its stream,
and what it is for: a full-integer TFLite model of a stream with outlier channels comes much closer to float."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from pocketbert.converter.backends import get
from pocketbert.converter.families import Family, family_for
from pocketbert.converter.transforms import equalize
from pocketbert.converter.transforms.smoothquant import activation_hooks, activation_maxima, forward_all

from .conftest import FAMILY_NAMES, FULL_INTEGER_TEXTS, FULL_INTEGER_UNSEEN, build_checkpoint, export_spec, nonorm_model

TEXTS, UNSEEN = FULL_INTEGER_TEXTS, FULL_INTEGER_UNSEEN



def _logits(model, batches) -> np.ndarray:
    with torch.no_grad():
        return np.concatenate([model(**{k: torch.from_numpy(v) for k, v in b.items()}).logits.numpy()
                               for b in batches])


def _mapped(name: str) -> bool:
    return type(family_for(name)).residual_streams is not Family.residual_streams


@pytest.mark.parametrize("head", ["classification", "ner"])
@pytest.mark.parametrize("fold", [False, True], ids=["norm", "folded"])
@pytest.mark.parametrize("family_name", FAMILY_NAMES)
def test_equalisation_is_exact_in_float(checkpoints, family_name, head, fold):
    loaded, spec = nonorm_model(checkpoints[family_name][head], *(["fold"] if fold else []))
    model, family = loaded.model, loaded.family
    if not _mapped(family_name):
        assert not equalize.supported(model, family)  # never equalised, so never wrong
        return
    assert equalize.supported(model, family)
    batches = spec.make_batches(TEXTS)
    maxima = equalize.stream_maxima(model, family, batches)
    streams = family.residual_streams(model)
    assert len(maxima) == len(streams) == 2 * model.config.num_hidden_layers + 1
    # scales of up to 100 on every stream: a reader, writer or norm left out would change the logits
    generator = torch.Generator().manual_seed(2)
    factors = [torch.exp(torch.rand(m.shape, generator=generator) * 4.6) for m in maxima]
    equalized = copy.deepcopy(model)
    equalize.apply_scales(equalized, family, factors)
    before, after = _logits(model, batches), _logits(equalized, batches)
    np.testing.assert_allclose(after, before, rtol=1e-4, atol=1e-4 * np.abs(before).max())
    equalised, record = equalize.equalize(model, family, maxima)
    assert record["streams"] == len(streams) and record["largest_scale"] >= 1
    np.testing.assert_allclose(_logits(equalised, batches), before, rtol=1e-4, atol=1e-4 * np.abs(before).max())


@pytest.mark.parametrize("fold", [False, True], ids=["norm", "folded"])
@pytest.mark.parametrize("family_name", [name for name in FAMILY_NAMES if _mapped(name)])
def test_reader_maxima_are_what_the_equalised_model_measures(checkpoints, family_name, fold):
    """Smoothing the equalised model uses maxima derived from the plain model's pass, not a pass of its own."""
    loaded, spec = nonorm_model(checkpoints[family_name]["classification"], *(["fold"] if fold else []))
    model, family = loaded.model, loaded.family
    batches = spec.make_batches(TEXTS, pad_to=16)
    linears, streams = {}, []
    hooks = activation_hooks(model, family, linears) + equalize.stream_hooks(model, family, streams)
    forward_all(model, batches, hooks)
    assert all(torch.equal(a, b) for a, b in zip(streams, equalize.stream_maxima(model, family, batches)))
    measured_plain = activation_maxima(model, family, batches)
    assert linears.keys() == measured_plain.keys() and all(torch.equal(linears[k], measured_plain[k]) for k in linears)
    factors = equalize.scales(streams)
    assert max(float(f.max()) for f in factors) > 1.5  # some readers' inputs really change
    equalized, _ = equalize.equalize(model, family, streams)
    measured = activation_maxima(equalized, family, batches)
    derived = equalize.reader_maxima(model, family, linears, factors)
    assert derived.keys() == measured.keys()
    for name in measured:
        torch.testing.assert_close(derived[name], measured[name], rtol=1e-4, atol=1e-5 * float(measured[name].max()))


def test_layernorm_models_are_not_equalised(checkpoints):
    """A LayerNorm divides each token by its own spread: no per-channel scale passes through it."""
    loaded, _ = export_spec(checkpoints["bert"]["classification"])
    assert not equalize.supported(loaded.model, loaded.family)


def test_equalised_full_integer_model_is_closer_to_float(tmp_path_factory, tokenizer, tmp_path):
    """The failure it fixes: a few residual channels 30x larger than the rest (as a nonorm model's are) make
    the int8 model far from float; the equalised copy, quantised the same way, is at least twice as close."""
    directory = build_checkpoint(tmp_path_factory.mktemp("eq") / "bert", "bert", tokenizer,
                                 labels=("negative", "positive"), initializer_range=0.2)
    loaded, spec = nonorm_model(directory)
    model, family = loaded.model, loaded.family
    hidden = model.config.hidden_size
    outliers = [torch.where(torch.arange(hidden) % 8 == 0, 1 / 30, 1.0) for _ in family.residual_streams(model)]
    equalize.apply_scales(model, family, outliers)  # same function, stream channels 0, 8, 16, … 30x larger
    calibration = spec.make_batches(TEXTS * 2, pad_to=16)
    test = spec.make_batches(UNSEEN, pad_to=16)
    reference = _logits(model, test)
    equalized, record = equalize.equalize(model, family, equalize.stream_maxima(model, family, calibration))
    assert record["channels_scaled"] > 0
    errors = {}
    for name, candidate in (("plain", model), ("equalized", equalized)):
        path = tmp_path / f"{name}.tflite"
        candidate_spec = type(spec)(**{**spec.__dict__, "model": type(spec.model)(candidate, spec.input_names)})
        get("tflite").quantize(candidate_spec, "int8-static", path, calibration, None, float_fallback=False)
        got = get("tflite").load(path, spec.input_names, "int8-static")(test[0])
        errors[name] = float(np.abs(got - reference).mean())
        low, high, step = _output_range(path)
        calibration_logits = _logits(candidate, calibration)
        # the logits' range holds every calibration row's, up to the zero point's rounding (the quantizer's
        # moving average of each row's min and max alone clips them)
        assert low <= calibration_logits.min() + step and high >= calibration_logits.max() - step
    assert errors["equalized"] <= 0.5 * errors["plain"], errors


def _output_range(path) -> tuple[float, float, float]:
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path))
    runner = interpreter.get_signature_runner(next(iter(interpreter.get_signature_list())))
    scale, zero_point = next(iter(runner.get_output_details().values()))["quantization"]
    return (-128 - zero_point) * scale, (127 - zero_point) * scale, scale
