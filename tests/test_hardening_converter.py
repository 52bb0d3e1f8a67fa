"""Hostile use of the converter's checkpoint commands and conversions: an --out that is the input, a lever that
ruins accuracy, sizes written as people write them, a --vocab-size that trims nothing, a folder hiding a built-in
model, and a conversion stopped with SIGTERM."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from pocketbert.converter import cli
from pocketbert.converter.checkpoints import loading
from pocketbert.converter.builtin import BUILTIN
from pocketbert.converter.errors import EXIT_ACCURACY_LOSS, EXIT_OUTPUT, AccuracyLossRefused, ConverterInputError
from pocketbert.converter.levers.narrow import NarrowOptions, narrow_checkpoint
from pocketbert.converter.options import plan
from pocketbert.converter.sizes import parse_size

from .conftest import DATA, build_checkpoint

REPO = Path(__file__).resolve().parents[1]


def _digest(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir()) if p.is_file()}


# --- an --out that is (or holds, or lies in) the input ----------------------------------------------

COMMANDS = {
    "narrow": ["--task", "glue:sst2", "--ffn-width", "16"],
    "int4-tune": ["--task", "glue:sst2", "--budget", "0steps", "--pack"],
    "factor-embeddings": ["--task", "glue:sst2", "--rank", "8"],
    "shrink": ["--task", "glue:sst2", "--layers", "1"],
    "trim-vocab": ["--task", "glue:sst2", "--size", "1000"],
    "finetune": ["--task", "glue:sst2"],
    "recover": ["--task", "glue:sst2"],
    "share-embeddings": ["--task", "glue:sst2"],
}


@pytest.fixture
def source(checkpoints, tmp_path):
    return Path(shutil.copytree(checkpoints["bert"]["classification"], tmp_path / "ckpt"))


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("where", ["same", "symlink", "inside", "parent"])
def test_no_checkpoint_command_writes_over_its_own_input_even_with_overwrite(command, where, source, tmp_path,
                                                                             capsys):
    before = _digest(source)
    if where == "symlink":
        out = tmp_path / "link"
        out.symlink_to(source, target_is_directory=True)
    else:
        out = {"same": source, "inside": source / "sub", "parent": tmp_path}[where]
    code = cli.main([command, str(source), *COMMANDS[command], "--out", str(out), "--overwrite",
                     "--data-dir", str(DATA)])
    err = capsys.readouterr().err
    assert code == EXIT_OUTPUT, err
    assert "never replaces" in err and "source checkpoint" in err
    fix = err.split("fix:", 1)[1]
    assert "--overwrite" not in fix.replace("(not even with --overwrite)", "")
    assert _digest(source) == before and not (source / "sub").exists()


def test_without_overwrite_the_refusal_never_suggests_overwrite(source, capsys):
    code = cli.main(["int4-tune", str(source), *COMMANDS["int4-tune"], "--out", str(source)])
    err = capsys.readouterr().err
    assert code == EXIT_OUTPUT and "pass --overwrite" not in err, err


def test_the_teacher_and_the_base_are_inputs_too(source, tmp_path, capsys):
    teacher = Path(shutil.copytree(source, tmp_path / "teacher"))
    code = cli.main(["int4-tune", str(source), *COMMANDS["int4-tune"], "--teacher", str(teacher), "--out",
                     str(teacher), "--overwrite"])
    assert code == EXIT_OUTPUT and "teacher checkpoint" in capsys.readouterr().err
    code = cli.main(["share-embeddings", str(source), "--task", "glue:sst2", "--base", str(teacher), "--out",
                     str(teacher / "x")])
    assert code == EXIT_OUTPUT and "base checkpoint" in capsys.readouterr().err


def test_cut_and_the_checkpoint_commands_share_one_overlap_rule():
    from pocketbert.converter.output import cut, staging

    assert cut.refuse_overlap is staging.refuse_overlap
    assert not hasattr(cut, "_refuse_overlap")


# --- a lever that ruins accuracy is refused, as a conversion's nonorm/relu is --------------------------

@pytest.fixture(scope="module")
def graded(tmp_path_factory, tokenizer):
    """A tiny BERT with large random weights (answers that differ from sentence to sentence) and a data directory
    whose SST-2 dev labels are that model's own answers: it scores 100 on dev, so a lever's damage shows."""
    root = tmp_path_factory.mktemp("graded")
    ckpt = build_checkpoint(root / "ckpt", "bert", tokenizer, labels=("negative", "positive"), initializer_range=0.2)
    loaded = loading.load(str(ckpt))
    lines = (DATA / "glue" / "SST-2" / "dev.tsv").read_text(encoding="utf-8").splitlines()[1:201]
    texts = [line.split("\t")[0] for line in lines]
    batch = loaded.tokenizer(texts, padding=True, truncation=True, max_length=128, return_tensors="pt")
    inputs = {k: batch[k] for k in loaded.family.input_names}
    with torch.no_grad():  # the head's bias set so that half the texts get each answer
        logits = loaded.model(**inputs).logits
        loaded.model.classifier.bias[1] -= (logits[:, 1] - logits[:, 0]).median() - 1e-4
        answers = loaded.model(**inputs).logits.argmax(-1).tolist()
    loaded.model.save_pretrained(ckpt)
    assert 60 < sum(answers) < 140  # both answers given: narrowing to one unit cannot keep them all
    data = root / "data" / "glue" / "SST-2"
    data.mkdir(parents=True)
    train = (DATA / "glue" / "SST-2" / "train.tsv").read_text(encoding="utf-8").splitlines()[:129]
    (data / "train.tsv").write_text("\n".join(train) + "\n", encoding="utf-8")
    (data / "dev.tsv").write_text("sentence\tlabel\n" + "".join(f"{t}\t{a}\n" for t, a in zip(texts, answers)),
                                  encoding="utf-8")
    return ckpt, root / "data"


def test_narrow_to_one_unit_is_refused_and_nothing_is_written(graded, tmp_path, capsys):
    ckpt, data = graded
    out = tmp_path / "narrow"
    code = cli.main(["narrow", str(ckpt), "--task", "glue:sst2", "--ffn-width", "1", "--texts", "32",
                     "--data-dir", str(data), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == EXIT_ACCURACY_LOSS, err
    assert "lost" in err and "100.00 ->" in err and "--allow-accuracy-loss" in err
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".narrow")]


def test_an_accepted_loss_is_written_with_a_warning(graded, tmp_path):
    ckpt, data = graded
    said = []
    options = NarrowOptions(width=1, texts=32, data_dir=str(data), allow_accuracy_loss=True)
    path, record = narrow_checkpoint(str(ckpt), "glue:sst2", tmp_path / "n", options, log=said.append)
    assert path.is_dir() and record["narrow"]["dev_after"]["accuracy"] < 99
    assert any(s.startswith("warning: narrow lost") and "accepted: --allow-accuracy-loss" in s for s in said)


def test_a_loss_within_the_gate_passes_silently(graded, tmp_path):
    ckpt, data = graded
    said = []
    options = NarrowOptions(width=1, texts=32, data_dir=str(data), max_accuracy_drop=100.0)
    narrow_checkpoint(str(ckpt), "glue:sst2", tmp_path / "n", options, log=said.append)
    assert not any("warning" in s for s in said)
    with pytest.raises(AccuracyLossRefused, match="more than --max-accuracy-drop 1"):
        narrow_checkpoint(str(ckpt), "glue:sst2", tmp_path / "m", NarrowOptions(width=1, texts=32, data_dir=str(data)),
                          log=said.append)


# --- --max-size as people write sizes --------------------------------------------------------------

@pytest.mark.parametrize("text, size", [("8MiB", 8 * 2**20), ("8 mib", 8 * 2**20), ("1.5GiB", 3 * 2**29),
                                        ("2KiB", 2048), ("1000000TB", 10**18), ("3tb", 3 * 10**12),
                                        ("8MB", 8_000_000), ("750kB", 750_000), ("1234", 1234), ("1234B", 1234)])
def test_binary_and_decimal_units_are_read(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("given", ["0", 0, "0MB", "-5MB", "0.4"])
def test_a_size_no_file_fits_in_says_so(given, checkpoints, options):
    with pytest.raises(ConverterInputError, match="at least 1 byte") as caught:
        plan(options(checkpoints["bert"]["classification"], formats="tflite", max_size=given))
    assert "8MB" in caught.value.fix


def test_a_malformed_size_lists_the_units():
    with pytest.raises(ConverterInputError) as caught:
        parse_size("8 megs")
    assert all(unit in caught.value.problem for unit in ("kB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB"))


# --- factor-embeddings --vocab-size that trims nothing ---------------------------------------------

def test_a_vocab_size_that_trims_nothing_names_its_option_before_anything_is_loaded(source, tmp_path, capsys):
    # no data directory: the refusal must come before the task's text is read (and so before the model is)
    code = cli.main(["factor-embeddings", str(source), "--task", "glue:sst2", "--rank", "8", "--vocab-size", "99999",
                     "--data-dir", str(tmp_path / "no-data"), "--out", str(tmp_path / "f")])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "--vocab-size 99999 is not smaller than the vocabulary (30522 pieces)" in err
    assert "--size 99999" not in err and "below 30522" in err


# --- a folder named like a built-in model ----------------------------------------------------------

def test_a_folder_hiding_a_built_in_model_says_so_and_how_to_reach_either(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sst2-phone").mkdir()
    (tmp_path / "sst2-phone" / "manifest.json").write_text("{}")  # a copied bundle, not a checkpoint
    with pytest.raises(ConverterInputError) as caught:
        loading.load("sst2-phone")
    problem, fix = caught.value.problem, caught.value.fix
    assert "no config.json" in problem and "built-in model is also named 'sst2-phone'" in problem
    assert "builtin:sst2-phone" in fix and "./sst2-phone" in fix and "rename or move" in fix
    path, name = loading.resolve("builtin:sst2-phone")
    assert name == "sst2-phone" and path == BUILTIN["sst2-phone"].path() and (path / "config.json").is_file()


# --- a conversion stopped with SIGTERM -------------------------------------------------------------

def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "POCKETBERT_VERBOSE"}
    env["PYTHONPATH"] = str(REPO)
    return env


def test_a_conversion_stopped_with_sigterm_leaves_no_staging_directory(checkpoints, tmp_path):
    out = tmp_path / "bundle"
    proc = subprocess.Popen([sys.executable, "-m", "pocketbert.converter", str(checkpoints["bert"]["classification"]),
                             "--out", str(out), "--format", "onnx", "--opt", "int8", "--int8", "dynamic",
                             "--no-latency", "--verify-samples", "1000", "--data-dir", str(DATA)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    partial = []
    while proc.poll() is None and not partial:  # until the staging directory exists
        partial = [p for p in tmp_path.iterdir() if p.name.startswith(".bundle.partial-")]
        time.sleep(0.02)
    assert partial, "the conversion ended before its staging directory was seen"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode != 0, err.decode()
    assert not [p.name for p in tmp_path.iterdir()], err.decode()  # no bundle, no .bundle.partial-PID-*


# --- nothing from torchao or torch's pytree on start -------------------------------------------------

CHATTER = ("Failed to load", "_C_mxfp8", "_C_cutlass", "register_constant", "_pytree")


def test_help_prints_no_library_chatter():
    proc = subprocess.run([sys.executable, "-m", "pocketbert.converter", "--help"], capture_output=True, text=True,
                          env=_env(), timeout=300)
    assert proc.returncode == 0 and "Usage" in proc.stdout
    assert not [c for c in CHATTER if c in proc.stdout + proc.stderr], proc.stderr
