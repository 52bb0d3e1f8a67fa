"""Run TFLite models on pre-tokenized rows at every bucket signature; the same file on x86 and on aarch64.

    python litert_worker.py FEEDS.npz OUT.npz RECIPE=MODEL.tflite …

Needs numpy and ai-edge-litert only (the aarch64 Python has nothing else), so it runs the interpreter
directly, as runtime/backends/tflite.py does: each row padded to a ``seq_<length>`` signature with pad id
0, mask 0 and type 0, integer logits dequantised with the output's (scale, zero point).  Every row is
fitted to every bucket (a longer row keeps its first tokens and its final [SEP]), so each bucket's
signature runs on every sentence.  FEEDS holds ``ids<i>`` and ``types<i>`` per row; OUT holds the
logits as ``RECIPE|BUCKET|<i>`` and what the process ran on (``machine``, ``cpu_features``).
``litert_worker.py --hwcaps`` prints the CPU features only; ``litert_worker.py --smopa`` whether this CPU's
(or emulator's) SME int8 outer product SMOPA computes right: ``ok``, ``wrong`` or ``absent`` (no SME).
"""

from __future__ import annotations

import importlib.util
import platform
import sys
from pathlib import Path

import numpy as np


def _load_buckets():
    """runtime/buckets.py by path: the aarch64 Python has only numpy and ai-edge-litert, so the runtime
    package (which imports tokenizers) cannot be imported, but its stdlib-only bucket rules can."""
    spec = importlib.util.spec_from_file_location(
        "pocketbert_buckets", Path(__file__).resolve().parents[1] / "runtime" / "buckets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


buckets = _load_buckets()


def fit(ids: list, types: list, bucket: int) -> tuple[list, list]:
    if len(ids) <= bucket:
        return ids, types
    return ids[:bucket - 1] + ids[-1:], types[:bucket - 1] + types[-1:]


def feeds_for(details: dict, ids: list, types: list, bucket: int) -> dict:
    values = {"input_ids": ids, "attention_mask": [1] * len(ids), "token_type_ids": types}
    feeds = {}
    for name, detail in details.items():
        if name not in values:
            raise SystemExit(f"unknown model input {name!r}")
        padded = np.zeros((1, bucket), dtype=detail["dtype"])
        padded[0, :len(ids)] = values[name]
        feeds[name] = padded
    return feeds


def run_model(path: str, rows: list) -> dict:
    """bucket -> logits per row (float32; token logits cut to the row's length)."""
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=path, num_threads=1)
    out = {}
    for name in interpreter.get_signature_list():
        bucket = buckets.bucket_of(name)
        if bucket is None:
            continue
        runner = interpreter.get_signature_runner(name)
        details = runner.get_input_details()
        output = runner.get_output_details()["logits"]
        logits = []
        for ids, types in rows:
            ids, types = fit(ids, types, bucket)
            result = runner(**feeds_for(details, ids, types, bucket))["logits"]
            if np.issubdtype(output["dtype"], np.integer):
                scale, zero_point = output["quantization"]
                result = (result.astype(np.float32) - zero_point) * np.float32(scale)
            result = np.array(result, dtype=np.float32)  # a copy: the interpreter reuses its buffer
            logits.append(result[:, :len(ids)] if result.ndim == 3 else result)
        out[bucket] = logits
    return out


#: Linux arm64 HWCAP / HWCAP2 bits (arch/arm64/include/uapi/asm/hwcap.h) XNNPACK's kernel choice reads
_HWCAP = {"fp": 0, "asimd": 1, "atomics": 8, "fphp": 9, "asimdhp": 10, "cpuid": 11, "asimdrdm": 12, "asimddp": 20,
          "sve": 22, "asimdfhm": 23}
_HWCAP2 = {"sve2": 1, "svei8mm": 9, "i8mm": 13, "bf16": 14, "sme": 23}
_AT_HWCAP, _AT_HWCAP2 = 16, 26


