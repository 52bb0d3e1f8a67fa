"""The results file every subcommand writes and ``report`` reads: one schema for desktop and phone.

A results file is one JSON object::

    {"schema": "pocketbert-bench/1", "command": "latency" | "device" | "accuracy",
     "created": ISO time, "fast": bool, "machine": {...} (runtime.machine.describe), "device": {...},
     "gemm_floor": [...], "results": [record, ...]}

A latency record (desktop and device alike) is one configuration — model × variant × backend ×
threads × sequence length × batch::

    {"model": name, "model_label": str, "random_weights": bool, "bundle": path | null,
     "variant": "bundle" | "peer", "runner": "onnx:int8-dynamic" | "peer:torch-eager-fp32" | …,
     "backend": "onnx" | "tflite" | "torch", "precision": "fp32" | "int8-dynamic" | …,
     "threads": int, "seq_len": int, "batch": int,
     "where": "desktop" | "device:<serial>" | "browser" (web_demo) | "android-webview" (device --apk),
     "init_ms", "first_ms": float | null, "warmup": {"runs", "mean_ms"},
     "timed": {"runs", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "std_ms", "min_ms", "max_ms"},
     "peak_rss_mb": float | null, "size_bytes": int | null,
     "macs": int | null, "floor": {"precision", "ms", "fraction"} | null,
     "skipped": null | "reason", "notes": [str]}

``floor.fraction`` = GEMM floor ms / p50 ms: the share of this CPU's matrix throughput the run achieved.
Percentiles a tool does not print (benchmark_model without percentiles) are null, never invented.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np

SCHEMA = "pocketbert-bench/1"
TIMED_KEYS = ("runs", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "std_ms", "min_ms", "max_ms")
RECORD_KEYS = ("model", "variant", "runner", "backend", "precision", "threads", "seq_len", "batch", "where",
               "init_ms", "first_ms", "warmup", "timed", "peak_rss_mb", "size_bytes", "macs", "floor", "skipped")


def summarize(times_ms: list[float]) -> dict:
    """Mean, percentiles (linear interpolation, as numpy), std (population) and extremes of timed runs."""
    a = np.asarray(times_ms, dtype=float)
    p50, p90, p99 = np.percentile(a, [50, 90, 99])
    return {"runs": int(a.size), "mean_ms": float(a.mean()), "p50_ms": float(p50), "p90_ms": float(p90),
            "p99_ms": float(p99), "std_ms": float(a.std()), "min_ms": float(a.min()), "max_ms": float(a.max())}


def typical_ms(record: dict) -> float:
    """The figure rows are compared on: p50, or the mean when the tool printed no percentiles."""
    timed = record["timed"]
    return timed["p50_ms"] if timed.get("p50_ms") is not None else timed["mean_ms"]


def new_file(command: str, *, fast: bool, machine: dict | None = None, **extra) -> dict:
    return {"schema": SCHEMA, "command": command, "created": dt.datetime.now(dt.timezone.utc).isoformat(
        timespec="seconds"), "fast": fast, "machine": machine, **extra, "results": []}


def write(data: dict, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=_default) + "\n", encoding="utf-8")
    tmp.replace(path)  # a reader never sees half a file
    return path


def _default(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def read(path: Path) -> dict:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ValueError(f"{path} is not a PocketBERT benchmark results file (schema {SCHEMA})")
    return data


def check_record(record: dict) -> list[str]:
    """Problems with one latency record (empty list: well-formed).  Used by tests and by ``report``."""
    problems = [f"missing {k}" for k in RECORD_KEYS if k not in record]
    if problems or record.get("skipped"):
        return problems
    timed = record["timed"]
    problems += [f"timed.{k} missing" for k in TIMED_KEYS if k not in timed]
    if problems:
        return problems
    present = [timed[k] for k in ("min_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms") if timed[k] is not None]
    if any(b < a - 1e-9 for a, b in zip(present, present[1:])):
        problems.append(f"percentiles not ordered: {present}")
    if timed["mean_ms"] is None or timed["mean_ms"] <= 0:
        problems.append("mean_ms must be positive")
    return problems
