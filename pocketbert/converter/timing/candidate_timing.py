"""``--int8 auto``'s candidates: timed in alternating rounds, how sure the choice among them is, and what the
manifest says of each (``details.selection``)."""

from __future__ import annotations

import time

import numpy as np

#: ``--int8 auto``'s timing: the candidates run in turn, ``RUNS_PER_ROUND`` calls each, ``TIMING_ROUNDS`` times (the
#: order reversed every other round), so a burst of load on the machine lands in one round, not on one candidate
TIMING_ROUNDS = 5
RUNS_PER_ROUND = 6


def alternating_rounds_ms(runners: list, feeds: dict[str, np.ndarray], rounds: int = TIMING_ROUNDS,
                          runs: int = RUNS_PER_ROUND) -> list[list[float]]:
    """Per runner, its median milliseconds in each round; the runners take turns (A B, B A, A B, …)."""
    for runner in runners:  # first calls allocate and warm caches
        for _ in range(2):
            runner(feeds)
    medians: list[list[float]] = [[] for _ in runners]
    for r in range(rounds):
        order = list(range(len(runners)))[::-1 if r % 2 else 1]
        for i in order:
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                runners[i](feeds)
                times.append(time.perf_counter() - start)
            medians[i].append(round(float(np.median(times)) * 1000, 3))
    return medians


def confidence(best: dict | None, passed: list[dict]) -> dict:
    """How sure ``--int8 auto``'s choice is: in how many rounds the chosen file was the fastest, and the
    runner-up's time over the chosen one's in each round (1.0: a tie; a round below 1.0 went the other way)."""
    if best is None or len(passed) < 2:
        return {"rounds_won": None, "note": "the only candidate that met the int8 bar: no timing decided it"}
    key = "ms_rounds" if "ms_rounds" in best else "plain_ms_rounds"
    others = [t for t in passed if t is not best]
    ratios = [round(min(t[key][r] for t in others) / best[key][r], 3) for r in range(len(best[key]))]
    return {"rounds_won": f"{sum(x > 1 for x in ratios)} of {len(ratios)}", "runner_up_over_chosen": ratios,
            "median_ratio": round(float(np.median(ratios)), 3)}


def candidate_record(trial: dict, best: dict | None) -> dict:
    """What the manifest says of one ``--int8 auto`` candidate (a probe never built in full: no figures)."""
    figures = trial["artifact"].details["float_fallback"] if trial["artifact"] else None
    return {"recipe": trial["recipe"].name, "plain_latency_ms": round(trial["plain_ms"], 3),
            "latency_ms": round(trial["ms"], 3) if "ms" in trial else None,
            "rounds_ms": trial.get("ms_rounds") or trial["plain_ms_rounds"],
            "accepted": figures["accepted"] if figures else None, "chosen": trial is best,
            "outcome": trial.get("outcome", "chosen"),
            **({"timed_on": "a probe calibrated on one batch (a full-integer file's speed does not depend on its "
                            "ranges)"} if trial["probed"] else {}),
            **(_shipped_attempt(figures) if figures else {})}


def _shipped_attempt(fallback: dict) -> dict:
    """The search's figures for the file that shipped: its last full judgement with the roles that stayed."""
    return next(s for s in reversed(fallback["search"])
                if s["float_roles"] == fallback["roles"] and not s.get("screened") and not s.get("ceiling"))
