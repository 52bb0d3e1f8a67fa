"""The converter's stages keep their declared contracts: what each reads, an earlier stage produced (or
the conversion was given); what each produces, it sets and nothing else; and all their work is timed."""

from __future__ import annotations

import time

import pytest

from pocketbert.converter.conversion import GIVEN, PARTS, Conversion, QuantizeResult
from pocketbert.converter.pipeline import convert
from pocketbert.converter.stages import STAGES, Stage
from pocketbert.converter.stages.base import StageContractError, check_order


class Planted(Stage):
    """A stage that only records that it ran, under any contract a test gives it."""

    def __init__(self, name: str, reads: tuple[str, ...] = (), produces: tuple[str, ...] = (), ran: list | None = None,
                 sets: tuple[str, ...] | None = None):
        self.name, self.reads, self.produces = name, reads, produces
        self.ran, self.sets = ran if ran is not None else [], produces if sets is None else sets

    def run(self, conversion: Conversion) -> None:
        self.ran.append(self.name)
        for part in self.sets:
            setattr(conversion, part, QuantizeResult())  # any result: the contract check looks at presence


def test_the_converters_own_stages_are_in_an_order_their_declarations_allow():
    check_order(STAGES, GIVEN, PARTS)
    assert [s.name for s in STAGES] == ["load", "transform", "export", "quantize", "metadata", "verify", "bundle"]
    # every stage produces its own part, and every part is produced by exactly one stage
    assert [p for s in STAGES for p in s.produces] == list(PARTS)
    assert all(s.reads for s in STAGES)


def _refused_before_anything_ran(stages, options, checkpoints, needles):
    opts = options(checkpoints["bert"]["classification"])
    with pytest.raises(StageContractError) as caught:
        convert(opts, stages=stages)
    for needle in needles:
        assert needle in str(caught.value)
    assert not opts.out.exists() and not list(opts.out.parent.glob(".bundle.partial-*"))


def test_a_stage_reading_a_part_nobody_produces_is_refused_before_any_stage_runs(options, checkpoints):
    ran = []
    stages = (*STAGES[:2], Planted("lonely", reads=("load", "calibration"), ran=ran), *STAGES[2:])
    _refused_before_anything_ran(stages, options, checkpoints, ["'lonely'", "'calibration'", "no stage produces it"])
    assert ran == []


def test_a_stage_placed_before_what_it_reads_is_refused_before_any_stage_runs(options, checkpoints):
    ran = []
    spy = Planted("spy", reads=("options",), ran=ran)
    load, transform, export, *rest = STAGES
    stages = (spy, load, export, transform, *rest)  # export reads transform's part
    _refused_before_anything_ran(stages, options, checkpoints,
                                 ["'export'", "'transform'", "stage 'transform' produces it, but runs later"])
    assert ran == []


@pytest.mark.parametrize("stages, needle", [
    ((Planted("a", produces=("load",)), Planted("b", produces=("load",))), "'b' produces 'load', which is already"),
    ((Planted("a", produces=("calibration",)),), "'a' produces 'calibration', which is not a part"),
    ((Planted("a", reads=("plan",), produces=("load",)), Planted("b", produces=("options",))),
     "'b' produces 'options', which is already there"),
])
def test_a_part_produced_twice_or_unknown_is_refused(stages, needle):
    with pytest.raises(StageContractError, match=needle):
        check_order(stages, GIVEN, PARTS)


@pytest.mark.parametrize("planted, needle", [
    (Planted("idle", produces=("load",), sets=()), "'load' declared but not produced"),
    (Planted("sneaky", produces=("load",), sets=("load", "export")), "'export' produced but not declared"),
])
def test_a_stage_must_set_exactly_the_part_it_declares(planted, needle, options, checkpoints):
    ran = []
    after = Planted("after", reads=("load",), ran=ran)
    with pytest.raises(StageContractError, match=needle):
        convert(options(checkpoints["bert"]["classification"]), stages=(planted, after))
    assert ran == []  # the next stage never sees a record that broke its contract


def test_every_stage_does_its_work_inside_timed_steps(options, checkpoints):
    """The stage seconds a user reads (manifest, summary) account for the conversion's time."""
    start = time.perf_counter()
    result = convert(options(checkpoints["bert"]["classification"], opts="int8", verify_samples=40))
    wall = time.perf_counter() - start
    assert {"load", "transform", "export", "quantize", "verify", "bundle"} <= set(result.stage_seconds)
    assert sum(result.stage_seconds.values()) >= 0.9 * wall


@pytest.mark.parametrize("fails", [False, True])
def test_the_conversion_leaves_the_callers_pytorch_threads_as_they_were(fails, options, checkpoints, tmp_path):
    """--threads is the conversion's: a program converting in-process keeps its own thread count after it, and
    after a stage failed once the load stage had set them."""
    import torch

    class Fails(Planted):
        def run(self, conversion: Conversion) -> None:
            raise RuntimeError("a stage after the load failed")

    before = torch.get_num_threads()
    mine = 1 if before != 1 else 2
    torch.set_num_threads(mine)
    try:
        made = options(checkpoints["bert"]["classification"], threads=3, out=tmp_path / "bundle")
        if fails:
            with pytest.raises(RuntimeError, match="a stage after the load failed"):
                convert(made, stages=(STAGES[0], Fails("fails", reads=("load",))))
        else:
            convert(made)
        assert torch.get_num_threads() == mine
    finally:
        torch.set_num_threads(before)
