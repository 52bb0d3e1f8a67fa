"""LiteRT (TFLite) backend: static shapes, one signature per sequence bucket, batch 1.

Each row is padded to the smallest bucket signature (``seq_<length>``) that holds it, as the
converter's verification did; a call may hold several rows of one bucket (the pipeline never mixes
buckets in a batch, :attr:`Backend.buckets`), which run one after another.  Full-integer models
return int8 logits, which are dequantised with the output tensor's (scale, zero point).  A LiteRT interpreter is not thread-safe, so calls borrow one
from a pool of ``instances`` interpreters (created on demand): concurrent callers wait for a free one
rather than share it.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..buckets import bucket_of, smallest_bucket
from ..errors import InputError, ModelError
from ..quiet import native_stderr_silenced
from . import register
from .base import Backend

if TYPE_CHECKING:
    from ai_edge_litert.interpreter import Interpreter


@dataclass
class _Instance:
    interpreter: Interpreter
    runners: dict  # bucket -> SignatureRunner
    dequantize: dict  # bucket -> (scale, zero_point) for integer logits
    started: set = field(default_factory=set)  # buckets invoked once: LiteRT applies its delegate at the first


class TfliteBackend(Backend):
    name = "tflite"
    import_name, pip_package = "ai_edge_litert", "ai-edge-litert"
    order = 1
    fixed_lengths = True

    @classmethod
    def open(cls, artifact, input_names, threads, instances=1):
        return cls(artifact.path, input_names, threads, instances)

    def __init__(self, path: Path, input_names: list[str], threads: int | None = None, instances: int = 1):
        self.path = path
        self.threads = threads
        self.input_names = list(input_names)
        self._pool: queue.LifoQueue[_Instance] = queue.LifoQueue()
        self._capacity = max(1, instances)
        self._created = 0
        self._lock = threading.Lock()
        first = self._new_instance()
        self.buckets = sorted(first.runners)
        self.max_length = self.buckets[-1]
        self._dtypes = {name: details["dtype"] for name, details in
                        first.runners[self.buckets[0]].get_input_details().items()}
        if set(self._dtypes) != set(self.input_names):
            raise ModelError(f"{path.name} takes inputs {sorted(self._dtypes)}; the manifest says "
                             f"{sorted(self.input_names)}", "the model file does not belong to this manifest; "
                             "convert again")
        self._pool.put(first)

    def _new_instance(self) -> _Instance:
        from ai_edge_litert.interpreter import Interpreter

        try:
            interpreter = Interpreter(model_path=str(self.path), num_threads=self.threads or None)
            signatures = interpreter.get_signature_list()
        except Exception as exc:  # ValueError("not a valid Flatbuffer"), RuntimeError from the C++ side
            raise ModelError(f"LiteRT cannot load {self.path.name}: {exc}",
                             "the file is damaged or not a TFLite model; copy the bundle again or convert again") \
                from exc
        names = [s for s in signatures if bucket_of(s) is not None]
        if not names or any("logits" not in signatures[s]["outputs"] for s in names):
            raise ModelError(f"{self.path.name} has signatures {sorted(signatures)}; expected seq_<length> "
                             "signatures with a logits output", "convert again with --format tflite")
        runners, dequantize = {}, {}
        for name in names:
            bucket = bucket_of(name)
            runners[bucket] = interpreter.get_signature_runner(name)
            output = runners[bucket].get_output_details()["logits"]
            if np.issubdtype(output["dtype"], np.integer):
                dequantize[bucket] = output["quantization"]
        with self._lock:
            self._created += 1
        return _Instance(interpreter, runners, dequantize)

    @contextlib.contextmanager
    def _borrow(self):
        try:
            instance = self._pool.get_nowait()
        except queue.Empty:
            with self._lock:
                grow = self._created < self._capacity
            instance = self._new_instance() if grow else self._pool.get()
        try:
            yield instance
        finally:
            self._pool.put(instance)

    def bucket_for(self, length: int) -> int:
        bucket = smallest_bucket(self.buckets, length)
        if bucket is not None:
            return bucket
        raise InputError(f"a row of {length} tokens is longer than the largest bucket ({self.max_length})",
                         "truncate to the pipeline's max_length (the pipeline does this for you)")

    def run(self, feeds: dict[str, np.ndarray], quiet: bool = False) -> np.ndarray:
        batch, length = feeds["input_ids"].shape
        bucket = self.bucket_for(length)
        rows = []
        with self._borrow() as instance:
            runner = instance.runners[bucket]
            for i in range(batch):
                row = {}
                for name in self.input_names:
                    padded = np.zeros((1, bucket), dtype=self._dtypes[name])  # pad id 0, mask 0, type 0
                    padded[0, :length] = feeds[name][i]
                    row[name] = padded
                if bucket in instance.started:
                    logits = runner(**row)["logits"]
                else:  # the first invocation prints "INFO: Created TensorFlow Lite XNNPACK delegate" on fd 2
                    with native_stderr_silenced():
                        logits = runner(**row)["logits"]
                    instance.started.add(bucket)
                if bucket in instance.dequantize:
                    scale, zero_point = instance.dequantize[bucket]
                    logits = (logits.astype(np.float32) - zero_point) * np.float32(scale)
                else:  # copy: the interpreter reuses its output buffer on the next call
                    logits = np.array(logits, dtype=np.float32)
                rows.append(logits[:, :length] if logits.ndim == 3 else logits)
        return np.concatenate(rows)

    def describe(self) -> str:
        return f"LiteRT interpreter, buckets {', '.join(map(str, self.buckets))}"


register(TfliteBackend)
