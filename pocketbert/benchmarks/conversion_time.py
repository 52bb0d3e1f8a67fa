"""Where a conversion's time goes: every stage and every step of it (each recipe's export, quantisation,
metadata and verification), with the accuracy ladder's judgements, on the machine it runs on.

    pocketbert-bench conversion-time sst2-demo --opt nonorm,relu,fold \
        --recipe onnx:int8-dynamic,onnx:int8-static,tflite:int8-dynamic [--cprofile 15]

It runs the real conversion, into a temporary directory, so its figures are the
converter's own; ``--cprofile N`` adds the N functions with the most cumulative time.  The table goes to
the terminal and, with the CPU, date, command and machine load, to ``results/conversion-time-<model>.json``.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pocketbert.converter.errors import VerificationError
from pocketbert.converter.events import ArtifactBuilt, StageFinished
from pocketbert.converter.pipeline import ConvertOptions, convert


@dataclass
class Timeline:
    """What the conversion's events said: each finished step and each built artifact's ladder."""

    steps: list[StageFinished] = field(default_factory=list)
    ladders: dict[str, list[dict]] = field(default_factory=dict)  # recipe -> the float-fallback judgements
    tell: Callable[[str], None] | None = None  # progress: one line per finished step

    def stages(self) -> dict[str, float]:
        """Seconds per stage, summed over its finished steps."""
        found: dict[str, float] = {}
        for step in self.steps:
            found[step.stage] = found.get(step.stage, 0.0) + step.seconds
        return found

    def __call__(self, event) -> None:
        if isinstance(event, StageFinished):
            self.steps.append(event)
            if self.tell:
                self.tell(f"  {event.description} {event.seconds:.1f} s")
        elif isinstance(event, ArtifactBuilt):
            self.ladders[event.recipe] = _judgements(event.details)


def _judgements(details: dict) -> list[dict]:
    """Every candidate file the ladder judged for the artifact it shipped: the unsmoothed attempt, then the
    search (an ``--int8 auto`` choice's other candidates are summarised in ``selection``, not counted)."""
    found = [details["unsmoothed_attempt"]] if details.get("unsmoothed_attempt") else []
    return found + (details.get("float_fallback") or {}).get("search", [])


def measure(options: ConvertOptions, profile_rows: int = 0, tell: Callable[[str], None] | None = None) -> dict:
    """Convert with ``options`` and return the figures: stages, steps, ladders, total and (optionally) the
    cProfile top functions.  ``tell`` hears each step as it finishes."""
    timeline = Timeline(tell=tell)
    profiler = cProfile.Profile() if profile_rows else None
    start = time.perf_counter()
    if profiler:
        profiler.enable()
    refused = None
    try:
        stages = convert(options, timeline).stage_seconds
    except VerificationError as exc:  # the time until the refusal is still the conversion's (no bundle written)
        refused, stages = exc.problem, timeline.stages()
    finally:
        if profiler:
            profiler.disable()
    figures = {"total_s": round(time.perf_counter() - start, 1), "refused": refused,
               "stages": {k: round(v, 1) for k, v in stages.items()},
               "steps": [{"stage": s.stage, "step": s.description, "seconds": round(s.seconds, 1)}
                         for s in timeline.steps],
               "ladders": {recipe: {"judged": len(found),
                                    "texts": sum(j.get("judged_texts", 0) for j in found)}
                           for recipe, found in timeline.ladders.items() if found}}
    if profiler:
        figures["cprofile"] = top_functions(profiler, profile_rows)
    return figures


def top_functions(profiler: cProfile.Profile, rows: int) -> list[dict]:
    stats = pstats.Stats(profiler, stream=io.StringIO())
    entries = sorted(stats.stats.items(), key=lambda item: item[1][3], reverse=True)  # cumulative time
    return [{"function": f"{Path(file).name}:{line} {name}", "cumulative_s": round(timing[3], 1),
             "calls": timing[1]} for (file, line, name), timing in entries[:rows]]


def run(checkpoint: str, profile_rows: int = 0, tell: Callable[[str], None] | None = None, **options) -> dict:
    """The conversion of ``checkpoint`` into a temporary directory, measured."""
    with tempfile.TemporaryDirectory(prefix="pocketbert-conversion-time-") as tmp:
        return measure(ConvertOptions(checkpoint=checkpoint, out=Path(tmp) / "bundle", **options), profile_rows, tell)


def results_file(checkpoint: str, figures: dict, command_line: str) -> dict:
    """The figures as a results file (benchmarks/schema.py), with the machine they were taken on."""
    from pocketbert.runtime import machine

    from . import schema

    data = schema.new_file("conversion-time", fast=False, machine=machine.describe(), command_line=command_line)
    data["machine"]["load_average_end"] = machine.load_average()
    data["results"] = [{"model": checkpoint, **figures}]
    return data


def table_lines(checkpoint: str, figures: dict) -> list[str]:
    """The per-stage and per-step table, as plain lines (no markup: step names carry user values)."""
    refused = f" (refused, no bundle: {figures['refused']})" if figures.get("refused") else ""
    lines = [f"{checkpoint}: {figures['total_s']:.1f} s in all{refused}",
             "  stage      seconds", *(f"  {stage:<10} {seconds:7.1f}" for stage, seconds in figures["stages"].items()),
             "  step                                                   seconds"]
    for step in figures["steps"]:
        ladder = figures["ladders"].get(step["step"].split(" ")[-1])
        extra = f"   ({ladder['judged']} candidates judged on {ladder['texts']:,} texts)" \
            if ladder and step["stage"] == "quantize" else ""
        lines.append(f"  {step['stage']:<10} {step['step'][:42]:<42} {step['seconds']:7.1f}{extra}")
    for row in figures.get("cprofile", []):
        lines.append(f"  cprofile   {row['function'][:60]:<60} {row['cumulative_s']:7.1f} s  {row['calls']} calls")
    return lines
