"""Stage 5, metadata: labels, vocabulary and tokenizer options inside every .tflite (the TFLite metadata
schema), so that Task-Library-style consumers (MediaPipe TextClassifier) run it on raw text.

After quantisation, which drops metadata; before verification, so the verified bytes are the shipped ones.
"""

from __future__ import annotations

import math
from pathlib import Path

from pocketbert.runtime.contract import VOCAB_FILE

from .. import __version__
from ..backends import tflite_metadata
from ..conversion import Built, Conversion, MetadataResult
from ..errors import VerificationError
from .base import Stage


class MetadataStage(Stage):
    name = "metadata"
    reads = ("staging", "load", "export", "quantize")
    produces = ("metadata",)

    def run(self, conversion: Conversion) -> None:
        result, scores = MetadataResult(), conversion.quantize.dev_scores
        for built in conversion.built:
            if built.recipe.backend == "tflite":
                with conversion.step(self.name, f"Embedding metadata in {built.recipe.name}"):
                    embedding = lambda path=built.artifact.path: embed(conversion, path)  # noqa: E731
                    # a dev score an int8 ladder made of the file holds for it with its metadata
                    result.embedded[built.recipe.name] = scores.carried(built.artifact.path, embedding) \
                        if scores is not None else embedding()
                    # the file changed in place: its details say what it now holds
                    built.artifact.details["metadata"] = result.embedded[built.recipe.name]
                    _check_size(built)
        conversion.metadata = result


def _check_size(built: Built) -> None:
    """--max-size holds for the shipped bytes, metadata included (the quantize stage reserved room for it)."""
    limit = (built.artifact.details.get("size_choice") or {}).get("max_bytes")
    size = built.artifact.path.stat().st_size
    if limit and size > limit:
        raise VerificationError(f"{built.recipe.name} is {size / 1e6:.2f} MB with its metadata, over --max-size "
                                f"{limit / 1e6:g} MB", f"raise --max-size to {math.ceil(size / 1e4) / 100:g}MB")


def embed(conversion: Conversion, path: Path) -> dict:
    loaded = conversion.load.loaded
    source = loaded.builtin or Path(loaded.checkpoint).name
    return tflite_metadata.embed(path, task=loaded.task, labels=loaded.labels,
                                 vocab_file=conversion.staging.path / VOCAB_FILE,
                                 do_lower_case=conversion.export.tokenizer_settings["do_lower_case"],
                                 input_names=list(conversion.load.encoder.input_names),
                                 name=f"{source} ({loaded.task})",
                                 version=__version__,
                                 description=f"{loaded.config.model_type} {loaded.task} model converted by PocketBERT")
