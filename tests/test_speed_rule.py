"""The int8 ladder's stop rule: a file that does not run 1.1x as fast as the bundle's fp32 file of its format is
never shipped as int8, and the ladder is bounded by a time it states.  The timings are injected, so the rule holds
by construction, whatever CPU runs the tests."""

from __future__ import annotations

import json

from pocketbert.converter.backends.base import float_fallback_search
from pocketbert.converter.cli.render import short_of_target_line
from pocketbert.converter.pipeline import convert
from pocketbert.converter.stages import STAGES
from pocketbert.converter.stages.quantize import QuantizeStage
from pocketbert.converter.timing.ladder_budget import LadderBudget
from pocketbert.converter.timing.speed_rule import dropped, settle

ROLES = {"a": [1, 2], "b": [3, 4], "c": [5, 6]}


def _ladder(written: list):
    """An attempt whose target is met with roles a and b in float; every step with a role in float meets the bar."""
    def attempt(float_roles, final, screen=False):
        if final:
            written.append(list(float_roles))
        alone = {"a": 0.9, "b": 0.8, "c": 0.7}
        cosine = alone[float_roles[0]] if len(float_roles) == 1 else 0.5 + 0.1 * len(float_roles)
        figures = {"cosine": cosine, "top1_agreement": 0.96 + 0.01 * len(float_roles),
                   "meets_bar": len(float_roles) >= 1}
        return len(float_roles) >= 2, figures
    return attempt


def _speed(written: list, fast_below: int):
    """The file at the destination (the last written) runs 10 ms per Linear role in float; fp32 runs at 10 ms
    times ``fast_below``."""
    def check():
        ms, fp32 = 10.0 * len(written[-1]), 10.0 * fast_below
        return ms <= fp32, {"latency_ms": ms, "fp32_latency_ms": fp32}
    return check


def test_a_ladder_file_faster_than_fp32_ships_as_it_was():
    written = []
    result = float_fallback_search(ROLES, _ladder(written), speed=_speed(written, fast_below=3))
    assert result["accepted"] and result["target_met"] and result["roles"] == ["a", "b"]
    assert result["speed"]["shipped"] and [t["float_roles"] for t in result["speed"]["tried"]] == [["a", "b"]]
    assert dropped("onnx:int8-dynamic", {"float_fallback": result}) is None


def test_the_step_the_walk_ended_on_is_timed_once_and_a_file_written_again_is_timed_again():
    written, timings = [], []
    check = _speed(written, fast_below=3)
    result = float_fallback_search(ROLES, _ladder(written), speed=lambda: timings.append(list(written[-1])) or check())
    assert result["speed"]["shipped"] and timings == [["a"], ["a", "b"]]  # the stop rule reused the walk's timing

    written, timings = [], []
    check = _speed(written, fast_below=1)
    float_fallback_search(ROLES, _ladder(written), speed=lambda: timings.append(list(written[-1])) or check())
    assert timings == [["a"], ["a", "b"], ["a"]]  # ["a"] written again after ["a", "b"]: its file timed again


def test_a_slower_file_gives_way_to_a_step_with_fewer_linears_in_float_that_meets_the_bar():
    written = []
    result = float_fallback_search(ROLES, _ladder(written), speed=_speed(written, fast_below=1))
    assert result["accepted"] and not result["target_met"]  # the trade: short of the target, not slower
    assert result["roles"] == ["a"] and result["linears_in_float"] == 2 and written[-1] == ["a"]
    # the walk timed each step: the target's step (4 Linears in float) was slower, so it stopped there
    slow = [s for s in result["search"] if "too_slow" in s]
    assert [s["float_roles"] for s in slow] == [["a", "b"]] and slow[0]["top1_agreement"] == 0.98
    assert slow[0]["too_slow"] == {"linears_in_float": 4, "latency_ms": 20.0, "fp32_latency_ms": 10.0}
    tried = result["speed"]["tried"]
    assert [(t["float_roles"], t["pays"]) for t in tried] == [(["a"], True)]


