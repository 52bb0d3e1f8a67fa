"""Debian's chromium for the web demo's browser tests and tools: installed with apt-get when missing.

    python web_demo/tools/ensure_chromium.py      # prints the browser's path, installing it if needed

The page is driven by playwright-core, which never downloads a browser, so the machine's own chromium is
used. As the ARM tests install qemu-user-static and the Android core's tests install JUnit, a missing
chromium is installed here when we are root and apt-get exists (``pocketbert.debian_packages``); otherwise
the error names the command that installs it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pocketbert import debian_packages

CHROMIUM = "/usr/bin/chromium"
INSTALL = "apt-get update && apt-get install -y chromium"


class ChromiumUnavailable(RuntimeError):
    pass


def ensure(install: bool = True, log=print) -> str:
    """The path of Debian's chromium, installed first when missing and allowed (root, apt-get)."""
    if Path(CHROMIUM).exists():
        return CHROMIUM
    if not install or not debian_packages.can_install():
        raise ChromiumUnavailable(f"{CHROMIUM} not found: the web demo's browser test needs Debian's chromium; "
                                  f"install it as root: {INSTALL}")
    failed = debian_packages.install("chromium", Path(CHROMIUM).exists, log=log)
    if not failed:
        return CHROMIUM
    raise ChromiumUnavailable(f"chromium could not be installed ({failed}); install it as root: {INSTALL}")


if __name__ == "__main__":
    try:
        print(ensure(log=lambda line: print(line, file=sys.stderr)))
    except ChromiumUnavailable as err:
        print(err, file=sys.stderr)
        sys.exit(2)
