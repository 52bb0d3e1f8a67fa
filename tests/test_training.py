"""The training loop (budgets, resume) and the finetune command on tiny models and real data."""

from __future__ import annotations

import json
import time
import types

import pytest
import torch

from pocketbert.converter.checkpoints import loading
from pocketbert.converter.cli import main as cli_main
from pocketbert.converter.data import load_task
from pocketbert.converter.errors import ConverterInputError
from pocketbert.converter.training import loop
from pocketbert.converter.training.finetune import FinetuneOptions, finetune

from .conftest import DATA, NER_LABELS, build_checkpoint


def test_parse_budget():
    assert loop.parse_budget("500steps") == loop.Budget(steps=500)
    assert loop.parse_budget("0.5epoch,20m") == loop.Budget(epochs=0.5, seconds=1200)
    assert loop.parse_budget("1.5h").seconds == 5400
    for bad in ("", "ten minutes", "5 parsecs"):
        with pytest.raises(ConverterInputError):
            loop.parse_budget(bad)


@pytest.mark.parametrize("budget", [loop.Budget(), loop.Budget(steps=0), loop.Budget(epochs=0.01)])
def test_budget_too_small(budget):
    with pytest.raises(ConverterInputError) as info:
        budget.check(batches_per_epoch=20)
    assert info.value.fix


def _toy(seed=0):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.3), torch.nn.Linear(8, 1))
    x = torch.randn(64, 4)
    y = x.sum(1, keepdim=True)

    class Source:
        def __len__(self):
            return 8

        def epoch(self, k):
            order = torch.randperm(64, generator=torch.Generator().manual_seed(k))
            for i in range(8):
                rows = order[i * 8:(i + 1) * 8]
                yield {"input_ids": x[rows], "y": y[rows]}

    def loss_fn(batch):
        return torch.nn.functional.mse_loss(model(batch["input_ids"]), batch["y"]), {}

    return model, Source(), loss_fn


def test_training_reduces_loss_and_stops_at_budget():
    model, source, loss_fn = _toy()
    log = loop.train(model, loss_fn, source, budget=loop.Budget(steps=40), lr=1e-2, progress=False, log_every=5)
    assert log.steps == 40 and log.losses[-1]["loss"] < 0.5 * log.losses[0]["loss"]
    assert not model.training and all(p.requires_grad for p in model.parameters())


def test_only_given_params_train():
    model, source, loss_fn = _toy()
    before = [p.detach().clone() for p in model.parameters()]
    loop.train(model, loss_fn, source, params=list(model[2].parameters()), budget=loop.Budget(steps=5), lr=1e-2,
               progress=False)
    after = list(model.parameters())
    assert torch.equal(before[0], after[0]) and torch.equal(before[1], after[1])  # first Linear frozen
    assert not torch.equal(before[2], after[2])


def test_resume_continues_exactly(tmp_path):
    budget = loop.Budget(steps=20)
    straight, source, loss_fn = _toy()
    loop.train(straight, loss_fn, source, budget=budget, lr=1e-2, seed=1, progress=False)

    resumed, source, loss_fn = _toy()
    calls = {"n": 0}

    def interrupted(batch):
        calls["n"] += 1
        if calls["n"] == 13:  # Ctrl-C in the middle of the second epoch
            raise KeyboardInterrupt
        return loss_fn(batch)

    with pytest.raises(KeyboardInterrupt):
        loop.train(resumed, interrupted, source, budget=budget, lr=1e-2, seed=1, progress=False,
                   checkpoint_dir=tmp_path, checkpoint_every=0)
    log = loop.train(resumed, loss_fn, source, budget=budget, lr=1e-2, seed=1, progress=False,
                     checkpoint_dir=tmp_path, resume=True)
    assert log.resumed_from == 12 and log.steps == 20
    for a, b in zip(straight.parameters(), resumed.parameters()):
        torch.testing.assert_close(a, b)


def test_milestones_are_called_once_each_and_off_the_time_budget(monkeypatch):
    model, source, loss_fn = _toy()
    calls, clock = [], {"skipped": 0.0}
    # the checks move the training loop's clock on by 100 s (a long dev evaluation) without sleeping, so that what
    # is asserted is that their time is left out of the budget, whatever the machine's load
    clock_moved = types.SimpleNamespace(perf_counter=lambda: time.perf_counter() + clock["skipped"])
    monkeypatch.setattr(loop, "time", clock_moved)

    def slow_check(point):
        calls.append((point.step, point.seconds, model.training))
        clock["skipped"] += 100.0  # a dev evaluation: not charged to the budget
        model.eval()  # an evaluation may leave the model in eval mode; training goes on in train mode

    log = loop.train(model, loss_fn, source, budget=loop.Budget(steps=40), lr=1e-2, progress=False,
                     milestones=loop.Milestones((0.25, 0.5, 0.75), slow_check))
    assert [step for step, _, _ in calls] == [10, 20, 30] and log.steps == 40
    assert all(training for _, _, training in calls)
    assert log.seconds < 100  # the three 100 s checks are not in the training time

    model, source, loss_fn = _toy()
    calls.clear()
    log = loop.train(model, loss_fn, source, budget=loop.Budget(seconds=1.0), lr=1e-2, progress=False,
                     milestones=loop.Milestones((0.5,), slow_check))
    assert len(calls) == 1 and 0.5 <= calls[0][1] <= 0.9  # half the time budget, counted without the check
    assert 1.0 <= log.seconds < 1.2  # the budget ran out on training time alone, the check's 100 s not in it