def cpu_features() -> list[str]:
    """The HWCAPs this process was given (under QEMU: the emulated CPU's), from /proc/self/auxv."""
    if platform.machine() != "aarch64":
        return []
    words = np.frombuffer(open("/proc/self/auxv", "rb").read(), dtype=np.uint64).reshape(-1, 2)
    aux = {int(key): int(value) for key, value in words}
    hwcap, hwcap2 = aux.get(_AT_HWCAP, 0), aux.get(_AT_HWCAP2, 0)
    return sorted([name for name, bit in _HWCAP.items() if hwcap >> bit & 1]
                  + [name for name, bit in _HWCAP2.items() if hwcap2 >> bit & 1])


#: probe(a, b, out) -> SVL/32, assembled from (armv9-a+sme):
#:   smstart; zero {za}; ptrue p0.b; ld1b {z0.b}, p0/z, [x0]; ld1b {z1.b}, p0/z, [x1]
#:   smopa za0.s, p0/m, p0/m, z0.b, z1.b; ptrue p1.s; cntw x9; mov w12, #0
#:   1: st1w {za0h.s[w12, 0]}, p1, [x2]; add x2, x2, x9, lsl #2; add w12, w12, #1; cmp x12, x9; b.lt 1b
#:   smstop; mov x0, x9; ret
#: KleidiAI's int8 and int4 SME matmuls, which XNNPACK picks when the CPU reports SME, rest on SMOPA;
#: pocketbert/benchmarks/arm/int8_ops.c checks the same, and its siblings, in C
_SMOPA_PROBE = (0xd503477f, 0xc00800ff, 0x2518e3e0, 0xa400a000, 0xa400a021, 0xa0810000, 0x2598e3e1, 0x04a0e3e9,
                0x5280000c, 0xe0bf0440, 0x8b090842, 0x1100058c, 0xeb09019f, 0x54ffff8b, 0xd503467f, 0xaa0903e0,
                0xd65f03c0)


def smopa_check() -> str:
    """Run SMOPA once on random bytes at this CPU's streaming vector length and compare with numpy."""
    if "sme" not in cpu_features():
        return "absent"
    import ctypes
    import mmap

    code = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    code.write(np.array(_SMOPA_PROBE, dtype="<u4").tobytes())
    address = ctypes.addressof(ctypes.c_char.from_buffer(code))
    probe = ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(address)
    rng = np.random.default_rng(1)
    a, b = (rng.integers(-128, 128, 256, dtype=np.int8) for _ in range(2))  # 256 bytes: the largest SVL
    out = np.zeros(64 * 64, dtype=np.int32)
    tiles = probe(a.ctypes.data, b.ctypes.data, out.ctypes.data)
    want = a[:4 * tiles].reshape(tiles, 4).astype(np.int32) @ b[:4 * tiles].reshape(tiles, 4).astype(np.int32).T
    return "ok" if np.array_equal(out[:tiles * tiles].reshape(tiles, tiles), want) else "wrong"


def main(feeds_path: str, out_path: str, *models: str) -> None:
    data = np.load(feeds_path)
    rows = [(data[f"ids{i}"].tolist(), data[f"types{i}"].tolist()) for i in range(len(data.files) // 2)]
    arrays = {}
    for spec in models:
        recipe, _, path = spec.partition("=")
        for bucket, logits in run_model(path, rows).items():
            arrays.update({f"{recipe}|{bucket}|{i}": row for i, row in enumerate(logits)})
    np.savez(out_path, machine=np.array(platform.machine()), cpu_features=np.array(cpu_features()), **arrays)


if __name__ == "__main__":
    if sys.argv[1:] == ["--hwcaps"]:
        print(" ".join(cpu_features()))
    elif sys.argv[1:] == ["--smopa"]:
        print(smopa_check())
    else:
        main(*sys.argv[1:])
