"""The one command trusts nothing it did not just compute: its work folder (``OUT.levers``: the steps' checkpoints and
``steps.json``) is checked before a step is reused, the gate compares scores on one dev file, and what cannot work
is refused before any training, with the problem and the fix.

Most tests plan a single step that trains nothing (a vocabulary cut reaches the size, every multiply-add kept) on a
tiny teacher, so that a run takes seconds."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from pocketbert.converter.cli import main
from pocketbert.converter.data import load_task
from pocketbert.converter.errors import ConverterInputError, OutputError
from pocketbert.converter.levers import latency, shapes
from pocketbert.converter.one_command.lever_run import LeverRun, run_levers
from pocketbert.converter.one_command.lever_work import work_folder
from pocketbert.converter.training.loop import Budget

from .conftest import DATA, build_checkpoint


def _rows(source: Path, target: Path, rows: int, start: int = 0, label: str | None = None) -> Path:
    """``rows`` rows of a GLUE TSV from ``start`` (its header kept); ``label``: every row given that label."""
    lines = source.read_text(encoding="utf-8").splitlines()
    body = lines[1 + start: 1 + start + rows]
    if label is not None:
        body = [line.rsplit("\t", 1)[0] + "\t" + label for line in body]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join([lines[0], *body]) + "\n", encoding="utf-8")
    return target


@pytest.fixture(scope="module")
def files(tmp_path_factory, tokenizer) -> Path:
    """A tiny two-label BERT teacher; a user's SST-2 training file and two dev files of different sentences; two data
    directories holding SST-2 under its task name, with different dev sentences."""
    root = tmp_path_factory.mktemp("one-command-work")
    sst2 = DATA / "glue" / "SST-2"
    _rows(sst2 / "train.tsv", root / "train.tsv", 48)
    _rows(sst2 / "dev.tsv", root / "dev.tsv", 32)
    _rows(sst2 / "dev.tsv", root / "other-dev.tsv", 32, start=400)
    for name, start in (("data-a", 0), ("data-b", 600)):
        _rows(sst2 / "train.tsv", root / name / "glue" / "SST-2" / "train.tsv", 48)
        _rows(sst2 / "dev.tsv", root / name / "glue" / "SST-2" / "dev.tsv", 32, start=start)
    build_checkpoint(root / "teacher", "bert", tokenizer, labels=("negative", "positive"))
    return root


def _run(files: Path, out: Path, printed: list | None = None, **changes) -> tuple[Path, str]:
    """The one command's levers as the convert command runs them (the checkpoint to convert, everything printed,
    also into ``printed`` when given): by default a size only a vocabulary cut reaches (one step, no training), every
    multiply-add kept."""
    printed = [] if printed is None else printed
    run = LeverRun(checkpoint=str(files / "teacher"), out=out, task=str(files / "train.tsv"),
                   dev=str(files / "dev.tsv"), max_bytes=900_000, max_macs=1.0, buckets=(32,), max_drop=100,
                   threads=1)
    for key, value in changes.items():
        setattr(run, key, value)
    return run_levers(run, log=printed.append), "\n".join(printed)


def _state(out: Path) -> dict:
    return json.loads((work_folder(out) / "steps.json").read_text(encoding="utf-8"))


def _edit_state(bundle: Path, **changes) -> None:
    state = _state(bundle)
    for entry in state.values():
        entry.update(changes)
    (work_folder(bundle) / "steps.json").write_text(json.dumps(state), encoding="utf-8")


def _scored(checkpoint: Path, dev_file: Path) -> float:
    """The checkpoint's accuracy on ``dev_file``, scored here, independently of the command."""
    from pocketbert.converter.checkpoints import loading
    from pocketbert.converter.training import checkpoint_job
    from pocketbert.converter.training.finetune import eval_length

    loaded = loading.load(str(checkpoint))
    return checkpoint_job.score(loaded, load_task(str(dev_file), "dev"), eval_length(loaded))["accuracy"]


def _gate_line(printed: str) -> tuple[float, float]:
    """(the student's score, the teacher's) from the line that passes the gate."""
    line = next(line for line in printed.splitlines() if "meets the gate" in line)
    student = float(line.split()[2])
    teacher = float(line.split("the teacher's ")[1].split()[0])
    return student, teacher


# --- the step digest covers the dev file's and the data directory's content ----------------------------------------