ROLES4 = {"a": [1], "b": [2], "c": [3], "d": [4]}


def _four_role_ladder(written: list):
    """All-int8 meets the bar; the target needs three roles in float (each step gains a little agreement)."""
    def attempt(float_roles, final, screen=False):
        if final:
            written.append(list(float_roles))
        alone = {"a": 0.99, "b": 0.98, "c": 0.97, "d": 0.96}
        cosine = alone[float_roles[0]] if len(float_roles) == 1 else 0.9 + 0.01 * len(float_roles)
        agreement = 0.985 + 0.004 * len(float_roles)
        return agreement >= 0.995, {"cosine": cosine, "top1_agreement": agreement, "meets_bar": True}
    return attempt


def test_a_target_that_costs_the_speed_up_gives_way_to_the_cheapest_step_not_to_the_next_one_down():
    # fp32 at 25 ms: the target's step (3 roles, 30 ms) is slower; two roles (20 ms) would pass, but keep most of
    # the Linears in float for a fraction of a percent: the cheapest step meeting the bar ships (all-int8, 0 ms)
    written = []
    result = float_fallback_search(ROLES4, _four_role_ladder(written), speed=_speed(written, fast_below=2.5))
    assert result["accepted"] and not result["target_met"] and result["roles"] == [] and written[-1] == []
    assert [s["float_roles"] for s in result["search"] if "too_slow" in s] == [["a", "b", "c"]]
    assert [(t["linears_in_float"], t["pays"]) for t in result["speed"]["tried"]] == [(0, True)]
    line = short_of_target_line("onnx:int8-static", result, target=0.995)
    assert "keeping 3 of 4 Linear layers in float for the int8 target (top-1 agreement ≥ 99.5% on calibration text) " \
        "ran at 0.83x fp32's speed (30.0 ms against 25.0 ms), short of the 1.1x an int8 file must gain; shipping the " \
        "cheapest step that meets the bar, 0 in float: 0.0 ms against 25.0 ms" == line.split(": ", 1)[1]


def test_the_speed_rule_alone_gives_way_to_the_cheapest_step_when_the_walk_was_not_timed():
    steps = [([], {"meets_bar": True, "top1_agreement": 0.985}), (["a"], {"meets_bar": True}),
             (["a", "b"], {"meets_bar": True}), (["a", "b", "c"], {"meets_bar": True})]
    written, timed = [["a", "b", "c"]], iter([(False, {"latency_ms": 30.0, "fp32_latency_ms": 25.0}),
                                              (True, {"latency_ms": 10.0, "fp32_latency_ms": 25.0})])
    roles, shipped, record = settle(steps, ["a", "b", "c"], lambda r, final: written.append(r), lambda: next(timed),
                                    count=len)
    assert roles == [] and shipped and written[-1] == []  # not ["a", "b"], the next step down
    line = short_of_target_line("onnx:int8-static", {"search": [{"top1_agreement": 0.985}], "linears": 4,
                                                      "speed": record}, target=0.995)
    assert "keeping 3 of 4 Linear layers" in line and line.endswith("0 in float: 10.0 ms against 25.0 ms")


def test_a_target_out_of_reach_names_the_best_fully_judged_step_not_a_screen():
    written = []
    result = float_fallback_search(ROLES, _ladder(written), speed=_speed(written, fast_below=3))
    result = {**result, "target_met": False, "search": [*result["search"], {"float_roles": ["c"], "cosine": 1.0,
                                                                          "top1_agreement": 1.0, "screened": True}]}
    assert "not reached (best 99.0%)" in short_of_target_line("onnx:int8-dynamic", result, target=0.995)


