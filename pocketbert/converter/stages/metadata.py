"""Stage 5, metadata: labels, vocabulary and tokenizer options inside every .tflite (the TFLite metadata
schema), so that Task-Library-style consumers (MediaPipe TextClassifier) run it on raw text.

After quantisation, which drops metadata; before verification, so the verified bytes are the shipped ones.
"""

from __future__ import annotations

from pathlib import Path

from .. import __version__
from ..backends import tflite_metadata
from ..conversion import Conversion
from .base import Stage


class MetadataStage(Stage):
    name = "metadata"

    def run(self, c: Conversion) -> None:
        for built in c.built:
            if built.recipe.backend == "tflite":
                built.artifact.details["metadata"] = embed(c, built.artifact.path)


def embed(c: Conversion, path: Path) -> dict:
    loaded = c.loaded
    source = loaded.builtin or Path(loaded.checkpoint).name
    return tflite_metadata.embed(path, task=loaded.task, labels=loaded.labels, vocab_file=c.staging.path / "vocab.txt",
                                 do_lower_case=c.tokenizer_settings["do_lower_case"],
                                 input_names=list(c.encoder.input_names), name=f"{source} ({loaded.task})",
                                 version=__version__,
                                 description=f"{loaded.config.model_type} {loaded.task} model converted by PocketBERT")