def test_a_rerun_with_another_dev_file_scores_on_that_file(files, tmp_path):
    out = tmp_path / "bundle"
    _run(files, out)
    final, printed = _run(files, out, dev=str(files / "other-dev.tsv"))
    assert "done in an earlier run" not in printed  # the step ran again: its result was scored on the other file
    assert "dev accuracy of the teacher" in printed
    student, teacher = _gate_line(printed)
    assert student == pytest.approx(_scored(final, files / "other-dev.tsv"), abs=0.01)
    assert teacher == pytest.approx(_scored(files / "teacher", files / "other-dev.tsv"), abs=0.01)
    record = json.loads((final / "training.json").read_text(encoding="utf-8"))
    assert record["dev_scores"]["accuracy"] == pytest.approx(student, abs=0.01)
    assert len(_state(out)) == 2


def test_the_same_dev_sentences_under_another_name_reuse_the_step(files, tmp_path):
    out = tmp_path / "bundle"
    _run(files, out)
    shutil.copy(files / "dev.tsv", tmp_path / "renamed-dev.tsv")
    _, printed = _run(files, out, dev=str(tmp_path / "renamed-dev.tsv"))
    assert "done in an earlier run" in printed and len(_state(out)) == 1


def test_another_data_directory_under_the_same_task_name_runs_the_steps_again(files, tmp_path):
    out = tmp_path / "bundle"
    common = {"task": "glue:sst2", "dev": None}
    _run(files, out, data_dir=str(files / "data-a"), **common)
    final, printed = _run(files, out, data_dir=str(files / "data-b"), **common)
    assert "done in an earlier run" not in printed
    student, _ = _gate_line(printed)
    assert student == pytest.approx(_scored(final, files / "data-b" / "glue" / "SST-2" / "dev.tsv"), abs=0.01)
    assert len(_state(out)) == 2


# --- each step's files are checked against the hashes recorded when they were written -----------------------------

def test_an_edited_step_checkpoint_is_run_again_not_converted(files, tmp_path):
    out = tmp_path / "bundle"
    first, _ = _run(files, out)
    weights = first / "model.safetensors"
    save_file({k: torch.zeros_like(v) for k, v in load_file(weights).items()}, weights, metadata={"format": "pt"})
    final, printed = _run(files, out)
    assert "changed since it was written" in printed and "running the step again" in printed
    assert final != first and final.parent == work_folder(out)
    assert any(v.abs().sum() > 0 for v in load_file(final / "model.safetensors").values())
    assert (first / "model.safetensors").is_file()  # the edited folder is left as the user left it
    _, printed = _run(files, out)  # the step written again is reused as it is
    assert "done in an earlier run" in printed


# --- steps.json and latency.json as records: entries checked, invalid ones refused with the fix ----------------------

@pytest.mark.parametrize("where", ["parent", "absolute", "link"])
def test_a_step_recorded_outside_the_work_folder_is_refused(where, files, tmp_path):
    out = tmp_path / "bundle"
    elsewhere, _ = _run(files, tmp_path / "other")  # another run's checkpoint, which must not be converted
    _run(files, out)
    if where == "link":
        (work_folder(out) / "1-link").symlink_to(elsewhere, target_is_directory=True)
    _edit_state(out, out={"parent": f"../other.levers/{elsewhere.name}", "absolute": str(elsewhere),
                          "link": "1-link"}[where])
    printed: list[str] = []
    with pytest.raises(OutputError) as refused:
        _run(files, out, printed)
    assert "steps.json is not a valid record" in str(refused.value) and "work folder" in str(refused.value)
    assert "--overwrite" in refused.value.fix and "step 1 of 1" not in "\n".join(printed)


@pytest.mark.parametrize("text", ['{"a1": {"lever": "trim-v', "[]", "", '{"a1": 5}',
                                  '{"a1": {"out": "1-trim-vocab", "score": "high"}}'])
def test_a_steps_record_that_is_not_valid_is_refused_and_overwrite_starts_a_new_one(text, files, tmp_path):
    out = tmp_path / "bundle"
    _run(files, out)
    kept = sorted(p.name for p in work_folder(out).iterdir())
    (work_folder(out) / "steps.json").write_text(text, encoding="utf-8")
    printed: list[str] = []
    with pytest.raises(OutputError) as refused:
        _run(files, out, printed)
    assert "steps.json is not a valid record" in str(refused.value)
    assert "pass --overwrite" in refused.value.fix and "dev accuracy of the teacher" not in "\n".join(printed)
    final, _ = _run(files, out, overwrite=True)
    assert len(_state(out)) == 1 and final.is_dir()
    assert set(kept) <= {p.name for p in work_folder(out).iterdir()}  # nothing it had written was deleted


