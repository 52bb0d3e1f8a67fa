"""PocketBERT runtime: run converter bundles on desktop CPUs (ONNX Runtime or LiteRT).

    import runtime
    clf = runtime.load("bundles/minilm-int8")
    clf(["a charming film", "dull"])          # [{'label': …, 'score': …}, …]

Needs numpy, ``tokenizers`` and the chosen backend only (no torch, transformers or tensorflow).
"""

from __future__ import annotations

from pathlib import Path

from .bundle import Artifact, Bundle
from .classification import TextClassificationPipeline, TruncationWarning
from .errors import BackendUnavailableError, BundleError, Error, InputError, ModelError
from .ner import AGGREGATIONS, TokenClassificationPipeline

__all__ = ["load", "Bundle", "Artifact", "TextClassificationPipeline", "TokenClassificationPipeline",
           "TruncationWarning", "AGGREGATIONS", "Error", "BundleError", "ModelError", "InputError",
           "BackendUnavailableError"]


def load(bundle_dir: str | Path, backend: str = "auto", *, threads: int | None = None,
         precision: str | None = None, recipe: str | None = None, batch_size: int | None = None,
         verify: bool = True, instances: int = 1) -> TextClassificationPipeline | TokenClassificationPipeline:
    """Open a bundle and return its task's pipeline.

    backend: ``auto`` (ONNX Runtime if the bundle has an ONNX artifact and onnxruntime is installed,
    else LiteRT), ``onnx`` or ``tflite``.  precision / recipe: pick an artifact (``int8-dynamic``,
    ``fp32``, … / ``onnx:fp32``, …); by default the backend's int8 artifact, else fp32.
    threads: intra-op threads of the backend (default: the backend's own choice).  batch_size: rows per
    model run (LiteRT runs one row at a time).  verify: check the SHA-256 of the files used against the
    manifest.  instances: LiteRT interpreters kept for concurrent callers (one interpreter is never
    used by two threads at once).
    """
    from .backends import open_backend
    from .tokenization import TextEncoder

    bundle = Bundle.open(bundle_dir)
    artifact = bundle.select(backend, precision=precision, recipe=recipe)
    bundle.file(artifact.file, verify=verify)  # exists, right size, right SHA-256
    tokenizer_path = bundle.file(bundle.tokenizer_settings["tokenizer_file"], verify=verify)
    model = open_backend(artifact, bundle.input_names, threads, instances)
    max_length = min(bundle.max_sequence_length, model.max_length or bundle.max_sequence_length)
    encoder = TextEncoder.from_file(tokenizer_path, bundle.tokenizer_settings, max_length)
    expected = bundle.tokenizer_settings.get("vocab_size")
    if expected is not None and encoder.vocab_size != expected:
        raise ModelError(f"{tokenizer_path.name} has {encoder.vocab_size} tokens but the model was converted with a "
                         f"{expected}-token vocabulary: the tokenizer does not belong to this model",
                         "use the tokenizer.json the bundle was converted with, or convert again")
    cls = TextClassificationPipeline if bundle.task == "classification" else TokenClassificationPipeline
    return cls(bundle, artifact, model, encoder, batch_size=batch_size)
