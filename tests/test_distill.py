"""Recovery distillation (training/distill/): loss terms by hand, PKT freezing, gap reduction per family, errors."""

from __future__ import annotations

import copy
import json
import math

import pytest
import torch
from torch import nn
from transformers import AutoModelForSequenceClassification, AutoModelForTokenClassification, BertConfig

from pocketbert.converter.data.tasks import load_task
from pocketbert.converter.errors import ConverterInputError
from pocketbert.converter.families import families
from pocketbert.converter.training.distill import (
    attention_kl,
    calibrate_nonorm,
    hard_label_loss,
    hidden_mse,
    logit_distillation,
    measure_gap,
    nonorm_paths,
    pair,
    progressive,
    recover,
    stream_range,
)
from pocketbert.converter.training.distill.pairing import eager_attention, no_dropout, truncated
from pocketbert.converter.training.loop import Budget, train
from pocketbert.converter.transforms import nonorm, relu

from .conftest import DATA, _family

FAMILIES = [f.name for f in families()]
KL_A = 0.75 * math.log(0.75 / 0.5) + 0.25 * math.log(0.25 / 0.5)  # KL([.75,.25] ‖ [.5,.5]) = 0.130812
KL_B = 0.5 * math.log(0.5 / 0.75) + 0.5 * math.log(0.5 / 0.25)  # KL([.5,.5] ‖ [.75,.25]) = 0.143841
LN3 = math.log(3.0)  # softmax([ln 3, 0]) = [.75, .25]


# --- loss terms against hand-computed values -------------------------------------------------------------------

def test_logit_distillation_classification_with_temperature():
    student = torch.tensor([[0.0, 0.0], [1.0, 2.0]])
    teacher = torch.tensor([[2 * LN3, 0.0], [1.0, 2.0]])  # at T=2: p_t = [.75,.25] vs [.5,.5]; row 2 equal
    value = logit_distillation(student, teacher, temperature=2.0)
    assert value.item() == pytest.approx(4 * KL_A / 2, rel=1e-5)  # T² · mean over the 2 rows
    assert logit_distillation(teacher, teacher, temperature=2.0).item() == pytest.approx(0.0, abs=1e-7)


def test_logit_distillation_per_real_token():
    student = torch.tensor([[[0.0, 0.0], [3.0, 1.0], [9.0, -9.0]]])
    teacher = torch.tensor([[[LN3, 0.0], [3.0, 1.0], [-9.0, 9.0]]])  # token 3 is padding: huge gap, ignored
    mask = torch.tensor([[1, 1, 0]])
    assert logit_distillation(student, teacher, attention_mask=mask).item() == pytest.approx(KL_A / 2, rel=1e-5)


def test_logit_distillation_regression_is_mse():
    value = logit_distillation(torch.tensor([[1.0], [3.0]]), torch.tensor([[2.0], [3.0]]), temperature=4.0)
    assert value.item() == pytest.approx(0.5)


def test_hidden_mse_over_real_tokens():
    student = torch.zeros(1, 3, 2)
    teacher = torch.tensor([[[1.0, 1.0], [2.0, 0.0], [100.0, 100.0]]])  # per token mean sq.: 1, 2, (padding)
    assert hidden_mse(student, teacher, torch.tensor([[1, 1, 0]])).item() == pytest.approx(1.5)
    assert hidden_mse(student, teacher).item() == pytest.approx((1 + 2 + 10000) / 3)


def test_attention_kl_teacher_to_student_over_real_query_rows():
    mask = torch.tensor([[1, 1, 0]])  # key/query 3 is padding
    teacher = torch.zeros(1, 2, 3, 3)
    student = torch.zeros(1, 2, 3, 3)
    teacher[0, 0, 0, :2] = torch.tensor([0.75, 0.25])
    student[0, 0, 0, :2] = torch.tensor([0.5, 0.5])  # head 0, row 0: KL_A
    teacher[0, 1, 0, :2] = student[0, 1, 0, :2] = torch.tensor([0.6, 0.4])  # head 1, row 0: 0
    teacher[0, 0, 1, :2] = torch.tensor([0.5, 0.5])
    student[0, 0, 1, :2] = torch.tensor([0.75, 0.25])  # head 0, row 1: KL_B
    teacher[0, 1, 1, :2] = student[0, 1, 1, :2] = torch.tensor([0.3, 0.7])  # head 1, row 1: 0
    teacher[0, :, 2, 0] = 1.0
    student[0, :, 2, 1] = 1.0  # padded query row: disjoint supports, must be ignored (and not NaN)
    value = attention_kl(student, teacher, mask)
    assert value.item() == pytest.approx(((KL_A + 0) / 2 + (KL_B + 0) / 2) / 2, rel=1e-5)
    assert attention_kl(teacher, teacher, mask).item() == pytest.approx(0.0, abs=1e-7)


