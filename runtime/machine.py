"""What the figures were measured on: CPU, cores, matrix instruction sets, load, library versions.

Every results file carries this, so a report never shows a number without the machine that made it
(and the load average says whether the machine was quiet).
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
from pathlib import Path

# CPU flags that decide which GEMM kernels run: int8 dot products (VNNI), AMX tiles, wide vectors.
MATRIX_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_tile", "amx_int8",
                "amx_bf16", "asimd", "asimddp", "i8mm", "sve")
PACKAGES = ("torch", "transformers", "onnxruntime", "onnx", "ai-edge-litert", "litert-torch", "numpy")


def _cpuinfo() -> dict[str, str]:
    path = Path("/proc/cpuinfo")
    if not path.is_file():
        return {}
    info: dict[str, str] = {}
    for line in path.read_text(errors="replace").splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key and key not in info:
            info[key] = value.strip()
    return info


def versions() -> dict[str, str | None]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def describe() -> dict:
    info = _cpuinfo()
    flags = set((info.get("flags") or info.get("Features") or "").split())
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count()
    return {
        "cpu": info.get("model name") or platform.processor() or platform.machine(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": usable,
        "matrix_flags": [f for f in MATRIX_FLAGS if f in flags],
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "versions": versions(),
    }


def load_average() -> list[float] | None:
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
