"""Recovery ships its best dev check's state (not the last), says how noisy its dev score is, and a refused
recovery keeps that state beside the output for ``--resume`` (which continues it, and only it)."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import torch

from pocketbert.converter.checkpoints import loading
from pocketbert.converter.data.features import Features, TaskData
from pocketbert.converter.errors import ConverterInputError
from pocketbert.converter.training import dev_noise, kept_state, loop
from pocketbert.converter.training.evaluate import evaluate
from pocketbert.converter.training.finetune import FinetuneOptions, finetune
from pocketbert.converter.training.recovery import RecoverOptions, prepare, run
from pocketbert.converter.training.recovery_resume import after_gate
from pocketbert.converter.transforms import OPTS

from .conftest import DATA


@pytest.fixture(scope="module")
def teacher(tmp_path_factory, checkpoints):
    """A tiny BERT with a classification head trained a little on SST-2, loaded."""
    out = tmp_path_factory.mktemp("teacher") / "sst2"
    finetune(FinetuneOptions(checkpoint=str(checkpoints["bert"]["none"]), task="glue:sst2", out=out,
                             budget=loop.Budget(steps=20), lr=2e-3, batch_size=16, data_dir=DATA, train_limit=320,
                             dev_limit=64, progress=False), log=lambda *a: None)
    return loading.load(str(out))


def _prepared(teacher, **kwargs):
    kwargs.setdefault("budget", loop.Budget(steps=8))
    kwargs.setdefault("train_limit", 64)
    kwargs.setdefault("transforms", ("nonorm", "relu"))
    options = RecoverOptions(task="glue:sst2", data_dir=DATA, dev_limit=40, batch_size=8,
                             max_length=32, progress=False, **kwargs)
    return prepare(options, task_kind=teacher.task, tokenizer=teacher.tokenizer, labels=teacher.labels,
                   input_names=teacher.family.input_names, eval_length=64)


def _student(teacher):
    student = copy.deepcopy(teacher.model)
    for name in ("nonorm", "relu"):
        OPTS[name].apply(student, teacher.family)
    return student


class Scripted:
    """Dev check scores given in advance (the seam ``run(check_score=…)``); keeps the weights each check saw."""

    def __init__(self, scores):
        self.scores = list(scores)
        self.seen: list[dict[str, torch.Tensor]] = []

    def __call__(self, model) -> float:
        self.seen.append({k: v.detach().clone() for k, v in model.state_dict().items()})
        return self.scores[len(self.seen) - 1]


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_prepared_keeps_the_split_as_read_beside_its_augmented_features(teacher):
    """A teacher's spelling is checked on the text as read (shrink passes ``train_split``), not on the variants."""
    options = RecoverOptions(task="glue:sst2", data_dir=DATA, dev_limit=40, batch_size=8, max_length=32,
                             progress=False, budget=loop.Budget(steps=8), train_limit=64, augment=2)
    prepared = prepare(options, task_kind=teacher.task, tokenizer=teacher.tokenizer, labels=teacher.labels,
                       input_names=teacher.family.input_names, eval_length=64,
                       embeddings=teacher.model.get_input_embeddings())
    assert len(prepared.train_split) == 64 and "augmented" not in prepared.train_split.details
    assert len(prepared.features.task) > 64 and prepared.features.task.texts[:64] == prepared.train_split.texts


@pytest.mark.parametrize("scores,best_check", [
    ([60.0, 70.0, 80.0, 65.0], 2),  # the shape: best at three quarters, the end worse
    ([60.0, 80.0, 80.0, 70.0], 2),  # a tie: the later check
    ([80.0, 70.0, 60.0, 80.0], 3),  # the end ties the first: the end
])
def test_recovery_ships_the_best_check_not_the_last(teacher, scores, best_check):
    prepared = _prepared(teacher)
    student = _student(teacher)
    scripted = Scripted(scores)
    lines = []
    record = run(prepared, teacher.model, student, teacher.family, log=lines.append, check_score=scripted)

    assert [c["steps"] for c in record["dev_curve"]] == [0, 2, 4, 6, 8]
    assert [c["accuracy"] for c in record["dev_curve"][1:]] == scores
    best = record["best"]
    assert (best["steps"], best["fraction"], best["accuracy"]) == (2 * (best_check + 1), (best_check + 1) / 4,
                                                                    max(scores))
    assert record["end_of_training"]["steps"] == 8
    # the student now holds exactly the weights the best check scored, and the record scores that state
    assert _same(student.state_dict(), scripted.seen[best_check])
    assert not _same(scripted.seen[best_check], scripted.seen[-1]) or best_check == 3
    real = evaluate(student, prepared.dev_features, input_names=prepared.input_names)["accuracy"]
    assert record["dev_scores"]["recovered"]["accuracy"] == pytest.approx(real, abs=1e-3)
    if best_check < 3:
        assert any(f"not the end's {scores[-1]:.2f}" in line for line in lines)
    noise = record["dev_noise"]
    assert noise["dev_examples"] == 40 and noise["resamples"] == 1000
    assert any("bootstrap interval" in line and "40 examples" in line for line in lines)