def test_hard_label_loss_ignores_minus_100_and_regresses():
    logits = torch.tensor([[LN3, 0.0], [5.0, -5.0]])
    assert hard_label_loss(logits, torch.tensor([0, -100])).item() == pytest.approx(-math.log(0.75), rel=1e-5)
    tokens = torch.tensor([[[LN3, 0.0], [7.0, 7.0], [0.0, LN3]]])
    assert hard_label_loss(tokens, torch.tensor([[0, -100, 1]])).item() == pytest.approx(-math.log(0.75), rel=1e-5)
    assert hard_label_loss(tokens, torch.full((1, 3), -100)).item() == 0.0
    assert hard_label_loss(torch.tensor([[1.0], [2.0]]), torch.tensor([1.5, 2.0])).item() == pytest.approx(0.125)


# --- tiny teacher/student pairs -----------------------------------------------------------------------------------

def test_stream_range_is_the_outliers_stretch_over_real_tokens():
    h = torch.ones(1, 3, 4)
    h[0, 0, 0] = 4.0  # rms over the 8 real values: sqrt((16 + 7) / 8)
    h[0, 2, :] = 100.0  # padding: not counted
    mask = torch.tensor([[1, 1, 0]])
    expected = math.log(4.0 / math.sqrt(23 / 8))
    assert stream_range(h, mask).item() == pytest.approx(expected, rel=1e-6)
    assert stream_range(-7.0 * h, mask).item() == pytest.approx(expected, rel=1e-6)  # scale-free, as int8 is
    assert stream_range(torch.ones(2, 3, 4)).item() == pytest.approx(0.0, abs=1e-6)  # no outlier


@pytest.fixture(scope="module")
def sst2(tokenizer):
    """320 real SST-2 training sentences, tokenised (the lead's data module)."""
    return load_task(str(DATA / "glue" / "SST-2" / "train.tsv"), "train", limit=320).encode(tokenizer, max_length=64)


def _names(family):
    return ("input_ids", "attention_mask", "token_type_ids") if family.uses_token_type_ids else (
        "input_ids", "attention_mask")


def _pair(family, tokenizer, seed=0, num_labels=2, cls=AutoModelForSequenceClassification):
    """A tiny teacher with informative logits and its nonorm+relu student (noised where both are no-ops)."""
    config = family.tiny_config(len(tokenizer))
    config.num_labels = num_labels
    config.initializer_range = 0.1  # the default 0.02 gives near-constant logits and hidden states
    torch.manual_seed(seed)
    teacher = cls.from_config(config).eval()
    head = [m for m in teacher.modules() if isinstance(m, nn.Linear)][-1]
    with torch.no_grad():
        head.weight.mul_(30.0)  # logits spread over a few units, so KL/agreement measure something
    student = copy.deepcopy(teacher)
    reports = [nonorm.apply(student, family), relu.apply(student, family)]
    if all(report.noop for report in reports):  # e.g. MobileBERT: already NoNorm/ReLU; perturb instead
        with torch.no_grad():
            for p in student.parameters():
                p.add_(torch.randn_like(p) * 0.02)
    return teacher, student


