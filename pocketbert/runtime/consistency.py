"""A bundle's manifest against itself and the bundle's own files: what every loader checks, pin or no pin.

A checksum proves a file is the one listed, not that the manifest tells the truth about it: labels reversed
in the manifest alone would put the other label on every answer.  :func:`check_consistency` holds the
rules (``Bundle.open`` calls it, so the runtime and the converter's ``cut`` apply them); the Android core
mirrors them in ``bundle/Consistency.java``, the web page in its bundle reader.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path

from .backends import fixed_length_backends
from .buckets import signature_name
from .contract import LABELS_FILE, TOKENIZER_FILE, VOCAB_FILE, bundle_input_length, shown
from .errors import BundleError, ModelError


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


DISAGREE = ("copy the bundle again from its source (its manifest.json or one of its files was edited); if the "
            "change was meant, convert the model again so that the converter writes both")
#: backends whose model files carry their own labels.txt and vocab.txt (TFLite metadata)
PACKED_FILES_BACKENDS = ("tflite",)
#: the training record's metrics that score a regression (every other one scores classes)
REGRESSION_METRICS = ("pearson", "spearman")


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


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
    one column per label; ``inputs`` are distinct and hold ``input_ids`` and ``attention_mask``; each special
    token is the line of vocab.txt its id names; the tokenizer record agrees with tokenizer.json (its
    vocabulary is vocab.txt's, its special tokens' ids, normaliser and WordPiece settings the manifest's);
    ``problem_type`` fits the task and the training record's metric.  The model files' own inputs and
    signatures are checked against these when a backend opens them (:func:`check_model_file`), and the labels
    and vocabulary a TFLite file packs when it is chosen (:func:`check_packed_files`)."""
    def need(ok: bool, problem: str) -> None:
        if not ok:
            raise BundleError(f"{where}: {problem}", DISAGREE)

    labels, tokenizer = m["labels"], m["tokenizer"]
    listed = read_text(LABELS_FILE)
    if listed is not None:
        lines = _lines(listed)
        need(lines == labels, f"'labels' {shown(labels)} disagree with {LABELS_FILE} {shown(lines)}: every answer "
                              "would carry another label's name")
    _check_problem_type(m, need)
    vocab_size = tokenizer.get("vocab_size")
    _check_tokenizer_record(m, read_text, where, need)
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


def _check_tokenizer_record(m: dict, read_text: Callable[[str], str | None], where: Path, need) -> None:
    """The ``tokenizer`` record against vocab.txt and tokenizer.json, and the vocabulary against the model's."""
    tokenizer = m["tokenizer"]
    vocab_size, vocab_file = tokenizer.get("vocab_size"), tokenizer.get("vocab_file") or VOCAB_FILE
    vocab = read_text(vocab_file)
    vocab_lines = None if vocab is None else _lines(vocab)
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
    known = set(vocab_lines or ())
    for name, token in (tokenizer.get("special_tokens") or {}).items():
        # the readers that tokenize from vocab.txt (Android, the web) take the manifest's ids; a token the
        # vocabulary lacks is never emitted (transformers records the unk id for it)
        if vocab_lines is not None and token["id"] < len(vocab_lines) and token["token"] in known:
            need(vocab_lines[token["id"]] == token["token"],
                 f"'tokenizer.special_tokens.{name}' is {shown(token['token'])} with id {token['id']}, but line "
                 f"{token['id'] + 1} of {vocab_file} is {shown(vocab_lines[token['id']])}")
    tokenizer_file = tokenizer.get("tokenizer_file") or TOKENIZER_FILE
    fast = read_text(tokenizer_file)
    if fast is not None:
        _check_tokenizer_file(tokenizer, _parsed(fast, tokenizer_file, where), name=tokenizer_file,
                              vocab_lines=vocab_lines, vocab_file=vocab_file, need=need)


