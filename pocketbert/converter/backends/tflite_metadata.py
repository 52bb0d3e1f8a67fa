"""TFLite model metadata: labels, WordPiece vocabulary and tokenizer in the .tflite itself.

Writes the tflite-support metadata schema (``metadata_schema.fbs``, file identifier ``M001``; the
contract of the TFLite Task Library and MediaPipe Tasks) with the ``flatbuffers`` package alone, so
the converter needs neither tflite-support (pins protobuf < 4) nor mediapipe.  The layout is the one
tflite-support's ``MetadataPopulator`` produces:

* a ``ModelMetadata`` flatbuffer stored in a model buffer, referenced from ``Model.metadata`` under
  the name ``TFLITE_METADATA`` (other entries, e.g. litert-torch's ``min_runtime_version``, stay);
* the associated files (``vocab.txt``, ``labels.txt``) as an uncompressed zip appended to the model
  file; TFLite ignores trailing bytes, metadata readers open the file as a zip.

What it describes, as MediaPipe's BERT text classifier expects it (``BertPreprocessorCalculator``):
input tensors named ``ids``, ``mask``, ``segment_ids`` (the metadata names it matches; ours are
``input_ids``, ``attention_mask``, ``token_type_ids``), in the subgraph's input order; a
``BertTokenizerOptions`` input process unit whose vocabulary is the associated file ``vocab.txt``
(type VOCABULARY); the output ``logits`` with ``labels.txt`` (type TENSOR_AXIS_LABELS).  The schema
has no lower-casing flag (Task Library and MediaPipe always lower-case), so our tokenizer settings go
into a ``CustomMetadata`` entry named ``pocketbert`` (JSON); that field needs parser 1.5.0.

Multi-signature models: ``SubGraphMetadata`` is written for subgraph 0 only.  Metadata readers use
subgraph 0 alone (the schema's "main subgraph"; tflite-support's populator even refuses more than
one ``SubGraphMetadata``), and every bucket subgraph has the same inputs, in the same order, and the
same output, so the one entry describes them all except for the sequence length.

MediaPipe Tasks ``TextClassifier`` (mediapipe 1.2.2; tests/test_tflite_metadata.py) runs such a
model on raw text when :func:`mediapipe_blockers` finds nothing: one subgraph (a single bucket),
exactly three int32 inputs (not DistilBERT), float32 logits (fp32 or int8-dynamic, not int8-static),
a classification head, a lower-casing tokenizer.  Its scores are our raw logits (no softmax), sorted,
named from ``labels.txt``; it truncates to the bucket like ``truncation=True``.  Its tokenizer
lower-cases ASCII only and neither strips accents nor drops control characters, so such text can get
other tokens than the Hugging Face tokenizer; plain ASCII and CJK text give identical logits.

ai-edge-quantizer keeps large buffers outside the flatbuffer (``Buffer.offset``/``size``, counted
from the start of the file).  Quantizing a model that already has metadata moves TFLITE_METADATA
out too and drops the zip (MediaPipe then crashes), so embed after quantizing, into every artifact.
:func:`embed` keeps such buffers outside, moved behind the rewritten flatbuffer and 16-byte aligned
as the quantizer lays them out, and stores the metadata inline where readers look for it.
"""

from __future__ import annotations

import json
import os
import stat
import struct
import tempfile
import zipfile
from pathlib import Path

import flatbuffers
import numpy as np
from flatbuffers import number_types
from flatbuffers.table import Table

METADATA_NAME = "TFLITE_METADATA"  # Model.metadata entry name metadata readers look for
METADATA_IDENTIFIER = b"M001"
TFLITE_IDENTIFIER = b"TFL3"
CUSTOM_NAME = "pocketbert"
LABELS_FILE = "labels.txt"