@pytest.mark.parametrize("schedule", ["progressive", "joint"])
@pytest.mark.parametrize("family_name", FAMILIES)
def test_recovery_reduces_the_gap(family_name, schedule, tokenizer, sst2):
    torch.set_num_threads(1)
    family = _family(family_name)
    teacher, student = _pair(family, tokenizer)
    dropout = [m.p for m in student.modules() if isinstance(m, nn.Dropout)]
    batches = sst2.batches(32, shuffle=True, seed=0, input_names=_names(family))
    held_out = sst2.batches(64, input_names=_names(family))
    init = "teacher" if schedule == "progressive" else None  # both paths covered; training alone in joint
    report = recover(teacher, student, family, batches, budget=Budget(steps=120), schedule=schedule, lr=1e-3,
                     init=init, eval_batches=held_out, progress=False)
    before, after = report.gap_before, report.gap_after
    assert report.init["norms"] == (len(nonorm_paths(teacher, student, family)) if init else 0)
    assert after["logit_kl"] < 0.2 * before["logit_kl"], (before, after)
    assert after["agreement"] >= before["agreement"]
    assert report.steps == 120 and sum(s.steps for s in report.stages) == 120
    json.dumps(report.to_json())  # goes into the manifest
    # the models are handed back as they came: teacher frozen state, attention implementation, dropout
    assert teacher.config._attn_implementation == student.config._attn_implementation == "sdpa"
    assert all(p.requires_grad for p in student.parameters())
    assert [m.p for m in student.modules() if isinstance(m, nn.Dropout)] == dropout


def _task_pair(task, tokenizer, *, limit):
    """A tiny BERT teacher/student pair with the task's head (token classification for CoNLL-2003), one thread,
    and ``limit`` of the task's dev examples as features."""
    torch.set_num_threads(1)
    data = load_task(task, "dev", data_dir=DATA, limit=limit)
    ner = task == "conll2003"
    teacher, student = _pair(_family("bert"), tokenizer, num_labels=len(data.label_names),
                             cls=AutoModelForTokenClassification if ner else AutoModelForSequenceClassification)
    return teacher, student, data.encode(tokenizer, max_length=64, label_names=data.label_names if ner else None)


@pytest.mark.parametrize("task", ["conll2003", "glue:stsb"])
def test_recovery_on_ner_and_regression_with_hard_labels(task, tokenizer):
    """Token classification (per-token KD over real tokens, -100 ignored by the hard loss) and regression (MSE)."""
    family = _family("bert")
    teacher, student, features = _task_pair(task, tokenizer, limit=192)
    report = recover(teacher, student, family, features.batches(32, shuffle=True), budget=Budget(steps=60),
                     schedule="joint", lr=1e-3, weights={"hard": 0.1}, eval_batches=features.batches(64),
                     progress=False)
    # the random teacher disagrees with the gold labels, which pull the other way: a looser bound
    assert report.gap_after["logit_kl"] < 0.5 * report.gap_before["logit_kl"], (report.gap_before, report.gap_after)
    assert {"logits", "hidden", "attention", "hard"} <= set(report.stages[0].final_losses)


@pytest.mark.parametrize("method", ["moments", "lstsq", "teacher"])
def test_nonorm_initialisation_narrows_the_gap_before_training(method, tokenizer, sst2):
    family = _family("bert")
    teacher, student = _pair(family, tokenizer)
    batches = sst2.batches(64, input_names=_names(family))
    p = pair(teacher, student, family)
    before = measure_gap(p, batches)
    paths = nonorm_paths(teacher, student, family)
    assert len(paths) == len(family.norms(student)) == 5
    fitted = calibrate_nonorm(student, family, list(batches)[:3], paths=paths, method=method, teacher=teacher)
    assert sorted(fitted) == sorted(paths)
    after = measure_gap(p, batches)
    assert after["last_hidden_mse"] < 0.5 * before["last_hidden_mse"], (before, after)


def test_mobilebert_own_nonorms_are_not_recalibrated(tokenizer):
    family = _family("mobilebert")
    teacher, student = _pair(family, tokenizer)
    assert nonorm_paths(teacher, student, family) == set()