def _check_problem_type(m: dict, need) -> None:
    """``problem_type`` decides how logits become scores, in every reader: it must fit the task, and the training
    record the bundle carries (a fine-tuned or recovered model's metric) when there is one.  The model files do
    not record it, so this is all a reader can compare it with."""
    problem_type = m.get("problem_type")
    if problem_type is None:
        return
    need((m["task"] == "ner") == (problem_type == "token_classification"),
         f"'problem_type' {problem_type!r} does not fit the task {m['task']!r}")
    source = m.get("source") if isinstance(m.get("source"), dict) else {}
    for record in (m.get("recovery"), source.get("training")):
        metric = record.get("metric") if isinstance(record, dict) else None
        if isinstance(metric, str) and m["task"] == "classification":
            regression = metric in REGRESSION_METRICS
            need(regression == (problem_type == "regression"),
                 f"'problem_type' is {problem_type!r} but the model was trained and scored as "
                 f"{'a regression' if regression else 'a classifier'} ({metric}): its scores would be "
                 f"{'squashed' if regression else 'raw logits'}")


def _parsed(text: str, name: str, where: Path) -> dict:
    try:
        state = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BundleError(f"{where.parent / name} is not valid JSON ({exc})", DISAGREE) from None
    if not isinstance(state, dict):
        raise BundleError(f"{where.parent / name} does not hold a tokenizer (a JSON object)", DISAGREE)
    return state


def _check_tokenizer_file(settings: dict, state: dict, *, name: str, vocab_lines: list[str] | None, vocab_file: str,
                          need) -> None:
    """The manifest's ``tokenizer`` record against tokenizer.json, which it was written from: this runtime
    tokenizes with tokenizer.json, the Android and web readers with the manifest and vocab.txt, so any field
    where the two differ would make the same bundle answer differently in each."""
    model = state.get("model") if isinstance(state.get("model"), dict) else {}
    normalizer = state.get("normalizer") if isinstance(state.get("normalizer"), dict) else {}
    ids = dict(model["vocab"]) if isinstance(model.get("vocab"), dict) else {}
    for added in state.get("added_tokens") or []:
        if isinstance(added, dict) and isinstance(added.get("content"), str):
            ids[added["content"]] = added.get("id")

    def agree(field: str, theirs: object) -> None:
        if field in settings:
            need(settings[field] == theirs, f"'tokenizer.{field}' is {shown(settings[field])} but {name} says "
                                            f"{shown(theirs)}: this runtime tokenizes with {name}, the Android and "
                                            "web readers with the manifest")

    if isinstance(model.get("vocab"), dict) and settings.get("vocab_size") is not None:
        need(len(ids) == settings["vocab_size"], f"'tokenizer.vocab_size' is {settings['vocab_size']} but {name} "
                                                 f"holds {len(ids)} tokens: it is not the tokenizer of this model")
    if isinstance(model.get("type"), str):
        agree("type", model["type"].lower())
    if model.get("type") == "WordPiece":
        agree("continuing_subword_prefix", model.get("continuing_subword_prefix", "##"))  # the library's defaults
        agree("max_input_chars_per_word", model.get("max_input_chars_per_word", 100))
    if normalizer.get("type") == "BertNormalizer":
        lowercase = bool(normalizer.get("lowercase"))
        strip = normalizer.get("strip_accents")
        agree("do_lower_case", lowercase)
        agree("strip_accents", lowercase if strip is None else bool(strip))  # BERT: unset follows lower-casing
        agree("clean_text", bool(normalizer.get("clean_text", True)))
        agree("tokenize_chinese_chars", bool(normalizer.get("handle_chinese_chars", True)))
    special = settings.get("special_tokens") or {}
    for key, token in special.items():
        if token["token"] in ids:  # one the tokenizer lacks it never emits (transformers gives it the unk id)
            need(ids[token["token"]] == token["id"],
                 f"'tokenizer.special_tokens.{key}' is {shown(token['token'])} with id {token['id']}, but {name} "
                 f"gives {shown(token['token'])} the id {shown(ids[token['token']])}")
    processor = state.get("post_processor") if isinstance(state.get("post_processor"), dict) else {}
    framing = _framing(processor)
    for key, (token, token_id) in framing.items():
        if key in special:
            need((special[key]["token"], special[key]["id"]) == (token, token_id),
                 f"'tokenizer.special_tokens.{key}' is {shown(special[key]['token'])} with id {special[key]['id']}, "
                 f"but {name} frames every text with {shown(token)} (id {shown(token_id)})")
    if vocab_lines is not None and isinstance(model.get("vocab"), dict) and all(isinstance(i, int) for i in ids.values()):
        tokens = [token for token, _ in sorted(ids.items(), key=lambda item: item[1])]
        if tokens != vocab_lines:
            line = next((i for i, (a, b) in enumerate(zip(tokens, vocab_lines)) if a != b), min(len(tokens),
                                                                                                 len(vocab_lines)))
            ours = shown(vocab_lines[line]) if line < len(vocab_lines) else "missing"
            theirs = shown(tokens[line]) if line < len(tokens) else "nothing"
            need(False, f"{vocab_file} disagrees with {name} at line {line + 1}: {ours} there, {theirs} in {name}: "
                        f"the readers that tokenize from {vocab_file} would feed the model other ids")