def test_a_truncated_steps_record_is_refused_by_the_command_without_a_traceback(files, tmp_path, capsys):
    out = tmp_path / "bundle"
    work_folder(out).mkdir()
    (work_folder(out) / "steps.json").write_text('{"ab', encoding="utf-8")
    code = main([str(files / "teacher"), "--format", "tflite", "--max-size", "900000", "--max-macs", "1",
                 "--recover", str(files / "train.tsv"), "--dev", str(files / "dev.tsv"), "--buckets", "32",
                 "--threads", "1", "-o", str(out)])
    printed = capsys.readouterr()
    said = " ".join((printed.out + printed.err).split())
    assert code == OutputError.exit_code and "Traceback" not in said
    assert "steps.json is not a valid record" in said and "fix: pass --overwrite" in said


def test_a_truncated_latency_record_is_refused_before_measuring(files, tmp_path):
    out = tmp_path / "bundle"
    work_folder(out).mkdir()
    (work_folder(out) / "steps.json").write_text("{}", encoding="utf-8")
    (work_folder(out) / latency.CACHE).write_text('{"models": {"ab', encoding="utf-8")
    printed: list[str] = []
    with pytest.raises(OutputError) as refused:
        _run(files, out, printed, max_latency_ms=50.0)
    assert "latency.json is not a valid record" in str(refused.value) and "--overwrite" in refused.value.fix
    assert "measuring" not in "\n".join(printed)
    with pytest.raises(OutputError):  # the check after the conversion reads the same record
        latency.planned_target(work_folder(out))


def test_a_negative_spent_budget_is_refused_and_a_continuation_stays_within_its_share(files, tmp_path):
    from pocketbert.converter import levers
    from pocketbert.converter.levers.plan import PlannedStep
    from pocketbert.converter.one_command.lever_steps import _more

    out = tmp_path / "bundle"
    _run(files, out)
    _edit_state(out, budget={"seconds": -1e7})
    with pytest.raises(OutputError) as refused:
        _run(files, out)
    assert "is not a budget spent" in str(refused.value)
    planned = PlannedStep(levers.get("int4-tune"), True, 0, 0, budget=Budget(seconds=60))
    assert _more(planned, {"budget": {"seconds": -1e7}}).seconds == 60
    assert _more(planned, {"budget": {"seconds": 20}}).seconds == 40


@pytest.mark.parametrize("trained", [{"steps": -1, "seconds": 3}, {"steps": 2}, "many", {"steps": True, "seconds": 1}])
def test_a_record_of_training_bought_that_is_not_counts_is_refused(trained, files, tmp_path):
    out = tmp_path / "bundle"
    _run(files, out)
    _edit_state(out, trained=trained)
    with pytest.raises(OutputError) as refused:
        _run(files, out)
    assert "is not a count of steps and seconds" in str(refused.value)


# --- the gate: teacher and student scored on the same dev file -----------------------------------------------------

def test_a_task_name_with_a_dev_file_gates_on_the_teachers_score_on_that_file(files, tmp_path):
    teacher = shutil.copytree(files / "teacher", tmp_path / "teacher")
    task_dev = files / "data-a" / "glue" / "SST-2" / "dev.tsv"
    (teacher / "training.json").write_text(json.dumps({
        "kind": "finetune", "task": "glue:sst2", "metric": "accuracy", "dev_file": str(task_dev), "recipe": {},
        "train_examples": 48, "dev_examples": 32, "training": {"steps": 0, "seconds": 0, "stopped_by": "n/a"},
        "dev_scores": {"accuracy": 71.02}}), encoding="utf-8")
    common = {"checkpoint": str(teacher), "task": "glue:sst2", "data_dir": str(files / "data-a")}
    _, printed = _run(files, tmp_path / "task-dev", dev=None, **common)
    assert _gate_line(printed)[1] == 71.02  # the record's dev set is this run's: its score stands
    _, printed = _run(files, tmp_path / "file-dev", dev=str(files / "other-dev.tsv"), **common)
    assert _gate_line(printed)[1] == pytest.approx(_scored(teacher, files / "other-dev.tsv"), abs=0.01)
    assert "71.02" not in printed
    # a record naming no dev file (the demo teachers'): trusted for the task's own dev split of its size, and only so
    record = json.loads((teacher / "training.json").read_text(encoding="utf-8"))
    del record["dev_file"]
    (teacher / "training.json").write_text(json.dumps(record), encoding="utf-8")
    _, printed = _run(files, tmp_path / "no-file", dev=None, **common)
    assert _gate_line(printed)[1] == 71.02
    _, printed = _run(files, tmp_path / "no-file-dev", dev=str(files / "other-dev.tsv"), **common)
    assert "71.02" not in printed


