"""TFLite backend: builtin-only LiteRT models, one signature per bucket, parity per bucket, int8."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ai_edge_litert.interpreter import Interpreter
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from pocketbert.converter.backends.tflite import op_histogram
from pocketbert.converter.errors import ConverterInputError
from pocketbert.converter.pipeline import convert
from pocketbert.runtime.bundle import read_manifest

from .conftest import FAMILY_NAMES

TEXTS = ["A gripping , beautifully acted film .", "Dull ."]


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_tflite_fp32_matches_pytorch_in_every_bucket(family, checkpoints, options):
    ckpt = checkpoints[family]["classification"]
    result = convert(options(ckpt, formats="tflite", buckets=[16, 64]))
    manifest = read_manifest(result.bundle)
    (art,) = manifest["artifacts"]
    assert art["recipe"] == "tflite:fp32" and art["verification"]["passed"]
    details = art["details"]
    assert details["buckets"] == [16, 64] and details["batch"] == 1 and details["input_dtype"] == "int32"
    assert not [op for op in details["op_histogram"] if op.startswith("CUSTOM")]
    assert details["op_histogram"] == op_histogram(result.bundle / art["file"])

    # Independent check: feed each signature by name, int32, and compare with PyTorch at that length.
    interpreter = Interpreter(model_path=str(result.bundle / art["file"]))
    signatures = interpreter.get_signature_list()
    assert set(signatures) == {"seq_16", "seq_64"}
    names = [i["name"] for i in manifest["inputs"]]
    tokenizer = AutoTokenizer.from_pretrained(ckpt)
    model = AutoModelForSequenceClassification.from_pretrained(ckpt).eval()
    for length in (16, 64):
        assert sorted(signatures[f"seq_{length}"]["inputs"]) == sorted(names)
        assert signatures[f"seq_{length}"]["outputs"] == ["logits"]
        runner = interpreter.get_signature_runner(f"seq_{length}")
        enc = tokenizer(TEXTS[:1], padding="max_length", max_length=length, truncation=True, return_tensors="np")
        got = runner(**{n: enc[n].astype(np.int32) for n in names})["logits"]
        with torch.no_grad():
            ref = model(**{n: torch.from_numpy(enc[n]) for n in names}).logits.numpy()
        np.testing.assert_allclose(got, ref, atol=1e-5)


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_tflite_int8_dynamic(family, checkpoints, options):
    result = convert(options(checkpoints[family]["ner"], formats="tflite", opts="int8", buckets=[32, 128]))
    manifest = read_manifest(result.bundle)
    fp32, int8 = manifest["artifacts"]
    assert int8["recipe"] == "tflite:int8-dynamic"
    real = int8["verification"]["real_sentences"]
    assert real["cosine"] >= 0.99 and real["top1_agreement"] >= 0.95
    assert manifest["verification"]["texts"] == "conll2003/dev.txt"  # NER: token rows
    assert (result.bundle / int8["file"]).stat().st_size < 0.6 * (result.bundle / fp32["file"]).stat().st_size
    assert not [op for op in int8["details"]["op_histogram"] if op.startswith("CUSTOM")]
    # activations quantised per token at run time: a text's logits do not depend on the signature it is padded
    # to, so the ladder judged the calibration texts at one length (64 texts), not at every bucket
    assert int8["details"]["float_fallback"]["search"][0]["judged_texts"] == 64
    runner = Interpreter(model_path=str(result.bundle / int8["file"]))
    texts = [[101, 2023, 3185, 2001, 2204, 102], [101, 1037, 2843, 1010, 1996, 2190, 1997, 2035, 102]]
    for ids in texts:
        logits = {}
        for bucket in (32, 128):
            feeds = {name: np.zeros((1, bucket), np.int32) for name in [i["name"] for i in manifest["inputs"]]}
            feeds["input_ids"][0, :len(ids)], feeds["attention_mask"][0, :len(ids)] = ids, 1
            logits[bucket] = runner.get_signature_runner(f"seq_{bucket}")(**feeds)["logits"][0, :len(ids)]
        np.testing.assert_allclose(logits[128], logits[32], rtol=1e-5, atol=1e-5 * np.abs(logits[32]).max())


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_the_default_formats_with_every_optimisation(family, checkpoints, options):
    """The issue's done-when: --opt nonorm,relu,int8 with the default formats (tflite,onnx) and --int8 auto."""
    opts = options(checkpoints[family]["classification"], opts="nonorm,relu,int8", int8="auto",
                   allow_accuracy_loss=True, buckets=[32])
    opts.formats = None  # the converter's default
    manifest = read_manifest(convert(opts).bundle)
    by_backend = {}
    for art in manifest["artifacts"]:
        assert art["verification"]["passed"]
        by_backend.setdefault(art["backend"], []).append(art)
    assert sorted(by_backend) == ["onnx", "tflite"]
    for backend, (fp32, int8) in by_backend.items():
        assert fp32["recipe"] == f"{backend}:fp32" and int8["precision"].startswith("int8-")
        assert [c["recipe"] for c in int8["details"]["selection"]["candidates"]] == [
            f"{backend}:int8-dynamic", f"{backend}:int8-static"]
        assert (opts.out / int8["file"]).exists()


