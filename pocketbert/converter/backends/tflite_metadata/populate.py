"""Writing metadata into a .tflite file, in place and atomically, laid out as tflite-support's
``MetadataPopulator`` lays it out: the ``ModelMetadata`` flatbuffer in a model buffer named
TFLITE_METADATA, the associated files as an uncompressed zip appended to the model.

ai-edge-quantizer keeps large buffers outside the flatbuffer (``Buffer.offset``/``size``, counted
from the start of the file).  Quantizing a model that already has metadata moves TFLITE_METADATA
out too and drops the zip (MediaPipe then crashes), so embed after quantizing, into every artifact.
:func:`embed` keeps such buffers outside, moved behind the rewritten flatbuffer and 16-byte aligned
as the quantizer lays them out, and stores the metadata inline where readers look for it."""

from __future__ import annotations

import os
import stat
import struct
import tempfile
import zipfile
from pathlib import Path

import flatbuffers
import numpy as np

from ..tflite_compact import packing_shared_tables, share_quantization
from .build import model_metadata
from .mediapipe_compat import mediapipe_blockers
from .reader import read
from .schema import (
    BUFFER_OFFSET_SLOT,
    BUFFER_SIZE_SLOT,
    CUSTOM_NAME,
    LABELS_FILE,
    METADATA_NAME,
    TENSOR_NAMES,
    TFLITE_IDENTIFIER,
    vtable_offset,
)


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
    metadata = model_metadata(name=name, description=description, version=version, author=author,
                              license=license, layout=layout, task=task, vocab_name=Path(vocab_file).name,
                              settings=settings)
    files = {Path(vocab_file).name: Path(vocab_file).read_bytes(),
             LABELS_FILE: "".join(f"{label}\n" for label in labels).encode("utf-8")}
    _write(model_path, _with_metadata(model, raw, metadata), files)
    return summary(model_path)


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
    share_quantization(model)  # keep a compacted file compact (tflite_compact)
    with packing_shared_tables():
        builder.Finish(model.Pack(builder), file_identifier=TFLITE_IDENTIFIER)
    head = bytearray(builder.Output())
    return bytes(head) if not external else _append_external(head, external)


def _append_external(head: bytearray, external: dict[int, memoryview]) -> bytes:
    """``head`` (a packed model) followed by the ``external`` buffers, their offset/size fields patched."""
    from ai_edge_litert import schema_py_generated as schema

    packed = schema.Model.GetRootAs(head, 0)
    out = bytearray(head)
    for index, data in external.items():
        position = _round_up_16(len(out))  # 16-byte aligned, like ai-edge-quantizer's layout
        table = packed.Buffers(index)._tab
        for slot, value in ((BUFFER_OFFSET_SLOT, position), (BUFFER_SIZE_SLOT, len(data))):
            field = table.Offset(vtable_offset(slot))
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
