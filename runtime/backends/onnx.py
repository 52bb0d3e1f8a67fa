"""ONNX Runtime backend: one shared CPU session.

``InferenceSession.run`` is thread-safe, so concurrent callers share the session (and its weights)
instead of each loading a copy.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort

from ..errors import ModelError
from .base import Backend

_DTYPES = {"tensor(int64)": np.int64, "tensor(int32)": np.int32}


class OnnxBackend(Backend):
    name = "onnx"

    def __init__(self, path: Path, input_names: list[str], threads: int | None = None):
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors reach the caller as exceptions, not as console noise
        try:
            self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # InvalidProtobuf, Fail, …: all mean the file is not a usable model
            raise ModelError(f"ONNX Runtime cannot load {path.name}: {_first_line(exc)}",
                             "the file is damaged or not an ONNX model; copy the bundle again or convert again") \
                from exc
        graph_inputs = {i.name: i for i in self.session.get_inputs()}
        outputs = [o.name for o in self.session.get_outputs()]
        if set(graph_inputs) != set(input_names) or "logits" not in outputs:
            raise ModelError(f"{path.name} has inputs {sorted(graph_inputs)} and outputs {outputs}; the manifest "
                             f"says inputs {sorted(input_names)} and output logits",
                             "the model file does not belong to this manifest; convert again")
        self._dtypes = {name: _DTYPES.get(graph_inputs[name].type, np.int64) for name in input_names}
        self._quiet = ort.RunOptions()
        self._quiet.log_severity_level = 4

    def run(self, feeds: dict[str, np.ndarray], quiet: bool = False) -> np.ndarray:
        arrays = {name: feeds[name].astype(dtype, copy=False) for name, dtype in self._dtypes.items()}
        return self.session.run(["logits"], arrays, self._quiet if quiet else None)[0]

    def describe(self) -> str:
        return f"onnxruntime {ort.__version__} (CPU)"


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
