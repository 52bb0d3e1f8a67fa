"""Full-integer TFLite calibration: each bucket signature's activation ranges on the calibration rows fitted to its
length, with the logits' ranges widened to the rows' true extremes.

ai-edge-quantizer's profiler-based calibration runs the interpreter with each tensor's min and max tracked in C++
(the default mode copies every tensor out and reduces it in Python: the same ranges, SST-2 demo, in a fifth of the
time).  It holds the interpreter, and Python's lock, for the whole run, so threads cannot share the signatures out,
and at batch 1 a second XNNPACK thread adds little (24-layer MobileBERT shape, 4 signatures: 1.23x one thread).
When two cores are free and the model is big enough, a second process therefore calibrates the longest signatures
on one thread while this one calibrates the rest on the other: each signature's tensors are its own, so the two
halves' ranges together are exactly the ranges of one run (``tests/test_tflite_calibration.py``).  If the second
process fails, this one calibrates its signatures too.

This file runs as that second process by its path, so that it starts without importing torch (0.3 s, not 4).
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from pocketbert.runtime.buckets import signature_name  # the torch-free runtime: the second process stays light

#: calibration rows each signature runs to collect its activation ranges: ai-edge-quantizer keeps a moving
#: average (factor 0.95) of each row's min and max, in which the k-th row from the end weighs 0.05 x 0.95^k and
#: all rows before the last 256 together 0.95^256 (about 2e-6): the last 256 rows give the ranges every row
#: would (tests/test_tflite_calibration.py), for a quarter of the runs at 1,024 rows.  The logits' range
#: (:func:`_widen_output_ranges`) still reads every row.
RANGE_ROWS = 256

#: a model this small calibrates faster in one process (on two threads) than a second process starts and reads it
MIN_PARAMETERS = 5_000_000


def calibrate(spec, float_path: Path, calibration: list, recipe: list) -> dict:
    """Activation ranges (tensor name -> {"min", "max"}) for every signature of ``float_path``, on the
    calibration rows fitted to its length; ``recipe``: the full-integer recipe the file will be quantised with."""
    from .tflite_signatures import two_processes_pay

    rows = [{n: batch[n][i:i + 1] for n in spec.input_names}
            for batch in calibration for i in range(batch["input_ids"].shape[0])]
    data = {signature_name(b): [{n: fit(r[n], b) for n in r} for r in rows] for b in spec.buckets}
    last = {name: fitted[-RANGE_ROWS:] for name, fitted in data.items()}
    if two_processes_pay(spec.model, len(last), spec.threads, min_parameters=MIN_PARAMETERS):
        calibrated = in_two_processes(float_path, recipe, last, longest_half(spec.buckets))
    else:
        calibrated = _here(float_path, recipe, last, threads=max(1, spec.threads))
    _widen_output_ranges(spec, float_path, calibrated, data)
    return calibrated


def ranges(float_path: Path, recipe: list, data: dict, threads: int, hush=contextlib.nullcontext) -> dict:
    """ai-edge-quantizer's profiler-based calibration of ``data`` (signature name -> input rows); ``hush``: a
    context keeping the quantizer's narration off the terminal.  Imports nothing of this package (see the end)."""
    from ai_edge_quantizer import quantizer
    from ai_edge_quantizer.calibrator import CalibrationMode

    # bytes, not a path: given a path, the quantizer maps the file and never closes it (tflite_graph.model_bytes)
    qt = quantizer.Quantizer(bytearray(Path(float_path).read_bytes()), recipe)
    with hush():
        return qt.calibrate(data, num_threads=threads, mode=CalibrationMode.CALIBRATION_PROFILER_BASED)


def _here(float_path: Path, recipe: list, data: dict, threads: int) -> dict:
    from .tflite_recipes import quiet

    return ranges(float_path, recipe, data, threads, hush=quiet)


def longest_half(buckets: list[int]) -> list[str]:
    """The signatures the second process calibrates: the longest, until they hold half the tokens (a row's cost)."""
    chosen, tokens = [], 0
    for length in sorted(buckets, reverse=True):
        if tokens >= sum(buckets) / 2 or len(chosen) == len(buckets) - 1:
            break
        chosen.append(signature_name(length))
        tokens += length
    return chosen


