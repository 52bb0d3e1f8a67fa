"""Instructions per inference on the AVX2 kernels of a desktop CPU without VNNI, counted on any x86-64 machine.

    pocketbert-bench avx2-instructions BUNDLE… [--seq-len 128] [--recipes onnx:fp32,…] [--out FILE]

valgrind runs a program on a synthetic CPU whose CPUID reports AVX2 and FMA and no AVX-512, VNNI or AMX (a Haswell's),
so ONNX Runtime (MLAS) and LiteRT (XNNPACK), which choose their kernels from CPUID, run the kernels an AVX2-only CPU
(AMD Zen 2/3, Intel before Ice Lake) runs, whatever CPU the machine has; callgrind counts the instructions executed.
Counts are not seconds (no caches, no clock), but they are the same on every run and every machine, and the ratio
of two files' counts is the compute ratio of their kernels.  Each artifact runs at one thread, batch 1, at exactly
``seq_len`` tokens (random ids, as ``latency``); an inference's count is ``(count of 1 + k runs − count of 1 run) / k``,
which cancels Python, the imports and the model's load (two identical processes still differ by up to ~3 M
instructions, about 1% of a MiniLM inference, so ``k`` = 4).  Every count checks, inside valgrind, that the CPU the
libraries saw had AVX2 and no AVX-512 (numpy's reading of CPUID; it has no flag for AVX-VNNI, which valgrind's
Haswell CPUID does not report either): a valgrind that passed AVX-512 through would count other kernels.

Held against real AVX2-only timings in docs/speed.md: the counts order files as the clock does, and their ratios
fall 2-20% below the measured ones (a count sees instructions, not the bytes a smaller file no longer reads): a
floor of the speed-up, not a forecast.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

#: numpy's runtime CPU features (read through CPUID) that say which kernels the libraries chose
FEATURES = ("AVX2", "FMA3", "AVX512F", "AVX512VNNI")


class InstructionCountUnavailable(Exception):
    def __init__(self, problem: str, fix: str):
        super().__init__(problem)
        self.problem, self.fix = problem, fix


def valgrind(log=print) -> str:
    """valgrind's path; Debian's package is installed when it is missing and we are root (as QEMU is)."""
    from pocketbert import debian_packages

    path, _ = debian_packages.ensure_command("valgrind", "valgrind", log=log)
    if path is None:
        raise InstructionCountUnavailable("valgrind is not installed", "install it: apt-get install -y valgrind")
    return path


def _worker(spec_path: str) -> None:
    """Inside valgrind: load the artifact, run it ``runs`` times, print the CPU features the libraries saw."""
    from numpy._core._multiarray_umath import __cpu_features__ as seen

    from .measure import KINDS

    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    feeds = dict(np.load(spec["inputs"]))
    run = KINDS[spec["kind"]](spec).load(spec, feeds)
    for _ in range(spec["runs"]):
        run()
    print(json.dumps({name: bool(seen.get(name)) for name in FEATURES}))


def _count(spec: dict, runs: int, work: Path) -> tuple[int, dict]:
    """(instructions callgrind counted in one worker process running the artifact ``runs`` times, the CPU seen)."""
    spec_path, out = work / f"spec-{runs}.json", work / f"callgrind-{runs}.out"
    spec_path.write_text(json.dumps({**spec, "runs": runs}), encoding="utf-8")
    # a fixed hash seed and no address randomisation: Python's own work is then nearly the same in both processes
    # (identical processes still differ by up to ~3 M instructions, hence ``k`` runs in the difference)
    env = {**os.environ, "PYTHONHASHSEED": "0", "TF_CPP_MIN_LOG_LEVEL": "3"}
    fixed_addresses = ["setarch", "-R"] if shutil.which("setarch") else []
    command = [*fixed_addresses, valgrind(), "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-m",
               __name__, "--worker", str(spec_path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600, env=env)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    totals = re.search(r"^totals: (\d+)", out.read_text(), re.M) if out.is_file() else None
    if done.returncode != 0 or not lines or totals is None:
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        raise InstructionCountUnavailable(f"valgrind could not run {spec['path']} (exit {done.returncode}): {tail}",
                                          "run the artifact without valgrind first (pocketbert-bench latency)")
    return int(totals.group(1)), json.loads(lines[-1])


def per_inference(spec: dict, k: int = 4) -> dict:
    """One inference's instructions (``k`` extra runs over one), and the CPU features the libraries saw."""
    with tempfile.TemporaryDirectory(prefix="pocketbert-avx2-") as tmp:
        with ThreadPoolExecutor(2) as pool:  # two valgrind processes at once: one per core
            (one, seen), (more, seen_more) = pool.map(lambda runs: _count(spec, runs, Path(tmp)), (1, 1 + k))
    if not (seen["AVX2"] and not seen["AVX512F"] and seen == seen_more):
        raise InstructionCountUnavailable(f"under valgrind the libraries saw {seen}, not AVX2 without AVX-512: the "
                                          "counts would be another CPU class's kernels",
                                          "use a valgrind whose CPU reports AVX2 without AVX-512 (Debian 12's "
                                          "3.19 does), or time the files on an AVX2-only CPU")
    return {"instructions": (more - one) / k, "cpu_seen": seen}