# Our signature input names -> the metadata names MediaPipe's BertPreprocessorCalculator matches.
TENSOR_NAMES = {"input_ids": "ids", "attention_mask": "mask", "token_type_ids": "segment_ids"}
_DESCRIPTIONS = {
    "input_ids": "WordPiece token ids: [CLS] text [SEP], padded with 0 to the sequence length",
    "attention_mask": "1 for real tokens, 0 for padding",
    "token_type_ids": "0 for the first sequence, 1 for the second (if any)",
}

# Field slots (declaration order; a union takes two: type, then value), from metadata_schema.fbs
# (tflite-support / MediaPipe mediapipe/tasks/metadata/metadata_schema.fbs, schema version 1.5.0).
_ASSOCIATED_FILE = {"name": 0, "description": 1, "type": 2, "locale": 3, "version": 4}  # 5 slots
_BERT_TOKENIZER_OPTIONS = {"vocab_file": 0}  # 1 slot
_PROCESS_UNIT = {"options_type": 0, "options": 1}  # 2 slots
_CONTENT = {"content_properties_type": 0, "content_properties": 1, "range": 2}  # 3 slots
_TENSOR_METADATA = {"name": 0, "description": 1, "dimension_names": 2, "content": 3, "process_units": 4,
                    "stats": 5, "associated_files": 6}  # 7 slots
_CUSTOM_METADATA = {"name": 0, "data": 1}  # 2 slots
_SUBGRAPH_METADATA = {"name": 0, "description": 1, "input_tensor_metadata": 2, "output_tensor_metadata": 3,
                      "associated_files": 4, "input_process_units": 5, "output_process_units": 6,
                      "input_tensor_groups": 7, "output_tensor_groups": 8, "custom_metadata": 9}  # 10 slots
_MODEL_METADATA = {"name": 0, "description": 1, "version": 2, "subgraph_metadata": 3, "author": 4, "license": 5,
                   "associated_files": 6, "min_parser_version": 7}  # 8 slots
# Enum values from the same schema.
_FILE_TYPES = {0: "UNKNOWN", 1: "DESCRIPTIONS", 2: "TENSOR_AXIS_LABELS", 3: "TENSOR_VALUE_LABELS",
               4: "TENSOR_AXIS_SCORE_CALIBRATION", 5: "VOCABULARY", 6: "SCANN_INDEX_FILE"}
TENSOR_AXIS_LABELS, VOCABULARY = 2, 5
PROCESS_UNIT_BERT_TOKENIZER = 4  # union ProcessUnitOptions: NONE=0, Normalization, ScoreCalibration, ...
CONTENT_FEATURE_PROPERTIES = 1  # union ContentProperties: NONE=0, FeatureProperties, ...
# Schema history: VOCABULARY 1.0.1, BertTokenizerOptions and input_process_units 1.1.0, CustomMetadata
# 1.5.0.  min_parser_version is the newest feature used; readers older than that refuse the metadata.
MIN_PARSER_VERSION = "1.5.0"

_BUFFER_OFFSET_SLOT, _BUFFER_SIZE_SLOT = 1, 2  # tflite schema.fbs: table Buffer {data; offset; size}


