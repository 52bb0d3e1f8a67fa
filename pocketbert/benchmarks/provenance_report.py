"""REPORT.md's "Where the figures come from": one line per results file, and the label a run's rows carry.

A line names what the file records of its run (command, CPU or device, date, load average) and leaves out
what it does not: an accuracy run records no machine, an older file no load at its end.  Library versions
and settings stay in the files themselves."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from pocketbert.locations import checkout

#: matrix instruction sets that decide int8/bf16 GEMM speed, strongest first
CPU_CLASSES = (("amx_int8", "AMX"), ("avx512_vnni", "AVX-512 VNNI"), ("avx_vnni", "AVX-VNNI"), ("avx2", "AVX2 only"),
               ("asimddp", "ARM dot product"), ("asimd", "ARM NEON"))


def cpu_class(machine: dict) -> str:
    flags = set((machine or {}).get("matrix_flags") or [])
    return next((label for flag, label in CPU_CLASSES if flag in flags), "unknown instruction sets")


def run_label(f: dict) -> str:
    machine = f.get("machine") or {}
    return f"{machine.get('cpu') or 'unknown CPU'}, {cpu_class(machine)} (`{Path(f['_path']).name}`)"


def location(results_dir: Path) -> str:
    """The results directory as a reader finds it: from the repository root when it lies in the checkout, else
    from the current directory (an installed package writes under it), else as given."""
    resolved = Path(results_dir).resolve()
    for base in (checkout(), Path.cwd().resolve()):
        if base is not None and resolved.is_relative_to(base):
            return str(resolved.relative_to(base))
    return str(results_dir)


def section(files: list[dict]) -> list[str]:
    return ["## Where the figures come from", "",
            "One line per results file: the command; the CPU (its strongest matrix instructions, usable of "
            "logical CPUs), phone or browser; when it ran (UTC); the 1-minute load average at its start and end "
            "(above ~0.2 the machine was not quiet). Library versions and settings are in each file.", "",
            *(line(f) for f in files), ""]


def line(f: dict) -> str:
    parts = [f["command"], _where(f), _when(f.get("created")), _load(f.get("machine") or {}),
             "FAST MODE" if f.get("fast") else None]
    return f"- `{Path(f['_path']).name}`: " + "; ".join(p for p in parts if p)


def _where(f: dict) -> str | None:
    machine, device = f.get("machine") or {}, f.get("device") or {}
    if device.get("kind") == "browser":  # web_demo's measure panel
        threads = device.get("hardware_concurrency")
        return _known(f"browser {device.get('user_agent') or 'unknown'}",
                      [f"{threads} hardware threads" if threads else None, device.get("runtime")])
    if machine.get("cpu"):
        usable, logical = machine.get("usable_cpus"), machine.get("logical_cpus")
        return _known(machine["cpu"], [cpu_class(machine) if machine.get("matrix_flags") else None,
                                       f"{usable} of {logical} CPUs" if usable and logical else None])
    if device.get("serial") or device.get("model"):  # `device`: a phone over adb, no desktop machine
        android = device.get("android")
        return _known(f"phone {device.get('model') or 'unknown model'}",
                      [device.get("soc"), f"Android {android}" if android else None, device.get("abi"),
                       f"serial {device['serial']}" if device.get("serial") else None])
    return None


def _known(head: str, details: list[str | None]) -> str:
    """``head (detail, detail)`` with the details that are known."""
    known = [d for d in details if d]
    return head + (f" ({', '.join(known)})" if known else "")


def _when(created: str | None) -> str | None:
    if not created:
        return None
    try:
        moment = dt.datetime.fromisoformat(created)
    except ValueError:
        return created
    moment = moment.astimezone(dt.timezone.utc) if moment.tzinfo else moment  # schema.new_file writes UTC
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _load(machine: dict) -> str | None:
    start, end = machine.get("load_average"), machine.get("load_average_end")
    if not start:
        return None
    return f"load {start[0]:.2f}" + (f" → {end[0]:.2f}" if end else " at start")
