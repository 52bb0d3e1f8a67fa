"""PocketBERT runtime: run converter bundles on desktop CPUs (ONNX Runtime or LiteRT).

    from pocketbert import runtime
    clf = runtime.load("bundles/minilm-int8")
    clf(["a charming film", "dull"])          # [{'label': …, 'score': …}, …]

Needs numpy, ``tokenizers`` and the chosen backend only (no torch, transformers or tensorflow).
"""

from __future__ import annotations

import dataclasses
import numbers
import os
from typing import TYPE_CHECKING

from . import choice
from .bundle import Artifact, Bundle, parse_pin
from .classification import TextClassificationPipeline, TruncationWarning
from .consistency import check_model_file, check_packed_files
from .contract import VOCAB_FILE
from .errors import BackendUnavailableError, BundleError, Error, InputError, ModelError
from .ner import AGGREGATIONS, TokenClassificationPipeline

if TYPE_CHECKING:
    from .backends import Backend

__all__ = ["load", "Bundle", "Artifact", "TextClassificationPipeline", "TokenClassificationPipeline",
           "TruncationWarning", "AGGREGATIONS", "Error", "BundleError", "ModelError", "InputError",
           "BackendUnavailableError"]


#: most intra-op threads accepted (as the converter's --threads): far beyond any CPU, while a typo such as
#: 100000 would have the backend start that many threads and appear to hang
MAX_THREADS = 256


def _check_counts(**counts: int | None) -> None:
    """threads / batch_size / instances: a whole number ≥ 1 (or None for the default).  Caught here, a bad
    one is named; the backends would report it as a damaged model file or silently use their default."""
    for name, value in counts.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1):
            raise InputError(f"{name}={value!r}: it must be a whole number ≥ 1",
                             f"pass e.g. {name}=2, or leave it out for the default")
    threads = counts.get("threads")
    if threads is not None and threads > MAX_THREADS:
        from .machine import usable_cpus

        raise InputError(f"threads={threads}: at most {MAX_THREADS} are accepted",
                         f"pass at most the CPUs this process may use ({usable_cpus()} here), or leave it out "
                         "for the backend's default")


def _check_opened(bundle: Bundle, artifact: Artifact, model: Backend) -> None:
    """The opened model file against the manifest: its buckets, and the labels and vocabulary it packs."""
    check_model_file(artifact.file, artifact.details, model.buckets)
    vocab = bundle.listed_text(bundle.tokenizer_settings.get("vocab_file") or VOCAB_FILE)
    check_packed_files(artifact.backend, artifact.path, file=artifact.file, labels=bundle.labels, vocab=vocab)


def load(bundle_dir: str | os.PathLike, backend: str = "auto", *, threads: int | None = None,
         precision: str | None = None, recipe: str | None = None, batch_size: int | None = None,
         verify: bool = True, instances: int = 1, expected_sha256: str | None = None,
         measure: bool | None = None) -> TextClassificationPipeline | TokenClassificationPipeline:
    """Open a bundle and return its task's pipeline.

    backend: ``auto`` (the verified artifact that runs fastest on this machine, among those meeting
    ``precision``: measured at the first load and cached per machine, see :mod:`runtime.choice`;
    ``pipeline.info()`` says which and why), ``onnx`` or ``tflite``.  precision / recipe: pin an
    artifact (``int8-dynamic``, ``fp32``, … / ``onnx:fp32``, …); with a pinned backend, by default its
    int8 artifact, else fp32.  measure: False (or ``POCKETBERT_AUTO=static``) makes ``auto``
    deterministic: no measurement, the manifest's figures or the fixed rule decide.
    threads: intra-op threads of the backend (default: the backend's own choice).  batch_size: rows per
    model run (LiteRT, dynamic int8 ONNX: one row at a time).  verify: check the SHA-256 of the files used against the
    manifest.  instances: LiteRT interpreters kept for concurrent callers (one interpreter is never
    used by two threads at once).  expected_sha256: pin the bundle: refuse it (BundleError) unless its
    manifest.json has this SHA-256 (the converter prints it); the manifest lists every file's SHA-256, so
    this pins every file read (cannot be combined with ``verify=False``).

    Every file read lies inside ``bundle_dir`` and is listed in the manifest (README, "What a bundle
    guarantees").  A bundle that cannot be used raises a ``runtime.errors`` error; misuse of the
    arguments (``bundle_dir=None``, a malformed ``expected_sha256``) raises TypeError or ValueError;
    ``threads``, ``batch_size`` or ``instances`` that is not a whole number ≥ 1, or ``threads`` above
    ``MAX_THREADS`` (256), raises InputError (a ValueError).
    """
    from .backends import open_backend
    from .tokenization import TextEncoder

    _check_counts(threads=threads, batch_size=batch_size, instances=instances)
    if parse_pin(expected_sha256) is not None and not verify:
        raise ValueError("expected_sha256 pins the bundle through the SHA-256 of every file read: it cannot be "
                         "combined with verify=False")
    bundle = Bundle.open(bundle_dir, expected_sha256=expected_sha256)

    def checked(chosen: Artifact) -> Artifact:
        # inside the bundle, listed, right size, right SHA-256; the backend opens the path that was checked
        return dataclasses.replace(chosen, path=bundle.file(chosen.file, verify=verify, entry="artifact file"))

    if backend == "auto" and recipe is None:
        artifact, why = choice.choose(bundle, precision, threads, measure, checked=checked)
    else:
        artifact = bundle.select(backend, precision=precision, recipe=recipe)
        pins = [f"backend={backend!r}"] + [f"{k}={v!r}" for k, v in (("recipe", recipe), ("precision", precision)) if v]
        why = choice.Choice(artifact.recipe, "pinned", f"pinned by the caller ({', '.join(pins)})")
    artifact = checked(artifact)
    tokenizer_path = bundle.file(bundle.tokenizer_settings["tokenizer_file"], verify=verify,
                                 entry="tokenizer.tokenizer_file")
    model = open_backend(artifact, bundle.input_names, threads, instances)
    _check_opened(bundle, artifact, model)
    # the bundle's length, not the backend's: ONNX windows and truncates exactly as TFLite does (the
    # backend's own limit only matters for a hand-written manifest that lists no buckets)
    max_length = min(bundle.input_length, model.max_length or bundle.input_length)
    encoder = TextEncoder.from_file(tokenizer_path, bundle.tokenizer_settings, max_length)
    expected = bundle.tokenizer_settings.get("vocab_size")
    if expected is not None and encoder.vocab_size != expected:
        raise ModelError(f"{tokenizer_path.name} has {encoder.vocab_size} tokens but the model was converted with a "
                         f"{expected}-token vocabulary: the tokenizer does not belong to this model",
                         "use the tokenizer.json the bundle was converted with, or convert again")
    cls = TextClassificationPipeline if bundle.task == "classification" else TokenClassificationPipeline
    return cls(bundle, artifact, model, encoder, batch_size=batch_size, choice=why)
