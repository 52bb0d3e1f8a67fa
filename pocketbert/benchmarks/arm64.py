"""Every TFLite artifact of a bundle on LiteRT's aarch64 build, under QEMU user-mode emulation, vs this CPU.

Phones run LiteRT's ARM kernels: XNNPACK picks NEON, dot-product (SDOT/UDOT) or i8mm int8 kernels from the
CPU's HWCAPs.  QEMU's emulated ARM CPU reports the chosen model's HWCAPs, so the same aarch64 wheel takes
that CPU's kernels: this checks what the interpreter and its kernels compute, per bucket signature, never
how fast (emulated time says nothing about a phone).  fp32 (and fp16 weights, computed in fp32) must
agree to float rounding, int8 must give the same predictions.

On a CPU with SME, XNNPACK runs KleidiAI's SME int8/int4 matmuls, built on the SMOPA outer product, which
QEMU before 8.2.3/9.0 (Debian 12's 7.2) computes wrong.  Each such CPU is probed first; where SMOPA is wrong
it runs with SME off (its SVE, SVE2 and i8mm kernels are still checked) and its records say why.

    pocketbert-bench arm64 BUNDLE… [--cpus cortex-a53,max-nosve,max] [--recipes …] [--samples N] [--out FILE]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from . import aarch64_env
from .emulated_cpus import EmulatedCpu, compare, passes, token_rows

WORKER = Path(__file__).resolve().with_name("litert_worker.py")
DEVICE_KIND = "aarch64-emulated"
_TIMEOUT = 3 * 3600


CPUS = {cpu.name: cpu for cpu in (
    EmulatedCpu("cortex-a53", "cortex-a53", "ARMv8.0-A: NEON, no dot product (low-end and little cores)"),
    EmulatedCpu("cortex-a76", "cortex-a76", "ARMv8.2-A: NEON + dot product, no i8mm"),
    EmulatedCpu("max-nosve", "max,sve=off", "dot product, i8mm, bf16; SVE off"),
    EmulatedCpu("max", "max", "every extension QEMU implements: dot product, i8mm, SVE2, bf16, SME"),
)}
DEFAULT_CPUS = ("cortex-a53", "max-nosve", "max")
#: the HWCAPs worth a column: the ones XNNPACK's kernel choice depends on
SHOWN_FEATURES = ("asimd", "asimdhp", "asimddp", "asimdfhm", "i8mm", "sve", "sve2", "bf16", "sme")
#: why a CPU ran with SME off: what the emulator got wrong, so its SME kernels' results say nothing of a phone's
SME_OFF = ("run with SME off: this QEMU computes SME's int8 outer product (SMOPA) wrong (fixed in QEMU 8.2.3 and "
           "9.0), so LiteRT's SME int8 kernels cannot be judged on it; its SVE, SVE2 and i8mm kernels are")


def tflite_artifacts(bundle: Path, recipes: list[str] | None = None) -> dict[str, Path]:
    """recipe -> model file of every verified TFLite artifact (of ``recipes`` only, when given)."""
    from pocketbert import runtime

    return {a.recipe: a.path for a in runtime.Bundle.open(bundle).artifacts
            if a.passed and a.backend == "tflite" and (not recipes or a.recipe in recipes)}


def run_worker(prefix: list[str], rows, models: dict[str, Path], env: dict | None = None) -> tuple[dict, dict]:
    """litert_worker.py under ``prefix`` (this Python, or the aarch64 one in QEMU): (logits, what it ran on)."""
    with tempfile.TemporaryDirectory(prefix="pocketbert-arm64-") as tmp:
        feeds, out = Path(tmp) / "rows.npz", Path(tmp) / "out.npz"
        np.savez(feeds, **{f"ids{i}": np.asarray(ids) for i, (ids, _) in enumerate(rows)},
                 **{f"types{i}": np.asarray(types) for i, (_, types) in enumerate(rows)})
        done = subprocess.run([*prefix, str(WORKER), str(feeds), str(out), *[f"{r}={p}" for r, p in models.items()]],
                              capture_output=True, text=True, timeout=_TIMEOUT, env=env, cwd=tmp)
        if done.returncode != 0:
            raise RuntimeError(f"LiteRT failed ({' '.join(prefix[:4])}, exit {done.returncode}):\n"
                               f"{done.stderr[-2000:]}")
        data = np.load(out)
        logits = {}
        for key in data.files:
            if key.count("|") == 2:
                recipe, bucket, i = key.split("|")
                logits.setdefault((recipe, int(bucket)), {})[int(i)] = data[key]
        info = {"machine": str(data["machine"]), "cpu_features": [str(f) for f in data["cpu_features"]],
                "litert_log": sorted({line.strip() for line in done.stderr.splitlines() if "XNNPACK" in line})}
        return {k: [v[i] for i in sorted(v)] for k, v in logits.items()}, info


def check(bundle: Path, texts: list, cpus: list[str], environment: aarch64_env.Environment, log=print,
          recipes: list[str] | None = None) -> list[dict]:
    """Each TFLite artifact at each bucket on each emulated ARM CPU, compared with this machine's LiteRT."""
    models = tflite_artifacts(bundle, recipes)
    if not models:
        return []
    rows = token_rows(bundle, texts)
    native, _ = run_worker([sys.executable, "-s"], rows, models)
    records = []
    for name in cpus:
        cpu = CPUS[name]
        model, note = emulated_model(cpu, environment)
        log(f"{Path(bundle).name}: {len(models)} TFLite artifact(s) x {len(rows)} rows on emulated {name}"
            + (f" ({note})" if note else ""))
        emulated, info = run_worker(environment.command(model), rows, models, environment.env())
        features = [f for f in SHOWN_FEATURES if f in info["cpu_features"]]
        for (recipe, bucket), reference in sorted(native.items()):
            figures = compare(reference, emulated[(recipe, bucket)])
            records.append({"model": Path(bundle).name, "bundle": str(bundle), "recipe": recipe, "bucket": bucket,
                            "cpu": cpu.name, "qemu_cpu": model, "note": note, "instructions": cpu.instructions,
                            "cpu_features": features,
                            "guest_machine": info["machine"], "litert_log": info["litert_log"],
                            "where": DEVICE_KIND, "rows": len(rows), **figures, "passed": passes(recipe, figures)})
    return records


