"""What a longer --budget buys: every training step continues from its own checkpoint (recovery, the factored
table's re-tuning, fewer blocks, int4 tuning) for the part of its larger share it has not spent, says what its share
bought, and never ships a state worse on the dev set than the one it continued from; a machine busier than --threads
is said."""

from __future__ import annotations

from pathlib import Path

import pytest

from pocketbert.converter import levers
from pocketbert.converter.data import load_task
from pocketbert.converter.errors import AccuracyLossRefused
from pocketbert.converter.levers import Step
from pocketbert.converter.levers.plan import PlannedStep
from pocketbert.converter.one_command.lever_checks import warn_if_loaded
from pocketbert.converter.one_command.lever_steps import (
    Gate,
    StepCosts,
    _stop_unless_regained,
    longer_budget_fix,
    run_step,
)
from pocketbert.converter.training.loop import Budget

from .conftest import DATA, build_checkpoint


@pytest.fixture(scope="module")
def task(tmp_path_factory, tokenizer) -> Path:
    root = tmp_path_factory.mktemp("resume")
    for name, rows in (("train.tsv", 48), ("dev.tsv", 32)):
        lines = (DATA / "glue" / "SST-2" / name).read_text(encoding="utf-8").splitlines()[: rows + 1]
        (root / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    build_checkpoint(root / "teacher", "bert", tokenizer, labels=("negative", "positive"))
    return root


def _factor_step(task: Path, work: Path, steps: int, log) -> tuple[PlannedStep, Step]:
    planned = PlannedStep(levers.get("factor-embeddings"), 8, 0, 0, budget=Budget(steps=steps))
    step = Step(source=str(task / "teacher"), out=work / "1-factor-embeddings", teacher=str(task / "teacher"),
                task=str(task / "train.tsv"), dev=str(task / "dev.tsv"), setting=8, budget=planned.budget, threads=1,
                log=log)
    return planned, step


def _factored_for_two_steps(task: Path, tmp_path: Path) -> tuple[Path, object, list[str], dict]:
    """The factored-table step run once with a share of 2 steps in a new work folder: (work folder, dev split,
    what it printed, its record)."""
    work, printed = tmp_path / "bundle.levers", []
    work.mkdir()
    dev = load_task(str(task / "dev.tsv"), "dev")
    planned, step = _factor_step(task, work, 2, printed.append)
    return work, dev, printed, run_step(planned, step, None, work=work, dev=dev, log=printed.append)


def test_a_longer_share_continues_the_factored_tables_retuning_from_its_checkpoint(task, tmp_path):
    work, dev, printed, first = _factored_for_two_steps(task, tmp_path)
    assert first["trained"] == {"steps": 2, "seconds": first["trained"]["seconds"]} and first["continued"] == 0

    printed.clear()
    planned, step = _factor_step(task, work, 5, printed.append)
    again = run_step(planned, step, first, work=work, dev=dev, log=printed.append)
    out = "\n".join(printed)
    assert f"continued from {work / first['out']} for 3 steps more" in out
    assert "factors re-tuned further (3 steps" in out and "factor-embeddings: 5 training steps in" in out
    assert again["continued"] == 1 and again["trained"]["steps"] == 5 and again["out"] != first["out"]
    from pocketbert.converter.checkpoints.loading import load

    continued, earlier = load(str(work / again["out"])), load(str(work / first["out"]))
    factors = [name for name, _ in continued.model.get_input_embeddings().named_parameters()]
    assert factors and all(  # the factors were trained further from the earlier checkpoint's, not refactored
        not continued.model.get_input_embeddings().get_parameter(n).equal(
            earlier.model.get_input_embeddings().get_parameter(n)) for n in factors)
    # and nothing else moved: the table's re-tuning trains the factors only
    body = {k: v for k, v in continued.model.state_dict().items() if "embeddings.word" not in k}
    assert all(v.equal(earlier.model.state_dict()[k]) for k, v in body.items())

    planned, step = _factor_step(task, work, 5, printed.append)
    assert run_step(planned, step, again, work=work, dev=dev, log=printed.append) is again  # all of it spent


def test_a_share_already_spent_is_skipped_not_continued(task, tmp_path):
    work, dev, printed, first = _factored_for_two_steps(task, tmp_path)
    planned, step = _factor_step(task, work, 1, printed.append)
    assert run_step(planned, step, first, work=work, dev=dev, log=printed.append) is first
    assert "skipped" in printed[-1]


def test_a_longer_share_continues_the_fewer_blocks_student_instead_of_cutting_again(task, tmp_path):
    """Fewer blocks below the gate: a longer share distils the student it wrote further, from the same parent."""
    from pocketbert.converter.checkpoints.loading import load

    work, printed = tmp_path / "bundle.levers", []
    work.mkdir()
    dev = load_task(str(task / "dev.tsv"), "dev")

    def shrink(steps: int) -> tuple[PlannedStep, Step]:
        planned = PlannedStep(levers.get("shrink"), 1, 0, 0, budget=Budget(steps=steps))
        return planned, Step(source=str(task / "teacher"), out=work / "1-shrink", teacher=str(task / "teacher"),
                             task=str(task / "train.tsv"), dev=str(task / "dev.tsv"), setting=1,
                             budget=planned.budget, threads=1, log=printed.append)

    first = run_step(*shrink(2), None, work=work, dev=dev, log=printed.append)
    assert first["trained"]["steps"] == 2 and first["continued"] == 0
    again = run_step(*shrink(5), first, work=work, dev=dev, log=printed.append)
    out = "\n".join(printed)
    assert f"continued from {work / first['out']} for 3 steps more" in out
    assert "continuing the student of an earlier run" in out and "shrink: 5 training steps in" in out
    assert again["continued"] == 1 and again["trained"]["steps"] == 5
    continued, earlier = load(str(work / again["out"])), load(str(work / first["out"]))
    assert continued.config.num_hidden_layers == earlier.config.num_hidden_layers == 1
    record = (work / again["out"] / "training.json").read_text(encoding="utf-8")
    assert str(work / first["out"]) in record  # the record says which student it continued


def test_a_step_done_within_the_gate_is_kept_and_the_one_below_it_continues(task, tmp_path):
    """A longer budget goes to the step that fell below the gate: one done within it is kept as it is (continuing
    it would make every step after it run again)."""
    work, dev, printed, first = _factored_for_two_steps(task, tmp_path)
    planned, step = _factor_step(task, work, 5, printed.append)
    kept = run_step(planned, step, first, work=work, dev=dev, log=printed.append, gate=first["score"])
    assert kept is first and printed[-1].endswith(", within the gate; skipped")
    again = run_step(planned, step, first, work=work, dev=dev, log=printed.append, gate=first["score"] + 0.01)
    assert again["continued"] == 1


def test_a_step_below_the_gate_before_fewer_blocks_is_kept_for_them_to_win_back(task, tmp_path):
    """The refusal judges a loss before a step that distils from the teacher after that step, and names a step
    from it on: a longer budget leaves the steps before it as they are."""
    work, dev, printed, first = _factored_for_two_steps(task, tmp_path)
    planned, step = _factor_step(task, work, 5, printed.append)
    kept = run_step(planned, step, first, work=work, dev=dev, log=printed.append, gate=first["score"] + 0.01,
                    regained_by="shrink 3 blocks")
    assert kept is first
    assert printed[-1].endswith(", below the gate for shrink 3 blocks to win back; skipped")


class _Plan:
    def __init__(self, *steps):
        self.steps = list(steps)


def test_the_fix_names_the_step_that_fell_below_the_gate_and_what_wins_it_back(tmp_path):
    recover, narrow = (PlannedStep(levers.get(name), setting, 0, 0, budget=budget)
                       for name, setting, budget in (("recover", True, Budget(seconds=60)), ("narrow", 768, None)))
    costs = StepCosts(Gate(teacher=90.0, drop=1.0, metric="f1"))
    costs.add(recover.describe(), 88.5, {"steps": 10, "seconds": 60})
    fix = longer_budget_fix(_Plan(recover, narrow), costs, tmp_path)
    assert "longer --budget: recover, the step that fell below the gate, continues" in fix

    costs = StepCosts(Gate(teacher=90.0, drop=1.0, metric="f1"))
    costs.add(recover.describe(), 89.5, {"steps": 10, "seconds": 60})
    costs.add(narrow.describe(), 88.25, None)
    fix = longer_budget_fix(_Plan(recover, narrow), costs, tmp_path)
    assert "narrow 768 units cost 1.25 and trains nothing" in fix and "--max-macs" in fix and "--budget" not in fix

    # every lever that trains now continues: one that did not would be named as such, never as training nothing
    trim = PlannedStep(levers.get("trim-vocab"), 16000, 0, 0, budget=None)
    costs = StepCosts(Gate(teacher=90.0, drop=1.0, metric="f1"))
    costs.add(trim.describe(), 88.5, None)
    assert "trains nothing" in longer_budget_fix(_Plan(trim), costs, tmp_path)
    assert all(lever.continues for lever in levers.all() if lever.trains)


def _planned(*names_settings):
    return [PlannedStep(levers.get(name), setting, 0, 0, budget=Budget(seconds=60) if levers.get(name).trains else None)
            for name, setting in names_settings]


def test_a_loss_before_fewer_blocks_distilled_from_the_teacher_does_not_stop_the_run(tmp_path):
    """Narrowing (no training) below the gate, then fewer blocks distilled from the teacher: it can win the loss
    back, so the run goes on; with only int4 tuning after it (which tunes its source through rounding) it stops."""
    costs = StepCosts(Gate(teacher=89.5, drop=1.0, metric="f1"))
    costs.add("narrow 768 units", 88.02, None)
    printed: list[str] = []
    plan = _Plan(*_planned(("narrow", 768), ("shrink", 3), ("int4-tune", True), ("pack", True)))
    _stop_unless_regained(plan, 1, costs=costs, work=tmp_path, metric="f1", score=88.02, log=printed.append)
    assert "below the gate 88.50" in printed[0] and "shrink 3 blocks distils from the teacher" in printed[0]
    assert [lever.name for lever in levers.all() if lever.regains] == ["shrink"]

    plan = _Plan(*_planned(("narrow", 768), ("int4-tune", True), ("pack", True)))
    with pytest.raises(AccuracyLossRefused, match="that only lose more") as refused:
        _stop_unless_regained(plan, 1, costs=costs, work=tmp_path, metric="f1", score=88.02, log=printed.append)
    assert "narrow 768 units cost 1.48 and trains nothing" in refused.value.fix


def test_after_fewer_blocks_the_fix_names_them_not_the_loss_they_had_the_chance_to_win_back(tmp_path):
    plan = _Plan(*_planned(("narrow", 768), ("shrink", 3), ("int4-tune", True)))
    costs = StepCosts(Gate(teacher=89.5, drop=1.0, metric="f1"))
    costs.add("narrow 768 units", 88.02, None)
    costs.add("shrink 3 blocks", 88.2, {"steps": 10, "seconds": 60})
    fix = longer_budget_fix(plan, costs, tmp_path)
    assert "longer --budget: shrink 3 blocks, the step that fell below the gate, continues" in fix


@pytest.mark.parametrize("load, warned", [(3.5, True), (2.0, False), (0.1, False)])
def test_a_load_average_above_the_threads_asked_is_warned_about(load, warned):
    printed: list[str] = []
    assert warn_if_loaded(2, printed.append, loadavg=lambda: (load, 0.0, 0.0)) is warned
    assert bool(printed) is warned
    if warned:
        assert f"the load average is {load:.1f} with --threads 2" in printed[0] and "fewer training steps" in printed[0]


def test_a_platform_without_a_load_average_warns_of_nothing():
    def missing():
        raise OSError("no load average here")

    assert warn_if_loaded(2, print, loadavg=missing) is False


def _split_down_the_middle(directory: Path, tokenizer, texts: list[str]) -> list[int]:
    """A tiny NoNorm model (MobileBERT) whose head's bias puts half of ``texts`` on each side, saved in place;
    returns its answers with its weights on the int4 grid (random tiny models otherwise answer one class)."""
    import torch

    from pocketbert.converter.checkpoints.loading import load
    from pocketbert.converter.weights import int4_grid

    build_checkpoint(directory, "mobilebert", tokenizer, labels=("negative", "positive"))
    loaded = load(str(directory))
    encoded = tokenizer(texts, padding=True, return_tensors="pt")
    inputs = {name: encoded[name] for name in loaded.family.input_names if name in encoded}
    head = loaded.model.classifier
    with torch.no_grad(), int4_grid.simulated(loaded.model):
        head.weight *= 1e4  # a random tiny model's answers differ by ~1e-5 between sentences: make them differ
        head.bias.zero_()
        margin = loaded.model(**inputs).logits.diff(dim=-1).squeeze(-1).sort().values
        head.bias[1] -= (margin[len(margin) // 2 - 1] + margin[len(margin) // 2]) / 2
        answers = loaded.model(**inputs).logits.argmax(-1).tolist()
    loaded.model.save_pretrained(directory)
    return answers


def test_int4_tuning_that_only_loses_ships_the_checkpoint_as_it_came(task, tmp_path, tokenizer):
    """Tuning further with a step size that wrecks the model: the dev set (labelled with the input's own answers on
    the grid) scores the input highest, so it ships, not the end of tuning (which is what shipped before)."""
    from pocketbert.converter.levers.int4_tune import Int4Options, int4_tune_checkpoint

    rows = (DATA / "glue" / "SST-2" / "dev.tsv").read_text(encoding="utf-8").splitlines()
    texts = [row.rsplit("\t", 1)[0] for row in rows[1:33]]
    answers = _split_down_the_middle(tmp_path / "student", tokenizer, texts)
    assert 0 < sum(answers) < len(answers)
    dev = tmp_path / "dev.tsv"
    dev.write_text("\n".join([rows[0], *(f"{t}\t{a}" for t, a in zip(texts, answers))]) + "\n", encoding="utf-8")
    printed: list[str] = []
    options = Int4Options(lr=0.05, budget=Budget(steps=4), threads=1, allow_accuracy_loss=True)
    _, record = int4_tune_checkpoint(str(tmp_path / "student"), str(task / "train.tsv"), tmp_path / "tuned", options,
                                     log=printed.append, dev=str(dev))
    out = "\n".join(printed)
    grid = record["int4_grid"]
    assert "the checkpoint as it came scores" in out and "above the end's" in out, out
    assert grid["dev_after"]["accuracy"] == grid["dev_int4_before"]["accuracy"] > 90
    assert grid["best"]["steps"] == 0 and record["training"]["steps"] == 4


def test_a_retuning_of_the_factors_that_only_loses_ships_the_svds_factors(task, tmp_path, tokenizer):
    """The dev set is labelled with the answers of the source's SVD factors (the same SVD the command makes, so they
    score 100): a re-tuning with a step size that wrecks them ships the SVD's factors, not its own."""
    import torch

    from pocketbert.converter.checkpoints.loading import load
    from pocketbert.converter.levers.factor_embeddings import FactorOptions, factor_checkpoint

    rows = (DATA / "glue" / "SST-2" / "dev.tsv").read_text(encoding="utf-8").splitlines()
    texts = [row.rsplit("\t", 1)[0] for row in rows[1:33]]
    dev = tmp_path / "dev.tsv"
    dev.write_text("\n".join([rows[0], *(f"{t}\t{i % 2}" for i, t in enumerate(texts))]) + "\n", encoding="utf-8")
    source = build_checkpoint(tmp_path / "student", "bert", tokenizer, labels=("negative", "positive"))
    loaded = load(str(source))
    with torch.no_grad():
        loaded.model.classifier.weight *= 1e4  # a random tiny model's answers differ by ~1e-5: make them differ
    loaded.model.save_pretrained(source)
    options = FactorOptions(rank=16, retune=None, threads=1, allow_accuracy_loss=True)
    factor_checkpoint(str(source), str(task / "train.tsv"), tmp_path / "svd", options, log=lambda _: None,
                      dev=str(dev))
    svd = load(str(tmp_path / "svd"))
    encoded = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        margin = svd.model(**{n: encoded[n] for n in svd.family.input_names}).logits.diff(dim=-1).squeeze(-1)
    middle = margin.sort().values[len(texts) // 2 - 1: len(texts) // 2 + 1].mean()
    answers = (margin > middle).long().tolist()
    assert 0 < sum(answers) < len(answers)
    with torch.no_grad():
        loaded.model.classifier.bias[1] -= middle  # the source's head, which the factored model keeps
    loaded.model.save_pretrained(source)
    dev.write_text("\n".join([rows[0], *(f"{t}\t{a}" for t, a in zip(texts, answers))]) + "\n", encoding="utf-8")

    printed: list[str] = []
    options = FactorOptions(rank=16, retune="4steps", lr=1.0, threads=1, allow_accuracy_loss=True)
    _, record = factor_checkpoint(str(source), str(task / "train.tsv"), tmp_path / "factored", options,
                                  log=printed.append, dev=str(dev))
    table = record["factored_embeddings"]
    assert "the factors as the SVD gave them score higher; they ship" in "\n".join(printed), printed
    assert table["dev_after"]["accuracy"] == table["dev_factored"]["accuracy"] > 90
    assert record["dev_scores"]["accuracy"] == table["dev_factored"]["accuracy"]