def in_two_processes(float_path: Path, recipe: list, data: dict, theirs: list[str]) -> dict:
    """The ranges of every signature of ``data``: those named in ``theirs`` calibrated by a second process, the rest
    here, each on one thread; the second process's share calibrated here too if it fails."""
    work = Path(float_path).with_name(f".{Path(float_path).name}.calibration")
    try:
        work.mkdir()
    except FileExistsError:  # not this run's: left alone, and the calibration runs here
        return _here(float_path, recipe, data, threads=2)
    try:
        (work / "recipe.json").write_text(json.dumps(recipe))
        with open(work / "rows.pkl", "wb") as out:
            pickle.dump({name: data[name] for name in theirs}, out)
        child = subprocess.Popen([sys.executable, __file__, str(float_path), str(work), str(os.getpid())],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            found = _here(float_path, recipe, {n: rows for n, rows in data.items() if n not in theirs}, threads=1)
        except BaseException:
            child.kill()
            raise
        finally:
            child.wait()
        result = work / "ranges.pkl"
        if child.returncode == 0 and result.exists():
            with open(result, "rb") as source:
                return {**found, **pickle.load(source)}
        return {**found, **_here(float_path, recipe, {n: data[n] for n in theirs}, threads=2)}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _widen_output_ranges(spec, float_path: Path, calibrated: dict, data: dict) -> None:
    """Give each signature's logits the calibration rows' true extremes as their int8 range.

    The quantizer's range is a moving average of each row's min and max, which clips the rows that reach
    further: on the SST-2 demo it kept ±2.1 of logits reaching ±3.9, so confident sentences' logits were
    cut (top-1 kept, cosine against float 0.98). Inside the network that averaging is a useful clip;
    on the output nothing downstream tolerates it.

    The float logits come from the rows without their padding (``verify.unpadded_logits``: the same logits at
    real positions; a padded position's are discarded), sorted by length in batches of 64, computed once for
    the signatures a row fits: all the rows at once at the longest bucket held every padding column (1,024 x 256
    tokens in one batch), minutes of a conversion.
    """
    import torch
    from ai_edge_litert.interpreter import Interpreter

    from ..checks import verify

    interpreter = Interpreter(model_path=str(float_path))
    computed: dict = {}
    for signature, rows in data.items():
        name = interpreter.get_signature_runner(signature).get_output_details()[spec.output_name]["name"]
        batches = verify.unpadded_batches([{n: r[n].astype(np.int64) for n in spec.input_names} for r in rows],
                                          size=64)
        with torch.no_grad():
            logits = verify.unpadded_logits(spec.model, batches, computed)
        qsv = calibrated[name]
        qsv["min"] = np.minimum(qsv["min"], min(x.min() for x in logits)).astype(np.float32)
        qsv["max"] = np.maximum(qsv["max"], max(x.max() for x in logits)).astype(np.float32)


def fit(ids: np.ndarray, length: int) -> np.ndarray:
    """One row of int inputs as int32, zero-padded (pad id, mask 0, token type 0) or cut to ``length``."""
    out = np.zeros((1, length), dtype=np.int32)
    n = min(length, ids.shape[1])
    out[0, :n] = ids[0, :n]
    return out


def _second_process(float_path: Path, work: Path, parent: int) -> None:
    """The second process: calibrate the saved rows and write their ranges; stop if the parent is gone (killed
    before it could stop this one), rather than calibrate for no one."""
    def watch():
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()
    with open(work / "rows.pkl", "rb") as source:
        data = pickle.load(source)
    found = ranges(float_path, json.loads((work / "recipe.json").read_text()), data, threads=1)
    partial = work / "ranges.pkl.partial"
    with open(partial, "wb") as out:
        pickle.dump(found, out)
    partial.replace(work / "ranges.pkl")


if __name__ == "__main__":  # run by its path: this package's __init__ would import torch
    _second_process(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))