def check_recipes(bundle_paths: list[Path], recipes: list[str]) -> None:
    """Refuse, before minutes of counting, a recipe that no bundle given holds (a typo would count nothing)."""
    from pocketbert.runtime import Bundle

    have = {art.recipe for path in bundle_paths for art in Bundle.open(path).artifacts if art.passed}
    unknown = [recipe for recipe in recipes if recipe not in have]
    if unknown:
        raise InstructionCountUnavailable(f"no bundle given holds a verified {', '.join(unknown)}",
                                          f"pass --recipes from: {', '.join(sorted(have))}")


def count_bundle(bundle_path: Path, seq_len: int, work_dir: Path, recipes: list[str] | None = None,
                 log=print) -> list[dict]:
    """A row per verified ONNX and TFLite artifact of the bundle (``recipes``: only those): instructions per
    inference, and against the bundle's fp32 file of the same format."""
    from pocketbert.runtime import Bundle

    from .latency import make_inputs

    bundle = Bundle.open(bundle_path)
    inputs = make_inputs(work_dir, bundle.manifest, seq_len, 1)
    rows = []
    for art in bundle.artifacts:
        if not art.passed or art.backend not in ("onnx", "tflite") or (recipes and art.recipe not in recipes):
            continue
        buckets = art.details.get("buckets")
        if art.backend == "tflite" and buckets and seq_len not in buckets:
            log(f"{bundle_path}: {art.recipe} has no {seq_len}-token signature (buckets {buckets}): left out")
            continue
        log(f"{bundle_path}: counting {art.recipe} under valgrind (minutes: every instruction is emulated)")
        spec = {"kind": art.backend, "path": str(art.path), "threads": 1, "seq_len": seq_len, "batch": 1,
                "inputs": str(inputs)}
        rows.append({"bundle": str(bundle_path), "runner": art.recipe, "backend": art.backend,
                     "precision": art.precision, "seq_len": seq_len, "threads": 1, "batch": 1,
                     **per_inference(spec)})
    fp32 = {r["backend"]: r["instructions"] for r in rows if r["precision"] == "fp32"}
    for r in rows:
        r["fewer_than_fp32"] = fp32[r["backend"]] / r["instructions"] if r["backend"] in fp32 else None
    return rows


def table(rows: list[dict]) -> str:
    lines = ["| bundle | artifact | instructions per inference (millions) | fp32 ÷ this |", "|---|---|---:|---:|"]
    for r in rows:
        ratio = f"{r['fewer_than_fp32']:.2f}×" if r["fewer_than_fp32"] else "–"
        lines.append(f"| {Path(r['bundle']).name} | {r['runner']} | {r['instructions'] / 1e6:,.1f} | {ratio} |")
    return "\n".join(lines)


def valgrind_version() -> str:
    done = subprocess.run([valgrind(), "--version"], capture_output=True, text=True)
    return done.stdout.strip() or "valgrind (version unknown)"


if __name__ == "__main__" and sys.argv[1:2] == ["--worker"]:
    _worker(sys.argv[2])