def test_bucket_longer_than_positions_is_refused(checkpoints, options):
    opts = options(checkpoints["bert"]["classification"], formats="tflite", buckets=[64, 512])
    with pytest.raises(ConverterInputError, match="512") as info:
        convert(opts)
    assert "128" in info.value.fix
    assert not opts.out.exists()


def test_buckets_without_tflite_are_refused(checkpoints, options):
    opts = options(checkpoints["bert"]["classification"], formats="onnx", buckets=[32])
    with pytest.raises(ConverterInputError, match="--buckets") as info:
        convert(opts)
    assert "tflite" in info.value.fix
    assert not opts.out.exists()


def test_unknown_format_is_refused(checkpoints, options):
    opts = options(checkpoints["bert"]["classification"], formats="tflite,coreml")
    with pytest.raises(ConverterInputError, match="coreml") as info:
        convert(opts)
    assert "onnx" in info.value.fix and "tflite" in info.value.fix
    assert not opts.out.exists()


# The real MiniLM through TFLite's int8 ladder (buckets 32 and 128) is a run of minutes: the benchmark
# python -m pocketbert.benchmarks.int8_ladder --format tflite.  The suite converts the real MiniLM to TFLite
# fp32, fp16 and plain int8 in test_tflite_metadata.py and to fp32 in tests/runtime (parity with Hugging Face).


def test_tflite_int8_static_is_full_integer_and_dequantised(checkpoints, options):
    # A random tiny model's logits vary by ~1e-3 across sentences, so int8 output steps cost cosine;
    # the bar here (0.95) checks the full-integer path is sound: before the runner dequantised the
    # int8 logits, this model scored cosine 0.91 with errors of 128 (raw int8 codes read as floats).
    result = convert(options(checkpoints["mobilebert"]["classification"], formats="tflite", opts="int8",
                             int8="static", buckets=[32, 64], int8_min_cosine=0.95))
    fp32, static = read_manifest(result.bundle)["artifacts"]
    assert static["recipe"] == "tflite:int8-static" and static["details"]["method"] == "static"
    # each signature calibrated on its own: the ladder judged the 64 calibration texts at both lengths
    assert static["details"]["float_fallback"]["search"][0]["judged_texts"] == 2 * 64
    real = static["verification"]["real_sentences"]
    assert real["cosine"] >= 0.95 and real["top1_agreement"] >= 0.95 and real["max_abs"] < 0.01
    interpreter = Interpreter(model_path=str(result.bundle / static["file"]))
    outputs = interpreter.get_signature_runner("seq_32").get_output_details()
    assert outputs["logits"]["dtype"] == np.int8  # full integer down to the logits
    assert "FULLY_CONNECTED" in static["details"]["op_histogram"]
    # embedding tables int8 too: static_wi8_ai8 alone leaves them float (this file was 0.97x fp32's size)
    assert (result.bundle / static["file"]).stat().st_size < 0.6 * (result.bundle / fp32["file"]).stat().st_size


