"""Parse TensorFlow Lite / LiteRT ``benchmark_model`` output into the latency record's timing fields.

Formats handled (verbatim samples in tests/benchmarks/fixtures, sources in their SOURCES.md):

* older (TF ≤ 2.1): ``Average inference timings in us: Warmup: W, Init: I, no stats: N`` (or
  ``…, Inference: N``); no first-inference time, no memory line.
* newer (TF ≥ 2.2, LiteRT): ``Inference timings in us: Init: I, First inference: F, Warmup (avg): W,
  Inference (avg): N``, then ``Peak memory footprint (MB): init=A overall=B`` or, in later builds,
  ``Memory footprint delta from the start of the tool (MB): init=A overall=B`` (a delta, not a peak;
  the record says which), sometimes ``Overall peak memory footprint (MB) via periodic monitoring: P``.
* per-phase statistics lines ``count=N first=… curr=… min=… max=… avg=… std=…``, in recent builds with
  ``p5=… median=… p95=…``; the last one before the summary belongs to the timed runs (the one before it
  to the warm-up).  Lines may carry an ``INFO: `` prefix (newer builds) or a logcat prefix.
* with ``--enable_op_profiling`` the op tables end in ``Timings (microseconds): count=…``: those are the
  profiler's totals, used only when no plain statistics line exists.

Everything is reported in milliseconds.  A percentile the tool did not print stays ``None``.
"""

from __future__ import annotations

import re

_NUM = r"(-?[0-9.]+(?:e[+-]?[0-9]+)?)"
_NEW = re.compile(r"Inference timings in us: Init: " + _NUM + r", First inference: " + _NUM
                  + r", Warmup \(avg\): " + _NUM + r", Inference \(avg\): " + _NUM)
_OLD = re.compile(r"Average inference timings in us: Warmup: " + _NUM + r", Init: " + _NUM
                  + r", (?:no stats|Inference): " + _NUM)
_MEMORY = re.compile(r"(Peak memory footprint|Memory footprint delta from the start of the tool) \(MB\): init="
                     + _NUM + r" overall=" + _NUM)
_PERIODIC = re.compile(r"Overall peak memory footprint \(MB\) via periodic monitoring: " + _NUM)
_STATS = re.compile(r"count=(\d+)((?: [a-z0-9]+=-?[0-9.e+]+)*)")
_SIZE = re.compile(r"The input model file size \(MB\): " + _NUM)


class BenchmarkOutputError(ValueError):
    """The output holds no timing summary (the benchmark failed, or this is not benchmark_model output)."""


def _stats(line: str) -> dict[str, float]:
    match = _STATS.search(line)
    fields = dict(kv.split("=") for kv in match.group(2).split()) if match else {}
    out = {"count": float(match.group(1))} if match else {}
    out.update({k: float(v) for k, v in fields.items()})
    return out


def parse(text: str) -> dict:
    """Timing fields of one benchmark_model run (milliseconds), or :class:`BenchmarkOutputError`."""
    lines = text.splitlines()
    new = next((m for m in map(_NEW.search, lines) if m), None)
    old = next((m for m in map(_OLD.search, lines) if m), None)
    if not new and not old:
        errors = [line.strip() for line in lines if "ERROR" in line or "failed" in line.lower()]
        raise BenchmarkOutputError("benchmark_model printed no timing summary"
                                   + (": " + " | ".join(errors[-4:]) if errors else " (is this its output?)"))
    if new:
        init_us, first_us, warm_us, inference_us = (float(x) for x in new.groups())
        fmt = "newer"
    else:
        warm_us, init_us, inference_us = (float(x) for x in old.groups())
        first_us, fmt = None, "older"
    plain = [_stats(line) for line in lines if "count=" in line and "Timings (microseconds)" not in line
             and "first=" in line]
    profiled = [_stats(line) for line in lines if "Timings (microseconds): count=" in line and "first=" in line]
    runs = plain[-1] if plain else (profiled[-1] if profiled else {})

    def ms(key: str) -> float | None:
        return runs[key] / 1000 if key in runs else None

    timed = {"runs": int(runs["count"]) if runs else None, "mean_ms": inference_us / 1000,
             "p50_ms": ms("median"), "p90_ms": None, "p99_ms": None, "std_ms": ms("std"),
             "min_ms": ms("min"), "max_ms": ms("max"), "p5_ms": ms("p5"), "p95_ms": ms("p95")}
    memory = next((m for m in map(_MEMORY.search, lines) if m), None)
    periodic = next((m for m in map(_PERIODIC.search, lines) if m), None)
    size = next((m for m in map(_SIZE.search, lines) if m), None)
    return {
        "format": fmt,
        "init_ms": init_us / 1000,
        "first_ms": first_us / 1000 if first_us is not None else None,
        "warmup": {"runs": int(plain[-2]["count"]) if len(plain) >= 2 else None, "mean_ms": warm_us / 1000},
        "timed": timed,
        "timed_source": "statistics line" if plain else ("op profiler totals" if profiled else "summary only"),
        "memory_mb": ({"kind": "peak" if memory.group(1).startswith("Peak") else "delta from tool start",
                       "init": float(memory.group(2)), "overall": float(memory.group(3))} if memory else None),
        "periodic_peak_mb": float(periodic.group(1)) if periodic else None,
        "model_file_mb": float(size.group(1)) if size else None,
    }
