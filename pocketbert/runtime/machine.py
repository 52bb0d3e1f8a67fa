"""What a figure or a verification ran on: CPU, cores, matrix instruction sets, load, library versions.

Every benchmark results file carries :func:`describe`, so a report never shows a number without the
machine that made it (and the load average says whether the machine was quiet).  Every bundle's
manifest carries :func:`verifying_machine`: int8 kernels differ by instruction set, so a verification
states the kernels it ran on.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
from pathlib import Path

# CPU flags that decide which GEMM kernels run: int8 dot products (VNNI), AMX tiles, wide vectors.
MATRIX_FLAGS = ("sse4_1", "avx", "avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_tile",
                "amx_int8", "amx_bf16", "asimd", "asimddp", "i8mm", "sve")
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


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def describe() -> dict:
    info = _cpuinfo()
    flags = set((info.get("flags") or info.get("Features") or "").split())
    usable = usable_cpus()
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


def int8_kernels(flags: set[str] | list[str]) -> str:
    """Which integer dot-product path ONNX Runtime (MLAS) and XNNPACK take on a CPU with these flags."""
    flags = set(flags)
    if "amx_int8" in flags:
        return "x86 AMX tiles"
    if flags & {"avx512_vnni", "avx_vnni"}:
        return "x86 VNNI dot products (32-bit accumulation)"
    if "avx2" in flags:
        # two kernels, one class: MLAS (QgemmU8X8KernelAvx2) adds uint8 x int8 products pairwise in 16 bits
        # (VPMADDUBSW, which can saturate), XNNPACK's int8 GEMM (qd8/qc8w ...c8__avx2) widens both operands to 16
        # bits and adds pairs in 32 (VPMOVSXBW + VPMADDWD), which cannot
        return ("x86 AVX2/AVX-512 without VNNI (16-bit multiply-adds: ONNX Runtime sums uint8 x int8 pairs in "
                "16 bits, XNNPACK sign-extends int8 to 16 bits)")
    if flags & {"sse4_1", "avx"}:
        return "x86 SSE4.1/AVX without AVX2 (16-bit widening multiplies)"
    if "asimddp" in flags:
        return "ARM dot products (SDOT/UDOT)"
    if "asimd" in flags:
        return "ARM NEON without dot products (16-bit widening multiplies)"
    return f"generic ({platform.machine()})"


def verifying_machine() -> dict:
    """The part of :func:`describe` that decides int8 results: recorded in every manifest."""
    info = describe()
    return {"cpu": info["cpu"], "architecture": platform.machine(), "matrix_flags": info["matrix_flags"],
            "int8_kernels": int8_kernels(info["matrix_flags"]),
            "versions": {k: v for k, v in info["versions"].items() if k in ("onnxruntime", "ai-edge-litert")}}


def load_average() -> list[float] | None:
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
