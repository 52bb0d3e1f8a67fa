"""The bucket signatures of one .tflite exported in two processes, then merged into one file.

litert-torch traces, decomposes and lowers each signature in turn, in Python on one core (SST-2 demo, four
signatures: 30 s, most of it torch.export's tracing and decompositions; 24-layer MobileBERT shape: 148-206 s).
With two cores free, a second process exports the second half of the buckets while this one exports the first
half (SST-2 demo: 23 s, docs/converter.md), and the two files are merged: the second file's subgraphs and
signatures appended to the first's, each of its weight buffers replaced by the first file's equal one (so every
weight is stored once, as in a single export), its operator codes mapped onto the first's, and its tensor names
kept unique across the model as one export's are (ai-edge-quantizer requires it).  The merged file must give,
at every signature, exactly the outputs of the file that signature came from, or the model is exported in one
process after all.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import torch

from .tflite_compact import inline_buffers
from .tflite_recipes import quiet

#: a model this small exports faster in one process than a second Python process starts (about 8 s to import
#: torch, transformers and litert-torch)
MIN_PARAMETERS = 5_000_000


class _Int32Signature(torch.nn.Module):
    """int32 named inputs (what TFLite and phones use) -> {"logits": …}."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        args = [input_ids.long(), attention_mask.long()]
        if token_type_ids is not None:
            args.append(token_type_ids.long())
        return {"logits": self.model(*args)}


def converted(model: torch.nn.Module, examples: dict[str, dict[str, np.ndarray]]) -> bytes:
    """The .tflite of ``model`` (int32 inputs, output ``logits``) with one signature per ``examples`` entry
    (signature name -> example inputs), by litert-torch."""
    import litert_torch

    module = _Int32Signature(model).eval()
    converter = litert_torch  # litert_torch.signature(...) starts the chain, Converter.signature extends it
    for name, example in examples.items():
        kwargs = {key: torch.from_numpy(np.asarray(value, np.int32)) for key, value in example.items()}
        converter = converter.signature(name, module, sample_kwargs=kwargs)
    with quiet(), torch.no_grad():
        return converter.convert().model_content()