def test_tflite_fp16_halves_the_weights_and_stays_near_parity(checkpoints, options):
    result = convert(options(checkpoints["bert"]["ner"], recipes="tflite:fp16", buckets=[32]))
    manifest = read_manifest(result.bundle)
    fp32, fp16 = manifest["artifacts"]
    assert [fp32["recipe"], fp16["recipe"]] == ["tflite:fp32", "tflite:fp16"]
    v = fp16["verification"]
    assert v["passed"] and v["tolerance"]["min_cosine"] == 0.9999
    assert 0 < v["fixed_inputs"]["max_abs"] <= v["tolerance"]["max_abs"]  # changed, but within tolerance
    assert "DEQUANTIZE" in fp16["details"]["op_histogram"] and "float_fallback" not in fp16["details"]
    ratio = (result.bundle / fp16["file"]).stat().st_size / (result.bundle / fp32["file"]).stat().st_size
    assert 0.45 < ratio < 0.6


def test_tflite_roles_match_every_linear_in_every_signature(checkpoints, options):
    """Each FULLY_CONNECTED op is traced to its PyTorch Linear, across buckets and after transforms."""
    from pocketbert.converter.checkpoints import loading
    from pocketbert.converter.backends.tflite_graph import linear_roles
    from pocketbert.converter.backends.logits_model import LogitsModel

    ckpt = checkpoints["bert"]["classification"]
    result = convert(options(ckpt, formats="tflite", buckets=[16, 32], opts="nonorm,relu", allow_accuracy_loss=True))
    loaded = loading.load(str(ckpt))
    from pocketbert.converter.transforms import OPTS

    for name in ("nonorm", "relu"):
        OPTS[name].apply(loaded.model, loaded.family)
    roles = linear_roles(result.bundle / "model.tflite", LogitsModel(loaded.model, ["input_ids"]))
    per_layer = ["query", "key", "value"]
    expected = {f"bert.encoder.layer.*.attention.self.{n}" for n in per_layer} | {
        "bert.encoder.layer.*.attention.output.dense", "bert.encoder.layer.*.intermediate.dense",
        "bert.encoder.layer.*.output.dense", "bert.pooler.dense", "classifier"}
    assert set(roles) == expected  # no "other": every op was matched
    assert len(roles["bert.encoder.layer.*.output.dense"]) == 2 * 2  # 2 layers x 2 signatures
    assert len(roles["classifier"]) == 2