def test_a_refused_recovery_keeps_its_best_state_and_resume_continues_it(teacher, tmp_path):
    out = tmp_path / "bundle"
    budget = loop.Budget(steps=16)
    first = Scripted([60.0, 80.0, 70.0, 65.0])  # checks at steps 4, 8, 12, 16: the best at 8
    # 160 examples: 20 batches, so all 16 steps are in the first epoch, whose teacher outputs are computed (later
    # epochs read them from the float16 teacher cache, which a resumed run fills again from its own first epoch)
    prepared = _prepared(teacher, budget=budget, output=out, train_limit=160)
    record = run(prepared, teacher.model, _student(teacher), teacher.family, log=lambda *a: None, check_score=first)
    fix = after_gate(prepared, record, passed=False)  # what the conversion's gate does when it refuses

    kept = tmp_path / ".bundle.recovery"
    assert str(kept) in fix and "--resume" in fix and "--recover-budget 32steps" in fix
    assert sorted(p.name for p in kept.iterdir()) == ["recovery.json", "training_state.pt"]
    assert not out.exists()  # nothing written into (or as) the output the user named
    saved = json.loads((kept / "recovery.json").read_text())
    assert saved["best"]["steps"] == 8 and saved["best"]["accuracy"] == 80.0
    state = torch.load(kept / "training_state.pt", weights_only=False)
    assert state["step"] == 8 and _same(state["model"], first.seen[1])

    # --resume with the same budget: trains steps 9..16 from the kept state (weights, optimiser, data position,
    # random state) and so ends on exactly the weights the first run had at step 16
    second = Scripted([75.0, 70.0])  # the checks still to come: 12 and 16
    resumed = _prepared(teacher, budget=budget, output=out, resume=True, train_limit=160)
    student = _student(teacher)
    record = run(resumed, teacher.model, student, teacher.family, log=lambda *a: None, check_score=second)
    assert record["resumed_from"]["steps"] == 8
    assert record["distillation"]["stages"][-1]["steps"] == 16
    assert [c["steps"] for c in record["dev_curve"]] == [0, 8, 12, 16]
    assert len(second.seen) == 2
    assert all(torch.allclose(second.seen[1][k], first.seen[3][k], atol=1e-6) for k in first.seen[3])
    # the kept state (80) is still the best: the student ships it, and a second refusal keeps it again
    assert record["best"]["steps"] == 8 and _same(student.state_dict(), first.seen[1])
    # passing the gate removes the kept state: it is in the bundle now
    after_gate(resumed, record, passed=True)
    assert not kept.exists()


def test_resume_refuses_another_recovery(teacher, tmp_path):
    out = tmp_path / "bundle"
    prepared = _prepared(teacher, budget=loop.Budget(steps=4), output=out)
    record = run(prepared, teacher.model, _student(teacher), teacher.family, log=lambda *a: None,
                 check_score=Scripted([50.0, 60.0, 55.0, 40.0]))
    after_gate(prepared, record, passed=False)
    for changed, expect in [({"seed": 1}, "recipe seed 0 then, 1 now"),
                            ({"transforms": ("relu",)}, "--opt transforms nonorm,relu then, relu now"),
                            ({"budget": loop.Budget(steps=2)}, "--recover-budget")]:
        settings = {"budget": loop.Budget(steps=8), **changed}
        other = _prepared(teacher, output=out, resume=True, **settings)
        with pytest.raises(ConverterInputError) as info:
            run(other, teacher.model, _student(teacher), teacher.family, log=lambda *a: None)
        assert expect in info.value.problem + info.value.fix and info.value.fix
    # another teacher (other weights) is refused too
    other_teacher = copy.deepcopy(teacher.model)
    with torch.no_grad():
        next(other_teacher.parameters()).add_(1.0)
    with pytest.raises(ConverterInputError, match="another teacher"):
        run(_prepared(teacher, budget=loop.Budget(steps=8), output=out, resume=True), other_teacher,
            _student(teacher), teacher.family, log=lambda *a: None)
    # and nothing kept for another output
    with pytest.raises(ConverterInputError, match="no kept recovery state"):
        run(_prepared(teacher, budget=loop.Budget(steps=8), output=tmp_path / "other", resume=True), teacher.model,
            _student(teacher), teacher.family, log=lambda *a: None)


