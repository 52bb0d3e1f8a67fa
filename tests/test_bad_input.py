"""Bad inputs: every one fails with an actionable ConverterInputError/OutputError and writes nothing.

Each test checks three things: the exception class, that the message names the culprit (the bad
path or option) and carries a fix, and that no bundle and no staging leftovers (``.{out}.partial-*``,
``.{out}.old-*``) exist afterwards.  Only tiny checkpoints are converted, so the file stays fast.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from torch import nn

from pocketbert.converter import cli
from pocketbert.converter.backends.onnx import OnnxExportBackend
from pocketbert.converter.errors import (
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_OUTPUT,
    ConverterInputError,
    OutputError,
)
from pocketbert.converter.families import families
from pocketbert.converter.pipeline import convert
from pocketbert.converter.transforms import OPTS

from .conftest import FAMILY_NAMES, copy_checkpoint

TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json",
                   "added_tokens.json")
# Conversions that are expected to *succeed* use few sentences: they exist to check the bundle.
FAST = {"verify_samples": 20}


def _layernorm_families() -> list[str]:
    """Families whose tiny model uses LayerNorm (where ``fold`` alone is a contradiction)."""
    from transformers import AutoModel

    names = []
    for family in families():
        model = AutoModel.from_config(family.tiny_config(vocab_size=128))
        if any(isinstance(m, nn.LayerNorm) for m in model.modules()):
            names.append(family.name)
    return names


LAYERNORM_FAMILIES = _layernorm_families()


# --- helpers ---------------------------------------------------------------------------------

def snapshot(directory: Path) -> dict[str, bytes]:
    """relative path -> content of every file below ``directory`` (empty dict if it is missing)."""
    if not directory.is_dir():
        return {}
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def assert_no_leftovers(out: Path, root: Path) -> None:
    """No ``.{out.name}*`` entry beside ``out`` and no staging/backup directory anywhere under ``root``."""
    parent = out.parent
    if parent.is_dir():
        leftovers = [p.name for p in parent.iterdir() if p.name.startswith(f".{out.name}")]
        assert not leftovers, f"staging leftovers beside {out}: {leftovers}"
    stray = [str(p) for p in root.rglob("*") if ".partial-" in p.name or ".old-" in p.name]
    assert not stray, f"staging leftovers under {root}: {stray}"


def assert_nothing_written(out: Path, root: Path, before: dict[str, bytes] | None = None) -> None:
    if before is None:
        assert not out.exists(), f"{out} was created"
    else:
        assert snapshot(out) == before, f"{out} was modified"
    assert_no_leftovers(out, root)


def expect_failure(options, error: type, *needles: str, in_fix: tuple[str, ...] = ()):
    """Run a conversion that must fail with ``error`` naming every needle; return the exception."""
    with pytest.raises(error) as info:
        convert(options)
    exc = info.value
    assert type(exc) is error
    for needle in needles:
        assert needle in exc.problem, f"{needle!r} not in message {exc.problem!r}"
    assert isinstance(exc.fix, str) and exc.fix.strip(), f"no fix for {exc.problem!r}"
    for needle in in_fix:
        assert needle in exc.fix, f"{needle!r} not in fix {exc.fix!r}"
    assert_nothing_written(options.out, options.out.parent)
    return exc


def without(directory: Path, *names: str) -> Path:
    for name in names:
        (directory / name).unlink(missing_ok=True)
    return directory


# --- 1-5: the checkpoint path and config.json ----------------------------------------------------

def test_nonexistent_checkpoint(options, tmp_path):
    missing = tmp_path / "no-such-model"
    expect_failure(options(missing), ConverterInputError, str(missing), "does not exist")


def test_checkpoint_is_a_file(options, tmp_path):
    file = tmp_path / "model.safetensors"
    file.write_bytes(b"not a directory")
    expect_failure(options(file), ConverterInputError, str(file), "is a file")


def test_directory_without_config(options, tmp_path, checkpoints):
    directory = without(copy_checkpoint(checkpoints["bert"]["classification"], tmp_path / "ckpt"), "config.json")
    expect_failure(options(directory), ConverterInputError, str(directory), "config.json")


def test_config_is_not_json(options, tmp_path, checkpoints):
    directory = copy_checkpoint(checkpoints["bert"]["classification"], tmp_path / "ckpt")
    (directory / "config.json").write_text('{"model_type": "bert", "hidden_size": ', encoding="utf-8")
    expect_failure(options(directory), ConverterInputError, str(directory / "config.json"), "not valid JSON")


def test_config_is_not_an_object(options, tmp_path, checkpoints):
    directory = copy_checkpoint(checkpoints["bert"]["classification"], tmp_path / "ckpt")
    (directory / "config.json").write_text('["bert"]', encoding="utf-8")
    expect_failure(options(directory), ConverterInputError, str(directory / "config.json"))


def test_unsupported_architecture(options, tmp_path, checkpoints):
    directory = tmp_path / "gpt2"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
                                                       "n_layer": 2, "n_embd": 32}), encoding="utf-8")
    (directory / "model.safetensors").write_bytes(b"\0" * 64)
    source = checkpoints["bert"]["classification"]
    for name in TOKENIZER_FILES:
        if (source / name).is_file():
            shutil.copy(source / name, directory / name)
    exc = expect_failure(options(directory), ConverterInputError, "gpt2", "unsupported")
    for name in FAMILY_NAMES:  # the supported families are listed (in the fix, which the CLI prints)
        assert name in str(exc)
    assert "distilbert" in str(exc) and "mobilebert" in str(exc)


# --- 6-7: options ------------------------------------------------------------------------------

def test_unknown_opt(options, checkpoints):
    exc = expect_failure(options(checkpoints["bert"]["classification"], opts="nonorm,turbo"), ConverterInputError,
                         "turbo", in_fix=OPTS.names())
    assert "nonorm" not in exc.problem  # only the bad name is blamed


@pytest.mark.parametrize("family", LAYERNORM_FAMILIES)
def test_fold_without_nonorm_on_layernorm_model(options, checkpoints, family):
    expect_failure(options(checkpoints[family]["classification"], opts="fold"), ConverterInputError,
                   "fold", "LayerNorm", in_fix=("nonorm",))


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_task_contradicts_head(options, checkpoints, family):
    expect_failure(options(checkpoints[family]["classification"], task="ner"), ConverterInputError,
                   "--task ner", "classification")


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_task_classification_on_ner_head(options, checkpoints, family):
    expect_failure(options(checkpoints[family]["ner"], task="classification"), ConverterInputError,
                   "--task classification", "ner")


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_labels_count_differs_from_trained_head(options, checkpoints, family):
    # the tiny classification head has 3 labels
    expect_failure(options(checkpoints[family]["classification"], labels=["bad", "good"]), ConverterInputError,
                   "3 labels", "2")


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_num_labels_count_differs_from_trained_head(options, checkpoints, family):
    expect_failure(options(checkpoints[family]["classification"], num_labels=5), ConverterInputError, "3 labels", "5")


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_labels_and_num_labels_disagree(options, checkpoints, family):
    expect_failure(options(checkpoints[family]["none"], labels=["a", "b"], num_labels=5), ConverterInputError,
                   "--labels", "--num-labels", "2", "5")


def test_duplicate_labels(options, checkpoints):
    expect_failure(options(checkpoints["bert"]["none"], labels=["a", "b", "a"]), ConverterInputError, "duplicates",
                   "a,b,a")


def test_empty_labels_on_bare_encoder(options, checkpoints):
    expect_failure(options(checkpoints["bert"]["none"], labels=[]), ConverterInputError, "labels")


def test_calibration_without_int8(options, checkpoints, tmp_path):
    calibration = tmp_path / "calib.txt"
    calibration.write_text("a perfectly fine sentence\n", encoding="utf-8")
    expect_failure(options(checkpoints["bert"]["classification"], calibration=calibration), ConverterInputError,
                   "--calibration", "int8", in_fix=("int8",))


def test_static_int8_without_int8(options, checkpoints):
    expect_failure(options(checkpoints["bert"]["classification"], int8="static"), ConverterInputError,
                   "--int8 static", in_fix=("int8",))


def test_unknown_int8_method(options, checkpoints):
    expect_failure(options(checkpoints["bert"]["classification"], opts="int8", int8="int4"), ConverterInputError,
                   "int4")


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_bare_encoder_without_labels(options, checkpoints, family):
    bare = checkpoints[family]["none"]
    expect_failure(options(bare), ConverterInputError, str(bare), "bare encoder", in_fix=("--labels", "--num-labels"))


@pytest.mark.parametrize("length", [4, 10_000])
def test_max_length_out_of_range(options, checkpoints, length):
    expect_failure(options(checkpoints["bert"]["classification"], max_length=length), ConverterInputError,
                   f"--max-length {length}")


# --- 8-9: weights and tokenizer ----------------------------------------------------------------

@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_truncated_weights(options, checkpoints, tmp_path, family):
    directory = copy_checkpoint(checkpoints[family]["classification"], tmp_path / "ckpt")
    weights = directory / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    expect_failure(options(directory), ConverterInputError, str(directory), "weights")


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_random_bytes_weights(options, checkpoints, tmp_path, family):
    directory = copy_checkpoint(checkpoints[family]["classification"], tmp_path / "ckpt")
    weights = directory / "model.safetensors"
    weights.write_bytes(os.urandom(weights.stat().st_size))
    expect_failure(options(directory), ConverterInputError, str(directory), "weights")


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_weights_of_another_family(options, checkpoints, tmp_path, family):
    other = FAMILY_NAMES[(FAMILY_NAMES.index(family) + 1) % len(FAMILY_NAMES)]
    directory = copy_checkpoint(checkpoints[family]["classification"], tmp_path / "ckpt")
    shutil.copy(checkpoints[other]["classification"] / "model.safetensors", directory / "model.safetensors")
    expect_failure(options(directory), ConverterInputError, str(directory), "weights")


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_no_weights(options, checkpoints, tmp_path, family):
    directory = copy_checkpoint(checkpoints[family]["classification"], tmp_path / "ckpt")
    without(directory, "model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
            "pytorch_model.bin.index.json")
    expect_failure(options(directory), ConverterInputError, str(directory), "no weights")


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_no_tokenizer(options, checkpoints, tmp_path, family):
    directory = without(copy_checkpoint(checkpoints[family]["classification"], tmp_path / "ckpt"), *TOKENIZER_FILES)
    expect_failure(options(directory), ConverterInputError, str(directory), "no tokenizer")


# --- 10-11: the output location ----------------------------------------------------------------

def test_output_under_a_file(options, checkpoints, tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("I am a file\n", encoding="utf-8")
    out = blocker / "bundle"
    expect_failure(options(checkpoints["bert"]["classification"], out=out), OutputError, str(blocker))
    assert blocker.read_text(encoding="utf-8") == "I am a file\n"
    assert_no_leftovers(blocker, tmp_path)


def test_output_is_the_checkpoint(options, checkpoints, tmp_path):
    checkpoint = copy_checkpoint(checkpoints["bert"]["classification"], tmp_path / "ckpt")
    before = snapshot(checkpoint)
    try:
        with pytest.raises((ConverterInputError, OutputError)):
            convert(options(checkpoint, out=checkpoint, overwrite=True, **FAST))
    finally:
        assert snapshot(checkpoint) == before, "the checkpoint was overwritten by the bundle"
        assert_no_leftovers(checkpoint, tmp_path)


def test_output_is_a_file(options, checkpoints, tmp_path):
    out = tmp_path / "bundle"
    out.write_text("keep me\n", encoding="utf-8")
    with pytest.raises(OutputError) as info:
        convert(options(checkpoints["bert"]["classification"], out=out, overwrite=True))
    assert str(out) in info.value.problem and info.value.fix
    assert out.read_text(encoding="utf-8") == "keep me\n"
    assert_no_leftovers(out, tmp_path)


@pytest.fixture
def existing_out(tmp_path) -> Path:
    out = tmp_path / "bundle"
    (out / "sub").mkdir(parents=True)
    (out / "old.txt").write_text("previous content\n", encoding="utf-8")
    (out / "sub" / "model.onnx").write_bytes(b"\x08\x01" * 50)
    return out


def test_existing_nonempty_output_without_overwrite(options, checkpoints, existing_out, tmp_path):
    before = snapshot(existing_out)
    with pytest.raises(OutputError) as info:
        convert(options(checkpoints["bert"]["classification"], out=existing_out))
    assert str(existing_out) in info.value.problem and "not empty" in info.value.problem
    assert "--overwrite" in info.value.fix
    assert_nothing_written(existing_out, tmp_path, before)


@pytest.fixture
def earlier_bundle(tmp_path) -> Path:
    """What an earlier conversion left: files listed by a manifest.json (all --overwrite may replace)."""
    from pocketbert.runtime.contract import write_manifest

    out = tmp_path / "bundle"
    out.mkdir()
    (out / "old.onnx").write_bytes(b"\x08\x01" * 50)
    write_manifest(out, {"schema_version": 1, "pocketbert_version": "0.1.0", "artifacts": []})
    return out


def test_existing_nonempty_output_with_overwrite(options, checkpoints, earlier_bundle, tmp_path):
    result = convert(options(checkpoints["bert"]["classification"], out=earlier_bundle, overwrite=True, **FAST))
    assert result.bundle == earlier_bundle.resolve()
    assert not (earlier_bundle / "old.onnx").exists()
    assert (earlier_bundle / "manifest.json").is_file()
    assert_no_leftovers(earlier_bundle, tmp_path)


def test_overwrite_refuses_what_is_not_a_bundle(options, checkpoints, existing_out, tmp_path):
    before = snapshot(existing_out)
    with pytest.raises(OutputError) as info:
        convert(options(checkpoints["bert"]["classification"], out=existing_out, overwrite=True))
    for needle in (str(existing_out), "old.txt", "sub/"):
        assert needle in info.value.problem
    assert info.value.fix and info.value.exit_code == EXIT_OUTPUT
    assert_nothing_written(existing_out, tmp_path, before)


# --- 12: calibration text ----------------------------------------------------------------------

CALIBRATION_CASES = {
    "missing": None,
    "empty": b"",
    "whitespace": b"  \n\t\n\r\n   \n",
    "binary": b"\xff\xfe\x00\x81" * 100,
    "nul-bytes": b"abc\x00def\n" * 10,
}


@pytest.mark.parametrize("case", list(CALIBRATION_CASES))
def test_bad_calibration_file(options, checkpoints, tmp_path, case):
    calibration = tmp_path / f"calibration-{case}.txt"
    if CALIBRATION_CASES[case] is not None:
        calibration.write_bytes(CALIBRATION_CASES[case])
    expect_failure(options(checkpoints["bert"]["classification"], opts="int8", calibration=calibration),
                   ConverterInputError, str(calibration))


def test_calibration_tsv_with_unknown_layout(options, checkpoints, tmp_path):
    calibration = tmp_path / "calibration.tsv"
    calibration.write_text("id\ttext\n1\ta sentence\n2\tanother one\n", encoding="utf-8")
    expect_failure(options(checkpoints["bert"]["classification"], opts="int8", calibration=calibration),
                   ConverterInputError, str(calibration))


def test_calibration_is_a_directory(options, checkpoints, tmp_path):
    calibration = tmp_path / "calib-dir"
    calibration.mkdir()
    expect_failure(options(checkpoints["bert"]["classification"], opts="int8", calibration=calibration),
                   ConverterInputError, str(calibration), "not a file")


# --- 13: the command line ----------------------------------------------------------------------

def test_cli_nonexistent_checkpoint(tmp_path, capsys):
    missing, out = tmp_path / "nope", tmp_path / "bundle"
    assert cli.main([str(missing), "--out", str(out)]) == EXIT_INPUT == 3
    err = capsys.readouterr().err
    assert "error:" in err and "fix:" in err and "nope" in err
    assert_nothing_written(out, tmp_path)


def test_cli_unknown_opt(checkpoints, tmp_path, capsys):
    out = tmp_path / "bundle"
    code = cli.main([str(checkpoints["bert"]["classification"]), "--opt", "nonorm,turbo", "--out", str(out)])
    assert code == EXIT_INPUT == 3
    err = capsys.readouterr().err
    assert "error:" in err and "turbo" in err and "fix:" in err
    assert_nothing_written(out, tmp_path)


def test_cli_existing_nonempty_output(checkpoints, existing_out, tmp_path, capsys):
    before = snapshot(existing_out)
    assert cli.main([str(checkpoints["bert"]["classification"]), "--out", str(existing_out)]) == EXIT_OUTPUT == 6
    err = capsys.readouterr().err
    assert "error:" in err and "fix:" in err and "--overwrite" in err
    assert_nothing_written(existing_out, tmp_path, before)


def test_cli_help(capsys):
    assert cli.main(["--help"]) == EXIT_OK
    assert "Usage:" in capsys.readouterr().out


def test_cli_list(capsys):
    assert cli.main(["list"]) == EXIT_OK
    out = capsys.readouterr().out
    for name in FAMILY_NAMES:
        assert name in out


# --- interruptions and failures mid-pipeline ---------------------------------------------------

def test_keyboard_interrupt_leaves_nothing(options, checkpoints, tmp_path, monkeypatch):
    def interrupted(self, spec, dest):
        assert Path(dest).parent.name.startswith(".bundle.partial-")  # staging exists at this point
        raise KeyboardInterrupt

    monkeypatch.setattr(OnnxExportBackend, "export", interrupted)
    opts = options(checkpoints["bert"]["classification"], **FAST)
    with pytest.raises(KeyboardInterrupt):
        convert(opts)
    assert_nothing_written(opts.out, tmp_path)


def test_cli_keyboard_interrupt(checkpoints, tmp_path, monkeypatch, capsys):
    def interrupted(self, spec, dest):
        raise KeyboardInterrupt

    monkeypatch.setattr(OnnxExportBackend, "export", interrupted)
    out = tmp_path / "bundle"
    code = cli.main([str(checkpoints["bert"]["classification"]), "--out", str(out), "--verify-samples", "20",
                     "--no-latency", "--data-dir", str(tmp_path)])
    assert code == EXIT_INTERRUPTED
    assert "interrupted" in capsys.readouterr().err
    assert_nothing_written(out, tmp_path)


def test_failed_overwrite_keeps_existing_bundle(options, checkpoints, earlier_bundle, tmp_path, monkeypatch):
    def broken(self, spec, dest):
        Path(dest).write_bytes(b"half an onnx file")
        raise RuntimeError("exporter exploded")

    monkeypatch.setattr(OnnxExportBackend, "export", broken)
    before = snapshot(earlier_bundle)
    with pytest.raises(RuntimeError, match="exporter exploded"):
        convert(options(checkpoints["bert"]["classification"], out=earlier_bundle, overwrite=True, **FAST))
    assert_nothing_written(earlier_bundle, tmp_path, before)


def test_failed_conversion_removes_parent_directories_it_created(options, checkpoints, tmp_path, monkeypatch):
    def boom(self, spec, dest):
        raise RuntimeError("export exploded")

    monkeypatch.setattr(OnnxExportBackend, "export", boom)
    out = tmp_path / "new" / "deep" / "bundle"
    with pytest.raises(RuntimeError):
        convert(options(checkpoints["bert"]["classification"], out=out))
    assert not (tmp_path / "new").exists()
