"""Debian's chromium for the web demo's browser tests and tools: installed with apt-get when missing.

    python web_demo/tools/ensure_chromium.py      # prints the browser's path, installing it if needed

The page is driven by playwright-core, which never downloads a browser, so the machine's own chromium is
used. As the ARM tests install qemu-user-static and the Android core's tests install JUnit, a missing
chromium is installed here when we are root and apt-get exists (``apt-get install``, then ``apt-get update``
and again, as the package lists of a fresh machine can be stale or empty); otherwise the error names the
command that installs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
INSTALL = "apt-get update && apt-get install -y chromium"


class ChromiumUnavailable(RuntimeError):
    pass


def ensure(install: bool = True, log=print) -> str:
    """The path of Debian's chromium, installed first when missing and allowed (root, apt-get)."""
    if Path(CHROMIUM).exists():
        return CHROMIUM
    if not install or os.geteuid() != 0 or not shutil.which("apt-get"):
        raise ChromiumUnavailable(f"{CHROMIUM} not found: the web demo's browser test needs Debian's chromium; "
                                  f"install it as root: {INSTALL}")
    log("chromium missing: installing Debian's chromium (apt-get)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    # tests run in parallel (pytest -n): another may be installing its own package; wait for apt's lock
    wait = ["-o", "DPkg::Lock::Timeout=900"]
    failed = ""
    for command in (["apt-get", "install", "-y", "-q", "chromium"], ["apt-get", "update", "-q"],
                    ["apt-get", "install", "-y", "-q", "chromium"]):
        done = subprocess.run([*command[:2], *wait, *command[2:]], capture_output=True, text=True, env=env,
                              timeout=1800)
        if done.returncode != 0:
            failed = f"{' '.join(command)}: {done.stderr.strip()[-600:]}"
        if command[1] == "install" and Path(CHROMIUM).exists():
            return CHROMIUM
    raise ChromiumUnavailable(f"chromium could not be installed ({failed or 'apt-get gave no chromium'}); "
                              f"install it as root: {INSTALL}")


if __name__ == "__main__":
    try:
        print(ensure(log=lambda line: print(line, file=sys.stderr)))
    except ChromiumUnavailable as err:
        print(err, file=sys.stderr)
        sys.exit(2)