def test_tflite_static_float_fallback_keeps_the_chosen_role_in_float(checkpoints, tmp_path):
    """The shared search on TFLite: a judge that wants every FFN output projection in float."""
    from ai_edge_quantizer.utils import tfl_flatbuffer_utils as tfl

    from pocketbert.converter.backends import get
    from pocketbert.converter.backends.tflite_graph import model_bytes

    from .conftest import export_spec

    loaded, spec = export_spec(checkpoints["bert"]["classification"], buckets=[16, 32])
    calibration = spec.make_batches(TEXTS * 4, pad_to=16)
    ffn_out = loaded.model.bert.encoder.layer[0].output.dense.weight.shape  # (hidden, intermediate): unique

    def float_ffn_outputs(path):
        model = tfl.read_model(model_bytes(path))  # given a path, it leaks a descriptor (see model_bytes)
        found = []
        for subgraph in model.subgraphs:
            for op in subgraph.operators:
                if len(op.inputs) > 1 and list(subgraph.tensors[op.inputs[1]].shape) == list(ffn_out):
                    found.append(subgraph.tensors[op.inputs[1]].type == 0)  # 0 = FLOAT32
        return found

    judged = []

    def accept(path):
        found = float_ffn_outputs(path)
        judged.append(sum(found))
        return all(found), {"cosine": sum(found) / len(found)}

    artifact = get("tflite").quantize(spec, "int8-static", tmp_path / "q.tflite", calibration, accept)
    fallback = artifact.details["float_fallback"]
    assert judged[0] == 0 and fallback["accepted"]  # all-int8 first
    assert fallback["roles"] == ["bert.encoder.layer.*.output.dense"]
    assert fallback["linears_in_float"] == 2 * 2 and fallback["linears"] == (2 * 6 + 2) * 2
    assert len(fallback["search"]) == 1 + 1 + 8 + 1  # all-int8, the ceiling, 8 screens, 1 step
    assert fallback["search"][1]["ceiling"] and len(fallback["search"][1]["float_roles"]) == 8
    assert all(float_ffn_outputs(tmp_path / "q.tflite"))
    assert not (tmp_path / "q.tflite.candidate.tflite").exists()


def test_int8_auto_ships_the_fastest_recipe_that_passes(checkpoints, options):
    opts = options(checkpoints["mobilebert"]["classification"], formats="tflite", opts="int8", int8="auto",
                   buckets=[32], int8_min_cosine=0.95)
    result = convert(opts)
    manifest = read_manifest(result.bundle)
    fp32, int8 = manifest["artifacts"]
    selection = int8["details"]["selection"]
    candidates = {c["recipe"]: c for c in selection["candidates"]}
    assert set(candidates) == {"tflite:int8-dynamic", "tflite:int8-static"}
    (chosen,) = [c for c in selection["candidates"] if c["chosen"]]
    assert int8["recipe"] == chosen["recipe"] and chosen["accepted"]
    for other in candidates.values():
        if other is not chosen and other["latency_ms"] is not None:
            assert other["latency_ms"] >= chosen["latency_ms"]
        if other is not chosen and other["latency_ms"] is None:  # skipped or failed: never faster when built plain
            assert other["plain_latency_ms"] >= chosen["latency_ms"] or not other["accepted"]
    static = candidates["tflite:int8-static"]
    assert "timed_on" in static  # a calibrated candidate is timed on a probe calibrated on one batch first
    if static["outcome"].startswith("skipped"):  # then never calibrated in full nor judged
        assert static["accepted"] is None and "top1_agreement" not in static
    files = sorted(p.name for p in result.bundle.iterdir() if p.suffix == ".tflite")
    assert files == sorted(["model.tflite", int8["file"]])  # the losing candidate is gone


@pytest.mark.parametrize("kwargs, needle", [
    ({"recipes": "tflite:int4"}, "tflite:int4"),
    ({"recipes": "tflite:fp16", "formats": "onnx"}, "--format"),
    ({"recipes": "tflite:fp16", "opts": "int8"}, "--opt int8"),
    ({"recipes": "tflite:fp16", "calibration": "x.txt"}, "--calibration"),
    ({"recipes": "onnx:fp32", "buckets": [32]}, "--buckets"),
])
def test_contradictory_or_unknown_recipes_are_refused(kwargs, needle, checkpoints, options):
    opts = options(checkpoints["bert"]["classification"], **kwargs)
    with pytest.raises(ConverterInputError, match=needle.replace("-", r"\-")):
        convert(opts)
    assert not opts.out.exists()


