"""``--int8 auto``: per format, the fastest int8 recipe that meets the int8 bar, measured on this machine.

Driven through a :class:`.quantization.Quantizer` (given by the quantize stage, never imported), whose
ladders build and judge each candidate; a candidate its ladder dropped for not running 1.1x as fast as the bundle's fp32
file (``speed_rule``) is not chosen, and when every candidate was dropped so, the choice is dropped with it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import backends
from ..backends import ExportedArtifact
from ..backends.recipes import Recipe, RecipeChoice
from ..errors import VerificationError
from ..timing.candidate_timing import RUNS_PER_ROUND, TIMING_ROUNDS, candidate_record, confidence
from ..timing.speed_rule import dropped


def _trial(quantizer, backend, recipe: Recipe, directory: Path) -> dict:
    """One candidate built plain (a calibrated one: its probe, see :func:`choose`)."""
    path = directory / f".candidate-{backend.filename(recipe.precision)}"
    probed = recipe.precision == "int8-static"
    artifact = quantizer.plain(recipe, path, probe=probed)
    return {"recipe": recipe, "path": path, "artifact": None if probed else artifact, "probed": probed}


def _timed(quantizer, backend, trials: list[dict], feeds: dict[str, np.ndarray], key: str) -> None:
    """``trial[key]``: each trial's file timed in alternating rounds with the others (``trial[key + "_rounds"]``
    its per-round medians), so that load on the machine hits every candidate alike."""
    runners = [quantizer._load(backend, t["path"], t["recipe"].precision) for t in trials]
    for trial, rounds in zip(trials, quantizer.timer(runners, feeds)):
        trial[key], trial[f"{key}_rounds"] = float(np.median(rounds)), rounds


def _built_in_full(quantizer, trial: dict, feeds: dict[str, np.ndarray]) -> ExportedArtifact:
    """The trial's file as it would ship: built in full (a probe), and through the accuracy ladder if plain
    missed the target; ``trial["ms"]`` once it meets the bar (timed again if the ladder changed it)."""
    artifact = trial["artifact"] = trial["artifact"] or quantizer.plain(trial["recipe"], trial["path"])
    fallback = artifact.details["float_fallback"]
    if fallback["target_met"] and fallback["accepted"]:
        trial["ms"] = trial["plain_ms"]
    elif not dropped(trial["recipe"].name, artifact.details):
        artifact = trial["artifact"] = quantizer.build(trial["recipe"], trial["path"], plain=artifact)
        if artifact.details["float_fallback"]["accepted"]:  # the file that ships, in rounds as well
            _timed(quantizer, backends.get(trial["recipe"].backend), [trial], feeds, key="ms")
    if "ms" not in trial:
        slow = dropped(trial["recipe"].name, artifact.details)
        trial["outcome"] = "not 1.1x as fast as the bundle's fp32 file" if slow else "failed the int8 bar"
    return artifact


def choose(quantizer, choice: RecipeChoice, directory: Path,
           feeds: dict[str, np.ndarray]) -> tuple[Recipe, ExportedArtifact]:
    """The fastest candidate that meets the int8 bar (and pays: ``speed_rule.MIN_SPEEDUP``).

    Every candidate is first built plain and timed; a calibrated one (static int8) on a probe, calibrated on
    one batch and not judged, since its speed does not depend on its ranges.  Then, fastest first, a
    probed candidate is built in full, and one that failed goes through the accuracy ladder (smoothing,
    float fallback); a candidate whose plain build is already slower than the best passing one is skipped,
    since the ladder only adds work (and a probe is never calibrated in full).  When every candidate that met
    the bar was slower than fp32, the first of them is returned as its ladder left it: dropped
    (``speed_rule.dropped`` says why), for the quantize stage to leave out.
    """
    backend = backends.get(choice.candidates[0].backend)
    trials = [_trial(quantizer, backend, recipe, directory) for recipe in choice.candidates]
    _timed(quantizer, backend, trials, feeds, key="plain_ms")
    best = None
    for trial in sorted(trials, key=lambda t: t["plain_ms"]):
        if best is not None and trial["plain_ms"] >= best["ms"]:
            trial["outcome"] = f"skipped: plain build already slower than {best['recipe'].name}"
            continue
        _built_in_full(quantizer, trial, feeds)
        if "ms" in trial and (best is None or trial["ms"] < best["ms"]):
            best = trial
    passed = [t for t in trials if "ms" in t]
    if len(passed) > 1:  # the files that ship, not their plain builds, decide, timed together
        _timed(quantizer, backend, passed, feeds, key="ms")
        best = min(passed, key=lambda t: t["ms"])
    slow = next((t for t in trials if t["artifact"] and dropped(t["recipe"].name, t["artifact"].details)), None)
    kept = best or slow
    for trial in trials:
        if trial is not kept:
            trial["path"].unlink(missing_ok=True)
            trial.setdefault("outcome", f"slower than {best['recipe'].name}" if best else "failed the int8 bar")
    record = [candidate_record(t, best) for t in trials]
    if kept is None:
        raise VerificationError(
            f"no int8 recipe for {backend.name} met the int8 bar on the calibration text: "
            + "; ".join(f"{r['recipe']} cosine {r.get('cosine')}, top-1 {r.get('top1_agreement')}"
                        + (f", entity F1 {r['entity_f1']}" if "entity_f1" in r else "") for r in record),
            "convert without int8, lower --int8-min-cosine/--int8-min-agreement knowingly, or give "
            "--calibration text closer to your inputs")
    dest = directory / backend.filename(kept["recipe"].precision)
    kept["path"].rename(dest)
    artifact = kept["artifact"]
    artifact.path = dest
    artifact.details["selection"] = {
        "rule": "--int8 auto: the fastest int8 recipe meeting the int8 bar on the calibration text "
                f"(batch 1, sequence {feeds['input_ids'].shape[1]}, {quantizer.threads} threads, this machine; "
                f"{TIMING_ROUNDS} alternating rounds of {RUNS_PER_ROUND} runs each, median of the rounds)",
        "candidates": record, "confidence": confidence(best, passed)}
    return kept["recipe"], artifact
