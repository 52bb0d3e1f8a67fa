"""Depth shrinking (``python -m converter shrink``): fewer blocks, distilled from the checkpoint, judged
against the original teacher."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from pocketbert.converter import cli
from pocketbert.converter.checkpoints import loading
from pocketbert.converter.errors import EXIT_INPUT, ConverterInputError
from pocketbert.converter.families import is_nonorm
from pocketbert.converter.levers.shrink import drop_blocks, kept_blocks, shrink_checkpoint
from pocketbert.converter.pipeline import ConvertOptions, convert
from pocketbert.converter.training import loop

from .conftest import DATA, build_checkpoint

QUIET = {"log": lambda *a: None}


TEACHER_RECORD = {"kind": "recover", "task": "glue:sst2", "teacher": "models/fine-tuned", "metric": "accuracy",
                  "dev_scores": {"teacher": {"accuracy": 91.25}, "without_recovery": {"accuracy": 50.0},
                                 "recovered": {"accuracy": 90.5}}}


@pytest.fixture(scope="module")
def parents(tmp_path_factory, tokenizer):
    """Two 4-block tiny BERTs for SST-2 with large random weights (logits and hidden states that differ from
    sentence to sentence: something to distil): ``plain``, and ``recovered``, which records nonorm,relu in
    config.json and a training.json whose teacher scored 91.25 (what ``recover`` writes)."""
    root = tmp_path_factory.mktemp("shrink")
    plain = build_checkpoint(root / "plain", "bert", tokenizer, labels=("negative", "positive"), num_hidden_layers=4,
                             initializer_range=0.2)
    recovered = root / "recovered"
    shutil.copytree(plain, recovered)
    config = json.loads((recovered / "config.json").read_text())
    config["pocketbert"] = {"transforms": ["nonorm", "relu"]}
    (recovered / "config.json").write_text(json.dumps(config))
    (recovered / "training.json").write_text(json.dumps(TEACHER_RECORD))
    return plain, recovered


def _shrink(checkpoint, out, layers=2, steps=40, **kwargs):
    return shrink_checkpoint(str(checkpoint), "glue:sst2", layers, out, budget=loop.Budget(steps=steps), lr=1e-3,
                             data_dir=DATA, train_limit=512, dev_limit=200, batch_size=16, progress=False, **QUIET,
                             **kwargs)


@pytest.fixture(scope="module")
def shrunk(parents, tmp_path_factory):
    return _shrink(parents[1], tmp_path_factory.mktemp("shrunk") / "two-blocks")


def test_kept_blocks_are_the_layer_maps_targets():
    assert kept_blocks(6, 4) == [0, 2, 3, 5]
    assert kept_blocks(6, 5) == [0, 1, 2, 3, 5]
    assert kept_blocks(12, 6) == [1, 3, 5, 7, 9, 11]
    assert kept_blocks(4, 1) == [3]
    for bad in (0, -1, 6, 7):
        with pytest.raises(ConverterInputError, match="--layers") as error:
            kept_blocks(6, bad)
        assert "from 1 to 5" in error.value.fix


def test_the_student_starts_as_the_teachers_blocks(parents):
    """4 -> 3 keeps blocks 0, 1, 3: the student's first two blocks compute the teacher's first two exactly."""
    teacher, student = loading.load(str(parents[1])), loading.load(str(parents[1]))
    drop_blocks(student.model, student.family, kept_blocks(4, 3))
    assert student.model.config.num_hidden_layers == len(student.family.layers(student.model)) == 3
    inputs = teacher.tokenizer(["a fine film", "dull"], padding=True, return_tensors="pt")
    with torch.no_grad():
        t = teacher.model(**inputs, output_hidden_states=True).hidden_states
        s = student.model(**inputs, output_hidden_states=True).hidden_states
    assert len(s) == 4
    for m in range(3):
        torch.testing.assert_close(s[m], t[m], rtol=0, atol=0)
    assert not torch.equal(s[3], t[4])  # block 3 now reads block 1's output: what distillation repairs


def test_shrunk_checkpoint_has_fewer_blocks_loads_and_converts(parents, shrunk, tmp_path):
    path, record = shrunk
    config = json.loads((path / "config.json").read_text())
    assert config["num_hidden_layers"] == 2 and config["pocketbert"]["transforms"] == ["nonorm", "relu"]
    loaded = loading.load(str(path))
    assert len(loaded.family.layers(loaded.model)) == 2
    assert all(is_nonorm(m) for _, m in loaded.family.norms(loaded.model))
    assert record["shrink"]["kept_blocks"] == [1, 3] and record["kind"] == "shrink"
    # the reloaded checkpoint computes what was scored
    from pocketbert.converter.data import load_task
    from pocketbert.converter.training.evaluate import evaluate

    dev = load_task("glue:sst2", "dev", DATA, limit=200).encode(loaded.tokenizer, 512, loaded.labels)
    assert evaluate(loaded.model, dev)["accuracy"] == pytest.approx(record["dev_scores"]["recovered"]["accuracy"],
                                                                    abs=1e-3)
    result = convert(ConvertOptions(checkpoint=str(path), out=tmp_path / "bundle", formats="onnx",
                                    opts="nonorm,relu", verify_samples=20, measure_latency=False, data_dir=DATA))
    assert result.manifest["source"]["training"]["dev_scores"]["teacher"] == record["dev_scores"]["teacher"]


def test_the_record_keeps_the_original_teachers_score(parents, shrunk):
    _, record = shrunk
    scores = record["dev_scores"]
    assert scores["teacher"] == {"accuracy": 91.25}  # the original teacher's, not the 4-block parent's
    assert scores["parent"]["accuracy"] != 91.25  # the parent, measured on dev
    assert record["teacher"] == TEACHER_RECORD["teacher"] and record["history"]["kind"] == "recover"
    assert record["delta_vs_teacher"] == pytest.approx(
        scores["recovered"]["accuracy"] - scores["teacher"]["accuracy"], abs=1e-3)


def test_distillation_narrows_the_students_gap(shrunk):
    """The dropped student's gap to its parent on dev (logits, last hidden state) falls to well under half
    where it started (measured: about a fifth and an eighth); a run that trained nothing would leave it."""
    _, record = shrunk
    before, after = record["distillation"]["gap_before"], record["distillation"]["gap_after"]
    assert after["logit_mse"] < 0.5 * before["logit_mse"]
    assert after["last_hidden_mse"] < 0.5 * before["last_hidden_mse"]


def test_a_plain_fine_tuned_checkpoint_is_its_own_teacher(parents, tmp_path):
    """Without a teacher in its training record the checkpoint is the teacher (so is a teacher that names its folder
    spelled otherwise: loaded once); a frozen table stays as it was."""
    spelled = str(parents[0].parent / "." / parents[0].name)
    path, record = _shrink(parents[0], tmp_path / "out", layers=3, steps=2, freeze_word_embeddings=True,
                           teacher=spelled)
    assert record["dev_scores"]["teacher"] == record["dev_scores"]["parent"]
    assert record["distilled_from"] == record["parent"] and len(record["comparison"]["rows"]) == 3
    assert record["shrink"]["kept_blocks"] == [0, 1, 3]
    before = loading.load(str(parents[0])).model.get_input_embeddings().weight
    after = loading.load(str(path)).model.get_input_embeddings().weight
    assert torch.equal(before, after)


@pytest.mark.parametrize("layers", ["0", "4", "9"])
def test_cli_refuses_bad_layers(parents, tmp_path, capsys, layers):
    out = tmp_path / "out"
    code = cli.main(["shrink", str(parents[1]), "--task", "glue:sst2", "--layers", layers, "--budget", "2steps",
                     "--data-dir", str(DATA), "--out", str(out)])
    assert code == EXIT_INPUT
    err = capsys.readouterr().err
    assert "error:" in err and f"--layers {layers}" in err and "fix: give --layers from 1 to 3" in " ".join(err.split())
    assert "Traceback" not in err and not out.exists()


def _damaged_copy(source: Path, out: Path) -> Path:
    """``source`` with every feed-forward output projection scaled by 0.3 (as a narrowing with no training loses
    accuracy): a parent whose own outputs are far from the teacher's."""
    shutil.copytree(source, out)
    loaded = loading.load(str(out))
    with torch.no_grad():
        for block in loaded.family.layers(loaded.model):
            block.output.dense.weight *= 0.3
    loaded.model.save_pretrained(out)
    return out