@pytest.mark.parametrize("family_name", FAMILIES)
def test_progressive_stages_freeze_everything_else(family_name, tokenizer, sst2):
    family = _family(family_name)
    teacher, student = _pair(family, tokenizer)
    names = {id(p): name for name, p in student.named_parameters()}
    stages = progressive(student, family, {"logits": 1.0, "hidden": 1.0, "attention": 1.0, "hard": 0.0})
    assert [s.name for s in stages] == ["embeddings"] + [f"layer{i + 1}" for i in range(2)] + ["final"]
    changed_per_stage = []

    def spy(model, loss_fn, batches, *, params, **kwargs):
        before = {k: v.clone() for k, v in model.state_dict().items()}
        log = train(model, loss_fn, batches, params=params, **kwargs)
        after = model.state_dict()
        changed = {k for k in before if not torch.equal(before[k], after[k])}
        changed_per_stage.append((changed, {names[id(p)] for p in params}))
        return log

    batches = sst2.batches(32, shuffle=True, seed=0, input_names=_names(family))
    recover(teacher, student, family, batches, budget=Budget(steps=16), schedule="progressive", lr=1e-3,
            init=None, progress=False, train_fn=spy)
    assert len(changed_per_stage) == 4
    for (changed, allowed), stage in zip(changed_per_stage, stages):
        assert changed and changed <= allowed, (stage.name, changed - allowed)
        if stage.name.startswith("layer"):
            assert changed == allowed  # every parameter of the block learns
            index = int(stage.name.removeprefix("layer")) - 1
            assert all(f"layer.{index}." in k for k in changed)
    assert changed_per_stage[-1][0] == {k for k, _ in student.named_parameters()}  # final: everything


def test_truncated_forward_matches_the_full_one(tokenizer):
    family = _family("bert")
    teacher, _ = _pair(family, tokenizer)
    ids = torch.randint(5, 1000, (2, 9))
    with eager_attention(teacher):
        # truncated first: Hugging Face hooks the blocks present at the first forward pass
        with truncated(teacher, family.layers(teacher), 1):
            part = teacher(input_ids=ids, output_hidden_states=True, output_attentions=True)
        full = teacher(input_ids=ids, output_hidden_states=True, output_attentions=True)
    assert len(full.hidden_states) == 3 and len(full.attentions) == 2
    assert len(part.hidden_states) == 2 and len(part.attentions) == 1
    assert torch.equal(part.hidden_states[1], full.hidden_states[1])
    assert torch.equal(part.attentions[0], full.attentions[0])
    assert len(family.layers(teacher)) == 2 and teacher.config._attn_implementation == "sdpa"


def test_no_dropout_restores_probabilities(tokenizer):
    teacher, _ = _pair(_family("bert"), tokenizer)
    probs = [m.p for m in teacher.modules() if isinstance(m, nn.Dropout)]
    with no_dropout(teacher):
        assert all(m.p == 0 for m in teacher.modules() if isinstance(m, nn.Dropout))
    assert [m.p for m in teacher.modules() if isinstance(m, nn.Dropout)] == probs


def test_shallower_student_maps_layers_uniformly(tokenizer):
    family = _family("bert")
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                        intermediate_size=64)
    teacher = AutoModelForSequenceClassification.from_config(config)
    config2 = copy.deepcopy(config)
    config2.num_hidden_layers = 2
    student = AutoModelForSequenceClassification.from_config(config2)
    assert pair(teacher, student, family).layer_map == [0, 2, 4]


# --- clear errors, before any training ----------------------------------------------------------------------------

def _tiny(family_name, tokenizer, **overrides):
    config = _family(family_name).tiny_config(len(tokenizer))
    for key, value in overrides.items():
        setattr(config, key, value)
    return AutoModelForSequenceClassification.from_config(config)


def _fails(teacher, student, family, match, **kwargs):
    def never(*args, **kw):
        raise AssertionError("training started")

    kwargs.setdefault("budget", Budget(steps=100))
    batches = kwargs.pop("batches", [{"input_ids": torch.ones(1, 3, dtype=torch.long)}])
    with pytest.raises(ConverterInputError, match=match) as info:
        recover(teacher, student, family, batches, train_fn=never, progress=False, **kwargs)
    assert info.value.fix


def test_error_families_differ(tokenizer):
    _fails(_tiny("bert", tokenizer), _tiny("distilbert", tokenizer), _family("bert"), "must both be of the bert family")


def test_error_widths_differ(tokenizer):
    _fails(_tiny("bert", tokenizer), _tiny("bert", tokenizer, hidden_size=48), _family("bert"),
           "hidden size 32 differs from student hidden size 48")


def test_error_task_heads_differ(tokenizer):
    config = _family("bert").tiny_config(len(tokenizer))
    _fails(AutoModelForSequenceClassification.from_config(config), AutoModelForTokenClassification.from_config(config),
           _family("bert"), "teacher is a BertForSequenceClassification, student a BertForTokenClassification")


