"""Stage 4, quantize: int8 and fp16 artifacts made from the float exports, each through the accuracy
ladder on the calibration text (converter.quantize.quantization), and ``--int8 auto``'s choice among them."""

from __future__ import annotations

import time

from pocketbert.runtime.contract import LABELS_FILE, VOCAB_FILE

from .. import backends
from ..backends.recipes import Fit, Recipe, RecipeChoice
from ..checks import verify
from ..conversion import Built, Conversion, QuantizeResult
from ..events import ArtifactBuilt
from ..inputs import texts as textdata
from ..levers import size_fit
from ..quantize.calibration_judge import Judged
from ..quantize.dev_check import DevCheck
from ..quantize.int8_choice import choose
from ..quantize.quantization import Quantizer
from ..timing.candidate_timing import alternating_rounds_ms
from ..timing.speed_rule import Timer, dropped
from ..transforms import equalize
from ..weights.factored_table import rank_of
from .base import Stage
from .dev_scoring import dev_scores

CALIBRATION_BATCH = 16  # texts per calibration batch, each padded to 64 tokens (static shapes)


class QuantizeStage(Stage):
    name = "quantize"
    reads = ("options", "plan", "staging", "load", "transform", "export")
    produces = ("quantize",)

    def __init__(self, timer: Timer = alternating_rounds_ms):
        self.timer = timer  # how int8 files are timed against fp32 and each other (a test's fake decides)

    def run(self, conversion: Conversion) -> None:
        result = QuantizeResult()
        planned = [r for r in conversion.plan.recipes if isinstance(r, RecipeChoice) or r.quantized]
        if planned:
            texts = _whole_batches(conversion.plan.calibration_texts or [])
            with conversion.step(self.name, "Preparing the calibration text"):
                result.dev_scores = dev_scores(conversion)
                quantizer = _quantizer(conversion, texts, result.dev_scores)
                quantizer.timer = self.timer
            try:
                for recipe in planned:
                    built = self._built(conversion, quantizer, recipe, len(texts))
                    if built is not None:
                        result.built.append(built)
            finally:
                quantizer.close()
        conversion.quantize = result

    def _built(self, conversion: Conversion, quantizer: Quantizer, recipe: Recipe | RecipeChoice,
               texts: int) -> Built | None:
        """``recipe`` quantised (a choice: its chosen candidate), with the seconds it took; None, said in the notes,
        when its file did not pay against the bundle's fp32 file down to its cheapest step meeting the bar
        (``speed_rule``)."""
        staging, start = conversion.staging.path, time.perf_counter()
        if isinstance(recipe, Fit):
            with conversion.step(self.name, f"Choosing the TFLite file for --max-size {recipe.max_bytes / 1e6:g} MB "
                                            f"({', '.join(r.precision for r in recipe.candidates)})"):
                recipe, artifact = size_fit.fit(
                    quantizer, recipe, staging, reserve=_metadata_reserve(conversion),
                    float_bytes=_float_bytes(conversion, recipe.candidates[0].backend), shape=_shape(conversion))
        elif isinstance(recipe, RecipeChoice):
            with conversion.step(self.name, f"Choosing {recipe.name} ({', '.join(r.name for r in recipe.candidates)})"):
                recipe, artifact = choose(quantizer, recipe, staging, conversion.transform.latency_feeds)
        else:
            with conversion.step(self.name, f"Quantising {recipe.name}"):
                artifact = quantizer.build(recipe, staging / backends.get(recipe.backend).filename(recipe.precision))
        slower = dropped(recipe.name, artifact.details)
        if slower:
            artifact.path.unlink(missing_ok=True)
            conversion.note(slower, warning=True, keep=True)
            return None
        if recipe.kind == "int8":
            artifact.details.update(calibration_source=textdata.describe(conversion.plan.calibration_source),
                                    calibration_texts=texts)
        artifact.details["weight_bytes"] = backends.get(recipe.backend).weight_bytes(artifact.path)
        conversion.emit(ArtifactBuilt(recipe.name, artifact.details, conversion.options.int8_target_agreement))
        return Built(recipe, artifact, time.perf_counter() - start)


def _metadata_reserve(conversion: Conversion) -> int:
    """Bytes the metadata stage will add to a TFLite file: the vocabulary and labels it embeds, and its tables."""
    files = [conversion.staging.path / name for name in (VOCAB_FILE, LABELS_FILE)]
    return sum(f.stat().st_size for f in files if f.exists()) + 8192


def _float_bytes(conversion: Conversion, backend: str) -> int:
    export = next(b.artifact for b in conversion.export.built if b.recipe.name == f"{backend}:fp32")
    return sum(backends.get(backend).weight_bytes(export.path).values())


def _shape(conversion: Conversion) -> dict:
    loaded = conversion.load.loaded
    blocks = loaded.family.feed_forwards(loaded.model)
    return {"vocab_size": loaded.config.vocab_size, "hidden_size": loaded.family.hidden_size(loaded.config),
            "table_width": rank_of(loaded.model) or loaded.model.get_input_embeddings().embedding_dim,
            "ffn_width": blocks[0].up.out_features if blocks else None, "ffn_blocks": len(blocks),
            "ffn_io": blocks[0].up.in_features if blocks else None}  # MobileBERT's blocks read a narrower width


def _whole_batches(texts: list) -> list:
    """Whole batches only: ONNX Runtime's calibrator stacks every batch's activations into one array, and a
    shorter last batch crashed it (--calibration-samples 1000: 62 batches of 16 and one of 8)."""
    if len(texts) > CALIBRATION_BATCH:
        return texts[: len(texts) // CALIBRATION_BATCH * CALIBRATION_BATCH]
    return texts


def _quantizer(conversion: Conversion, texts: list, scores) -> Quantizer:
    load, transform, options = conversion.load, conversion.transform, conversion.options
    pad_to = min(64, load.verify_length)
    calibration = load.encoder.batches(texts, batch_size=CALIBRATION_BATCH, pad_to=pad_to)
    # a recipe quantised per length (TFLite int8-static) is judged at every other bucket too
    per_length = any(backends.get(r.backend).judged_per_length(r.precision) for r in conversion.plan.candidates)
    others = sorted({b for b in transform.spec.buckets or [] if b != pad_to and b <= load.verify_length}
                    if per_length else [])
    computed: dict = {}  # the float model's logits per trimmed batch, shared by the lengths
    judged = [_judged(conversion, texts, pad_to, computed, batches=calibration),
              *(_judged(conversion, texts, n, computed) for n in others)]
    return Quantizer(loaded=load.loaded, spec=transform.spec, calibration=calibration, judged=judged,
                     threads=options.threads, min_cosine=options.int8_min_cosine,
                     min_agreement=options.int8_min_agreement, smooth_alpha=options.smooth_alpha,
                     target_agreement=options.int8_target_agreement, min_entity_f1=options.int8_min_entity_f1,
                     float_exports=dict(conversion.export.float_exports),
                     equalize_alpha=equalize.DEFAULT_ALPHA if options.int8_equalize else None,
                     latency_feeds=transform.latency_feeds if options.measure_latency else None,
                     dev=scores and DevCheck(scores, dict(conversion.export.float_exports), options.threads))


def _judged(conversion: Conversion, texts: list, length: int, computed: dict, batches: list | None = None) -> Judged:
    encoder = conversion.load.encoder
    batches = batches or encoder.batches(texts, batch_size=CALIBRATION_BATCH, pad_to=length)
    return Judged(batches, verify.unpadded_logits(conversion.transform.model, batches, computed),
                  encoder.entity_view(texts, batch_size=CALIBRATION_BATCH, pad_to=length))
