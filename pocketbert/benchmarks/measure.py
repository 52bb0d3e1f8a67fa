"""Time one configuration in a fresh process: load, first inference, warm-up, timed runs, peak memory.

    python -m pocketbert.benchmarks.measure < spec.json      # prints one JSON object on its last stdout line

Each configuration runs in its own process because peak resident memory is a per-process high-water
mark: measured in a shared process, every model after the first would inherit the largest one's peak,
and a model loaded earlier would still occupy memory.  Libraries are imported before the clock starts,
so ``init_ms`` is the model load (session/interpreter creation and tensor allocation), not Python
imports.  ``rss_before_load_mb`` is the high-water mark after those imports, so ``peak_rss_mb`` minus it
is what loading and running the model added.

The spec names a runner ``kind``: ``onnx`` (a .onnx file, ONNX Runtime CPU), ``tflite`` (a .tflite file,
the LiteRT interpreter, its ``seq_<n>`` signature; batch > 1 runs the rows one after another, as the
runtime does) or ``torch`` (a Hugging Face checkpoint directory, PyTorch eager).
"""

from __future__ import annotations

import inspect
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np


def _rss_peak_mb() -> float:
    """This process's resident high-water mark.  On Linux from VmHWM, not ru_maxrss: ru_maxrss survives
    fork + exec, so a child of a 400 MB parent would start at 400 MB; VmHWM belongs to the new image."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


class _Onnx:
    def __init__(self, spec):
        import onnxruntime as ort

        self.ort = ort

    def load(self, spec, feeds):
        ort = self.ort
        options = ort.SessionOptions()
        options.intra_op_num_threads = spec["threads"]
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        session = ort.InferenceSession(spec["path"], options, providers=["CPUExecutionProvider"])
        types = {i.name: np.int32 if i.type == "tensor(int32)" else np.int64 for i in session.get_inputs()}
        arrays = {name: feeds[name].astype(dtype) for name, dtype in types.items()}
        return lambda: session.run(None, arrays)[0]


class _Tflite:
    def __init__(self, spec):
        from ai_edge_litert.interpreter import Interpreter

        self.Interpreter = Interpreter

    def load(self, spec, feeds):
        interpreter = self.Interpreter(model_path=spec["path"], num_threads=spec["threads"])
        name = f"seq_{spec['seq_len']}"
        signatures = interpreter.get_signature_list()
        if name not in signatures:
            raise LookupError(f"no signature {name} (the file has {', '.join(sorted(signatures))})")
        runner = interpreter.get_signature_runner(name)
        dtypes = {k: v["dtype"] for k, v in runner.get_input_details().items()}
        rows = [{k: feeds[k][i:i + 1].astype(dtypes[k]) for k in dtypes} for i in range(spec["batch"])]

        def run():
            return [runner(**row)["logits"] for row in rows]

        return run


class _Torch:
    def __init__(self, spec):
        import torch
        import transformers

        self.torch, self.transformers = torch, transformers

    def load(self, spec, feeds):
        torch, transformers = self.torch, self.transformers
        torch.set_num_threads(spec["threads"])
        cls = (transformers.AutoModelForTokenClassification if spec.get("task") == "ner"
               else transformers.AutoModelForSequenceClassification)
        model = cls.from_pretrained(spec["path"], num_labels=spec["num_labels"],
                                    ignore_mismatched_sizes=True).eval()
        accepted = set(inspect.signature(model.forward).parameters)  # DistilBERT takes no token_type_ids
        tensors = {k: torch.from_numpy(v) for k, v in feeds.items() if k in accepted}

        def run():
            with torch.inference_mode():
                return model(**tensors).logits

        return run


KINDS = {"onnx": _Onnx, "tflite": _Tflite, "torch": _Torch}


def measure(spec: dict) -> dict:
    feeds = dict(np.load(spec["inputs"]))
    kind = KINDS[spec["kind"]](spec)  # imports happen here, before any clock starts
    rss_before = _rss_peak_mb()
    start = time.perf_counter()
    run = kind.load(spec, feeds)
    init_ms = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    run()
    first_ms = (time.perf_counter() - start) * 1000
    warm = []
    for _ in range(spec["warmup"]):
        start = time.perf_counter()
        run()
        warm.append((time.perf_counter() - start) * 1000)
    timed = []
    deadline = time.perf_counter() + spec.get("max_seconds", 1e9)
    for _ in range(spec["runs"]):
        start = time.perf_counter()
        run()
        timed.append((time.perf_counter() - start) * 1000)
        if time.perf_counter() > deadline and len(timed) >= spec.get("min_runs", 1):
            break
    return {"init_ms": init_ms, "first_ms": first_ms,
            "warmup": {"runs": len(warm), "mean_ms": float(np.mean(warm)) if warm else None},
            "times_ms": timed, "peak_rss_mb": _rss_peak_mb(), "rss_before_load_mb": rss_before}


def main() -> None:
    spec = json.loads(sys.stdin.read())
    try:
        result = measure(spec)
    except Exception as exc:  # reported to the parent as data: one failed configuration is not a failed run
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        sys.exit(1)
    print(json.dumps(result))


def run_in_subprocess(spec: dict, timeout: float = 1800) -> dict:
    """Run :func:`measure` in a fresh interpreter; returns its result, or ``{"error": …}``."""
    import subprocess

    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONWARNINGS="ignore")
    repo = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = repo + os.pathsep + env.get("PYTHONPATH", "") if env.get("PYTHONPATH") else repo
    proc = subprocess.run([sys.executable, "-m", "pocketbert.benchmarks.measure"], input=json.dumps(spec), text=True,
                          capture_output=True, env=env, timeout=timeout)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if lines:
        return json.loads(lines[-1])
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"measurement process exited with {proc.returncode}: {tail}"}


if __name__ == "__main__":
    main()
