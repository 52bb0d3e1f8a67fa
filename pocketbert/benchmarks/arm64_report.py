"""REPORT.md's section on LiteRT's aarch64 build under QEMU: agreement with this machine's LiteRT, never time."""

from __future__ import annotations

from pathlib import Path


def section(files: list[dict]) -> list[str]:
    """Parity of the TFLite artifacts on LiteRT's aarch64 build (emulated): agreement only, never time."""
    records = [r for f in files for r in f["results"]]
    if not records:
        return []
    from .arm64 import table

    lines = ["## LiteRT on aarch64 (emulated)", "",
             "LiteRT's aarch64 wheel (the interpreter and XNNPACK's ARM kernels phones run) on an arm64 Python under "
             "QEMU user-mode emulation, against this machine's x86 LiteRT on the same rows, every row padded or cut "
             "to each bucket signature. The emulated CPU's HWCAPs decide XNNPACK's int8 path (NEON only, dot "
             "product, i8mm); LiteRT does not log which kernels it picked, so the column lists the features it "
             "saw. Pass: fp32 and fp16 max |Δ| ≤ 1e-4·max(1, |logit|); int8 top-1 ≥ 99% and cosine ≥ 0.999. "
             "Emulated time says nothing about a phone and is not reported; no phone, delegate or timing here.", ""]
    for f in files:
        d = f.get("device") or {}
        versions = ", ".join(f"{k} {v}" for k, v in (d.get("versions") or {}).items())
        lines += [f"- `{Path(f['_path']).name}` ({f['created']}): {d.get('emulator')}, {d.get('python')}, {versions}; "
                  f"settings {f.get('settings')}"]
    lines += ["", table(records), ""]
    failed = [r for r in records if not r["passed"]]
    lines += [f"{len(records) - len(failed)} of {len(records)} artifact × bucket × CPU checks pass.", ""]
    differs = sorted({(r["model"], r["recipe"], r["cpu"], r["instructions"]) for r in failed})
    lines += [f"- differs: {model} {recipe} on emulated {cpu} ({what})" for model, recipe, cpu, what in differs]
    if differs:  # the emulator can be wrong too: only a device with those features settles it
        lines += ["", "A difference on one emulated CPU only can be QEMU's emulation of that CPU's instructions as "
                  "well as LiteRT's kernels for them: confirm on a device with those features before trusting or "
                  "blaming the artifact there."]
    return lines + ([""] if differs else [])