def test_keep_never_replaces_a_folder_it_did_not_write(tmp_path):
    from pocketbert.converter.errors import OutputError

    users = tmp_path / ".bundle.recovery"
    users.mkdir()
    (users / "notes.txt").write_text("mine")
    with pytest.raises(OutputError):
        kept_state.keep(tmp_path / "bundle", {"step": 1}, {"best": {}})
    assert (users / "notes.txt").read_text() == "mine"
    assert not kept_state.discard(tmp_path / "bundle") and users.exists()


# --- the bootstrap ---------------------------------------------------------------------------------

def _classification(labels, predictions, metric="accuracy") -> tuple[Features, list[np.ndarray]]:
    task = TaskData("t", "classification", "dev", None, texts=[""] * len(labels), labels=list(labels),
                    label_names=["a", "b"], metric=metric)
    features = Features(task=task, input_ids=[[]] * len(labels), token_type_ids=[[]] * len(labels),
                        labels=list(labels), word_ids=None, truncated=0, pad_id=0, label_names=["a", "b"])
    logits = [np.eye(2)[p] for p in predictions]
    return features, logits


def test_bootstrap_matches_scipy_and_hand_computed_bounds():
    from scipy.stats import bootstrap

    rng = np.random.default_rng(7)
    labels = rng.integers(0, 2, 60)
    student_pred = np.where(rng.random(60) < 0.8, labels, 1 - labels)
    teacher_pred = np.where(rng.random(60) < 0.85, labels, 1 - labels)
    features, student = _classification(labels, student_pred)
    _, teacher = _classification(labels, teacher_pred)
    s_counts, statistic = dev_noise.counts(features, student)
    t_counts, _ = dev_noise.counts(features, teacher)
    assert statistic(s_counts.sum(0)) == pytest.approx(100 * np.mean(student_pred == labels))

    # the same draws as scipy.stats.bootstrap's (percentile method, paired), the same interval
    ours = dev_noise.interval(s_counts, t_counts, statistic, resamples=1000, seed=3)
    right_s, right_t = (student_pred == labels) * 100.0, (teacher_pred == labels) * 100.0
    theirs = bootstrap((right_s, right_t), lambda a, b, axis: a.mean(axis) - b.mean(axis), paired=True,
                       n_resamples=1000, method="percentile", confidence_level=0.95,
                       rng=np.random.default_rng(3), vectorized=True).confidence_interval
    assert ours == pytest.approx((theirs.low, theirs.high), abs=1e-9)
    ours_score = dev_noise.interval(s_counts, None, statistic, resamples=1000, seed=3)
    theirs_score = bootstrap((right_s,), np.mean, n_resamples=1000, method="percentile",
                             rng=np.random.default_rng(3)).confidence_interval
    assert ours_score == pytest.approx((theirs_score.low, theirs_score.high), abs=1e-9)

    # hand-computable: a student that agrees with the teacher everywhere differs by exactly 0 in every resample;
    # one that is right everywhere scores 100 in every resample
    assert dev_noise.interval(s_counts, s_counts, statistic) == (0.0, 0.0)
    perfect, _ = dev_noise.counts(*_classification(labels, labels))
    assert dev_noise.interval(perfect, None, statistic) == (100.0, 100.0)
    # one example in 60: the student's score moves in steps of 100/60 points
    values = dev_noise.resampled(s_counts, None, statistic, resamples=200, seed=0)
    assert np.allclose(np.round(values * 60 / 100), values * 60 / 100)


