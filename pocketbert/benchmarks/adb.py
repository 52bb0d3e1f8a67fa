"""What every phone measurement shares: finding adb, running one adb call, and the error a failed one raises.

Every adb call goes through a ``runner(argv) -> (returncode, stdout, stderr)``; the default runs the process,
tests pass a stand-in (no phone here). ``device`` (benchmark_model) and ``device_webview`` (the demo APK)
both use it.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable

Runner = Callable[[list[str]], tuple[int, str, str]]
ADB_FIX = "check `adb devices` lists the phone as 'device' (not 'unauthorized'), and the serial"


class DeviceError(Exception):
    def __init__(self, problem: str, fix: str):
        super().__init__(f"{problem}; {fix}")
        self.problem, self.fix = problem, fix


def find_adb(explicit: str | None = None) -> str:
    path = shutil.which(explicit or "adb")
    if not path:
        raise DeviceError(f"no {'adb at ' + explicit if explicit else 'adb on PATH'}",
                          "install Android platform-tools and put adb on PATH (or pass --adb PATH), "
                          "then check the phone is listed by `adb devices`")
    return path


def run_process(argv: list[str]) -> tuple[int, str, str]:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    return proc.returncode, proc.stdout, proc.stderr


def last_line(out: str, err: str) -> str:
    """The line that says what went wrong: the last of stderr, else of stdout."""
    lines = (err or out).strip().splitlines()
    return lines[-1] if lines else "no output"


def check(runner: Runner, argv: list[str], what: str, fix: str = ADB_FIX) -> str:
    """Run ``argv``; its stdout, or a DeviceError naming ``what`` failed and how to fix it."""
    code, out, err = runner(argv)
    if code != 0:
        raise DeviceError(f"{what} failed (exit {code}): {last_line(out, err)}", fix)
    return out
