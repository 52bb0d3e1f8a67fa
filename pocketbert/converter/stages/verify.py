"""Stage 6, verify: every artifact loaded through the runtime's own loader and runners (what ships is
what is checked), compared with the PyTorch reference, and timed.

float32 must match within the parity tolerance on fixed and real inputs; fp16 nearly so; int8 must keep
the cosine and top-1 agreement bars on real sentences.  One failure and no bundle is written.
"""

from __future__ import annotations

import time

from .. import backends
from ..checks import verify
from ..conversion import ArtifactResult, Built, Conversion, VerifyResult
from ..errors import VerificationError
from ..events import ArtifactVerified
from ..options import ConvertOptions
from ..backends.recipes import Recipe
from .base import Stage


class VerifyStage(Stage):
    name = "verify"
    # metadata: the .tflite files are verified as they ship, with their metadata embedded
    reads = ("options", "plan", "load", "transform", "export", "quantize", "metadata")
    produces = ("verify",)

    def run(self, conversion: Conversion) -> None:
        results, input_names = [], list(conversion.load.encoder.input_names)
        for built in sorted(conversion.built, key=lambda b: _position(conversion.plan.recipes, b.recipe)):
            recipe = built.recipe
            start = time.perf_counter()
            with conversion.step(self.name, f"Verifying {recipe.name}"):
                backend, threads = backends.get(recipe.backend), conversion.options.threads
                result = _verified(conversion, built, backend.load_for_rows(built.artifact.path, input_names,
                                                                            recipe.precision, threads=threads))
                if conversion.options.measure_latency:
                    runner = backend.load(built.artifact.path, input_names, recipe.precision, threads=threads)
                    result.latency_ms = backends.median_latency_ms(runner, conversion.transform.latency_feeds)
            result.seconds = built.seconds + time.perf_counter() - start
            conversion.emit(ArtifactVerified(recipe.name, result.verification))
            results.append(result)
        failed = [r for r in results if not r.passed]
        if failed:
            lines = "; ".join(f"{r.recipe}: {r.verification['failure']}" for r in failed)
            raise VerificationError(f"verification failed, no bundle written: {lines}",
                                    "see the figures above; for int8 try --int8 dynamic, --calibration with "
                                    "text like your inputs, or convert without int8")
        conversion.verify = VerifyResult(results=results)


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
