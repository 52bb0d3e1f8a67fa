"""``pocketbert-convert CHECKPOINT --max-size SIZE --recover TRAIN --dev DEV``: the plan printed before any work, the
levers run in its order with the checkpoint as the teacher, a missed gate refused with the trained checkpoints kept,
and a rerun with a longer budget resuming them; a plain ``--max-size`` that cannot fit refused before any export."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from pocketbert.converter.cli import cli, main
from pocketbert.converter.errors import AccuracyLossRefused, ConverterInputError

from .conftest import DATA, build_checkpoint

PLAN = ["recover", "trim-vocab", "int4-tune", "pack"]  # --max-macs 1: no fewer blocks, which would go on


@pytest.fixture(scope="module")
def user_files(tmp_path_factory, tokenizer):
    """A tiny BERT teacher (LayerNorm, GELU) whose record says its teacher scored 99 on the dev file, and 64 training
    and 48 dev sentences of SST-2 as a user's own files."""
    root = tmp_path_factory.mktemp("one-command")
    for name, rows in (("train.tsv", 64), ("dev.tsv", 48)):
        lines = (DATA / "glue" / "SST-2" / name).read_text(encoding="utf-8").splitlines()[: rows + 1]
        (root / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    teacher = build_checkpoint(root / "teacher", "bert", tokenizer, labels=("negative", "positive"))
    record = {"kind": "finetune", "task": str(root / "train.tsv"), "dev_file": str(root / "dev.tsv"),
              "metric": "accuracy", "train_examples": 64,
              "dev_examples": 48, "recipe": {}, "training": {"steps": 0, "seconds": 0, "stopped_by": "n/a"},
              "dev_scores": {"teacher": {"accuracy": 99.0}}}
    (teacher / "training.json").write_text(json.dumps(record), encoding="utf-8")
    return root


def _convert(root, capsys, *extra) -> tuple[int, str]:
    """The command as a user runs it (exit code and everything printed)."""
    args = [str(root / "teacher"), "--opt", "nonorm,relu,fold", "--format", "tflite", "--max-size", "0.4MB",
            "--max-macs", "0.6", "--recover", str(root / "train.tsv"), "--dev", str(root / "dev.tsv"), "--buckets",
            "32", "--no-latency", "--verify-samples", "40", "--calibration-samples", "32", "--threads", "1",
            "-o", str(root / "bundle"), *extra]
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_a_step_below_the_gate_stops_the_run_and_a_longer_budget_continues_it(user_files, capsys):
    """Recovery leaves the tiny model below the gate with five steps to go: the run stops there with what the step
    cost and keeps its checkpoint; a longer --budget continues the recovery from it; with a gate it is within, the
    steps after it run."""
    root = user_files
    code, out = _convert(root, capsys, "--budget", "4steps", "--max-macs", "1")
    assert code == AccuracyLossRefused.exit_code, out
    # the plan, with each step's size, comes before the first step's work
    assert out.index("plan from the shapes") < out.index("target: ≤ 0.40 MB") < out.index("step 1 of 4: recover")
    plan = out[out.index("plan from the shapes"):out.index("dev score to keep")]
    assert re.findall(r"^  \d\. (\S+)", plan, re.MULTILINE) == PLAN
    flat = " ".join(out.split())
    assert "after step 1 of 4 (recover) the dev accuracy is" in flat and "below the gate 98.00" in flat
    assert "with 3 steps to go (trim-vocab 3,000 pieces, int4-tune, pack)" in flat and "stopped here" in flat
    assert re.search(r"1\. recover +\d+\.\d\d +\(-\d+\.\d\d\) +2 training steps in \d+ s", out)  # its cost
    assert "recover, the step that fell below the gate, continues from its checkpoint in " + str(
        root / "bundle.levers") in flat
    assert "step 2 of 4" not in out and not (root / "bundle").exists()
    state = json.loads((root / "bundle.levers" / "steps.json").read_text())
    assert [(step["lever"], step["trained"]["steps"]) for step in state.values()] == [("recover", 2)]

    code, out = _convert(root, capsys, "--budget", "9steps", "--max-macs", "1")
    assert code == AccuracyLossRefused.exit_code, out
    assert f"continued from {root / 'bundle.levers' / '1-recover'} for 2 steps more" in out
    assert "recovered in an earlier run" in out and "recover: 4 training steps in" in out and "over 2 runs" in out
    state = json.loads((root / "bundle.levers" / "steps.json").read_text())
    assert [(step["continued"], step["budget"], step["trained"]["steps"]) for step in state.values()] == [
        (1, {"steps": 4}, 4)]

    # a gate the recovered student is within: the recovery is kept as it is, and the steps after it run
    code, out = _convert(root, capsys, "--budget", "18steps", "--max-accuracy-drop", "100", "--max-macs", "1",
                         "--save-checkpoint", str(root / "phone"))
    assert code == 0, out
    assert "within the gate; skipped" in out and "continued from" not in out
    assert re.findall(r"^step \d of 4: (\S+)", out, re.MULTILINE) == PLAN  # run in the plan's order
    assert "what each step cost:" in out
    assert (root / "bundle" / "manifest.json").is_file()
    assert f"the levers' checkpoints stay in {root / 'bundle.levers'}" in " ".join(out.split())
    manifest = json.loads((root / "bundle" / "manifest.json").read_text())
    assert any(a["recipe"].startswith("tflite:") and a["recipe"] != "tflite:fp32" for a in manifest["artifacts"])
    state = json.loads((root / "bundle.levers" / "steps.json").read_text())
    assert [step["lever"] for step in state.values()] == PLAN
    # --save-checkpoint: the last step's checkpoint, file for file, beside the bundle
    last = root / "bundle.levers" / list(state.values())[-1]["out"]
    saved = sorted(p.relative_to(root / "phone") for p in (root / "phone").rglob("*") if p.is_file())
    assert saved == sorted(p.relative_to(last) for p in last.rglob("*") if p.is_file())
    assert all((root / "phone" / p).read_bytes() == (last / p).read_bytes() for p in saved)


def test_a_loss_before_fewer_blocks_goes_on_to_them_and_the_refusal_then_names_them(user_files, capsys):
    """Fewer blocks distil from the teacher, so the recovery and the vocabulary cut below the gate go on to them; the
    run stops after them, below the gate with only int4 tuning to go, and the fix names them."""
    root = user_files
    code, out = _convert(root, capsys, "--budget", "6steps", "-o", str(root / "fewer"))
    assert code == AccuracyLossRefused.exit_code, out
    flat = " ".join(out.split())
    assert flat.count("but shrink 1 block distils from the teacher and can win it back: going on") == 2
    assert f"distilling from {root / 'teacher'}; the blocks kept are" in flat
    assert "after step 3 of 5 (shrink 1 block) the dev accuracy is" in flat and "(int4-tune, pack)" in flat
    assert "fix: run the same command with a longer --budget: shrink 1 block, the step that fell below" in flat
    assert not (root / "fewer").exists()
    state = json.loads((root / "fewer.levers" / "steps.json").read_text())
    assert [step["lever"] for step in state.values()] == ["recover", "trim-vocab", "shrink"]
    record = json.loads((root / "fewer.levers" / state[list(state)[-1]]["out"] / "training.json").read_text())
    assert record["distilled_from"] == str(root / "teacher")
    # the fix's longer budget: the loss before fewer blocks is theirs to win back, so only they continue
    code, out = _convert(root, capsys, "--budget", "12steps", "-o", str(root / "fewer"))
    flat = " ".join(out.split())
    assert "below the gate for shrink 1 block to win back; skipped" in flat, out
    assert flat.count("continued from") == 1 and f"continued from {root / 'fewer.levers' / '3-shrink'}" in flat


def test_save_checkpoint_needs_the_one_command(user_files, tmp_path):
    result = CliRunner().invoke(cli, [str(user_files / "teacher"), "--recover", str(user_files / "train.tsv"),
                                      "--dev", str(user_files / "dev.tsv"), "--save-checkpoint",
                                      str(tmp_path / "c"), "-o", str(tmp_path / "b")])
    assert result.exit_code == 2 and "--save-checkpoint only applies with --max-size" in result.output
    assert not (tmp_path / "b").exists() and not (tmp_path / "c").exists()


def test_save_checkpoint_never_replaces_the_teacher(user_files, capsys):
    code, out = _convert(user_files, capsys, "--save-checkpoint", str(user_files / "teacher"), "--overwrite")
    assert code == 6, out
    assert "--save-checkpoint" in out and "never replaces" in out
    assert (user_files / "teacher" / "config.json").is_file()


def test_a_plain_max_size_that_nothing_can_fit_is_refused_before_any_export(user_files, tmp_path, capsys):
    code = main([str(user_files / "teacher"), "--format", "tflite", "--max-size", "0.1MB", "-o",
                 str(tmp_path / "bundle")])
    captured = capsys.readouterr()
    out = " ".join((captured.out + captured.err).split())
    assert code == ConverterInputError.exit_code, out
    assert "would be 1.2 MB (computed from its shapes" in out and "nothing was exported" in out
    assert "pocketbert-convert" in out and "--recover" in out
    assert "Exporting" not in out and not (tmp_path / "bundle").exists()


def test_budget_and_max_macs_need_the_training_text(user_files, tmp_path):
    result = CliRunner().invoke(cli, [str(user_files / "teacher"), "--max-size", "8MB", "--budget", "5m",
                                      "-o", str(tmp_path / "b")])
    assert result.exit_code == 2 and "--budget only applies with --recover" in result.output


def test_a_built_in_task_name_plans_without_a_vocabulary_cut_for_ner(checkpoints, tmp_path):
    """``--recover conll2003``: the task's own splits; NER keeps its vocabulary, so the table is factored instead (at
    the largest rank that fits, up to 3/4 of its width); a model that keeps LayerNorm gets no int4 tuning, and the
    plan says so."""
    from pocketbert.converter.levers.shapes import file_bytes, read
    from pocketbert.converter.one_command.lever_run import LeverRun, run_levers
    from pocketbert.converter.training.loop import Budget

    teacher = checkpoints["bert"]["ner"]
    printed = []
    run = LeverRun(checkpoint=str(teacher), out=tmp_path / "bundle", task="conll2003",
                   max_bytes=int(0.8 * file_bytes(read(teacher), (32, 64, 128))), budget=Budget(steps=2),
                   buckets=(32, 64, 128), max_drop=100, data_dir=str(DATA), threads=1, train_limit=32)
    final = run_levers(run, log=printed.append)
    assert final == tmp_path / "bundle.levers" / "1-factor-embeddings"
    assert json.loads((final / "config.json").read_text())["pocketbert"]["word_embedding_rank"] == 16
    text = "\n".join(printed)
    assert "1. factor-embeddings rank 16" in text and "trim-vocab" not in text and "no int4 tuning" in text
    assert text.index("plan from the shapes") < text.index("step 1 of 1: factor-embeddings")


def test_a_step_given_its_sources_scores_does_not_score_its_source_again(tokenizer, tmp_path):
    """The one command hands each step the dev scores the step before recorded (the same dev file): trim-vocab,
    factor-embeddings and narrow record those as their "before" scores instead of scoring the source again
    (12.34: no share of 872 dev sentences, so a re-scored source would show)."""
    from pocketbert.converter.levers.factor_embeddings import FactorOptions, factor_checkpoint
    from pocketbert.converter.levers.narrow import NarrowOptions, narrow_checkpoint
    from pocketbert.converter.levers.vocab_trim import trim_checkpoint

    source = str(build_checkpoint(tmp_path / "source", "bert", tokenizer, labels=("negative", "positive")))
    given, quiet = {"accuracy": 12.34}, (lambda *_: None)
    _, trimmed = trim_checkpoint(source, "glue:sst2", 2500, tmp_path / "trim", data_dir=DATA, train_limit=16,
                                 log=quiet, source_scores=given)
    _, factored = factor_checkpoint(source, "glue:sst2", tmp_path / "factor",
                                    FactorOptions(rank=8, retune=None, train_limit=16, data_dir=DATA), log=quiet,
                                    source_scores=given)
    _, narrowed = narrow_checkpoint(source, "glue:sst2", tmp_path / "narrow",
                                    NarrowOptions(width=32, texts=16, train_limit=16, data_dir=DATA), log=quiet,
                                    source_scores=given)
    befores = [record[key]["dev_before"] for record, key in
               ((trimmed, "vocab_trim"), (factored, "factored_embeddings"), (narrowed, "narrow"))]
    assert befores == [given] * 3
    assert all(record["dev_scores"]["accuracy"] != 12.34 for record in (trimmed, factored, narrowed))  # scored after


def test_augment_needs_the_training_text(user_files, tmp_path):
    result = CliRunner().invoke(cli, [str(user_files / "teacher"), "--augment", "20", "-o", str(tmp_path / "b")])
    assert result.exit_code == 2 and "--augment only applies with --recover" in result.output