def test_resume_skips_milestones_already_passed(tmp_path):
    model, source, loss_fn = _toy()
    budget, steps = loop.Budget(steps=20), []
    calls = {"n": 0}

    def interrupted(batch):
        calls["n"] += 1
        if calls["n"] == 13:
            raise KeyboardInterrupt
        return loss_fn(batch)

    marks = loop.Milestones((0.25, 0.5, 0.75), lambda point: steps.append(point.step))
    with pytest.raises(KeyboardInterrupt):
        loop.train(model, interrupted, source, budget=budget, lr=1e-2, progress=False, checkpoint_dir=tmp_path,
                   checkpoint_every=0, milestones=marks)
    loop.train(model, loss_fn, source, budget=budget, lr=1e-2, progress=False, checkpoint_dir=tmp_path,
               resume=True, milestones=marks)
    assert steps == [5, 10, 15]  # 5 and 10 before the interruption, 15 after: none twice


def test_a_milestone_at_the_end_of_a_time_budget_comes_and_can_copy_the_state():
    """A time budget runs out between steps; the end's milestone (1.0) still comes once, with the fraction and a
    copy of the state that later training does not change."""
    model, source, loss_fn = _toy()
    points, states = [], []

    def check(point):
        points.append(point)
        states.append(point.state())

    loop.train(model, loss_fn, source, budget=loop.Budget(seconds=0.3), lr=1e-2, progress=False,
               milestones=loop.Milestones((0.5, 1.0), check))
    assert len(points) == 2 and 0.5 <= points[0].fraction < 1 <= points[1].fraction
    assert states[0]["step"] == points[0].step < points[1].step == states[1]["step"]
    assert states[0]["seconds"] == points[0].seconds
    final = model.state_dict()
    assert all(torch.equal(final[k], states[1]["model"][k]) for k in final)
    assert not all(torch.equal(final[k], states[0]["model"][k]) for k in final)


@pytest.fixture(scope="module")
def bare(tmp_path_factory, tokenizer):
    return build_checkpoint(tmp_path_factory.mktemp("bare") / "bert", "bert", tokenizer, head="none")


@pytest.mark.parametrize("task,metric", [("glue:sst2", "accuracy"), ("glue:stsb", "pearson"),
                                         ("conll2003", "f1")])
def test_finetune_writes_a_loadable_checkpoint(tmp_path, bare, task, metric):
    out = tmp_path / "model"
    options = FinetuneOptions(checkpoint=str(bare), task=task, out=out, budget=loop.Budget(steps=30), lr=1e-3,
                              batch_size=16, max_length=64, data_dir=DATA, train_limit=480, dev_limit=200,
                              progress=False)
    result = finetune(options, log=lambda *a: None)
    record = json.loads((out / "training.json").read_text())
    assert record["training"]["steps"] == 30 and record["dev_scores"][metric] == pytest.approx(result.scores[metric],
                                                                                               abs=1e-3)
    assert "## License" in (out / "README.md").read_text()
    loaded = loading.load(str(out))
    assert loaded.labels == list(load_task(task, "dev", DATA).label_names)
    assert not (tmp_path / ".model.training").exists()  # the resumable state is removed on success
    if task == "conll2003":
        assert loaded.task == "ner" and loaded.labels == NER_LABELS


def test_finetune_is_deterministic(tmp_path, bare):
    weights = []
    for name in ("a", "b"):
        options = FinetuneOptions(checkpoint=str(bare), task="glue:sst2", out=tmp_path / name,
                                  budget=loop.Budget(steps=6), batch_size=8, data_dir=DATA, train_limit=100,
                                  dev_limit=50, seed=7, progress=False)
        weights.append(finetune(options, log=lambda *a: None))
    a = loading.load(str(tmp_path / "a")).model.state_dict()
    b = loading.load(str(tmp_path / "b")).model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_finetune_cli_errors_before_training(tmp_path, bare, capsys):
    code = cli_main(["finetune", str(bare), "--task", "glue:mnli", "--out", str(tmp_path / "x")])
    assert code == 3 and "unknown task" in capsys.readouterr().err
    code = cli_main(["finetune", str(bare), "--task", "glue:sst2", "--budget", "0steps", "--out", str(tmp_path / "x"),
                     "--data-dir", str(DATA)])
    assert code == 3 and "too small" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_finetune_real_minilm_learns_sst2(tmp_path):
    """The real all-MiniLM-L6-v2 with a fresh head: 40 steps at lr 1e-4 on 640 sentences beat chance clearly."""
    options = FinetuneOptions(checkpoint="minilm", task="glue:sst2", out=tmp_path / "m", budget=loop.Budget(steps=40),
                              lr=1e-4, batch_size=16, data_dir=DATA, train_limit=640, dev_limit=300, progress=False)
    result = finetune(options, log=lambda *a: None)
    assert result.scores["accuracy"] > 70