def _framing(processor: dict) -> dict[str, tuple[object, object]]:
    """The [CLS] and [SEP] a tokenizer.json post-processor puts around a text: {"cls": (token, id), "sep": …}."""
    if processor.get("type") in ("BertProcessing", "RobertaProcessing"):
        return {key: tuple(processor[key]) for key in ("cls", "sep")
                if isinstance(processor.get(key), list) and len(processor[key]) == 2}
    if processor.get("type") != "TemplateProcessing":
        return {}
    single = [item["SpecialToken"]["id"] for item in processor.get("single") or []
              if isinstance(item, dict) and isinstance(item.get("SpecialToken"), dict)]
    tokens = processor.get("special_tokens") if isinstance(processor.get("special_tokens"), dict) else {}

    def entry(token: str) -> tuple[object, object]:
        ids = (tokens.get(token) or {}).get("ids") if isinstance(tokens.get(token), dict) else None
        return token, ids[0] if isinstance(ids, list) and len(ids) == 1 else ids

    if len(single) != 2:
        return {}
    return {"cls": entry(single[0]), "sep": entry(single[1])}


def check_packed_files(backend: str, path: Path, *, file: str, labels: list[str], vocab: str | None) -> None:
    """A TFLite file with metadata carries its own labels.txt and vocab.txt (zipped after the flatbuffer, for
    MediaPipe and Android Studio's model binding): they are what the model was converted with, so the manifest's
    labels and the bundle's vocab.txt must equal them, or labels swapped in the manifest, the metadata record and
    labels.txt alike would pass."""
    if backend not in PACKED_FILES_BACKENDS:
        return
    try:
        if not zipfile.is_zipfile(path):
            return  # converted without metadata: nothing packed to compare
        with zipfile.ZipFile(path) as packed:
            names = set(packed.namelist())
            packed_labels = packed.read(LABELS_FILE).decode("utf-8") if LABELS_FILE in names else None
            packed_vocab = packed.read(VOCAB_FILE).decode("utf-8") if VOCAB_FILE in names else None
    except (OSError, zipfile.BadZipFile, UnicodeDecodeError, KeyError, ValueError) as exc:
        raise ModelError(f"the files packed in {file} cannot be read ({exc})",
                         "the model file is damaged; copy the bundle again or convert again") from None
    if packed_labels is not None and _lines(packed_labels) != labels:
        raise ModelError(f"{file} was converted with the labels {shown(_lines(packed_labels))} (its packed "
                         f"{LABELS_FILE}), but the bundle's are {shown(labels)}: every answer would carry another "
                         "label's name", "the model file does not belong to this manifest; " + DISAGREE)
    if packed_vocab is not None and vocab is not None and packed_vocab != vocab:
        raise ModelError(f"{file} was converted with another vocabulary than the bundle's {VOCAB_FILE} (its packed "
                         f"{VOCAB_FILE} differs)", "the model file does not belong to this manifest; " + DISAGREE)


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