def two_processes_pay(model: torch.nn.Module, signatures: int, threads: int,
                      min_parameters: int = MIN_PARAMETERS) -> bool:
    """Whether a second process would shorten the work on ``signatures`` (the export; also the calibration): two
    signatures or more, two threads allowed and usable, and a model big enough to outweigh starting the process."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return (signatures >= 2 and min(threads, cores) >= 2
            and sum(p.numel() for p in model.parameters()) >= min_parameters)


def export_in_two_processes(model, examples: dict[str, dict[str, np.ndarray]], dest: Path) -> bool:
    """Write ``dest``: the signatures of ``examples`` (signature name -> example inputs, in file order) as one file,
    the first half converted here while a second process converts the rest.  False, and nothing written, if the
    second process fails or the merged file is not the two files' signatures (the caller exports in one
    process: an error in the model itself then says what it is).  An error converting the first half is
    raised, as the one-process export would raise it."""
    names = list(examples)
    half = (len(names) + 1) // 2
    first, second = ({n: examples[n] for n in part} for part in (names[:half], names[half:]))
    work = Path(dest).with_name(f".{Path(dest).name}.second-process")
    try:
        work.mkdir()
    except FileExistsError:  # not this run's: left alone, and the export runs in one process
        return False
    try:
        try:
            torch.save({"model": model, "examples": second}, work / "input.pt")
        except Exception:  # a model that does not pickle: exported in one process
            return False
        child = subprocess.Popen([sys.executable, "-m", __name__, str(work), str(os.getpid())],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            mine = converted(model, first)
        except BaseException:
            child.kill()
            raise
        finally:
            child.wait()
        theirs = work / "signatures.tflite"
        if child.returncode != 0 or not theirs.exists():
            return False
        theirs = theirs.read_bytes()
        content = merged_signatures({**dict.fromkeys(first, mine), **dict.fromkeys(second, theirs)}, examples)
        if content is None:
            return False
        Path(dest).write_bytes(content)
        return True
    finally:
        shutil.rmtree(work, ignore_errors=True)


def merged(first: bytes, second: bytes) -> bytes | None:
    """One model holding ``first``'s signatures then ``second``'s; None if ``second`` has subgraphs that are not
    signatures (control-flow bodies, which its operators would name by index)."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    models = []
    for data in (first, second):
        model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(data, 0))
        inline_buffers(model, data)
        models.append(model)
    into, other = models
    if len(other.subgraphs) != len(other.signatureDefs):
        return None
    buffers = _merged_buffers(into, other)
    codes = _merged_operator_codes(into, other)
    offset = len(into.subgraphs)
    names = {tensor.name for subgraph in into.subgraphs for tensor in subgraph.tensors}
    for subgraph in other.subgraphs:
        for tensor in subgraph.tensors:
            tensor.buffer = buffers[tensor.buffer]
            tensor.name = _unique(tensor.name, names)
        for op in subgraph.operators:
            op.opcodeIndex = codes[op.opcodeIndex]
        into.subgraphs.append(subgraph)
    for signature in other.signatureDefs:
        signature.subgraphIndex += offset
        into.signatureDefs.append(signature)
    builder = flatbuffers.Builder(len(first) + len(second))
    builder.Finish(into.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def merged_signatures(sources: dict[str, bytes], examples: dict[str, dict[str, np.ndarray]]) -> bytes | None:
    """One model of every signature of ``sources`` (signature name -> the file that holds it; the files are
    merged in the order of their first signature), or None if they do not merge into one whose every signature
    gives exactly what it gave in its own file.  The two halves of a two-process export, or the export cache's
    one-signature files."""
    files = list({id(content): content for content in sources.values()}.values())
    content = files[0]
    for other in files[1:]:
        content = merged(content, other)
        if content is None:
            return None
    return content if same_outputs(content, sources, examples) else None


def one_signature(source: Path, dest: Path, name: str) -> bool:
    """Write ``dest``: ``source`` with only its signature ``name`` and that signature's subgraph, every tensor and
    weight as it was (weights the other subgraphs alone read stay in the file, unread).  Quantising it is the
    full file's work for that one length; False, and no file, if ``source`` has subgraphs that are not
    signatures (control-flow bodies, which its operators would name by index)."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    data = Path(source).read_bytes()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(data, 0))
    if len(model.subgraphs) != len(model.signatureDefs):
        return False
    inline_buffers(model, data)
    kept = next(signature for signature in model.signatureDefs if signature.signatureKey.decode() == name)
    model.subgraphs = [model.subgraphs[kept.subgraphIndex]]
    kept.subgraphIndex = 0
    model.signatureDefs = [kept]
    builder = flatbuffers.Builder(len(data))
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    Path(dest).write_bytes(bytes(builder.Output()))
    return True


def _unique(name: bytes | None, names: set) -> bytes | None:
    """``name``, suffixed if ``names`` has it (each export numbers its tensors from 1: ai-edge-quantizer needs every
    name in the model unique), and added to ``names``."""
    if name is None:
        return name
    unique, count = name, 1
    while unique in names:
        unique, count = name + b";second-process-%d" % count, count + 1
    names.add(unique)
    return unique


def _merged_buffers(into, other) -> dict[int, int]:
    """``other``'s buffer index -> the index in ``into`` of the buffer with its bytes (an equal weight of ``into``,
    or the buffer appended; an empty buffer, an activation's, is always appended)."""
    by_content = {bytes(b.data): i for i, b in enumerate(into.buffers) if b.data is not None and len(b.data)}
    indices = {}
    for index, buffer in enumerate(other.buffers):
        key = bytes(buffer.data) if buffer.data is not None and len(buffer.data) else None
        if key is not None and key in by_content:
            indices[index] = by_content[key]
            continue
        into.buffers.append(buffer)
        indices[index] = len(into.buffers) - 1
    return indices


def _merged_operator_codes(into, other) -> dict[int, int]:
    def key(code):
        return max(code.builtinCode, code.deprecatedBuiltinCode), code.customCode, code.version

    known = {key(code): i for i, code in enumerate(into.operatorCodes)}
    indices = {}
    for index, code in enumerate(other.operatorCodes):
        if key(code) not in known:
            into.operatorCodes.append(code)
            known[key(code)] = len(into.operatorCodes) - 1
        indices[index] = known[key(code)]
    return indices


def same_outputs(content: bytes, sources: dict[str, bytes], examples: dict[str, dict[str, np.ndarray]]) -> bool:
    """Every signature of ``content`` gives, on its example, bit for bit what it gives in its source file."""
    from ai_edge_litert.interpreter import Interpreter

    merged_model, by_source = Interpreter(model_content=content), {}
    for name, source in sources.items():
        if id(source) not in by_source:
            by_source[id(source)] = Interpreter(model_content=source)
        inputs = {key: np.asarray(value, np.int32) for key, value in examples[name].items()}
        got, expected = (interpreter.get_signature_runner(name)(**inputs)
                         for interpreter in (merged_model, by_source[id(source)]))
        if got.keys() != expected.keys() or any(not np.array_equal(got[k], expected[k]) for k in got):
            return False
    return True


def _second_process(work: Path, parent: int) -> None:
    """The second process: convert the saved model's signatures and write the file; stop if this process's
    parent is gone (killed before it could stop this one), rather than export for no one."""
    def watch():
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()
    saved = torch.load(work / "input.pt", weights_only=False)
    (work / "signatures.tflite").write_bytes(converted(saved["model"], saved["examples"]))


if __name__ == "__main__":
    _second_process(Path(sys.argv[1]), int(sys.argv[2]))