def embed(model_path: Path, *, task: str, labels: list[str], vocab_file: Path, do_lower_case: bool,
          input_names: list[str], name: str, description: str = "", version: str | None = None,
          author: str | None = None, license: str | None = None) -> dict:
    """Write labels, vocabulary and tokenizer metadata into ``model_path``, in place and atomically.

    ``task`` is ``classification`` or ``ner``; ``labels[i]`` names logit ``i``; ``vocab_file`` holds
    token ``n`` on line ``n``; ``input_names`` are the signatures' inputs (``input_ids``,
    ``attention_mask`` and, except DistilBERT, ``token_type_ids``) and must match the model.
    Embedding again replaces earlier metadata and files.  Returns a summary for the manifest (see
    :func:`summary`), including ``mediapipe_blockers``: why MediaPipe's TextClassifier cannot run the
    model (empty when it can).
    """
    from ai_edge_litert import schema_py_generated as schema

    model_path = Path(model_path)
    raw = model_path.read_bytes()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(raw, 0))
    layout = _layout(model)
    if sorted(layout["inputs"]) != sorted(input_names):
        raise ValueError(f"{model_path.name} has inputs {layout['inputs']}, not {input_names}")
    unknown = [n for n in input_names if n not in TENSOR_NAMES]
    if unknown:
        raise ValueError(f"no metadata name for inputs {unknown} (known: {', '.join(TENSOR_NAMES)})")
    if layout["output_shape"][-1] != len(labels):
        raise ValueError(f"{len(labels)} labels for logits of shape {layout['output_shape']}")
    if any("\n" in label or "\r" in label for label in labels):
        raise ValueError("labels.txt holds one label per line: a label contains a line break")

    settings = {"task": task, "do_lower_case": bool(do_lower_case), "signatures": layout["signatures"],
                "inputs": {TENSOR_NAMES[n]: n for n in layout["inputs"]}}
    metadata = _model_metadata(name=name, description=description, version=version, author=author,
                               license=license, layout=layout, task=task, vocab_name=Path(vocab_file).name,
                               settings=settings)
    files = {Path(vocab_file).name: Path(vocab_file).read_bytes(),
             LABELS_FILE: "".join(f"{label}\n" for label in labels).encode("utf-8")}
    _write(model_path, _with_metadata(model, raw, metadata), files)
    return summary(model_path)


def _layout(model) -> dict:
    """Subgraph 0's inputs (signature names, in subgraph order) and output; checks the other subgraphs agree."""
    if not model.signatureDefs:
        raise ValueError("the model has no signatures; metadata names inputs by signature name")
    layouts = []
    for signature in model.signatureDefs:
        subgraph = model.subgraphs[signature.subgraphIndex]
        by_tensor = {item.tensorIndex: item.name.decode() for item in signature.inputs}
        outputs = list(signature.outputs)
        if len(outputs) != 1 or outputs[0].name.decode() != "logits":
            raise ValueError(f"signature {signature.signatureKey.decode()} must have the one output 'logits'")
        logits = subgraph.tensors[outputs[0].tensorIndex]
        layouts.append({"subgraph": signature.subgraphIndex, "signature": signature.signatureKey.decode(),
                        "inputs": [by_tensor[i] for i in subgraph.inputs],
                        "length": int(subgraph.tensors[subgraph.inputs[0]].shape[-1]),
                        "output_shape": [int(d) for d in logits.shape]})
    layouts.sort(key=lambda item: item["subgraph"])
    first = layouts[0]
    for other in layouts[1:]:
        if other["inputs"] != first["inputs"] or other["output_shape"][-1] != first["output_shape"][-1]:
            raise ValueError(f"signature {other['signature']} differs from {first['signature']}: "
                             "one SubGraphMetadata cannot describe both")
    return {**first, "signatures": [item["signature"] for item in layouts]}


# ---- writing the ModelMetadata flatbuffer ----

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
    return _table(builder, _ASSOCIATED_FILE, bytes_={"type": file_type},
                  strings={"name": name, "description": description})


def _tensor(builder, name: str, description: str, files: list[int] | None = None) -> int:
    # Content is FeatureProperties (a plain feature vector), as tflite-support's writers set for text.
    feature = _table(builder, {})
    content = _table(builder, _CONTENT, offsets={"content_properties": feature},
                     bytes_={"content_properties_type": CONTENT_FEATURE_PROPERTIES})
    return _table(builder, _TENSOR_METADATA, strings={"name": name, "description": description},
                  offsets={"content": content, "associated_files": _vector(builder, files) if files else None})