def _logits(path, texts, tokenizer) -> torch.Tensor:
    model = loading.load(str(path)).model.eval()
    with torch.no_grad():
        return model(**tokenizer(texts, padding=True, return_tensors="pt")).logits


def test_a_student_distilled_from_the_teacher_learns_the_teacher_not_its_damaged_parent(parents, tmp_path, tokenizer):
    """TinyBERT's recipe: the blocks are kept from the (damaged) parent, the targets come from the teacher, so the
    student can win back what the parent lost. Its logits end nearer the teacher's than the parent's, the record
    names both, and the parent's own score is measured beside the teacher's."""
    teacher = parents[0]
    parent = _damaged_copy(teacher, tmp_path / "damaged")
    path, record = _shrink(parent, tmp_path / "student", layers=2, steps=60, teacher=str(teacher))
    assert record["distilled_from"] == str(teacher) and record["teacher"] == str(teacher)
    scores = record["dev_scores"]
    assert scores["parent"] != scores["teacher"]
    texts = [line.rsplit("\t", 1)[0] for line in (DATA / "glue" / "SST-2" / "dev.tsv").read_text().splitlines()[1:65]]
    student, t, p = (_logits(x, texts, tokenizer) for x in (path, teacher, parent))
    to_teacher, to_parent = ((student - t) ** 2).mean(), ((student - p) ** 2).mean()
    assert to_teacher < 0.5 * to_parent, (to_teacher, to_parent)
    assert ((p - t) ** 2).mean() > 2 * to_teacher  # it won back part of what the parent lost


