"""The int8 ladder's stop rule: a file called ``int8-*`` ships only if it runs at least ``MIN_SPEEDUP`` times as
fast as the bundle's fp32 file of its format.

Keeping Linears in float for accuracy gives speed back, and on a CPU whose int8 kernels gain little (x86 with AVX2 but
no VNNI) a file with many Linears in float can run slower than the float file itself.  So the ladder times the file it
would ship against the bundle's fp32 file of the same format, with the converter's own timing (alternating rounds,
the conversion's threads, one row of the latency figure's length: :func:`.candidate_timing.alternating_rounds_ms`).
A file that does not pay is not shipped: at about fp32's speed it is a float file called int8, and whether the
timing puts it a little above or below fp32 is chance.  Its Linears in float were bought for the accuracy target, and
a target that costs the speed-up is out of reach on this CPU, so the ladder's rule for a target out of reach applies:
its cheapest step that met the int8 bar (fewest Linears in float, all-int8 when it met the bar) ships if it pays.
Stepping back one role at a time would ship a file that keeps most of its Linears in float at about fp32's speed,
trading the whole speed-up for a fraction of a percent of agreement the dev-set gate does not ask for (NER demo, ONNX
static int8, AVX2: 13, then 12 of 37 Linears in float slower than fp32, 6 at 0.97-1.03x).  If the cheapest step does
not pay either, the artifact is dropped, and the numbers say why (``details.float_fallback.speed``; the quantize
stage notes it in the summary and the manifest).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .candidate_timing import RUNS_PER_ROUND, TIMING_ROUNDS, alternating_rounds_ms
from .ladder_budget import Deadline

#: how much faster than the fp32 file an int8 file must run to ship: a file within the timing's noise of fp32 has
#: given its speed-up back, and whether it ships must not be chance (rounds of one file differ by up to ~20% on a
#: shared 2-vCPU VM: NER demo, ONNX, Intel Xeon with AMX, 2026-12-04, the summary's column put a static file with 12
#: of 37 Linears in float at 0.92x after its ladder had timed it "not slower")
MIN_SPEEDUP = 1.1
RULE = (f"an int8 file ships only if the bundle's fp32 file of the same format takes at least {MIN_SPEEDUP:g} times "
        "its median over alternating rounds")
#: speed-ups the first rounds cannot tell from the rule's bar (within a factor of 1.25 of it either way): the files
#: are timed for ``CLOSE_CALL_TIMINGS`` more calls of the timer and judged on every round.  Five rounds of six runs at
#: 2 threads put the NER demo's static ONNX probe at 1.07x fp32 and dropped it, where 30-run rounds in fresh processes
#: measured 1.67x; the SST-2 demo's at 0.91x in one run and 1.17x and 1.22x in two others (AVX2-only EPYC, 2026-12-04)
CLOSE_CALL = (MIN_SPEEDUP / 1.25, MIN_SPEEDUP * 1.25)
CLOSE_CALL_TIMINGS = 2
#: per runner, its milliseconds in each round: ``timer(runners, feeds)`` (a test's fake timer decides by construction)
Timer = Callable[[list, dict], list[list[float]]]


@dataclass
class SpeedCheck:
    """``check(path) -> (pays?, figures)``: the file at ``path`` and the fp32 file, timed together; it pays when it
    runs at least ``MIN_SPEEDUP`` times as fast."""

    runners: Callable[[Path], list]  # path -> [its runner, the fp32 file's runner]
    feeds: dict[str, np.ndarray]
    threads: int
    float_recipe: str
    timer: Timer = alternating_rounds_ms

    def __call__(self, path: Path) -> tuple[bool, dict]:
        runners = self.runners(path)
        mine, fp32 = self.timer(runners, self.feeds)
        if CLOSE_CALL[0] <= _speedup(mine, fp32) < CLOSE_CALL[1]:
            for _ in range(CLOSE_CALL_TIMINGS):
                more_mine, more_fp32 = self.timer(runners, self.feeds)
                mine, fp32 = [*mine, *more_mine], [*fp32, *more_fp32]
        ms, float_ms = float(np.median(mine)), float(np.median(fp32))
        pays = float_ms >= MIN_SPEEDUP * ms - 1e-9
        return pays, {"latency_ms": round(ms, 3), "fp32_latency_ms": round(float_ms, 3),
                      "speedup": round(float_ms / ms, 3) if ms else None, "rounds_ms": mine, "fp32_rounds_ms": fp32}


def _speedup(mine: list[float], fp32: list[float]) -> float:
    ms = float(np.median(mine))
    return float(np.median(fp32)) / ms if ms else float("inf")


def settle(steps: list[tuple[list[str], dict]], chosen: list[str], attempt: Callable, check: Callable[[], tuple],
           count: Callable[[list[str]], int], deadline: Deadline | None = None) -> tuple[list[str], bool, dict]:
    """(roles that ship, shipped?, record): ``chosen`` (already at the destination) if it pays (``check``),
    else the cheapest of the steps that met the bar (fewest roles in float), written again (``attempt(roles, True)``)
    and timed, if it has fewer roles in float than ``chosen`` and the ``deadline`` (when given) allows."""
    score = {tuple(roles): s for roles, s in steps}
    cheapest = next((roles for roles, s in steps if s.get("meets_bar") and len(roles) < len(chosen)), None)
    rungs = [chosen] if cheapest is None else [chosen, cheapest]
    tried = []
    for i, roles in enumerate(rungs):
        if i and deadline is not None and deadline.expired("the speed check"):
            break
        if i:
            attempt(roles, True)
        ok, figures = check()
        accuracy = {k: v for k, v in score.get(tuple(roles), {}).items() if k in ("cosine", "top1_agreement",
                                                                             "entity_f1")}
        tried.append({"float_roles": list(roles), "linears_in_float": count(roles), **accuracy, **figures,
                      "pays": ok})
        if ok:
            return list(roles), True, {"rule": RULE, "shipped": True, "tried": tried}
    return list(chosen), False, {"rule": RULE, "shipped": False, "tried": tried,
                                 "untried_steps": len(rungs) - len(tried)}


#: how a static int8 file is timed before its calibration (``quantization.Quantizer._unpaid_probe``)
PROBE = "all in int8, calibrated on one batch and not judged: a static file's speed does not depend on its ranges"


def unpaid_probe(fallback: dict, figures: dict) -> dict:
    """The ``float_fallback`` record of a static int8 file dropped at its probe (``PROBE``), ``figures`` its timing
    against the fp32 file (:class:`SpeedCheck`'s): not calibrated in full, not judged, not shipped."""
    tried = {"float_roles": [], "linears_in_float": 0, **figures, "pays": False}
    return {**fallback, "accepted": False, "target_met": False,
            "speed": {"rule": RULE, "shipped": False, "probe": PROBE, "tried": [tried]}}


def dropped(recipe: str, details: dict) -> str | None:
    """What to tell the user when the stop rule dropped ``recipe``'s file (None: it ships)."""
    fallback = details.get("float_fallback") or {}
    speed = fallback.get("speed")
    if not speed or speed["shipped"]:
        return None
    rungs = "; ".join(_rung(t, fallback["linears"]) for t in speed["tried"])
    float_recipe = f"{recipe.split(':')[0]}:fp32"
    untried = ("; its cheapest step meeting the bar not timed (the ladder's time bound)"
               if speed.get("untried_steps") else "")
    steps = ("timed before its calibration, " + speed["probe"] if speed.get("probe") else
             "down to its cheapest step that meets the int8 bar")
    return (f"{recipe} not shipped: not {MIN_SPEEDUP:g}x as fast as {float_recipe} on this machine, {steps} "
            f"({rungs}{untried}; batch 1, {_rounds(speed['tried'])} alternating rounds of {RUNS_PER_ROUND} runs). "
            f"The bundle keeps {float_recipe} for this format")


def _rounds(tried: list[dict]) -> str:
    counts = sorted({len(t.get("rounds_ms") or [None] * TIMING_ROUNDS) for t in tried})
    return " or ".join(map(str, counts))


def _rung(tried: dict, linears: int) -> str:
    accuracy = ", ".join(f"{name} {tried[key]:.1%}" for key, name in (("top1_agreement", "top-1 agreement"),
                                                                      ("entity_f1", "entity F1")) if key in tried)
    return (f"{tried['latency_ms']:.1f} ms against {tried['fp32_latency_ms']:.1f} ms with {tried['linears_in_float']} "
            f"of {linears} Linear layers in float" + (f", {accuracy} on the calibration text" if accuracy else ""))
