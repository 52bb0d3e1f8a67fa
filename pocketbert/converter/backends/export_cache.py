"""Exported files kept by what they were exported from, for runs that export the same model many times.

Tracing, decomposing and lowering a model costs the same few seconds per signature whatever the weights do (a
tiny 2-layer BERT: ~8 s per TFLite signature), and most of a conversion's time when the model is small.  With
``POCKETBERT_EXPORT_CACHE=DIR`` an export whose inputs equal an earlier one's reuses that export's file.  The
test suite sets it: its tests convert the same tiny checkpoints many times and differ after the export.

A file of several signatures (TFLite's one per sequence-length bucket) is kept one signature at a time
(:func:`cached_signatures`) and merged: an export of buckets 16 and 32 and another of 32 and 64 trace bucket 32
once.

Equal inputs means the same key (:func:`key`): every module's class, its plain attributes and the code its
``forward`` runs, every parameter and buffer (values, not only shapes), each model config (attention implementation
included), the example inputs (values too: a trace may branch on them), the exporter's settings and the versions of
torch and the exporters.  Anything else that changes an export (a patched library function) must not run with the
cache set.
"""

from __future__ import annotations

import functools
import hashlib
import os
import types
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import numpy as np
import torch

ENV = "POCKETBERT_EXPORT_CACHE"
#: attributes a forward may read besides parameters and buffers (a scale, the input names)
_PLAIN = (bool, int, float, str, tuple, list, type(None))
_PACKAGES = ("torch", "litert-torch", "ai-edge-litert", "onnx", "onnxscript", "transformers")


def cached(export: Callable[[], None], dest: Path, *, kind: str, model: torch.nn.Module, settings: object,
           examples: dict) -> bool:
    """Run ``export()`` (which writes ``dest``) unless the cache holds its file; True if the file came from the
    cache.  Without ``POCKETBERT_EXPORT_CACHE`` this is ``export()``."""
    folder = os.environ.get(ENV)
    if not folder:
        export()
        return False
    entry = Path(folder) / f"{kind}-{key(model, settings, examples)}"
    if entry.is_file():
        Path(dest).write_bytes(entry.read_bytes())
        return True
    export()
    partial = entry.with_name(f".{entry.name}.{os.getpid()}.partial")
    try:  # the export is done; a cache that cannot take it (a full disk) is only a cache
        entry.parent.mkdir(parents=True, exist_ok=True)
        partial.write_bytes(Path(dest).read_bytes())
        os.replace(partial, entry)  # whole or absent: another process may be writing the same key
    except OSError:
        partial.unlink(missing_ok=True)
    return False


def cached_signatures(export: Callable[[dict, Path], None], dest: Path, *, kind: str, model: torch.nn.Module,
                      settings: object, examples: dict, merge: Callable[[dict[str, bytes]], bytes | None]) -> bool:
    """:func:`cached` for each signature of ``examples`` (signature name -> example inputs) on its own, then
    ``merge`` (signature name -> its file, in order -> one file, or None if they do not merge into one that
    computes what each did); ``export(examples, dest)`` writes a file of those signatures.  True if every
    signature came from the cache.  Without ``POCKETBERT_EXPORT_CACHE``, or with one signature, this is
    :func:`cached` of the whole export; a merge that fails exports the whole file."""
    if not os.environ.get(ENV) or len(examples) < 2:
        return cached(lambda: export(examples, dest), dest, kind=kind, model=model, settings=settings,
                      examples=examples)
    dest = Path(dest)
    parts = {name: dest.with_name(f".{dest.name}.{name}.part") for name in examples}
    try:
        hits = [cached(functools.partial(export, {name: examples[name]}, part), part, kind=kind, model=model,
                       settings=settings, examples={name: examples[name]}) for name, part in parts.items()]
        content = merge({name: part.read_bytes() for name, part in parts.items()})
    finally:
        for part in parts.values():
            part.unlink(missing_ok=True)
    if content is None:
        export(examples, dest)
        return False
    dest.write_bytes(content)
    return all(hits)


def key(model: torch.nn.Module, settings: object, examples: dict) -> str:
    digest = hashlib.sha256()
    for name in _PACKAGES:
        digest.update(f"{name}={_version(name)};".encode())
    digest.update(repr(settings).encode())
    for name, module in model.named_modules():
        digest.update(f"{name}:{type(module).__module__}.{type(module).__qualname__}:{module.extra_repr()}".encode())
        _code(digest, getattr(module, "forward", None))
        digest.update(repr(sorted((k, v) for k, v in vars(module).items()
                                  if not k.startswith("_") and isinstance(v, _PLAIN))).encode())
        config = getattr(module, "config", None)
        if config is not None and hasattr(config, "to_json_string"):
            digest.update(config.to_json_string(use_diff=False).encode())
            digest.update(str(getattr(config, "_attn_implementation", None)).encode())
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}".encode())
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    for signature, inputs in examples.items():
        for name, value in inputs.items():
            array = np.ascontiguousarray(value)
            digest.update(f"{signature}:{name}:{array.dtype}:{array.shape}".encode())
            digest.update(array.tobytes())
    return digest.hexdigest()


def _code(digest, function) -> None:
    """The code ``function`` runs: its bytecode, constants (nested code too) and the names it reads."""
    function = getattr(function, "__func__", function)
    code = getattr(function, "__code__", None)
    if code is None:
        digest.update(repr(function).encode())
        return
    _code_object(digest, code)


def _code_object(digest, code: types.CodeType) -> None:
    digest.update(code.co_code)
    digest.update(repr(code.co_names).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _code_object(digest, const)
        else:
            digest.update(repr(const).encode())


@functools.cache  # read once per process, not at every export
def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"