def _model_metadata(*, name, description, version, author, license, layout, task, vocab_name, settings) -> bytes:
    builder = flatbuffers.Builder(1024)
    inputs = [_tensor(builder, TENSOR_NAMES[n], f"{n}: {_DESCRIPTIONS[n]}") for n in layout["inputs"]]
    labels = _associated_file(builder, LABELS_FILE, "Labels of the logits: line i names index i", TENSOR_AXIS_LABELS)
    per = "per token, [1, sequence, labels]" if task == "ner" else "[1, labels]"
    output = _tensor(builder, "logits", f"Raw logits {per} (no softmax); labels.txt line i names index i", [labels])
    vocab = _associated_file(builder, vocab_name, "WordPiece vocabulary: line n is token id n", VOCABULARY)
    tokenizer_options = _table(builder, _BERT_TOKENIZER_OPTIONS, offsets={"vocab_file": _vector(builder, [vocab])})
    tokenizer = _table(builder, _PROCESS_UNIT, offsets={"options": tokenizer_options},
                       bytes_={"options_type": PROCESS_UNIT_BERT_TOKENIZER})
    custom_data = _byte_vector(builder, json.dumps(settings, sort_keys=True).encode("utf-8"), 16)
    custom = _table(builder, _CUSTOM_METADATA, offsets={"data": custom_data}, strings={"name": CUSTOM_NAME})
    others = [s for s in layout["signatures"] if s != layout["signature"]]
    subgraph_description = f"Signature {layout['signature']} (sequence length {layout['length']})"
    if others:
        subgraph_description += f"; signatures {', '.join(others)} take the same inputs at other sequence lengths"
    subgraph = _table(builder, _SUBGRAPH_METADATA, strings={"name": layout["signature"],
                                                            "description": subgraph_description},
                      offsets={"input_tensor_metadata": _vector(builder, inputs),
                               "output_tensor_metadata": _vector(builder, [output]),
                               "input_process_units": _vector(builder, [tokenizer]),
                               "custom_metadata": _vector(builder, [custom])})
    root = _table(builder, _MODEL_METADATA, offsets={"subgraph_metadata": _vector(builder, [subgraph])},
                  strings={"name": name, "description": description or None, "version": version,
                           "author": author, "license": license, "min_parser_version": MIN_PARSER_VERSION})
    builder.Finish(root, file_identifier=METADATA_IDENTIFIER)
    return bytes(builder.Output())


# ---- rewriting the model ----

def _round_up_16(n: int) -> int:
    return (n + 15) & ~15


def _with_metadata(model, raw: bytes, metadata: bytes) -> bytes:
    """The model flatbuffer with ``metadata`` under TFLITE_METADATA, plus its out-of-flatbuffer buffers."""
    from ai_edge_litert import schema_py_generated as schema

    for subgraph in model.subgraphs:
        if any(op.largeCustomOptionsOffset > 1 for op in subgraph.operators or []):
            raise ValueError("custom options stored outside the flatbuffer are not supported")
    # Buffers stored behind the flatbuffer (offset > 1, from the start of the file): keep their bytes and
    # placeholder offset/size, so the fields exist in the new flatbuffer and can be patched below.
    external = {}
    for index, buffer in enumerate(model.buffers):
        if buffer.offset > 1:
            external[index] = memoryview(raw)[buffer.offset:buffer.offset + buffer.size]
            buffer.data, buffer.offset, buffer.size = None, 1, 1

    entry = next((m for m in model.metadata or [] if m.name.decode() == METADATA_NAME), None)
    buffer = schema.BufferT()
    buffer.data = np.frombuffer(metadata, dtype=np.uint8)  # the object API packs numpy arrays (or lists)
    if entry is None:
        model.buffers.append(buffer)
        entry = schema.MetadataT()
        entry.name, entry.buffer = METADATA_NAME, len(model.buffers) - 1
        model.metadata = [*(model.metadata or []), entry]
    else:
        model.buffers[entry.buffer] = buffer
        external.pop(entry.buffer, None)  # ai-edge-quantizer moves it out; readers need it inline

    builder = flatbuffers.Builder(max(1024, len(raw) - sum(len(b) for b in external.values())))
    builder.Finish(model.Pack(builder), file_identifier=TFLITE_IDENTIFIER)
    head = bytearray(builder.Output())
    if not external:
        return bytes(head)
    packed = schema.Model.GetRootAs(head, 0)
    out = bytearray(head)
    for index, data in external.items():
        position = _round_up_16(len(out))  # 16-byte aligned, like ai-edge-quantizer's layout
        table = packed.Buffers(index)._tab
        for slot, value in ((_BUFFER_OFFSET_SLOT, position), (_BUFFER_SIZE_SLOT, len(data))):
            field = table.Offset(4 + 2 * slot)
            if not field:
                raise RuntimeError("buffer offset/size missing from the packed model")
            struct.pack_into("<Q", out, table.Pos + field, value)
        out += bytes(position - len(out))
        out += data
    return bytes(out)


