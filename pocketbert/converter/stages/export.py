"""Stage 3, export: the bundle's tokenizer and labels, then each backend's float export."""

from __future__ import annotations

import time

from pocketbert.runtime.contract import LABELS_FILE

from .. import backends
from ..conversion import Built, Conversion, ExportResult
from ..backends.recipes import RecipeChoice
from ..inputs.tokenizer_files import tokenizer_settings, write_tokenizer
from .base import Stage

# Model file size relative to the float32 weights, per precision (int8 keeps some layers in float).
SIZE_VS_FP32 = {"fp32": 1.0, "fp16": 0.5}


class ExportStage(Stage):
    name = "export"
    reads = ("plan", "staging", "load", "transform")
    produces = ("export",)

    def run(self, conversion: Conversion) -> None:
        directory, load = conversion.staging.path, conversion.load
        # tokenizer and labels first: TFLite artifacts embed vocab.txt and labels.txt as metadata
        with conversion.step(self.name, "Writing the tokenizer and labels"):
            write_tokenizer(load.loaded.tokenizer, directory, load.verify_length)
            (directory / LABELS_FILE).write_text("".join(f"{label}\n" for label in load.loaded.labels),
                                                  encoding="utf-8")
            conversion.staging.reserve(*space_estimate(conversion))
        result = ExportResult(tokenizer_settings=tokenizer_settings(load.loaded.tokenizer, load.max_length),
                              built=[], float_exports={})
        for recipe in (r for r in conversion.plan.recipes if not isinstance(r, RecipeChoice) and not r.quantized):
            backend = backends.get(recipe.backend)
            start = time.perf_counter()
            with conversion.step(self.name, f"Exporting {recipe.name}"):
                artifact = backend.export(conversion.transform.spec, directory / backend.filename(recipe.precision))
            result.built.append(Built(recipe, artifact, time.perf_counter() - start))
            # quantised from this float file (the backend decides whether a fused graph suits its int8 method)
            result.float_exports[recipe.backend] = artifact.path
        conversion.export = result


def space_estimate(conversion: Conversion) -> tuple[int, str]:
    """Bytes the model files take, roughly: every int8 candidate is built, then one kept."""
    weights = sum(p.numel() * 4 for p in conversion.load.loaded.model.parameters())
    built = conversion.plan.candidates
    fraction = sum(SIZE_VS_FP32.get(r.precision, 0.5) for r in built)
    return int(weights * fraction), (f"{len(built)} model file(s) made from {weights / 1e6:.1f} MB of float32 "
                                     "weights")