def emulated_model(cpu: EmulatedCpu, environment: aarch64_env.Environment) -> tuple[str, str]:
    """The -cpu to run ``cpu`` as, and why it differs from the model's (empty when it does not)."""
    if environment.smopa(cpu.qemu_model) == "wrong":
        return cpu.qemu_model + ",sme=off", SME_OFF
    return cpu.qemu_model, ""


def table(records: list[dict]) -> str:
    """Markdown: one line per bundle, artifact, bucket and emulated CPU."""
    lines = ["| bundle | artifact | bucket | ARM CPU (emulated) | CPU features | rows | top-1 vs x86 "
             "| worst row cosine | max abs diff | max abs logit | ok |", "|" + "---|" * 11]
    lines += ["| " + " | ".join([r["model"], r["recipe"], str(r["bucket"]), _cpu_label(r),
                                 " ".join(r["cpu_features"]) or "-", str(r["rows"]),
                                 f"{100 * r['top1_agreement']:.1f}%", f"{r['min_cosine']:.6f}",
                                 f"{r['max_abs']:.2e}", f"{r['max_abs_logit']:.2f}", "yes" if r["passed"] else "NO"])
              + " |" for r in records]
    notes = sorted({(_cpu_label(r), r["note"]) for r in records if r.get("note")})
    lines += ["", *[f"{label}: {note}." for label, note in notes]] if notes else []
    return "\n".join(lines)


def _cpu_label(record: dict) -> str:
    """The CPU's name, with the -cpu it really ran as when that differs (older results have no qemu_cpu)."""
    ran = record.get("qemu_cpu")
    cpu = CPUS.get(record["cpu"])
    return record["cpu"] if not ran or (cpu and ran == cpu.qemu_model) else f"{record['cpu']} (-cpu {ran})"