@pytest.mark.parametrize("metric", ["matthews", "f1"])
def test_bootstrap_statistics_are_the_gates_metrics_on_every_resample(metric):
    from pocketbert.converter.data import metrics

    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 50)
    predictions = np.where(rng.random(50) < 0.7, labels, 1 - labels)
    features, logits = _classification(labels, predictions, metric)
    counts, statistic = dev_noise.counts(features, logits)
    for indices in rng.integers(0, 50, (5, 50)):
        expected = metrics.glue_scores(metric, predictions[indices], labels[indices])[metric]
        assert statistic(counts[indices].sum(0)) == pytest.approx(expected, abs=1e-9)


def test_ner_bootstrap_resamples_sentences_and_matches_seqeval():
    from pocketbert.converter.data import metrics

    gold = [["B-PER", "I-PER", "O"], ["O", "B-LOC"], ["B-ORG", "O", "B-PER"], ["O"], ["B-MISC", "I-MISC"]]
    predicted = [["B-PER", "I-PER", "O"], ["O", "O"], ["B-ORG", "O", "B-LOC"], ["B-PER"], ["B-MISC", "I-MISC"]]
    counts = dev_noise._ner_counts(predicted, gold)
    assert counts.tolist() == [[1, 1, 1], [0, 0, 1], [1, 2, 2], [0, 1, 0], [1, 1, 1]]
    rng = np.random.default_rng(0)
    for indices in rng.integers(0, 5, (10, 5)):
        expected = metrics.ner_scores([predicted[i] for i in indices], [gold[i] for i in indices])["f1"]
        assert dev_noise._f1(counts[indices].sum(0)) == pytest.approx(expected, abs=1e-9)


def test_convert_refusal_says_where_the_state_is_kept_and_resume_ships_from_it(teacher, tmp_path):
    """The whole path: the conversion's gate refuses, its message says where the best state is kept and how to
    go on; the same conversion with --resume and a longer budget continues it, ships, and removes the kept state."""
    from pocketbert.converter.errors import AccuracyLossRefused
    from pocketbert.converter.pipeline import ConvertOptions, convert

    out = tmp_path / "bundle"
    common = dict(checkpoint=str(teacher.checkpoint), out=out, formats="onnx", verify_samples=20,
                  measure_latency=False, data_dir=DATA, opts="nonorm,relu", recover="glue:sst2")
    recover = {"train_limit": 64, "dev_limit": 40, "batch_size": 8, "max_length": 32, "progress": False}
    with pytest.raises(AccuracyLossRefused) as info:  # a bar no student meets: beat the teacher by 100 points
        convert(ConvertOptions(**common, max_accuracy_drop=-100,
                               recover_options={**recover, "budget": loop.Budget(steps=4)}))
    kept = tmp_path / ".bundle.recovery"
    assert str(kept) in info.value.fix and "--resume" in info.value.fix and "--recover-budget 8steps" in info.value.fix
    assert "bootstrap interval" in info.value.problem and "over 40 dev examples" in info.value.problem
    assert not out.exists() and (kept / "training_state.pt").is_file()
    kept_step = json.loads((kept / "recovery.json").read_text())["best"]["steps"]

    result = convert(ConvertOptions(**common, max_accuracy_drop=100,
                                    recover_options={**recover, "budget": loop.Budget(steps=8), "resume": True}))
    recovery = result.manifest["recovery"]
    assert recovery["resumed_from"]["steps"] == kept_step
    assert recovery["distillation"]["stages"][-1]["steps"] == 8 and recovery["best"]["steps"] >= kept_step
    assert out.is_dir() and not kept.exists()


@pytest.mark.parametrize("damage", ["truncated", "truncated, unrecorded"])
def test_a_damaged_kept_state_is_refused_with_the_fix(damage, tmp_path):
    expected = kept_state.identity(teacher="t", transforms=["nonorm", "relu"], recipe={}, train_file="",
                                   dev_file="")
    out = tmp_path / "bundle"
    where = kept_state.keep(out, {"step": 3, "weights": torch.zeros(4096)}, {"identity": expected})
    state = where / kept_state.STATE
    state.write_bytes(state.read_bytes()[:state.stat().st_size // 2])
    if damage == "truncated, unrecorded":  # a state kept before its SHA-256 was recorded: torch reads it
        record = json.loads((where / kept_state.RECORD).read_text())
        record.pop("state_sha256", None)
        (where / kept_state.RECORD).write_text(json.dumps(record))
    with pytest.raises(ConverterInputError) as info:
        kept_state.load(out, expected)
    assert "training_state.pt' is damaged" in info.value.problem
    assert "without --resume" in info.value.fix