def _write(model_path: Path, model: bytes, files: dict[str, bytes]) -> None:
    """model + files zipped behind it (stored, fixed dates: same input, same bytes), via a temp file."""
    mode = stat.S_IMODE(model_path.stat().st_mode)
    fd, tmp = tempfile.mkstemp(dir=model_path.parent, prefix=f".{model_path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w+b") as f:
            f.write(model)
            # "a" on a file that is not a zip appends one; its offsets count from the start of the file,
            # which is how tflite-support's MetadataPopulator packs associated files.
            with zipfile.ZipFile(f, "a", compression=zipfile.ZIP_STORED) as archive:
                for name in sorted(files):
                    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                    info.external_attr = 0o644 << 16
                    archive.writestr(info, files[name])
        os.chmod(tmp, mode)
        os.replace(tmp, model_path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# ---- reading it back ----

class _Reader:
    """Minimal flatbuffer table reader by slot number (the slots above): no generated code needed."""

    def __init__(self, buf: bytes, pos: int):
        self.tab = Table(buf, pos)

    def _offset(self, slot: int) -> int:
        return self.tab.Offset(4 + 2 * slot)  # vtable: its size, the table size, then one entry per slot

    def string(self, slot: int) -> str | None:
        offset = self._offset(slot)
        return self.tab.String(self.tab.Pos + offset).decode("utf-8") if offset else None

    def uint8(self, slot: int) -> int:
        offset = self._offset(slot)
        return self.tab.Get(number_types.Uint8Flags, self.tab.Pos + offset) if offset else 0

    def table(self, slot: int) -> _Reader | None:
        offset = self._offset(slot)
        return _Reader(self.tab.Bytes, self.tab.Indirect(self.tab.Pos + offset)) if offset else None

    def tables(self, slot: int) -> list[_Reader]:
        offset = self._offset(slot)
        if not offset:
            return []
        start = self.tab.Vector(offset)
        return [_Reader(self.tab.Bytes, self.tab.Indirect(start + 4 * i)) for i in range(self.tab.VectorLen(offset))]

    def bytes(self, slot: int) -> bytes:
        offset = self._offset(slot)
        if not offset:
            return b""
        start = self.tab.Vector(offset)
        return bytes(self.tab.Bytes[start:start + self.tab.VectorLen(offset)])


def _metadata_entry(raw: bytes):
    """(model, TFLITE_METADATA's Buffer table) or (model, None)."""
    from ai_edge_litert import schema_py_generated as schema

    model = schema.Model.GetRootAs(raw, 0)
    for i in range(model.MetadataLength()):
        entry = model.Metadata(i)
        if entry.Name() is not None and entry.Name().decode() == METADATA_NAME:
            return model, model.Buffers(entry.Buffer())
    return model, None


def metadata_buffer(model_path: Path) -> bytes | None:
    """The raw ModelMetadata flatbuffer stored under TFLITE_METADATA, or None."""
    raw = Path(model_path).read_bytes()
    _, buffer = _metadata_entry(raw)
    if buffer is None:
        return None
    if buffer.Offset() > 1:  # moved behind the flatbuffer (ai-edge-quantizer does that): readers miss it
        return raw[buffer.Offset():buffer.Offset() + buffer.Size()]
    return buffer.DataAsNumpy().tobytes()


def packed_files(model_path: Path) -> dict[str, bytes]:
    """The associated files zipped behind the model: name -> content ({} if none)."""
    try:
        with zipfile.ZipFile(model_path) as archive:
            return {name: archive.read(name) for name in archive.namelist()}
    except zipfile.BadZipFile:  # e.g. ai-edge-quantizer's output: it rewrites the flatbuffer only
        return {}


def _file(entry: _Reader) -> dict:
    return {"name": entry.string(_ASSOCIATED_FILE["name"]),
            "description": entry.string(_ASSOCIATED_FILE["description"]),
            "type": _FILE_TYPES.get(entry.uint8(_ASSOCIATED_FILE["type"]), "UNKNOWN")}


def read(model_path: Path) -> dict:
    """What the model carries: metadata fields, tensors, tokenizer, our settings, and the packed files.

    ``labels`` and ``vocab_size``/``vocab_head`` come from the appended zip (None if the file is not
    packed).  Raises ValueError if the model has no TFLITE_METADATA.
    """
    buf = metadata_buffer(model_path)
    if buf is None:
        raise ValueError(f"{Path(model_path).name} has no {METADATA_NAME}")
    if buf[4:8] != METADATA_IDENTIFIER:
        raise ValueError(f"metadata identifier {buf[4:8]!r}, expected {METADATA_IDENTIFIER!r}")
    root = _Reader(buf, flatbuffers.encode.Get(flatbuffers.packer.uoffset, buf, 0))
    out = {key: root.string(_MODEL_METADATA[key])
           for key in ("name", "description", "version", "author", "license", "min_parser_version")}
    subgraphs = root.tables(_MODEL_METADATA["subgraph_metadata"])
    out["subgraph_metadata"] = len(subgraphs)
    subgraph = subgraphs[0]
    out["subgraph"] = {"name": subgraph.string(_SUBGRAPH_METADATA["name"]),
                       "description": subgraph.string(_SUBGRAPH_METADATA["description"])}

    def tensors(slot):
        return [{"name": t.string(_TENSOR_METADATA["name"]), "description": t.string(_TENSOR_METADATA["description"]),
                 "associated_files": [_file(f) for f in t.tables(_TENSOR_METADATA["associated_files"])]}
                for t in subgraph.tables(slot)]

    out["inputs"] = tensors(_SUBGRAPH_METADATA["input_tensor_metadata"])
    out["outputs"] = tensors(_SUBGRAPH_METADATA["output_tensor_metadata"])
    out["tokenizer"] = None
    for unit in subgraph.tables(_SUBGRAPH_METADATA["input_process_units"]):
        if unit.uint8(_PROCESS_UNIT["options_type"]) == PROCESS_UNIT_BERT_TOKENIZER:
            options = unit.table(_PROCESS_UNIT["options"])
            vocab_files = [_file(f) for f in options.tables(_BERT_TOKENIZER_OPTIONS["vocab_file"])]
            out["tokenizer"] = {"type": "BertTokenizer", "vocab_file": vocab_files}
    out["custom"] = {c.string(_CUSTOM_METADATA["name"]): json.loads(c.bytes(_CUSTOM_METADATA["data"]))
                     for c in subgraph.tables(_SUBGRAPH_METADATA["custom_metadata"])}

    packed = packed_files(model_path)
    out["packed_files"] = sorted(packed)
    labels_name = next((f["name"] for t in out["outputs"] for f in t["associated_files"]
                        if f["type"] == "TENSOR_AXIS_LABELS"), None)
    out["labels"] = packed[labels_name].decode("utf-8").splitlines() if labels_name in packed else None
    vocab_name = out["tokenizer"]["vocab_file"][0]["name"] if out["tokenizer"] else None
    vocab = packed[vocab_name].decode("utf-8").splitlines() if vocab_name in packed else None
    out["vocab_size"] = len(vocab) if vocab is not None else None
    out["vocab_head"] = vocab[:5] if vocab is not None else None
    return out


def summary(model_path: Path) -> dict:
    """Compact record for the manifest: what :func:`read` finds, plus :func:`mediapipe_blockers`."""
    meta = read(model_path)
    settings = meta["custom"].get(CUSTOM_NAME, {})
    return {"name": METADATA_NAME, "min_parser_version": meta["min_parser_version"],
            "subgraph": meta["subgraph"]["name"], "inputs": [t["name"] for t in meta["inputs"]],
            "outputs": [t["name"] for t in meta["outputs"]],
            "tokenizer": meta["tokenizer"]["type"] if meta["tokenizer"] else None,
            "packed_files": meta["packed_files"], "labels": meta["labels"], "vocab_size": meta["vocab_size"],
            "do_lower_case": settings.get("do_lower_case"), "mediapipe_blockers": mediapipe_blockers(model_path)}


def mediapipe_blockers(model_path: Path) -> list[str]:
    """Why MediaPipe Tasks' TextClassifier cannot run this model on raw text; empty if it can.

    Mirrors MediaPipe's checks (text_preprocessing_graph.cc, text_model_utils.cc,
    classification_postprocessing_graph.cc, bert_preprocessor_calculator.cc, metadata_extractor.cc);
    tests/test_tflite_metadata.py confirms each against mediapipe 1.2.2.
    """
    from ai_edge_litert import schema_py_generated as schema

    raw = Path(model_path).read_bytes()
    model, buffer = _metadata_entry(raw)
    blockers = []
    if model.SubgraphsLength() != 1:
        blockers.append(f"{model.SubgraphsLength()} subgraphs (one per bucket): MediaPipe text tasks take "
                        "single-subgraph models only; convert with one bucket")
    subgraph = model.Subgraphs(0)
    if subgraph.InputsLength() != 3:
        blockers.append(f"{subgraph.InputsLength()} inputs: MediaPipe's BERT preprocessor needs exactly three "
                        "(ids, mask, segment_ids); DistilBERT has no token_type_ids")
    if subgraph.Tensors(subgraph.Outputs(0)).Type() not in (schema.TensorType.FLOAT32, schema.TensorType.UINT8):
        blockers.append("int8 logits (full-integer model): MediaPipe classifiers take float32 or uint8 outputs")
    if buffer is None:
        return [*blockers, f"no {METADATA_NAME}: MediaPipe needs the tokenizer from the metadata"]
    if buffer.Offset() > 1:
        # mediapipe 1.2.2 crashes (SIGSEGV) on such a model: never hand it one.
        return [*blockers, f"{METADATA_NAME} is stored outside the flatbuffer and the files are not packed "
                           "(ai-edge-quantizer output): embed again after quantizing"]
    meta = read(model_path)
    settings = meta["custom"].get(CUSTOM_NAME, {})
    if meta["labels"] is None or meta["vocab_size"] is None:
        blockers.append("labels.txt or the vocabulary is not packed in the model file")
    else:
        vocab = packed_files(model_path)[meta["tokenizer"]["vocab_file"][0]["name"]].decode("utf-8").splitlines()
        if not {"[CLS]", "[SEP]"} <= set(vocab):
            blockers.append("the vocabulary lacks [CLS] or [SEP], which MediaPipe's BERT preprocessor inserts")
    if settings.get("task") != "classification":
        blockers.append(f"task {settings.get('task')}: TextClassifier reads one [1, labels] row per text, "
                        "NER logits are per token")
    if not settings.get("do_lower_case"):
        blockers.append("cased tokenizer: MediaPipe lower-cases all input text before WordPiece")
    return blockers