def test_a_pair_dev_file_for_single_sentences_is_refused_before_any_work(files, tmp_path):
    pairs = _rows(DATA / "glue" / "MRPC" / "dev.tsv", tmp_path / "mrpc-dev.tsv", 16)
    printed: list[str] = []
    with pytest.raises(ConverterInputError) as refused:
        _run(files, tmp_path / "bundle", printed, dev=str(pairs))
    assert "holds sentence pairs" in str(refused.value) and "single sentences" in str(refused.value)
    assert not work_folder(tmp_path / "bundle").exists() and "plan from the shapes" not in "\n".join(printed)


@pytest.mark.parametrize("label", ["0", "1"])
def test_a_training_file_of_one_class_is_refused_whichever_class(label, files, tmp_path):
    train = _rows(DATA / "glue" / "SST-2" / "train.tsv", tmp_path / "train.tsv", 48, label=label)
    with pytest.raises(ConverterInputError) as refused:
        _run(files, tmp_path / "bundle", task=str(train))
    assert "one class only" in str(refused.value) and f"every row is {label!r}" in str(refused.value)
    assert not work_folder(tmp_path / "bundle").exists()


# --- targets and budgets: refused before any training, with numbers that are true ----------------------------------

def test_an_unreachable_target_says_what_the_levers_reach_at_best(files, tmp_path):
    """300 kB and 30% of the multiply-adds: no width reaches 30% at two blocks, so the plan narrows to half the width
    and even one block misses; the refusal gives that one block's share (44%), not the plan's last step's (88%)."""
    printed: list[str] = []
    with pytest.raises(ConverterInputError) as refused:
        _run(files, tmp_path / "bundle", printed, max_bytes=300_000, max_macs=0.3, opts="nonorm,relu")
    shape = shapes.read(files / "teacher")
    best = shapes.macs(shape.narrowed(32).keeping(1)) / shapes.macs(shape)
    assert f"at best 0.13 MB and {best:.0%} of its multiply-adds, with one block" in str(refused.value)
    said = "the levers cannot reach the target: at best 0.13 MB and 44% of the MACs with one block"
    assert said in "\n".join(printed)
    assert refused.value.fix == f"raise --max-macs to at least {math.ceil(best * 100) / 100:g}"
    with pytest.raises(ConverterInputError, match="too small to train"):  # the fix reaches the target: it plans
        _run(files, tmp_path / "bundle", max_bytes=300_000, max_macs=math.ceil(best * 100) / 100, opts="nonorm,relu",
             budget=Budget(steps=0))


@pytest.mark.parametrize("budget", [Budget(steps=0), Budget(steps=1), Budget(seconds=0)], ids=str)
def test_a_budget_too_small_to_train_every_step_is_refused_before_any_work(budget, files, tmp_path):
    """recover (weight 13) and int4-tune (15) share the budget: one step gives recover 0.46 of a step."""
    printed: list[str] = []
    with pytest.raises(ConverterInputError) as refused:
        _run(files, tmp_path / "bundle", printed, opts="nonorm,relu", budget=budget)
    assert f"--budget {budget.describe()} is too small to train" in str(refused.value)
    assert "(recover, int4-tune)" in str(refused.value) and "nothing was trained" in str(refused.value)
    assert refused.value.fix.startswith("give every training step one step at least: --budget 2steps or more"
                                        if budget.steps is not None else "give a budget above 0, e.g. --budget 10m")
    assert "step 1 of" not in "\n".join(printed) and not work_folder(tmp_path / "bundle").exists()


@pytest.mark.parametrize("flag, value", [("max_macs", math.nan), ("max_latency_ms", math.nan),
                                         ("max_macs", 1.5), ("max_bytes", 0)])