def test_an_op_without_builtin_lowering_is_named_with_the_transform_that_avoids_it(tokenizer, options, tmp_path):
    """xIELU (transformers' "xielu" activation) does not lower to builtin TFLite ops: the error names
    the activation and the op, suggests relu, writes nothing, and --opt relu then converts."""
    from .conftest import build_checkpoint

    ckpt = build_checkpoint(tmp_path / "xielu", "bert", tokenizer, hidden_act="xielu")
    opts = options(ckpt, formats="tflite", buckets=[16])
    with pytest.raises(ConverterInputError, match="'xielu'.*no builtin TFLite lowering") as info:
        convert(opts)
    assert "activations.py" in info.value.problem and "relu" in info.value.fix
    assert not opts.out.exists()
    result = convert(options(ckpt, formats="tflite", buckets=[16], opts="relu", allow_accuracy_loss=True,
                             out=tmp_path / "relu"))
    assert read_manifest(result.bundle)["artifacts"][0]["verification"]["passed"]


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_tflite_static_int8_ignores_padding(family, checkpoints, tmp_path):
    """Full-integer int8 must still mask padding.  The additive mask (float minimum where padded)
    quantised to int8 became ~0 and padding was attended to; it and the softmax now stay float, so
    whatever token ids sit under attention_mask 0, the logits are the same."""
    from ai_edge_quantizer.utils import tfl_flatbuffer_utils as tfl

    from pocketbert.converter.backends import get
    from pocketbert.converter.backends.tflite_graph import masked_softmax_ops, model_bytes

    from .conftest import export_spec

    _, spec = export_spec(checkpoints[family]["classification"], buckets=[16])
    calibration = spec.make_batches(TEXTS * 4, pad_to=16)
    dest = tmp_path / "q.tflite"
    get("tflite").quantize(spec, "int8-static", dest, calibration)
    runner = Interpreter(model_path=str(dest)).get_signature_runner("seq_16")
    feeds = {n: spec.make_batches(TEXTS[1:], pad_to=16)[0][n].astype(np.int32) for n in spec.input_names}
    assert feeds["attention_mask"][0, -1] == 0  # the row is padded
    noisy = {n: v.copy() for n, v in feeds.items()}
    padded = feeds["attention_mask"] == 0
    noisy["input_ids"][padded] = np.random.default_rng(0).integers(1000, 2000, padded.sum())
    np.testing.assert_array_equal(runner(**feeds)["logits"], runner(**noisy)["logits"])
    # every softmax found, and its input (scores + mask) is float in the quantised model
    found = [name.value for name, _ in masked_softmax_ops(dest)]
    assert found.count("SOFTMAX") == op_histogram(dest)["SOFTMAX"] >= 2
    assert found.count("ADD") + found.count("SELECT_V2") >= found.count("SOFTMAX")
    model = tfl.read_model(model_bytes(dest))  # given a path, it leaks a descriptor (see model_bytes)
    codes = [max(c.builtinCode, c.deprecatedBuiltinCode) for c in model.operatorCodes]
    softmax = tfl.TFL_OP_NAME_TO_CODE[tfl.qtyping.TFLOperationName.SOFTMAX]
    inputs = [model.subgraphs[0].tensors[op.inputs[0]].type for op in model.subgraphs[0].operators
              if codes[op.opcodeIndex] == softmax]
    assert inputs and set(inputs) == {0}  # 0 = FLOAT32


