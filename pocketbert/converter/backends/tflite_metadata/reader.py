"""Reading the metadata back: the ``ModelMetadata`` flatbuffer under TFLITE_METADATA and the zipped files.

Readers are what verify the writer: the converter records :func:`read`'s view in the manifest, and the
tests compare it with what MediaPipe makes of the same file."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import flatbuffers
from flatbuffers import number_types
from flatbuffers.table import Table

from .schema import (
    ASSOCIATED_FILE,
    BERT_TOKENIZER_OPTIONS,
    CUSTOM_METADATA,
    FILE_TYPES,
    METADATA_IDENTIFIER,
    METADATA_NAME,
    MODEL_METADATA,
    PROCESS_UNIT,
    PROCESS_UNIT_BERT_TOKENIZER,
    SUBGRAPH_METADATA,
    TENSOR_METADATA,
    vtable_offset,
)


class _Reader:
    """Minimal flatbuffer table reader by slot number (schema.py's slots): no generated code needed."""

    def __init__(self, buf: bytes, pos: int):
        self.tab = Table(buf, pos)

    def _offset(self, slot: int) -> int:
        return self.tab.Offset(vtable_offset(slot))

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


def metadata_entry(raw: bytes):
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
    _, buffer = metadata_entry(raw)
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
    return {"name": entry.string(ASSOCIATED_FILE["name"]),
            "description": entry.string(ASSOCIATED_FILE["description"]),
            "type": FILE_TYPES.get(entry.uint8(ASSOCIATED_FILE["type"]), "UNKNOWN")}


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
    out = {key: root.string(MODEL_METADATA[key])
           for key in ("name", "description", "version", "author", "license", "min_parser_version")}
    subgraphs = root.tables(MODEL_METADATA["subgraph_metadata"])
    out["subgraph_metadata"] = len(subgraphs)
    out.update(_subgraph(subgraphs[0]))
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


def _subgraph(subgraph: _Reader) -> dict:
    """A SubGraphMetadata's name, tensors, tokenizer and custom metadata."""
    def tensors(slot):
        return [{"name": t.string(TENSOR_METADATA["name"]), "description": t.string(TENSOR_METADATA["description"]),
                 "associated_files": [_file(f) for f in t.tables(TENSOR_METADATA["associated_files"])]}
                for t in subgraph.tables(slot)]

    out = {"subgraph": {"name": subgraph.string(SUBGRAPH_METADATA["name"]),
                        "description": subgraph.string(SUBGRAPH_METADATA["description"])},
           "inputs": tensors(SUBGRAPH_METADATA["input_tensor_metadata"]),
           "outputs": tensors(SUBGRAPH_METADATA["output_tensor_metadata"]),
           "tokenizer": None}
    for unit in subgraph.tables(SUBGRAPH_METADATA["input_process_units"]):
        if unit.uint8(PROCESS_UNIT["options_type"]) == PROCESS_UNIT_BERT_TOKENIZER:
            options = unit.table(PROCESS_UNIT["options"])
            vocab_files = [_file(f) for f in options.tables(BERT_TOKENIZER_OPTIONS["vocab_file"])]
            out["tokenizer"] = {"type": "BertTokenizer", "vocab_file": vocab_files}
    out["custom"] = {c.string(CUSTOM_METADATA["name"]): json.loads(c.bytes(CUSTOM_METADATA["data"]))
                     for c in subgraph.tables(SUBGRAPH_METADATA["custom_metadata"])}
    return out
