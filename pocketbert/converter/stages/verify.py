"""Stage 6, verify: every artifact loaded through the runtime's own loader and runners (what ships is
what is checked), compared with the PyTorch reference; then, with every artifact verified and nothing else of the
conversion running, all of them timed together in alternating rounds (``quiet_timing``).

float32 must match within the parity tolerance on fixed and real inputs; fp16 nearly so; int8 must keep
the cosine and top-1 agreement bars on real sentences.  One failure and no bundle is written.
"""

from __future__ import annotations

import time

from .. import backends
from ..backends.recipes import Recipe
from ..checks import dev_gate, verify
from ..conversion import ArtifactResult, Built, Conversion, VerifyResult
from ..errors import VerificationError
from ..events import ArtifactVerified
from ..options import ConvertOptions
from ..timing.candidate_timing import RUNS_PER_ROUND, TIMING_ROUNDS, alternating_rounds_ms
from ..timing.quiet_timing import timed_quietly
from .base import Stage


class VerifyStage(Stage):
    name = "verify"
    # metadata: the .tflite files are verified as they ship, with their metadata embedded
    reads = ("options", "plan", "load", "transform", "export", "quantize", "metadata")
    produces = ("verify",)

    def __init__(self, timer=alternating_rounds_ms):
        self.timer = timer  # how the artifacts are timed (a test's fake records when it runs)

    def run(self, conversion: Conversion) -> None:
        results, input_names = [], list(conversion.load.encoder.input_names)
        ordered = sorted(conversion.built, key=lambda b: _position(conversion.plan.recipes, b.recipe))
        runners = {}  # kept for the dev gate, which runs the same files on the dev split
        for built in ordered:
            recipe = built.recipe
            start = time.perf_counter()
            with conversion.step(self.name, f"Verifying {recipe.name}"):
                backend, threads = backends.get(recipe.backend), conversion.options.threads
                runners[recipe.name] = backend.load_for_rows(built.artifact.path, input_names, recipe.precision,
                                                             threads=threads)
                result = _verified(conversion, built, runners[recipe.name])
            result.seconds = built.seconds + time.perf_counter() - start
            conversion.emit(ArtifactVerified(recipe.name, result.verification))
            results.append(result)
        failed = [r for r in results if not r.passed]
        if failed:
            lines = "; ".join(f"{r.recipe}: {r.verification['failure']}" for r in failed)
            raise VerificationError(f"verification failed, no bundle written: {lines}",
                                    "see the figures above; for int8 try --int8 dynamic, --calibration with "
                                    "text like your inputs, or convert without int8")
        _hold_to_the_dev_gate(conversion, ordered, results, runners)
        runners.clear()  # the timing loads its own, one interpreter each, with nothing else alive
        if conversion.options.measure_latency:
            self._time(conversion, ordered, results)
        conversion.verify = VerifyResult(results=results)

    def _time(self, conversion: Conversion, ordered: list[Built], results: list[ArtifactResult]) -> None:
        """The latency figures, after every artifact is verified and nothing else of the conversion runs: all the
        artifacts timed together, in alternating rounds (``quiet_timing``)."""
        names, threads = list(conversion.load.encoder.input_names), conversion.options.threads
        description = (f"Timing {len(ordered)} artifacts alone ({TIMING_ROUNDS} alternating rounds of "
                       f"{RUNS_PER_ROUND} runs, {threads} threads)")
        with conversion.step(self.name, description, quiet=True):
            runners = {b.recipe.name: backends.get(b.recipe.backend).load(b.artifact.path, names, b.recipe.precision,
                                                                          threads=threads) for b in ordered}
            figures = timed_quietly(runners, conversion.transform.latency_feeds, timer=self.timer)
        for result in results:
            timing = figures[result.recipe]
            result.latency_ms, result.latency_rounds = timing["median"], timing["rounds_ms"]
            result.latency_quiet = timing["quiet"]
        busy = next(iter(figures.values()))["busy"] if figures else []
        if busy:
            conversion.note(f"the latency figures were timed while other work of this process still ran "
                            f"({', '.join(busy)}): they may be slower than the files are", warning=True, keep=True)