def test_float_fallback_search_ships_the_cheapest_attempt_meeting_the_bar():
    """Short of the target, the search keeps the cheapest step that meets the bar: when the ceiling (every role
    in float) misses the target, no step can reach it, so the steps stop at the first meeting the bar."""
    from pocketbert.converter.backends.base import float_fallback_search

    roles = {"a": [1, 2], "b": [3, 4], "c": [5, 6]}
    good = {"a": 0.9, "b": 0.8, "c": 0.7}  # the cosine each role reaches alone: a first, then b, then c
    written, judged = [], []

    def attempt(float_roles, final, screen=False):
        judged.append(list(float_roles))
        if final:
            written.append(list(float_roles))
        cosine = good[float_roles[0]] if len(float_roles) == 1 else 0.5 + 0.1 * len(float_roles)
        return False, {"cosine": cosine, "top1_agreement": 0.97, "meets_bar": len(float_roles) >= 2}

    result = float_fallback_search(roles, attempt)
    assert result["accepted"] and not result["target_met"]
    assert result["roles"] == ["a", "b"] and result["linears_in_float"] == 4
    assert written == [[], ["a"], ["a", "b"]]  # the last write is the one shipped
    assert judged[1] == ["a", "b", "c"] and result["search"][1]["ceiling"]  # the ceiling, right after all-int8

    def never(float_roles, final, screen=False):
        judged.append(list(float_roles))
        return False, {"cosine": 0.1, "meets_bar": False}

    judged.clear()
    result = float_fallback_search(roles, never)
    assert not result["accepted"] and result["roles"] == []
    assert judged == [[], ["a", "b", "c"]]  # the ceiling misses the bar: no step can meet it, none is tried

    def all_int8_meets_the_bar(float_roles, final, screen=False):
        judged.append(list(float_roles))
        return False, {"cosine": 0.995, "meets_bar": True}

    judged.clear()
    result = float_fallback_search(roles, all_int8_meets_the_bar)
    assert result["accepted"] and not result["target_met"] and result["roles"] == []
    assert judged == [[], ["a", "b", "c"]]  # the target is out of reach and all-int8 is the cheapest meeting the bar


def test_float_fallback_search_walks_to_the_target_when_the_ceiling_reaches_it():
    """A ceiling that meets the target: the steps go on past the bar until one meets the target too."""
    from pocketbert.converter.backends.base import float_fallback_search

    roles = {"a": [1], "b": [2], "c": [3]}

    def attempt(float_roles, final, screen=False):
        cosine = 0.9 - 0.1 * "abc".index(float_roles[0]) if len(float_roles) == 1 else 0.5 + 0.1 * len(float_roles)
        return len(float_roles) == 3, {"cosine": cosine, "meets_bar": len(float_roles) >= 1, "screened": screen}

    result = float_fallback_search(roles, attempt)
    assert result["accepted"] and result["target_met"] and result["roles"] == ["a", "b", "c"]
    assert [s["float_roles"] for s in result["search"] if not s.get("screened") and "ceiling" not in s] == \
        [[], ["a"], ["a", "b"], ["a", "b", "c"]]


def test_float_fallback_search_ranks_roles_by_screening_and_accepts_only_full_judgements():
    """Each role alone is judged by the judge's cheap screen, to rank the roles; every step that could ship
    is judged in full, and the ranking is the screen's."""
    from pocketbert.converter.backends.base import float_fallback_search, judge_file

    class Judge:
        calls: list = []

        def screen(self, roles):
            self.calls.append(("screen", roles))
            return False, {"cosine": {("a",): 0.5, ("b",): 0.9}[roles], "screened": True}

        def __call__(self, roles):
            self.calls.append(("full", roles))
            return len(roles) == 1, {"cosine": 0.99, "meets_bar": len(roles) >= 1}

    judge = Judge()
    def attempt(roles, final, screen=False):
        return judge_file(judge, tuple(roles), screen)

    result = float_fallback_search({"a": [1], "b": [2]}, attempt)
    assert result["accepted"] and result["target_met"] and result["roles"] == ["b"]  # b helps most alone
    # all-int8, the ceiling (both roles in float), the screens, then the steps
    assert judge.calls == [("full", ()), ("full", ("a", "b")), ("screen", ("a",)), ("screen", ("b",)),
                           ("full", ("b",))]