def test_targets_that_are_not_numbers_a_plan_can_reach_are_refused(flag, value, files, tmp_path):
    with pytest.raises(ConverterInputError, match="it must be"):
        _run(files, tmp_path / "bundle", **{flag: value})


# --- the command line: what the conversion after the levers would refuse, refused before them ------------------------

def _convert(files: Path, out: Path, capsys, *extra: str) -> tuple[int, str]:
    code = main([str(files / "teacher"), "--format", "tflite", "--max-size", "900000", "--max-macs", "1",
                 "--recover", str(files / "train.tsv"), "--dev", str(files / "dev.tsv"), "--buckets", "32",
                 "--threads", "1", "-o", str(out), *extra])
    printed = capsys.readouterr()
    return code, " ".join((printed.out + printed.err).split())


@pytest.mark.parametrize("where", ["out", "work folder", "inside out", "inside work folder", "holds out"])
def test_save_checkpoint_on_the_bundle_or_its_work_folder_is_refused_before_training(where, files, tmp_path, capsys):
    out = tmp_path / "b" / "bundle"
    save = {"out": out, "work folder": work_folder(out), "inside out": out / "ckpt",
            "inside work folder": work_folder(out) / "ckpt", "holds out": tmp_path / "b"}[where]
    code, said = _convert(files, out, capsys, "--save-checkpoint", str(save))
    assert code == OutputError.exit_code and "--save-checkpoint" in said and "separate folders" in said, said
    assert "plan from the shapes" not in said and not work_folder(out).exists() and "Traceback" not in said


@pytest.mark.parametrize("flag, value", [("--max-macs", "nan"), ("--max-latency", "nan"), ("--max-latency", "inf")])
def test_a_target_of_nan_is_refused_on_the_command_line(flag, value, files, tmp_path, capsys):
    code, said = _convert(files, tmp_path / "bundle", capsys, flag, value)
    assert code == 2 and "is not a finite number" in said and "plan from the shapes" not in said


@pytest.mark.parametrize("case", ["not empty", "not a bundle", "onnx"])
def test_what_the_conversion_would_refuse_is_refused_before_the_levers_train(case, files, tmp_path, capsys):
    out = tmp_path / "bundle"
    extra = []
    if case in ("not empty", "not a bundle"):
        out.mkdir()
        (out / "notes.txt").write_text("mine", encoding="utf-8")
        extra = ["--overwrite"] if case == "not a bundle" else []
    else:
        extra = ["--format", "onnx"]
    code, said = _convert(files, out, capsys, *extra)
    expected = {"not empty": ("exists and is not empty", 6), "not a bundle": ("--overwrite refuses to replace", 6),
                "onnx": ("nothing is exported to tflite", 3)}[case]
    assert code == expected[1] and expected[0] in said, said
    assert "plan from the shapes" not in said and not work_folder(out).exists()
    if case != "onnx":
        assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"


# --- augmentation is an input of every step --------------------------------------------------------------------------

def test_augmentation_reaches_every_distilling_step_and_is_part_of_what_a_step_reuses(files, tmp_path):
    out = tmp_path / "bundle"
    _run(files, out, opts="nonorm,relu", budget=Budget(steps=4))
    final, printed = _run(files, out, opts="nonorm,relu", budget=Budget(steps=4), augment=2)
    assert "done in an earlier run" not in printed  # the same steps on other text: run again, not reused
    records = [json.loads((p / "training.json").read_text(encoding="utf-8"))
               for p in sorted(work_folder(out).iterdir()) if p.name.split("-")[1:2] == ["recover"]]
    assert sorted(r["recipe"]["augment"] for r in records) == [0, 2]  # both runs' steps kept, each its own
    record = next(r for r in records if r["recipe"]["augment"])
    assert record["augmentation"]["originals"] == 48
    assert record["train_examples"] == 48 + record["augmentation"]["variants"] > 48
    # int4-tune distils too, after the vocabulary cut: its variants come from the trimmed checkpoint's own table
    tuned = [json.loads((p / "training.json").read_text(encoding="utf-8"))["int4_grid"]
             for p in sorted(work_folder(out).glob("*-int4-tune*"))]
    assert sorted(bool(t["augmentation"]) for t in tuned) == [False, True]
    assert next(t for t in tuned if t["augmentation"])["augmentation"]["variants"] > 0
    _, again = _run(files, out, opts="nonorm,relu", budget=Budget(steps=4), augment=2)
    assert "done in an earlier run" in again