def test_a_teacher_whose_vocabulary_the_parent_was_trimmed_from_reads_the_parents_pieces(parents, tmp_path,
                                                                                       tokenizer):
    """The teacher's word table renumbered as the trimmed parent numbers its pieces: the teacher then computes
    exactly what the trimmed parent computes, on the same ids."""
    from pocketbert.converter.levers.vocab_trim import trim_checkpoint
    from pocketbert.converter.training.recovery import RecoverOptions, prepare
    from pocketbert.converter.training.teacher import frozen_teacher

    trimmed, _ = trim_checkpoint(str(parents[0]), "glue:sst2", 5000, tmp_path / "trimmed", data_dir=DATA,
                                 train_limit=512, **QUIET)
    parent = loading.load(str(trimmed))
    assert len(parent.tokenizer) < len(loading.load(str(parents[0])).tokenizer)
    options = RecoverOptions(task="glue:sst2", budget=loop.Budget(steps=1), data_dir=DATA, train_limit=512)
    # as shrink does: the spelling is checked on the split recovery read (before any augmentation)
    prepared = prepare(options, task_kind=parent.task, tokenizer=parent.tokenizer, labels=parent.labels,
                       input_names=parent.family.input_names, eval_length=64)
    assert len(prepared.train_split) == 512
    model = frozen_teacher(str(parents[0]), parent, prepared.train_split)
    encoded = parent.tokenizer(["a fine film", "dull and far too long"], padding=True, return_tensors="pt")
    with torch.no_grad():
        torch.testing.assert_close(model(**encoded).logits, parent.model.eval()(**encoded).logits)



def test_a_factored_teacher_is_renumbered_through_its_inner_table(parents, tokenizer):
    from pocketbert.converter.training.teacher import renumbered
    from pocketbert.converter.weights.factored_table import FactoredEmbedding, factor

    model = loading.load(str(parents[0])).model.eval()
    factor(model, 8)
    assert isinstance(model.get_input_embeddings(), FactoredEmbedding)
    vocab = tokenizer.get_vocab()
    kept = sorted({0, *tokenizer("a fine film", add_special_tokens=True)["input_ids"]})
    full = torch.tensor([tokenizer("a fine film")["input_ids"]])
    trimmed = torch.tensor([[kept.index(i) for i in full[0].tolist()]])
    with torch.no_grad():
        expected = model(input_ids=full).logits
        renumbered(model, torch.tensor(kept))
        assert model.get_input_embeddings().num_embeddings == len(kept) < len(vocab)
        torch.testing.assert_close(model(input_ids=trimmed).logits, expected)