def test_profiler_based_calibration_finds_the_ranges_the_default_mode_finds(checkpoints, tmp_path):
    """int8-static calibrates in ai-edge-quantizer's profiler-based mode (min and max tracked in C++): every
    tensor the default mode (each tensor copied out and reduced in Python) calibrates gets the same range."""
    from ai_edge_quantizer import quantizer
    from ai_edge_quantizer.calibrator import CalibrationMode

    from pocketbert.converter.backends import get
    from pocketbert.converter.backends.tflite_calibration import fit
    from pocketbert.converter.backends.tflite_graph import masked_softmax_ops, model_bytes
    from pocketbert.converter.backends.tflite_recipes import quiet, recipe_for

    from .conftest import FULL_INTEGER_TEXTS, export_spec

    _, spec = export_spec(checkpoints["bert"]["classification"], buckets=[16, 32])
    path = tmp_path / "float.tflite"
    get("tflite").export(spec, path)
    batch = spec.make_batches(FULL_INTEGER_TEXTS, pad_to=32)[0]
    rows = [{n: batch[n][i:i + 1] for n in spec.input_names} for i in range(len(FULL_INTEGER_TEXTS))]
    data = {f"seq_{b}": [{n: fit(r[n], b) for n in r} for r in rows] for b in (16, 32)}
    found = {}
    for mode in (CalibrationMode.CALIBRATION_PROFILER_BASED, CalibrationMode.CALIBRATION_PRESERVE_ALL_TENSORS):
        qt = quantizer.Quantizer(model_bytes(path), recipe_for("int8-static", [], masked_softmax_ops(path)))
        with quiet():
            found[mode] = qt.calibrate(data, num_threads=1, mode=mode)
    profiler, default = found[CalibrationMode.CALIBRATION_PROFILER_BASED], found[
        CalibrationMode.CALIBRATION_PRESERVE_ALL_TENSORS]
    assert len(default) > 20 and set(default) <= set(profiler)
    for name, qsv in default.items():
        for bound in ("min", "max"):
            ours, theirs = np.ravel(profiler[name][bound]), np.ravel(qsv[bound])  # (1,) there, (1, 1) here
            np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6 * max(1.0, float(np.abs(theirs).max())),
                                       err_msg=name)


def test_a_screen_quantises_one_signature_exactly_as_the_whole_file(checkpoints, tmp_path):
    """The float-fallback search's screens quantise a file holding only the signature they read: that signature's
    logits are, bit for bit, the whole file's (full-integer with its calibrated ranges, and dynamic int8)."""
    from ai_edge_litert.interpreter import Interpreter

    from pocketbert.converter.backends import get
    from pocketbert.converter.backends.tflite import ScreenFile
    from pocketbert.converter.backends.tflite_graph import linear_roles, masked_softmax_ops
    from pocketbert.converter.backends.tflite_recipes import quantize_file

    from .conftest import FULL_INTEGER_TEXTS, export_spec

    _, spec = export_spec(checkpoints["bert"]["classification"], buckets=[16, 32, 64])
    path = tmp_path / "float.tflite"
    get("tflite").export(spec, path)
    calibration = spec.make_batches(FULL_INTEGER_TEXTS, pad_to=32)
    screens = ScreenFile(path, spec.buckets, calibration)
    screen = screens.path()
    assert screen != path and screens.bucket == 32
    assert list(Interpreter(model_path=str(screen)).get_signature_list()) == ["seq_32"]
    scopes = next(iter(linear_roles(path, spec.model).values()))  # one role kept in float, as a screen does
    feeds = {n: np.asarray(calibration[0][n][:1], np.int32) for n in spec.input_names}
    for precision in ("int8-static", "int8-dynamic"):
        static = precision == "int8-static"
        float_ops = masked_softmax_ops(path) if static else []
        ranges = get("tflite")._calibrate(spec, path, calibration, float_ops) if static else None
        logits = []
        for source in (path, screen):
            out = tmp_path / f"{source.name}.{precision}.tflite"
            quantize_file(source, out, precision, scopes, calibrated=ranges, float_ops=float_ops)
            logits.append(Interpreter(model_path=str(out)).get_signature_runner("seq_32")(**feeds)["logits"])
        assert np.array_equal(*logits), precision
    screens.remove()
    assert not screen.exists() and path.exists()