def test_a_file_slower_at_every_step_meeting_the_bar_is_dropped_with_the_numbers():
    written = []
    result = float_fallback_search(ROLES, _ladder(written), speed=_speed(written, fast_below=0.5))
    assert not result["accepted"] and not result["speed"]["shipped"]
    # the walk's first step was slower already, so no step after it was built; all-int8 missed the bar
    assert [s["float_roles"] for s in result["search"] if "too_slow" in s] == [["a"]]
    assert [s["float_roles"] for s in result["search"]][-1] == ["a"] and written == [[], ["a"]]
    assert [t["float_roles"] for t in result["speed"]["tried"]] == [["a"]]
    message = dropped("onnx:int8-dynamic", {"float_fallback": result})
    assert message.startswith("onnx:int8-dynamic not shipped: not 1.1x as fast as onnx:fp32")
    assert "10.0 ms against 5.0 ms with 2 of 6 Linear layers in float, top-1 agreement 97.0%" in message


class _Clock:
    """Each call to the ladder's attempt moves this clock on by 100 s."""
    now = 0.0

    def __call__(self):
        return self.now


def test_the_ladder_stops_at_its_time_bound_and_ships_the_cheapest_step_meeting_the_bar():
    clock, written = _Clock(), []
    inner = _ladder(written)

    def attempt(float_roles, final, screen=False):
        clock.now += 100.0
        return inner(float_roles, final, screen)

    result = float_fallback_search(ROLES, attempt, budget=LadderBudget(250.0, clock))
    # all-int8 (100 s), the ceiling (200 s), one screen (300 s): then the bound has passed
    assert result["budget"]["seconds"] == 250.0 and result["budget"]["stopped"] == "screening the roles"
    assert [s["float_roles"] for s in result["search"]] == [[], ["a", "b", "c"], ["a"]]
    # no step was taken: all-int8 missed the bar, so nothing meets it and nothing ships
    assert not result["accepted"] and result["roles"] == []

    clock.now, written[:] = 0.0, []
    result = float_fallback_search(ROLES, attempt, budget=LadderBudget(1000.0, clock))
    assert result["accepted"] and result["target_met"] and result["budget"]["stopped"] is None


def _slower_by(factor: float):
    """A fake timer: the first runner (the int8 file) takes ``factor`` times the second (the fp32 file)."""
    def timer(runners, feeds):
        assert len(runners) == 2 and feeds["input_ids"].shape == (1, 128)
        return [[10.0 * factor] * 5, [10.0] * 5]
    return timer


def test_a_close_call_is_timed_again_and_judged_on_every_round():
    """A speed-up the first rounds cannot tell from the bar (0.88x to 1.375x) is timed for two more calls of the timer
    and judged on all fifteen rounds; a clear one, either way, is timed once."""
    from pocketbert.converter.timing.speed_rule import SpeedCheck

    def check(*ratios):
        calls = list(ratios)
        timer = lambda runners, feeds: [[10.0] * 5, [10.0 * calls.pop(0)] * 5]  # noqa: E731
        pays, figures = SpeedCheck(lambda path: [None, None], {}, 2, "onnx:fp32", timer=timer)(None)
        return pays, len(figures["rounds_ms"]), calls

    assert check(1.05, 1.5, 1.5) == (True, 15, [])  # a noisy first toss, then two clear ones
    assert check(1.15, 1.0, 1.05) == (False, 15, [])  # over the bar once, then not
    assert check(0.9, 1.3, 1.3) == (True, 15, [])
    assert check(1.4, 1.0, 1.0) == (True, 5, [1.0, 1.0])
    assert check(0.85, 2.0, 2.0) == (False, 5, [2.0, 2.0])


def _stages(timer):
    return tuple(QuantizeStage(timer=timer) if isinstance(s, QuantizeStage) else s for s in STAGES)


def test_a_conversion_drops_an_int8_file_too_slow_and_says_why(checkpoints, options):
    opts = options(checkpoints["bert"]["classification"], opts="int8", verify_samples=20, measure_latency=True)
    result = convert(opts, stages=_stages(_slower_by(1.5)))
    assert [a.recipe for a in result.artifacts] == ["onnx:fp32"]
    assert not (result.bundle / "model.int8-dynamic.onnx").exists()
    notes = json.loads((result.bundle / "manifest.json").read_text())["notes"]
    said = [n for n in notes if n.startswith("onnx:int8-dynamic not shipped: not 1.1x as fast as onnx:fp32")]
    assert said and "15.0 ms against 10.0 ms" in said[0] and "Linear layers in float" in said[0]


