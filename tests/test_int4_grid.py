"""int4-tune: the int4 grid the TFLite int4 file stores, training through it, and a file that then holds the
checkpoint's weights exactly."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch import nn

from pocketbert.converter.backends.tflite_graph import fully_connected_weights
from pocketbert.converter.checkpoints import loading
from pocketbert.converter.errors import ConverterInputError
from pocketbert.converter.levers.int4_tune import Int4Options, int4_tune_checkpoint
from pocketbert.converter.pipeline import convert
from pocketbert.converter.training import checkpoint_job as job
from pocketbert.converter.training.loop import parse_budget
from pocketbert.converter.weights import int4_grid, int4_packing
from pocketbert.converter.weights.factored_table import factor
from pocketbert.runtime.bundle import read_manifest

from .conftest import DATA, build_checkpoint, nonorm_model

INT4, FLOAT32 = 17, 0  # TensorType


@pytest.fixture(scope="module")
def tuned(tokenizer, tmp_path_factory):
    """A tiny nonorm/relu checkpoint with factored word embeddings (the phone path), tuned through int4."""
    root = tmp_path_factory.mktemp("int4")
    built = build_checkpoint(root / "built", "bert", tokenizer, labels=("negative", "positive"), seed=3)
    loaded, _ = nonorm_model(built)
    factor(loaded.model, 8)
    record = {"kind": "finetune", "task": "glue:sst2", "train_examples": 64, "dev_examples": 872, "recipe": {},
              "training": {"steps": 0, "seconds": 0, "stopped_by": "n/a"}, "dev_scores": {}}
    source = job.write(loaded.model, loaded.tokenizer, root / "sst2", overwrite=False, record=record,
                       transforms=["nonorm", "relu"])
    options = Int4Options(budget=parse_budget("4steps"), train_limit=64, data_dir=DATA)
    path, record = int4_tune_checkpoint(str(source), "glue:sst2", root / "model", options, log=lambda *_: None)
    return source, path, record


def test_rounding_is_the_quantizers_symmetric_per_row_int4_with_straight_through_gradients():
    weight = torch.tensor([[0.7, -0.35, 0.05, 0.0], [-2.0, 1.0, 0.3, -0.1], [0.0, 0.0, 0.0, 0.0]],
                          requires_grad=True)
    out = int4_grid.rounded(weight)
    scale = torch.tensor([0.1, 2.0 / 7, 1e-9 / 7])
    steps = out.detach() / scale[:, None]
    torch.testing.assert_close(steps, steps.round())
    assert steps.abs().max() == 7 and steps[0].tolist() == [7, -4, 0, 0]  # -3.5 rounds half to even
    out.sum().backward()
    torch.testing.assert_close(weight.grad, torch.ones_like(weight))  # straight through
    assert int4_grid.on_grid(out.detach().numpy()) and not int4_grid.on_grid(weight.detach().numpy())


def test_simulation_rounds_every_linear_and_the_word_table_and_leaves_the_weights(checkpoints):
    loaded = loading.load(str(checkpoints["bert"]["classification"]))
    names = {path for path, _ in int4_grid.quantised(loaded.model)}
    linears = {path for path, m in loaded.model.named_modules() if isinstance(m, nn.Linear)}
    assert names == linears | {"bert.embeddings.word_embeddings"}  # a whole table; a factored one: its narrow table
    before = {k: v.clone() for k, v in loaded.model.state_dict().items()}
    batch = loaded.tokenizer(["a gripping film", "dull"], padding=True, return_tensors="pt")
    inputs = {k: batch[k] for k in loaded.family.input_names}
    with torch.no_grad():
        plain = loaded.model(**inputs).logits
        with int4_grid.simulated(loaded.model):
            simulated = loaded.model(**inputs).logits
        assert not torch.equal(plain, simulated)
        torch.testing.assert_close(loaded.model(**inputs).logits, plain, rtol=0, atol=0)  # detached again
        assert all(torch.equal(v, before[k]) for k, v in loaded.model.state_dict().items())
        assert not int4_grid.is_snapped(loaded.model)
        int4_grid.snap(loaded.model)
        torch.testing.assert_close(loaded.model(**inputs).logits, simulated, rtol=1e-5, atol=1e-6)
        # once snapped, rounding changes nothing, bit for bit: the simulation is the model
        assert int4_grid.is_snapped(loaded.model)
        snapped = loaded.model(**inputs).logits
        with int4_grid.simulated(loaded.model):
            assert torch.equal(loaded.model(**inputs).logits, snapped)


def test_tuned_checkpoint_is_on_the_grid_and_records_what_was_done(tuned):
    source, path, record = tuned
    loaded = loading.load(str(path))
    for name, module in int4_grid.quantised(loaded.model):
        assert int4_grid.on_grid(module.weight.detach().numpy()), name
    grid = record["int4_grid"]
    assert grid["steps"] == 4 and grid["teacher"] == "the checkpoint itself"
    assert grid["tensors_on_grid"] == len(int4_grid.quantised(loaded.model))
    assert set(grid) >= {"dev_float", "dev_int4_before", "dev_after"}
    assert json.loads((path / "training.json").read_text())["int4_grid"] == grid
    untouched = loading.load(str(source))
    assert not all(torch.equal(a, b) for a, b in zip(loaded.model.parameters(), untouched.model.parameters()))


def test_augmented_tuning_trains_on_the_variants_and_records_them(tuned, tmp_path):
    source, _, _ = tuned
    options = Int4Options(budget=parse_budget("1epochs"), train_limit=32, data_dir=DATA, augment=3)
    printed = []
    _, record = int4_tune_checkpoint(str(source), "glue:sst2", tmp_path / "aug", options, log=printed.append)
    made, grid = record["int4_grid"]["augmentation"], record["int4_grid"]
    assert made["originals"] == 32 and made["copies"] == 3 and 32 < made["variants"] <= 96
    assert made["neighbours"] == "the tuned checkpoint's word-piece embeddings"  # a factored table: its whole rows
    assert grid["steps"] == -(-(32 + made["variants"]) // 32)  # one pass over the text and its variants
    assert f"32 examples and {made['variants']} variants" in "\n".join(printed)


def test_a_teacher_that_reads_other_pieces_or_labels_is_refused(tuned, tokenizer, tmp_path):
    source, path, _ = tuned
    other = build_checkpoint(tmp_path / "three", "bert", tokenizer)  # three labels
    options = Int4Options(teacher=str(other), budget=parse_budget("1steps"), train_limit=8, data_dir=DATA)
    with pytest.raises(ConverterInputError, match="labels differ"):
        int4_tune_checkpoint(str(source), "glue:sst2", tmp_path / "out", options, log=lambda *_: None)
    assert not (tmp_path / "out").exists()


def test_int4_file_of_a_packed_checkpoint_holds_its_weights_exactly(packed, options):
    path, _ = packed
    result = convert(options(path, opts="fold", recipes="tflite:int4-dynamic", buckets=[16]))
    manifest = read_manifest(result.bundle)
    fp32, int4 = manifest["artifacts"]
    assert int4["details"]["clipping"] == "min-max"  # OCTAV would move weights that are on the grid
    assert int4["details"]["weights_on_int4_grid"] is True
    assert int4["details"]["float_fallback"]["roles"] == []
    floats = fully_connected_weights(result.bundle / fp32["file"])
    assert floats and all(int4_grid.on_grid(w) for w in floats)
    stored = _int4_weights(result.bundle / int4["file"])
    for weight in floats:
        match = [s for s in stored if s.shape == weight.shape and np.allclose(s, weight, rtol=1e-6, atol=1e-9)]
        assert match, weight.shape
    # the token-type table (2 rows) stays float, as it was in training; the word table is int4
    assert _lookup_tables(result.bundle / int4["file"]) == {2: FLOAT32, 30522: INT4}


def _lookup_tables(path) -> dict[int, int]:
    """Rows -> stored tensor type of every EMBEDDING_LOOKUP table of a .tflite file."""
    from ai_edge_quantizer.utils import tfl_flatbuffer_utils as tfl

    model = tfl.read_model(path.read_bytes())
    lookup = tfl.TFL_OP_NAME_TO_CODE[tfl.qtyping.TFLOperationName.EMBEDDING_LOOKUP]
    codes = [max(c.builtinCode, c.deprecatedBuiltinCode) for c in model.operatorCodes]
    tables = {}
    for subgraph in model.subgraphs:
        producer = {out: op for op in subgraph.operators for out in op.outputs}
        for op in subgraph.operators:
            if codes[op.opcodeIndex] == lookup:
                table = op.inputs[1]
                if table in producer:  # a weight-only table is looked up through a DEQUANTIZE of the stored one
                    table = producer[table].inputs[0]
                tables[int(subgraph.tensors[table].shape[0])] = subgraph.tensors[table].type
    return tables


def _int4_weights(path) -> list[np.ndarray]:
    """Every int4 tensor of a .tflite file, dequantised (two values a byte, low nibble first, per-row scales)."""
    from ai_edge_quantizer.utils import tfl_flatbuffer_utils as tfl

    model = tfl.read_model(path.read_bytes())
    out = []
    for subgraph in model.subgraphs:
        for tensor in subgraph.tensors:
            data = model.buffers[tensor.buffer].data
            if tensor.type != INT4 or data is None:
                continue
            raw = np.asarray(data, dtype=np.uint8)
            nibbles = np.stack([raw & 0x0F, raw >> 4], axis=1).reshape(-1)[:int(np.prod(tensor.shape))]
            values = np.where(nibbles > 7, nibbles.astype(np.int16) - 16, nibbles).reshape(tensor.shape)
            scale = np.asarray(tensor.quantization.scale, dtype=np.float32).reshape(-1, 1)
            out.append(values.astype(np.float32) * scale)
    return out


@pytest.fixture(scope="module")
def packed(tuned, tmp_path_factory):
    """The tuned checkpoint packed without training (a budget of 0 steps)."""
    _, path, _ = tuned
    options = Int4Options(budget=parse_budget("0steps"), pack=True, data_dir=DATA)
    out = tmp_path_factory.mktemp("packed") / "model"
    return int4_tune_checkpoint(str(path), "glue:sst2", out, options, log=lambda *_: None)


def test_packing_a_tuned_checkpoint_scores_it_on_the_grid_only_when_its_scores_are_not_given(tuned, packed, tmp_path):
    """The tuned weights are on the grid: packing scores them once (float, which is the on-grid score), exactly the
    tuned checkpoint's recorded score; given that score (as the one command passes the step before's), none."""
    _, path, tuned_record = tuned
    grid = packed[1]["int4_grid"]
    assert grid["dev_float"] == grid["dev_int4_before"] == tuned_record["int4_grid"]["dev_after"]
    given = {"accuracy": 12.34}  # no share of 872 dev sentences: taken as it is, never scored again
    options = Int4Options(budget=parse_budget("0steps"), pack=True, data_dir=DATA)
    _, record = int4_tune_checkpoint(str(path), "glue:sst2", tmp_path / "model", options, log=lambda *_: None,
                                     source_scores=given)
    assert record["int4_grid"]["dev_float"] == record["int4_grid"]["dev_int4_before"] == given
    assert record["int4_grid"]["dev_after"] == grid["dev_after"]


def test_packing_stores_two_values_a_byte_low_nibble_first():
    weight = torch.tensor([[7.0, -7.0, 1.0, -1.0], [0.0, 0.0, 0.0, 0.0]]) * 0.25
    values, scale = int4_packing.pack(weight)
    assert values.dtype == torch.uint8 and values.shape == (2, 2) and scale.dtype == torch.float32
    assert values[0].tolist() == [0x97, 0xF1] and values[1].tolist() == [0, 0]  # -7 is 0x9, -1 0xF
    torch.testing.assert_close(int4_packing.unpack(values, scale), weight, rtol=0, atol=0)


def test_a_packed_checkpoint_is_an_eighth_and_loads_the_weights_it_was_scored_with(tuned, packed):
    _, float_path, _ = tuned
    path, record = packed
    assert record["int4_grid"]["packed"] and record["int4_grid"]["steps"] == 0
    config = json.loads((path / "config.json").read_text())["pocketbert"]
    loaded, source = loading.load(str(path)), loading.load(str(float_path))
    quantised = int4_grid.quantised(source.model)
    assert config[int4_packing.KEY] == {"tensors": len(quantised)}
    assert any("stored as int4" in note for note in loaded.notes)
    expected = source.model
    kept = {name for name, t in expected.state_dict().items() if int4_packing.packable(name, t)}
    assert kept == {f"{p}.weight" for p, _ in quantised}
    int4_packing.round_trip(expected)
    job.round_to_fp16(expected, keep=kept.__contains__)
    for name, tensor in expected.state_dict().items():
        assert torch.equal(loaded.model.state_dict()[name], tensor), name
    sizes = {p: sum(f.stat().st_size for f in p.glob("*.safetensors")) for p in (path, float_path)}
    assert sizes[path] < 0.3 * sizes[float_path]  # a rank-8 table: its float32 row scales are half its bytes


def test_a_packed_checkpoint_with_a_weight_missing_is_refused(packed, tmp_path):
    import shutil

    from safetensors.torch import load_file, save_file

    path, _ = packed
    broken = tmp_path / "broken"
    shutil.copytree(path, broken)
    tensors = load_file(str(broken / "model.safetensors"))
    name = next(k for k in tensors if k.endswith(int4_packing.SCALE))
    del tensors[name]
    save_file(tensors, str(broken / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(ConverterInputError, match="no .int4_scale entry"):
        loading.load(str(broken))


def test_a_layernorm_checkpoint_is_refused_before_any_work(checkpoints, tmp_path):
    options = Int4Options(budget=parse_budget("1steps"), train_limit=8, data_dir=DATA)
    with pytest.raises(ConverterInputError, match="LayerNorm"):
        int4_tune_checkpoint(str(checkpoints["bert"]["classification"]), "glue:sst2", tmp_path / "out", options,
                             log=lambda *_: None)
    assert not (tmp_path / "out").exists()


def test_a_teacher_whose_vocabulary_the_checkpoint_was_trimmed_from_teaches_it(tokenizer, tmp_path):
    from pocketbert.converter.levers.vocab_trim import trim
    from pocketbert.converter.training.teacher import _piece_map, frozen_teacher

    built = build_checkpoint(tmp_path / "built", "bert", tokenizer, labels=("negative", "positive"), seed=5)
    wide, _ = nonorm_model(built)
    record = {"kind": "finetune", "task": "glue:sst2", "train_examples": 64, "dev_examples": 872, "recipe": {},
              "training": {"steps": 0, "seconds": 0, "stopped_by": "n/a"}, "dev_scores": {}}
    teacher = job.write(wide.model, wide.tokenizer, tmp_path / "teacher", overwrite=False, record=record,
                        transforms=["nonorm", "relu"])
    train, _ = job.splits("glue:sst2", DATA, 64)
    trimmed_tokenizer, _ = trim(wide.model, wide.tokenizer, train.texts, 3000)
    student = job.write(wide.model, trimmed_tokenizer, tmp_path / "student", overwrite=False, record=record,
                        transforms=["nonorm", "relu"])
    loaded = loading.load(str(student))
    pieces = _piece_map(loaded, loading.load(str(teacher)), train)
    assert pieces is not None and len(pieces) == 3000
    assert (trimmed_tokenizer.convert_ids_to_tokens(list(range(3000)))
            == wide.tokenizer.convert_ids_to_tokens(pieces.tolist()))
    # the frozen teacher reads the student's ids: the same weights, so exactly the student's logits
    encoded = loaded.tokenizer(train.texts[:4], padding=True, return_tensors="pt")
    with torch.no_grad():
        torch.testing.assert_close(frozen_teacher(str(teacher), loaded, train)(**encoded).logits,
                                   loaded.model.eval()(**encoded).logits)
    options = Int4Options(teacher=str(teacher), budget=parse_budget("2steps"), train_limit=64, data_dir=DATA)
    _, tuned = int4_tune_checkpoint(str(student), "glue:sst2", tmp_path / "out", options, log=lambda *_: None)
    assert tuned["int4_grid"]["steps"] == 2 and tuned["int4_grid"]["teacher"] == str(teacher)
    # on more text, pieces the trimmed vocabulary lacks split words differently: the two would read other text
    options = Int4Options(teacher=str(teacher), budget=parse_budget("2steps"), train_limit=2000, data_dir=DATA)
    with pytest.raises(ConverterInputError, match="reads other pieces"):
        int4_tune_checkpoint(str(student), "glue:sst2", tmp_path / "refused", options, log=lambda *_: None)
    assert not (tmp_path / "refused").exists()
