"""The plan from a checkpoint's shapes: the int4 file's size the shapes predict, checked against the shipped phone
files, and the levers the planner picks for the demo teachers and for tiny models of every family."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pocketbert.converter.families import families
from pocketbert.converter.levers import plan, shapes

DEMO = Path(__file__).resolve().parents[1] / "pocketbert" / "demo_models"
PHONE_BUCKETS = (32, 64, 128)


@pytest.mark.parametrize("name, measured", [("sst2-minilm-phone", 6_005_779), ("conll2003-minilm-phone", 9_971_764)])
def test_the_shapes_predict_the_shipped_phone_files(name, measured):
    """The int4 files set-up command 1 writes from the shipped phone checkpoints (2026-11-28, -29), within 1%."""
    predicted = shapes.file_bytes(shapes.read(DEMO / name), PHONE_BUCKETS)
    assert abs(predicted - measured) / measured < 0.01


def test_the_shapes_predict_the_measured_int4_files_of_other_structures():
    """docs/phone-size.md's int4 files of the NER demo's weights cut to other shapes (buckets 128), within 3%."""
    teacher = shapes.read(DEMO / "conll2003-minilm-nonorm-relu").factored(128)
    for layers, units, megabytes in [(6, 1536, 8.5), (6, 1152, 7.6), (5, 1536, 7.6), (6, 768, 6.7), (5, 1024, 6.5),
                                     (6, 512, 6.0)]:
        predicted = shapes.file_bytes(teacher.narrowed(units).keeping(layers), (128,)) / 1e6
        assert abs(predicted - megabytes) / megabytes < 0.03, (layers, units, predicted)


def _demo_plan(name: str, max_mb: float, pieces: tuple[int, int]) -> plan.LeverPlan:
    goal = plan.Goal(max_bytes=int(max_mb * 1e6), max_macs=0.7, buckets=PHONE_BUCKETS, pieces_needed=pieces,
                     nonorm=True)
    return plan.make(shapes.read(DEMO / name), goal)


def test_the_plan_for_the_sst2_demo_teacher_needs_no_factored_table_once_the_blocks_are_narrow():
    """8 MB and 70% of the multiply-adds, the pieces SST-2's training text uses (11,570; 13,486 with the specials
    and single characters): the narrowing the speed target needs frees the room a factored table would buy, so the
    plan keeps the table whole (sst2-phone, made before the planner, is also factored at rank 160)."""
    made = _demo_plan("sst2-minilm-nonorm-relu", 8, (11_570, 13_486))
    assert [(s.lever.name, s.setting) for s in made.steps] == [
        ("trim-vocab", 16000), ("narrow", 768), ("int4-tune", True), ("pack", True)]
    assert made.reached and 7_500_000 < made.final_bytes <= 8_000_000
    assert [s.budget.seconds for s in made.steps if s.budget] == [900]  # int4-tune alone: the demo's 15 minutes
    sizes = [made.start_bytes] + [s.bytes for s in made.steps]
    assert sizes[0] > sizes[1] > sizes[2] == sizes[3] == sizes[4]


def test_a_lever_takes_its_gentlest_setting_that_changes_no_other_lever():
    """Alone, factor-embeddings cuts to the rank that fits before the narrowing (NER at 10 MB: 160); with the
    narrowing the speed target makes anyway, the plan takes the largest rank (up to 3/4 of the width) for which
    every other lever is unchanged, never a narrower block bought by a larger table."""
    from pocketbert.converter import levers

    made = _demo_plan("conll2003-minilm-nonorm-relu", 10, (14_095, 16_000))
    assert [(s.lever.name, s.setting) for s in made.steps] == [
        ("factor-embeddings", 288), ("narrow", 768), ("int4-tune", True), ("pack", True)]
    assert made.reached and made.final_bytes <= 10_000_000
    shape = shapes.read(DEMO / "conll2003-minilm-nonorm-relu")
    assert levers.get("factor-embeddings").choose(shape, made.goal) == 160  # what it picks seeing only the size
    # tried gentlest first: no factoring (which would need 384 units to fit: refused), then 288 = 3/4 of 384
    assert levers.get("factor-embeddings").gentler(shape, made.goal, 160)[:2] == (None, 288)
    assert shapes.file_bytes(shape.narrowed(768), PHONE_BUCKETS) > 10_000_000


def test_a_plan_without_a_speed_target_stops_when_the_file_fits():
    made = _demo_plan("sst2-minilm-nonorm-relu", 8, (11_570, 13_486))
    slow = plan.make(made.shape, plan.Goal(max_bytes=8_000_000, buckets=PHONE_BUCKETS,
                                           pieces_needed=(11_570, 13_486), nonorm=True))
    assert slow.levers == ["trim-vocab", "factor-embeddings", "int4-tune", "pack"]
    layernorm = plan.make(made.shape, plan.Goal(max_bytes=8_000_000, buckets=PHONE_BUCKETS,
                                                pieces_needed=(11_570, 13_486)))
    assert layernorm.levers == ["trim-vocab", "factor-embeddings"] and "no int4 tuning" in "\n".join(layernorm.lines())
    unreachable = plan.make(made.shape, plan.Goal(max_bytes=500_000, nonorm=True))
    assert not unreachable.reached and "the levers cannot reach the target" in "\n".join(unreachable.lines())


@pytest.mark.parametrize("family", [f.name for f in families()])
@pytest.mark.parametrize("task", ["classification", "ner"])
def test_the_plan_for_a_tiny_model_of_every_family(family, task, capsys):
    """Printed before any work; every lever that changes the shapes makes the file smaller or the model cheaper, the
    steps after them (int4 tuning, packing) keep the size; a recovery step comes first when nonorm is asked for and
    the model has LayerNorm or GELU."""
    config = next(f for f in families() if f.name == family).tiny_config(vocab_size=30522).to_dict()
    config["architectures"] = ["X" + ("ForTokenClassification" if task == "ner" else "ForSequenceClassification")]
    shape = shapes.from_config(json.loads(json.dumps(config)))
    start = shapes.file_bytes(shape)
    made = plan.make(shape, plan.Goal(max_bytes=int(start * 0.8), max_macs=0.6, pieces_needed=(600, 2600),
                                      recover=("nonorm", "relu"), nonorm=True))
    print("\n".join(made.lines()))
    printed = capsys.readouterr().out
    assert made.reached and made.levers[-2:] == ["int4-tune", "pack"]
    # MobileBERT has NoNorm and ReLU by construction: a recovery would change nothing (and refuse to run)
    assert (made.levers[0] == "recover") == (family != "mobilebert") and shape.built_in == (
        ("nonorm", "relu") if family == "mobilebert" else ())
    assert all(f"{i}. {s.lever.name}" in printed for i, s in enumerate(made.steps, 1))
    previous = (start, shapes.macs(shape))
    for step in made.steps:
        if step.lever.setting:
            assert step.bytes < previous[0] or step.macs < previous[1], step
        else:
            assert (step.bytes, step.macs) == previous
        previous = (step.bytes, step.macs)
    assert (task == "ner") == ("trim-vocab" not in made.levers)


def test_the_teacher_score_is_the_original_teachers():
    assert plan.teacher_score(DEMO / "sst2-minilm-nonorm-relu") == ("accuracy", 89.335)
    assert plan.teacher_score(DEMO / "conll2003-minilm-nonorm-relu") == ("f1", 89.499)


def test_a_recovery_alone_is_followed_by_int4_tuning_since_the_plans_sizes_are_all_int4(minilm_dir):
    """A LayerNorm checkpoint whose all-int4 file already fits: recovery is the only lever the size needs, and int4
    tuning follows it, since an untuned int4 ladder keeps Linears in int8 (all-MiniLM recovered on WNUT-17: 17.6 MB
    where the plan said 13.0)."""
    goal = plan.Goal(max_bytes=14_000_000, max_macs=1.0, buckets=(32, 64, 128, 256), recover=("nonorm", "relu"),
                     nonorm=True)
    made = plan.make(shapes.read(minilm_dir), goal)
    assert made.reached and made.levers == ["recover", "int4-tune", "pack"]
    plain = plan.make(shapes.read(minilm_dir), plan.Goal(max_bytes=14_000_000, max_macs=1.0, buckets=(32,)))
    assert plain.levers == []  # nothing to recover, nothing to shrink: no lever at all