def test_an_int8_file_within_the_timings_noise_of_fp32_is_not_shipped_as_int8(checkpoints, options, tmp_path):
    """A file at about fp32's speed has given its speed-up back: 1.05x is dropped, 1.1x ships (SpeedCheck's rule,
    with injected timings)."""
    opts = options(checkpoints["bert"]["classification"], opts="int8", verify_samples=20, measure_latency=True)
    result = convert(opts, stages=_stages(_slower_by(1 / 1.05)))
    assert [a.recipe for a in result.artifacts] == ["onnx:fp32"]
    notes = json.loads((result.bundle / "manifest.json").read_text())["notes"]
    assert any(n.startswith("onnx:int8-dynamic not shipped: not 1.1x as fast") for n in notes)
    opts = options(checkpoints["bert"]["classification"], opts="int8", verify_samples=20, measure_latency=True,
                   out=tmp_path / "pays")
    result = convert(opts, stages=_stages(_slower_by(1 / 1.1)))
    int8 = next(a for a in result.artifacts if a.recipe == "onnx:int8-dynamic")
    assert int8.details["float_fallback"]["speed"]["tried"][-1]["pays"]


def test_a_conversion_ships_an_int8_file_faster_than_fp32_with_its_figures(checkpoints, options):
    opts = options(checkpoints["bert"]["classification"], opts="int8", verify_samples=20, measure_latency=True)
    result = convert(opts, stages=_stages(_slower_by(0.5)))
    int8 = next(a for a in result.artifacts if a.recipe == "onnx:int8-dynamic")
    speed = int8.details["float_fallback"]["speed"]
    assert speed["shipped"] and speed["tried"][-1]["speedup"] == 2.0


def _plain_builds(monkeypatch) -> list:
    from pocketbert.converter.quantize.quantization import Quantizer

    built, original = [], Quantizer.plain
    monkeypatch.setattr(Quantizer, "plain", lambda self, recipe, dest, probe=False: built.append(probe)
                        or original(self, recipe, dest, probe))
    return built


def test_a_static_int8_file_whose_probe_does_not_pay_is_dropped_before_its_calibration(checkpoints, options,
                                                                                     monkeypatch, tmp_path):
    """Static int8 is timed on a probe (calibrated on one batch, not judged) before its full calibration: when that
    all-int8 file does not pay, no rung can, and the recipe is dropped, said with the probe's figures."""
    built = _plain_builds(monkeypatch)
    opts = options(checkpoints["bert"]["classification"], recipes="onnx:int8-static", verify_samples=20,
                   measure_latency=True)
    result = convert(opts, stages=_stages(_slower_by(1 / 1.05)))
    assert [a.recipe for a in result.artifacts] == ["onnx:fp32"] and built == [True]
    assert not [p for p in result.bundle.iterdir() if "int8" in p.name]
    notes = json.loads((result.bundle / "manifest.json").read_text())["notes"]
    said = [n for n in notes if n.startswith("onnx:int8-static not shipped: not 1.1x as fast as onnx:fp32")]
    assert said and "timed before its calibration" in said[0] and "9.5 ms against 10.0 ms" in said[0]

    # a probe that pays: its timing stands for the plain file's (one toss, not two), which is not timed again
    built.clear()
    opts = options(checkpoints["bert"]["classification"], recipes="onnx:int8-static", verify_samples=20,
                   measure_latency=True, out=tmp_path / "pays")
    timed, timer = [], _slower_by(0.5)
    result = convert(opts, stages=_stages(lambda runners, feeds: timed.append(len(runners)) or timer(runners, feeds)))
    static = next(a for a in result.artifacts if a.recipe == "onnx:int8-static")
    speed = static.details["float_fallback"]["speed"]
    assert built[:2] == [True, False] and speed["shipped"] and speed["tried"][0]["timed"] == "its probe"
    assert timed == [2] and not [p for p in result.bundle.iterdir() if p.name.startswith(".probe-")]
