"""Stage 4, quantize: int8 and fp16 artifacts made from the float exports, each through the accuracy
ladder on the calibration text (converter.quantization), and ``--int8 auto``'s choice among them."""

from __future__ import annotations

import time

from pocketbert.runtime.contract import LABELS_FILE, VOCAB_FILE

from .. import backends, size_fit, verify
from .. import texts as textdata
from ..conversion import Built, Conversion
from ..events import ArtifactBuilt
from ..quantization import Judged, Quantizer
from ..recipes import Fit, RecipeChoice
from ..transforms import equalize
from .base import Stage

CALIBRATION_BATCH = 16  # texts per calibration batch, each padded to 64 tokens (static shapes)


class QuantizeStage(Stage):
    name = "quantize"

    def run(self, c: Conversion) -> None:
        planned = [r for r in c.plan.recipes if isinstance(r, RecipeChoice) or r.quantized]
        if not planned:
            return
        quantizer = _quantizer(c)
        for recipe in planned:
            start = time.perf_counter()
            if isinstance(recipe, Fit):
                with c.step(self.name, f"Choosing the TFLite file for --max-size {recipe.max_bytes / 1e6:g} MB "
                                       f"({', '.join(r.precision for r in recipe.candidates)})"):
                    recipe, artifact = size_fit.fit(
                        quantizer, recipe, c.staging.path, reserve=_metadata_reserve(c),
                        float_bytes=_float_bytes(c, recipe.candidates[0].backend), shape=_shape(c))
            elif isinstance(recipe, RecipeChoice):
                with c.step(self.name, f"Choosing {recipe.name} ({', '.join(r.name for r in recipe.candidates)})"):
                    recipe, artifact = quantizer.choose(recipe, c.staging.path, c.latency_feeds)
            else:
                with c.step(self.name, f"Quantising {recipe.name}"):
                    artifact = quantizer.build(recipe, c.staging.path / backends.get(recipe.backend).filename(
                        recipe.precision))
            if recipe.kind == "int8":
                artifact.details.update(calibration_source=textdata.describe(c.plan.calibration_source),
                                        calibration_texts=len(c.plan.calibration_texts))
            artifact.details["weight_bytes"] = backends.get(recipe.backend).weight_bytes(artifact.path)
            c.emit(ArtifactBuilt(recipe.name, artifact.details, c.options.int8_target_agreement))
            c.built.append(Built(recipe, artifact, time.perf_counter() - start))


def _metadata_reserve(c: Conversion) -> int:
    """Bytes the metadata stage will add to a TFLite file: the vocabulary and labels it embeds, and its tables."""
    files = [c.staging.path / name for name in (VOCAB_FILE, LABELS_FILE)]
    return sum(f.stat().st_size for f in files if f.exists()) + 8192


def _float_bytes(c: Conversion, backend: str) -> int:
    export = next(b.artifact for b in c.built if b.recipe.name == f"{backend}:fp32")
    return sum(backends.get(backend).weight_bytes(export.path).values())


def _shape(c: Conversion) -> dict:
    config = c.loaded.model.config
    return {"vocab_size": config.vocab_size, "hidden_size": c.loaded.family.hidden_size(config)}


def _quantizer(c: Conversion) -> Quantizer:
    texts = c.plan.calibration_texts or []
    # Whole batches only: ONNX Runtime's calibrator stacks every batch's activations into one array, and a
    # shorter last batch crashed it (--calibration-samples 1000: 62 batches of 16 and one of 8).
    if len(texts) > CALIBRATION_BATCH:
        texts = texts[: len(texts) // CALIBRATION_BATCH * CALIBRATION_BATCH]
    c.plan.calibration_texts = texts
    pad_to = min(64, c.verify_length)
    calibration = c.encoder.batches(texts, batch_size=CALIBRATION_BATCH, pad_to=pad_to)
    # the judge also reads every other bucket a fixed-shape file has (each TFLite signature is its own graph)
    fixed = any(backends.get(name).fixed_lengths for name in c.plan.backends)
    others = sorted({b for b in c.spec.buckets or [] if b != pad_to and b <= c.verify_length}) if fixed else []
    computed: dict = {}  # the float model's logits per trimmed batch, shared by the lengths
    judged = [_judged(c, texts, pad_to, computed, calibration)] + [_judged(c, texts, length, computed)
                                                                   for length in others]
    options = c.options
    return Quantizer(c.loaded, c.spec, calibration, judged, options.threads,
                     options.int8_min_cosine, options.int8_min_agreement, options.smooth_alpha,
                     options.int8_target_agreement, options.int8_min_entity_f1,
                     float_exports=dict(c.float_exports),
                     equalize_alpha=equalize.DEFAULT_ALPHA if options.int8_equalize else None)


def _judged(c: Conversion, texts: list, length: int, computed: dict, batches: list | None = None) -> Judged:
    batches = batches or c.encoder.batches(texts, batch_size=CALIBRATION_BATCH, pad_to=length)
    return Judged(batches, verify.unpadded_logits(c.model, batches, computed),
                  c.entity_view(texts, batch_size=CALIBRATION_BATCH, pad_to=length))
