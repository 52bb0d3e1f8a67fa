"""The ``ModelMetadata`` flatbuffer (metadata_schema.fbs), built with the ``flatbuffers`` package alone.

What it holds, as MediaPipe's BERT text classifier expects it (``BertPreprocessorCalculator``): input
tensors named ``ids``, ``mask``, ``segment_ids`` in the subgraph's input order; a ``BertTokenizerOptions``
input process unit whose vocabulary is the associated file ``vocab.txt`` (type VOCABULARY); the output
``logits`` with ``labels.txt`` (type TENSOR_AXIS_LABELS); our tokenizer settings as the ``CustomMetadata``
entry ``pocketbert`` (JSON).  One ``SubGraphMetadata``, for subgraph 0 (see the package's docstring)."""

from __future__ import annotations

import json

import flatbuffers

from .schema import (
    ASSOCIATED_FILE,
    BERT_TOKENIZER_OPTIONS,
    CONTENT,
    CONTENT_FEATURE_PROPERTIES,
    CUSTOM_METADATA,
    CUSTOM_NAME,
    LABELS_FILE,
    METADATA_IDENTIFIER,
    MIN_PARSER_VERSION,
    MODEL_METADATA,
    PROCESS_UNIT,
    PROCESS_UNIT_BERT_TOKENIZER,
    SUBGRAPH_METADATA,
    TENSOR_AXIS_LABELS,
    TENSOR_METADATA,
    TENSOR_NAMES,
    VOCABULARY,
)

_DESCRIPTIONS = {
    "input_ids": "WordPiece token ids: [CLS] text [SEP], padded with 0 to the sequence length",
    "attention_mask": "1 for real tokens, 0 for padding",
    "token_type_ids": "0 for the first sequence, 1 for the second (if any)",
}


def model_metadata(*, name, description, version, author, license, layout, task, vocab_name, settings) -> bytes:
    """The finished flatbuffer (identifier ``M001``) for a model of ``layout`` (see ``populate.layout``)."""
    builder = flatbuffers.Builder(1024)
    inputs = [_tensor(builder, TENSOR_NAMES[n], f"{n}: {_DESCRIPTIONS[n]}") for n in layout["inputs"]]
    labels = _associated_file(builder, LABELS_FILE, "Labels of the logits: line i names index i", TENSOR_AXIS_LABELS)
    per = "per token, [1, sequence, labels]" if task == "ner" else "[1, labels]"
    output = _tensor(builder, "logits", f"Raw logits {per} (no softmax); labels.txt line i names index i", [labels])
    vocab = _associated_file(builder, vocab_name, "WordPiece vocabulary: line n is token id n", VOCABULARY)
    tokenizer_options = _table(builder, BERT_TOKENIZER_OPTIONS, offsets={"vocab_file": _vector(builder, [vocab])})
    tokenizer = _table(builder, PROCESS_UNIT, offsets={"options": tokenizer_options},
                       bytes_={"options_type": PROCESS_UNIT_BERT_TOKENIZER})
    custom_data = _byte_vector(builder, json.dumps(settings, sort_keys=True).encode("utf-8"), 16)
    custom = _table(builder, CUSTOM_METADATA, offsets={"data": custom_data}, strings={"name": CUSTOM_NAME})
    others = [s for s in layout["signatures"] if s != layout["signature"]]
    subgraph_description = f"Signature {layout['signature']} (sequence length {layout['length']})"
    if others:
        subgraph_description += f"; signatures {', '.join(others)} take the same inputs at other sequence lengths"
    subgraph = _table(builder, SUBGRAPH_METADATA, strings={"name": layout["signature"],
                                                           "description": subgraph_description},
                      offsets={"input_tensor_metadata": _vector(builder, inputs),
                               "output_tensor_metadata": _vector(builder, [output]),
                               "input_process_units": _vector(builder, [tokenizer]),
                               "custom_metadata": _vector(builder, [custom])})
    root = _table(builder, MODEL_METADATA, offsets={"subgraph_metadata": _vector(builder, [subgraph])},
                  strings={"name": name, "description": description or None, "version": version,
                           "author": author, "license": license, "min_parser_version": MIN_PARSER_VERSION})
    builder.Finish(root, file_identifier=METADATA_IDENTIFIER)
    return bytes(builder.Output())


def _table(builder: flatbuffers.Builder, slots: dict, offsets: dict | None = None, bytes_: dict | None = None,
           strings: dict | None = None) -> int:
    """One table: ``offsets`` (tables/vectors already built), ``bytes_`` (enums, union types), ``strings``."""
    strings = {key: builder.CreateString(value) for key, value in (strings or {}).items() if value is not None}
    builder.StartObject(len(slots))
    for key, offset in {**(offsets or {}), **strings}.items():
        if offset is not None:
            builder.PrependUOffsetTRelativeSlot(slots[key], offset, 0)
    for key, value in (bytes_ or {}).items():
        builder.PrependUint8Slot(slots[key], value, 0)
    return builder.EndObject()


def _vector(builder: flatbuffers.Builder, offsets: list[int]) -> int:
    builder.StartVector(4, len(offsets), 4)
    for offset in reversed(offsets):
        builder.PrependUOffsetTRelative(offset)
    return builder.EndVector()


def _byte_vector(builder: flatbuffers.Builder, data: bytes, alignment: int) -> int:
    """CreateByteVector with the schema's force_align (CustomMetadata.data: 16)."""
    builder.StartVector(1, len(data), alignment)
    builder.head -= len(data)
    builder.Bytes[builder.head:builder.head + len(data)] = data
    return builder.EndVector()


def _associated_file(builder, name: str, description: str, file_type: int) -> int:
    return _table(builder, ASSOCIATED_FILE, bytes_={"type": file_type},
                  strings={"name": name, "description": description})


def _tensor(builder, name: str, description: str, files: list[int] | None = None) -> int:
    # Content is FeatureProperties (a plain feature vector), as tflite-support's writers set for text.
    feature = _table(builder, {})
    content = _table(builder, CONTENT, offsets={"content_properties": feature},
                     bytes_={"content_properties_type": CONTENT_FEATURE_PROPERTIES})
    return _table(builder, TENSOR_METADATA, strings={"name": name, "description": description},
                  offsets={"content": content, "associated_files": _vector(builder, files) if files else None})
