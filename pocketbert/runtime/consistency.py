"""A bundle's manifest against itself and the bundle's own files: what every loader checks, pin or no pin.

A checksum proves a file is the one listed, not that the manifest tells the truth about it: labels reversed
in the manifest alone would put the other label on every answer.  :func:`check_consistency` holds the
rules (``Bundle.open`` calls it, so the runtime and the converter's ``cut`` apply them); the Android core
mirrors them in ``bundle/Consistency.java``, the web page in its bundle reader.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .backends import fixed_length_backends
from .buckets import signature_name
from .contract import LABELS_FILE, VOCAB_FILE, bundle_input_length, shown
from .errors import BundleError, ModelError


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


DISAGREE = ("copy the bundle again from its source (its manifest.json or one of its files was edited); if the "
            "change was meant, convert the model again so that the converter writes both")


def check_consistency(m: dict, read_text: Callable[[str], str | None], where: Path) -> None:
    """A validated manifest against itself and the bundle's files: what every loader checks (the runtime, the
    converter's ``cut``), pin or no pin.  A hash proves a file is the one listed, not that the manifest tells
    the truth about it: labels reversed in the manifest alone would swap every answer.

    ``read_text(name)``: the bundle file's text, checked against its listed size and SHA-256, or None when
    the bundle does not hold it (a cut desktop bundle keeps no labels.txt).  The rules (docs/manifest.md,
    §5 "Reading a bundle"): ``labels`` equal the lines of labels.txt; ``tokenizer.vocab_size`` equals the lines
    of vocab.txt, is at most ``model_vocab_size`` and exceeds every special token id;
    ``tokenizer.max_sequence_length`` equals ``max_sequence_length``; the input length equals
    ``verification.max_length``; each TFLite artifact's ``details.signatures`` name its ``details.buckets``
    (``seq_<n>``) and its ``metadata.labels`` / ``metadata.vocab_size`` agree; the ``logits`` output has
    one column per label; ``inputs`` are distinct and hold ``input_ids`` and ``attention_mask``.  The
    model files' own inputs and signatures are checked against these when a backend opens them
    (:func:`check_model_file`)."""
    def need(ok: bool, problem: str) -> None:
        if not ok:
            raise BundleError(f"{where}: {problem}", DISAGREE)

    labels, tokenizer = m["labels"], m["tokenizer"]
    listed = read_text(LABELS_FILE)
    if listed is not None:
        lines = listed.split("\n")
        lines = lines[:-1] if lines and lines[-1] == "" else lines
        need(lines == labels, f"'labels' {shown(labels)} disagree with {LABELS_FILE} {shown(lines)}: every answer "
                              "would carry another label's name")
    vocab_size, vocab_file = tokenizer.get("vocab_size"), tokenizer.get("vocab_file") or VOCAB_FILE
    vocab = read_text(vocab_file)
    if vocab is not None and vocab_size is not None:
        count = vocab.count("\n") + (0 if vocab.endswith("\n") or not vocab else 1)
        need(count == vocab_size, f"'tokenizer.vocab_size' is {vocab_size} but {vocab_file} holds {count} tokens")
    model_vocab = m.get("model_vocab_size")
    if _is_int(model_vocab) and vocab_size is not None:
        need(vocab_size <= model_vocab, f"'tokenizer.vocab_size' {vocab_size} is larger than the model's word table "
                                        f"('model_vocab_size' {model_vocab}): its last ids would be out of range")
    if vocab_size is not None:
        for name, token in (tokenizer.get("special_tokens") or {}).items():
            need(token["id"] < vocab_size, f"'tokenizer.special_tokens.{name}' has id {token['id']}, outside the "
                                           f"{vocab_size}-token vocabulary")
    length = m["max_sequence_length"]
    need(tokenizer.get("max_sequence_length", length) == length,
         f"'max_sequence_length' is {length} but 'tokenizer.max_sequence_length' is "
         f"{shown(tokenizer.get('max_sequence_length'))}")
    verification = m.get("verification")
    verified = verification.get("max_length") if isinstance(verification, dict) else None
    need(verified is None or verified == bundle_input_length(m),
         f"the bundle's input length is {bundle_input_length(m)} ('max_sequence_length' {length}, TFLite buckets) but "
         f"its artifacts were verified at {shown(verified)} tokens ('verification.max_length')")
    names = [i["name"] for i in m["inputs"]]
    need(len(set(names)) == len(names) and {"input_ids", "attention_mask"} <= set(names),
         f"'inputs' {shown(names)} must name input_ids and attention_mask, each once")
    for output in m.get("outputs") or []:
        shape = output.get("shape") if isinstance(output, dict) else None
        if output.get("name") == "logits" and isinstance(shape, list) and shape and _is_int(shape[-1]):
            need(shape[-1] == len(labels), f"the 'logits' output has {shape[-1]} columns but 'labels' has "
                                           f"{len(labels)} names")
    for i, a in enumerate(m["artifacts"]):
        _check_artifact_consistency(a, f"artifacts[{i}]", labels=labels, vocab_size=vocab_size, need=need)


def _check_artifact_consistency(a: dict, entry: str, *, labels: list, vocab_size: int | None, need) -> None:
    details = a.get("details") or {}
    buckets, signatures = details.get("buckets"), details.get("signatures")
    if a["backend"] in fixed_length_backends() and buckets and signatures is not None:
        need(signatures == [signature_name(b) for b in buckets],
             f"'{entry}.details.signatures' {shown(signatures)} do not name its buckets {shown(buckets)}")
    metadata = details.get("metadata") if isinstance(details.get("metadata"), dict) else a.get("metadata")
    if isinstance(metadata, dict):
        if isinstance(metadata.get("labels"), list):
            need(metadata["labels"] == labels, f"'{entry}' metadata labels {shown(metadata['labels'])} disagree "
                                               f"with 'labels' {shown(labels)}")
        if _is_int(metadata.get("vocab_size")) and vocab_size is not None:
            need(metadata["vocab_size"] == vocab_size, f"'{entry}' metadata vocab_size {metadata['vocab_size']} "
                                                       f"disagrees with 'tokenizer.vocab_size' {vocab_size}")


def check_model_file(file: str, details: dict, model_buckets: list[int] | None) -> None:
    """A fixed-length model file runs exactly the buckets its manifest entry lists (its inputs are compared
    with the manifest's ``inputs`` by the backend that opens it): those set the bundle's input length."""
    listed = details.get("buckets")
    if model_buckets is not None and listed and list(model_buckets) != sorted(listed):
        raise ModelError(f"{file} has buckets {list(model_buckets)} but the manifest lists {sorted(listed)}",
                         "the model file does not belong to this manifest; " + DISAGREE)
