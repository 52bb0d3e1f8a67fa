"""``--max-latency MS``: the int4 file's latency model measured on this machine from probe files, the plan it makes
(predicted milliseconds on every line, a target the levers cannot reach refused before any work), the written file's
latency checked against the target, and the option refused without training text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pocketbert.converter.cli import cli
from pocketbert.converter.errors import ConverterInputError
from pocketbert.converter.levers import latency, plan, shapes
from pocketbert.converter.one_command.lever_run import LeverRun, check_latency, run_levers, work_folder

from .conftest import DATA, build_checkpoint

DEMO = Path(__file__).resolve().parents[1] / "pocketbert" / "demo_models"
#: the fit the one command measured for the SST-2 demo teacher (nonorm, relu) at 2 threads on the AVX-512 VNNI EPYC
#: (2026-11-28): fixed here so that the plans below do not depend on the machine the tests run on
EPYC = latency.LatencyModel(constant_ms=0.08, block_ms=1.043, unit_ms=0.000555, mac_ms=0.000555 / (128 * 768),
                            outside_macs=0, cpu="AMD EPYC", threads=2, noise=0.11, measured="2026-11-28 17:30 UTC")


def test_the_probe_fit_predicts_a_held_out_probe(tokenizer, tmp_path):
    """A BERT of 256 wide, 2,048 feed-forward units: 1 and 2 blocks at 2,048 and 1,024 units fit positive block and
    unit terms, and predict 3 blocks of 1,536 units, timed in the same rounds, within 35% (any CPU, any load: the
    probes take turns, so load slows them alike, and the fit is linear where the cost is)."""
    checkpoint = build_checkpoint(tmp_path / "bert", "bert", tokenizer, hidden_size=256, intermediate_size=2048,
                                  num_attention_heads=4)
    raw = json.loads((checkpoint / "config.json").read_text())
    probes = latency.layouts(raw)
    assert probes == [(1, 2048), (2, 2048), (1, 1024), (2, 1024)]
    rounds = latency.measure(raw, (), 1, probes + [(3, 1536)], log=lambda line: None)
    model = latency.fit(raw, probes, rounds[:4], threads=1)
    assert model.block_ms > 0 and model.unit_ms > 0 and model.constant_ms >= 0
    held_out = shapes.from_config(latency.probe_config(raw, 3, 1536))
    measured = min(rounds[4])  # its quickest round, as the fit reads the probes'
    assert abs(model.predict(held_out) - measured) / measured < 0.35, (model.describe(), rounds[4])
    assert "ms a block" in model.describe() and "4 probe files" in model.describe()


def _sst2_plan(max_ms: float) -> plan.LeverPlan:
    goal = plan.Goal(max_bytes=8_000_000, max_latency_ms=max_ms, latency=EPYC, latency_where=EPYC.where(False),
                     buckets=(32, 64, 128), pieces_needed=(11_570, 13_486), nonorm=True)
    return plan.make(shapes.read(DEMO / "sst2-minilm-nonorm-relu"), goal)


def test_a_huge_latency_target_plans_no_speed_lever():
    made = _sst2_plan(1000)
    assert made.reached and made.levers == ["trim-vocab", "factor-embeddings", "int4-tune", "pack"]
    text = "\n".join(made.lines())
    assert "≤ 1000 ms at sequence 128, batch 1, on this CPU (AMD EPYC), predicted from probes measured now" in text
    assert "11.5 ms predicted" in text  # 0.08 + 6 × (1.043 + 1,536 × 0.000555)


def test_a_latency_target_between_plans_narrower_then_fewer_blocks_with_the_ms_on_every_line():
    """7 ms: no width down to a quarter reaches it at 6 blocks, so fewer blocks (4 at half the width: 6.0 ms), whose
    units then widen as far as the target allows (1,152: 6.8 ms; 1,280 would be 7.1)."""
    made = _sst2_plan(7)
    assert [(s.lever.name, s.setting) for s in made.steps if s.lever.name in ("narrow", "shrink")] == [
        ("narrow", 1152), ("shrink", 4)]
    # a factored table's projection adds a few hundredths of a millisecond to the blocks' time
    assert made.reached and made.final_ms == pytest.approx(0.08 + 4 * (1.043 + 1152 * 0.000555), abs=0.1)
    assert made.final_ms <= 7
    lines = [line for line in made.lines() if line.startswith("  ") and ". " in line]
    assert len(lines) == len(made.steps) and all(f"{s.ms:6.1f} ms" in line for s, line in zip(made.steps, lines))
    speed = {s.lever.name: s.ms for s in made.steps}
    assert made.steps[0].ms > speed["narrow"] > speed["shrink"] == speed["pack"]


def test_a_target_below_one_block_is_not_reached_and_the_plan_says_what_one_block_takes():
    made = _sst2_plan(0.5)
    assert not made.reached
    # 0.08 + 1.043 + 768 × 0.000555, and 0.04 for the factored table's projection (128 × 160 × 384 MACs)
    assert "one block, the fewest shrink keeps, 1.59 ms" in "\n".join(made.lines())


def test_an_unreachable_latency_target_is_refused_before_any_work_and_the_fit_is_reused(checkpoints, tmp_path):
    """0.001 ms: the probes are measured (once: the rerun reads them from the work folder), the plan printed, and
    the run refused with the numbers and a fix before any step; nothing but the cache is written."""
    printed: list[str] = []
    run = LeverRun(checkpoint=str(checkpoints["bert"]["classification"]), out=tmp_path / "bundle", task="glue:sst2",
                   max_latency_ms=0.001, data_dir=str(DATA), threads=1, train_limit=32, max_drop=100)
    for attempt in (1, 2):
        printed.clear()
        with pytest.raises(ConverterInputError) as refused:
            run_levers(run, log=printed.append)
        text = "\n".join(printed)
        assert ("latency probe" in text) == (attempt == 1) and ("cached in" in text) == (attempt == 2)
        assert "ms predicted" in text and "≤ 0.001 ms at sequence 128" in text
        assert "against --max-latency 0.001 ms" in str(refused.value) and "nothing was trained" in str(refused.value)
        # the fastest the levers make, by the measured model: one block at half the width (no width reached it)
        cache = json.loads((work_folder(tmp_path / "bundle") / latency.CACHE).read_text())
        (model,) = [latency.LatencyModel.from_json(m) for m in cache["models"].values()]
        fastest = model(shapes.read(checkpoints["bert"]["classification"]).narrowed(32).keeping(1))
        assert f"raise --max-latency to at least {latency.milliseconds(fastest)}" in refused.value.fix
    assert sorted(p.name for p in work_folder(tmp_path / "bundle").iterdir()) == ["latency.json", "steps.json"]


def test_the_written_file_is_checked_against_the_target(tmp_path):
    """The conversion's own timing (the manifest's latency_ms) against the plan's target: within it, over by the
    noise, and over by more (a warning with a lower target; the bundle stays)."""
    work = work_folder(tmp_path / "bundle")
    work.mkdir()
    latency.remember_target(work, 8.0, 7.6, EPYC)

    def manifest(ms, sequence=128):
        timing = {"batch": 1, "sequence": sequence, "threads": 2, "median": ms}
        return {"artifacts": [{"recipe": "tflite:fp32", "file": "model.tflite", "latency_ms": None},
                              {"recipe": "tflite:int4-dynamic", "file": "model_int4.tflite", "latency_ms": timing}]}

    printed: list[str] = []
    assert check_latency(tmp_path / "bundle", manifest(7.9), log=printed.append) is True
    assert check_latency(tmp_path / "bundle", manifest(8.4), log=printed.append) is True
    assert "less than the timing's noise, ±11%" in printed[-1]
    assert check_latency(tmp_path / "bundle", manifest(10.0), log=printed.append) is False
    assert "measured 10.0 ms, predicted 7.60 ms, target 8 ms: 25.0% over" in printed[-1]
    assert "--max-latency 6.4" in printed[-1] and "the bundle is written" in printed[-1]
    assert check_latency(tmp_path / "bundle", manifest(3.0, sequence=32), log=printed.append) is None
    assert check_latency(tmp_path / "elsewhere", manifest(10.0), log=printed.append) is None


def test_max_latency_needs_the_training_text(checkpoints, tmp_path):
    result = CliRunner().invoke(cli, [str(checkpoints["bert"]["classification"]), "--max-size", "8MB",
                                      "--max-latency", "20", "-o", str(tmp_path / "b")])
    assert result.exit_code == 2 and "--max-latency only applies with --recover" in result.output
