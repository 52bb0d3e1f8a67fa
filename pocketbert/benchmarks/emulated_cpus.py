"""Run a bundle's artifacts on other x86 CPUs, under QEMU user-mode emulation, and compare.

ONNX Runtime (MLAS) and XNNPACK choose their int8 kernels from CPUID: on AVX2 without VNNI, ONNX Runtime
multiplies uint8 x int8 with VPMADDUBSW (pairs summed in 16 bits, saturating) and XNNPACK sign-extends int8 to
16 bits (VPMOVSXBW + VPMADDWD, pairs summed in 32 bits); VNNI and AMX accumulate in 32 bits, CPUs without AVX2
widen to 16 bits first.  An int8 model verified on one of them can compute
something else on another.  QEMU's emulated CPU answers CPUID as the chosen model would, so the same
wheels take that CPU's kernels: this checks what the kernels compute, never how fast they are
(emulated time says nothing about a real CPU).

    pocketbert-bench cpus BUNDLE… [--cpus haswell,sandybridge] [--samples N]
"""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pocketbert import debian_packages
from pocketbert.runtime import machine


@dataclass(frozen=True)
class EmulatedCpu:
    """A CPU model QEMU emulates (x86 here, ARM in benchmarks.arm64)."""

    name: str
    qemu_model: str
    instructions: str


CPUS = {cpu.name: cpu for cpu in (
    EmulatedCpu("haswell", "Haswell-noTSX", "AVX2 + FMA, no AVX-512, no VNNI"),
    EmulatedCpu("sandybridge", "SandyBridge", "AVX, no AVX2"),
)}
#: numpy's CPUID feature names -> /proc/cpuinfo flag names (runtime.machine speaks the latter);
#: under qemu-user /proc/cpuinfo is the host's, so the emulated CPU is read through numpy's CPUID probe
_NUMPY_FLAGS = {"SSE41": "sse4_1", "AVX": "avx", "AVX2": "avx2", "FMA3": "fma", "AVX512F": "avx512f",
                "AVX512VNNI": "avx512_vnni"}
QEMU = "qemu-x86_64-static"
_TIMEOUT = 1800


class EmulationUnavailable(Exception):
    def __init__(self, problem: str, fix: str):
        self.problem, self.fix = problem, fix
        super().__init__(f"{problem}\n  fix: {fix}")


def qemu(install: bool = True) -> str:
    """The QEMU x86-64 user-mode emulator; installed from Debian's packages when missing and allowed."""
    if platform.machine() != "x86_64":
        raise EmulationUnavailable(f"emulating x86 CPUs needs an x86-64 host (this is {platform.machine()})",
                                   "run on an x86-64 machine")
    found = shutil.which(QEMU)
    if found:
        return found
    if install and debian_packages.can_install() and not debian_packages.install(
            "qemu-user-static", lambda: shutil.which(QEMU) is not None, log=lambda line: None):
        return shutil.which(QEMU)
    raise EmulationUnavailable(f"{QEMU} not found", "install it: apt-get install -y qemu-user-static (as root)")


def token_rows(bundle: Path, texts: list[str]) -> list[tuple[list[int], list[int]]]:
    """The bundle's own tokenization of ``texts`` (tokenized once, natively: only the model is compared)."""
    from pocketbert import runtime

    encoder = runtime.load(bundle).encoder
    items = [tuple(t) if isinstance(t, (tuple, list)) else (t, None) for t in texts]
    return [(e.ids, e.type_ids) for e in encoder.encode(items)]


def bundle_texts(bundle: Path, samples: int, data_dir=None) -> list:
    """The first ``samples`` sentences the converter verifies this bundle's task on."""
    from pocketbert import runtime
    from pocketbert.converter.inputs.texts import data_dir as find_data_dir
    from pocketbert.converter.inputs.texts import default_verify_texts

    texts, _ = default_verify_texts(runtime.Bundle.open(bundle).task, find_data_dir(data_dir))
    return texts[:samples]


def run_artifacts(bundle: Path, recipes: list[str], rows) -> dict[str, list[np.ndarray]]:
    """recipe -> logits per row (batch 1, no padding), through the runtime's own loader and backends."""
    from pocketbert import runtime
    from pocketbert.runtime import batching

    out = {}
    for recipe in recipes:
        pipe = runtime.load(bundle, recipe=recipe, threads=1)
        out[recipe] = [pipe.backend.run(batching.pad([row], pipe.bundle.input_names, pipe.encoder.pad_id))[0]
                       for row in rows]
    return out


def emulated_flags() -> list[str]:
    """The matrix flags CPUID reports to this process (inside QEMU: the emulated CPU's)."""
    from numpy._core._multiarray_umath import __cpu_features__

    return [flag for name, flag in _NUMPY_FLAGS.items() if __cpu_features__.get(name)]