def test_error_deeper_student_and_heads(tokenizer):
    family = _family("bert")
    _fails(_tiny("bert", tokenizer), _tiny("bert", tokenizer, num_hidden_layers=3), family, "more layers")
    _fails(_tiny("bert", tokenizer), _tiny("bert", tokenizer, num_attention_heads=2), family, "attention heads")


def test_error_budget_and_options(tokenizer):
    family = _family("bert")
    teacher, student = _tiny("bert", tokenizer), _tiny("bert", tokenizer)
    _fails(teacher, student, family, "without a step", budget=Budget(steps=3), schedule="progressive")  # 4 stages
    _fails(teacher, student, family, "sets no limit", budget=Budget())
    _fails(teacher, student, family, "unknown recovery schedule", schedule="pkt")
    _fails(teacher, student, family, "unknown loss term", weights={"hiden": 1.0})
    _fails(teacher, student, family, "weight 0", weights={k: 0.0 for k in ("logits", "hidden", "attention")})
    _fails(teacher, student, family, "no training batches", batches=[])
    _fails(teacher, student, family, "batches have no labels", weights={"hard": 1.0})


def test_stream_penalty_shrinks_the_residual_streams_outliers(tokenizer, sst2):
    """With the penalty on, the student's streams end with less int8 range spent on outliers than the same
    run without it, and logit distillation still closes most of the gap."""
    torch.set_num_threads(1)
    family = _family("bert")
    held_out = sst2.batches(64, input_names=_names(family))

    def mean_range(model) -> float:
        with torch.no_grad():
            values = [stream_range(h, b["attention_mask"]) for b in held_out
                      for h in model(**b, output_hidden_states=True).hidden_states]
        return float(torch.stack(values).mean())

    ranges, reports = {}, {}
    for weight in (0.0, 3.0):
        teacher, student = _pair(family, tokenizer)
        batches = sst2.batches(32, shuffle=True, seed=0, input_names=_names(family))
        reports[weight] = recover(teacher, student, family, batches, budget=Budget(steps=60), schedule="joint",
                                  lr=1e-3, weights={"stream": weight}, eval_batches=held_out, progress=False)
        ranges[weight] = mean_range(student)
    assert ranges[3.0] < ranges[0.0] - 0.2, ranges
    assert "stream" in reports[3.0].stages[0].final_losses and "stream" not in reports[0.0].stages[0].final_losses
    assert reports[3.0].gap_after["logit_kl"] < 0.5 * reports[3.0].gap_before["logit_kl"]


@pytest.mark.parametrize("task", ["glue:sst2", "conll2003"])
def test_teacher_cache_gives_the_teachers_outputs_without_running_it(task, tokenizer):
    """Second epoch, rows grouped and padded differently: every loss term as with the teacher run, no teacher run."""
    from pocketbert.converter.training.distill import DEFAULT_WEIGHTS, joint, stage_loss
    from pocketbert.converter.training.distill.teacher_cache import for_training

    family = _family("bert")
    teacher, student, features = _task_pair(task, tokenizer, limit=96)
    batches = features.batches(16, shuffle=True, input_names=_names(family))
    p = pair(teacher, student, family)
    stage = joint(student, family, DEFAULT_WEIGHTS)[0]
    cache, record = for_training(p, [stage], batches)
    assert record["used"] and record["bytes_needed"] > 0
    plain, cached = stage_loss(p, stage, temperature=2.0), stage_loss(p, stage, temperature=2.0, cache=cache)
    teacher_runs = []
    hook = teacher.register_forward_hook(lambda *args: teacher_runs.append(1))
    try:
        with eager_attention(teacher, student), torch.no_grad():
            for epoch in (0, 1):
                for batch in batches.epoch(epoch):
                    _, want = plain(batch)
                    runs = len(teacher_runs)
                    _, got = cached(batch)
                    assert len(teacher_runs) == runs + (1 if epoch == 0 else 0)
                    assert set(got) == set(want) == {"loss", "logits", "hidden", "attention"}
                    for term in want:
                        assert got[term] == pytest.approx(want[term], rel=1e-2, abs=1e-5), (epoch, term)
    finally:
        hook.remove()
    assert cache.misses == cache.hits == len(batches)
    assert cache.to_json()["bytes"] == record["bytes_needed"]  # the estimate made before training is exact
    off, why = for_training(p, [stage], batches, limit=record["bytes_needed"] - 1)
    assert off is None and not why["used"] and "limit" in why["why"]