def _hold_to_the_dev_gate(conversion: Conversion, ordered: list[Built], results: list[ArtifactResult],
                          runners: dict) -> None:
    """Every artifact scored on the task's labelled dev split (when there is one and some file is quantised: the
    gates then take these scores), with the runners verification loaded (``runners``: recipe -> runner; a file the
    int8 ladder scored and shipped unchanged is not run again); an int8 file more than ``dev_gate.INT8_EXTRA`` below
    the float file is removed from both lists and its file deleted, unless ``--allow-accuracy-loss``
    (``checks.dev_gate``)."""
    scored = conversion.quantize.dev_scores
    if not any(b.recipe.kind == "int8" for b in ordered) or scored is None:
        return  # nothing quantised, or the checkpoint's task and its dev file are not known here
    split, options, scores = scored.split, conversion.options, {}
    again = sum(not scored.known(b.artifact.path) for b in ordered)
    before = f"; {len(ordered) - again} scored by the int8 ladders" if again < len(ordered) else ""
    step = (f"Scoring {again} artifacts on {split.source} (the int8 dev gate{before})" if again else
            f"Taking {len(ordered)} artifacts' scores on {split.source} from the int8 ladders (the int8 dev gate)")
    with conversion.step("verify", step):
        for built in ordered:
            name = built.recipe.name
            scores[name] = scored.of(built.artifact.path, lambda name=name: runners[name])
    gates = dev_gate.judged(scores, {b.recipe.name: b.recipe.precision for b in ordered}, split)
    for built, result in list(zip(ordered, results)):
        name = built.recipe.name
        result.details["dev_score"] = split.record(scores[name])
        if name not in gates:
            continue
        result.details["dev_gate"] = gates[name]
        if gates[name]["passed"]:
            continue
        if options.allow_accuracy_loss:
            conversion.note(dev_gate.refusal(name, gates[name], accepted=True, details=built.artifact.details),
                            warning=True, keep=True)
            continue
        ordered.remove(built)
        results.remove(result)
        built.artifact.path.unlink(missing_ok=True)
        conversion.note(dev_gate.refusal(name, gates[name], details=built.artifact.details), warning=True, keep=True)


def _position(planned: list, recipe: Recipe) -> int:
    """Where ``recipe`` stands in the plan (an ``--int8 auto`` choice stands for its candidates): the
    manifest lists artifacts in plan order."""
    return next(i for i, p in enumerate(planned) if p == recipe or recipe in getattr(p, "candidates", ()))


def _verified(conversion: Conversion, built: Built, runner) -> ArtifactResult:
    inputs = conversion.load.inputs
    real = verify.compare(conversion.transform.verify_ref, verify.runner_logits(runner, inputs.batches), inputs.masks,
                          inputs.entities)
    kind = built.recipe.kind
    figures = {"real_sentences": real.to_json()}
    if kind in ("fp32", "fp16"):
        figures.update(_float_figures(conversion, runner, real, kind))
    else:
        figures.update(_int8_figures(conversion.options, real, built.recipe.precision))
    path = built.artifact.path
    return ArtifactResult(recipe=built.recipe.name, file=path.name, bytes=path.stat().st_size, verification=figures,
                          passed=figures["passed"], details=built.artifact.details)


def _float_figures(conversion: Conversion, runner, real: verify.Comparison, kind: str) -> dict:
    inputs, reference = conversion.load.inputs, conversion.transform.parity_ref
    fixed = verify.compare(reference, verify.runner_logits(runner, inputs.parity), inputs.parity_masks)
    tolerance = (verify.fp32_tolerance if kind == "fp32" else verify.fp16_tolerance)(reference)
    figures = {"fixed_inputs": fixed.to_json(), "tolerance": {"max_abs": tolerance}}
    passed = fixed.max_abs <= tolerance and real.max_abs <= tolerance
    if not passed:
        figures["failure"] = f"max |Δlogit| {max(fixed.max_abs, real.max_abs):.3g} > {tolerance:.3g}"
    if kind == "fp16":
        figures["tolerance"]["min_cosine"] = verify.FP16_MIN_COSINE
        if min(fixed.cosine, real.cosine) < verify.FP16_MIN_COSINE:
            passed = False
            figures["failure"] = (f"cosine {min(fixed.cosine, real.cosine):.6f} < {verify.FP16_MIN_COSINE}; "
                                  + figures.get("failure", ""))
    figures["passed"] = passed
    return figures


def _int8_figures(options: ConvertOptions, real: verify.Comparison, precision: str) -> dict:
    bars = verify.integer_bars(precision, min_cosine=options.int8_min_cosine, min_agreement=options.int8_min_agreement,
                               target_agreement=options.int8_target_agreement,
                               min_entity_f1=options.int8_min_entity_f1)
    figures = {"tolerance": bars.to_json(real.entity_f1 is not None)}
    failure = real.int8_failure(bars.min_cosine, bars.min_agreement, bars.min_entity_f1)
    if failure:
        figures["failure"] = failure
    figures["passed"] = failure is None
    return figures