def run_on(cpu: EmulatedCpu, bundle: Path, recipes: list[str], rows) -> tuple[dict, list[str]]:
    """run_artifacts on an emulated ``cpu``: (recipe -> logits per row, the CPU flags it reported)."""
    with tempfile.TemporaryDirectory(prefix="pocketbert-cpu-") as tmp:
        feeds, out = Path(tmp) / "rows.npz", Path(tmp) / "out.npz"
        np.savez(feeds, **{f"ids{i}": np.asarray(ids) for i, (ids, _) in enumerate(rows)},
                 **{f"types{i}": np.asarray(types) for i, (_, types) in enumerate(rows)})
        command = [qemu(), "-cpu", cpu.qemu_model, sys.executable, "-m", "pocketbert.benchmarks.emulated_cpus",
                   str(bundle), ",".join(recipes), str(feeds), str(out)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=_TIMEOUT,
                              cwd=Path(__file__).resolve().parents[2])
        if done.returncode != 0:
            tail = "\n".join(line for line in done.stderr.splitlines() if "TCG doesn't support" not in line)[-2000:]
            raise RuntimeError(f"the runtime failed on the emulated {cpu.name} CPU (exit {done.returncode}):\n{tail}")
        data = np.load(out)
        flags = [str(f) for f in data["flags"]]
        return {r: [data[f"{r}|{i}"] for i in range(len(rows))] for r in recipes}, flags


def compare(reference: list[np.ndarray], other: list[np.ndarray]) -> dict:
    """Per-row agreement of two runs of one model: top-1 (per token for NER), worst cosine, max |Δ|."""
    top1, cosines, worst, scale = [], [], 0.0, 0.0
    for a, b in zip(reference, other):
        a, b = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
        top1.extend(a.argmax(-1) == b.argmax(-1))
        norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
        cosines.extend(np.sum(a * b, axis=-1) / np.maximum(norms, 1e-12))
        worst, scale = max(worst, float(np.abs(a - b).max())), max(scale, float(np.abs(a).max()))
    return {"top1_agreement": float(np.mean(top1)), "min_cosine": float(np.min(cosines)), "max_abs": worst,
            "max_abs_logit": scale}


def passes(recipe: str, figures: dict) -> bool:
    """fp32: float rounding (the converter's fp32 tolerance); int8: the same predictions, rows aligned."""
    if recipe.endswith((":fp32", ":fp16")):
        return figures["max_abs"] <= 1e-4 * max(1.0, figures["max_abs_logit"])
    return figures["top1_agreement"] >= 0.99 and figures["min_cosine"] >= 0.999


def table(rows: list[dict]) -> str:
    """Markdown: one line per artifact and emulated CPU."""
    lines = ["| artifact | CPU (emulated) | int8 kernels | rows | top-1 vs this CPU | worst row cosine | max abs diff "
             "| ok |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['recipe']} | {r['cpu']} ({r['instructions']}) | {r['int8_kernels']} | {r['rows']} "
              f"| {100 * r['top1_agreement']:.1f}% | {r['min_cosine']:.6f} | {r['max_abs']:.2e} "
              f"| {'yes' if r['passed'] else 'NO'} |" for r in rows]
    return "\n".join(lines)


def check(bundle: Path, texts: list, cpus: list[str]) -> list[dict]:
    """Every verified artifact of ``bundle`` on each emulated CPU, compared with this machine's run."""
    from pocketbert import runtime

    recipes = [a.recipe for a in runtime.Bundle.open(bundle).artifacts if a.passed]
    rows = token_rows(bundle, texts)
    native = run_artifacts(bundle, recipes, rows)
    results = []
    for name in cpus:
        cpu = CPUS[name]
        emulated, flags = run_on(cpu, bundle, recipes, rows)
        for recipe in recipes:
            figures = compare(native[recipe], emulated[recipe])
            results.append({"recipe": recipe, "cpu": cpu.name, "instructions": cpu.instructions,
                            "int8_kernels": machine.int8_kernels(flags), "rows": len(rows), **figures,
                            "passed": passes(recipe, figures)})
    return results


def _worker(bundle: str, recipes: str, feeds: str, out: str) -> None:
    data = np.load(feeds)
    rows = [(data[f"ids{i}"].tolist(), data[f"types{i}"].tolist()) for i in range(len(data.files) // 2)]
    logits = run_artifacts(Path(bundle), recipes.split(","), rows)
    np.savez(out, flags=np.array(emulated_flags()),
             **{f"{r}|{i}": row for r, per_row in logits.items() for i, row in enumerate(per_row)})


if __name__ == "__main__":
    _worker(*sys.argv[1:])
