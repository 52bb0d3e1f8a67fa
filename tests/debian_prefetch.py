"""The suite's Debian packages, installed in one apt-get in the background as the run starts.

Each tool the tests use installs its own package when it is missing and we are root (``pocketbert.debian_packages``):
on a fresh machine that is a dozen apt-get runs, each with its own download and dpkg triggers, each while a test
worker waits (89 s in all, where one run for all of them takes 61 s; Intel Xeon, 2026-12-03). Started with the
session, this one run overlaps the workers' first minute of conversions, and the tools then find their packages
installed (they take turns with it on the same lock). A package missing from these lists costs time, not
correctness: its tool still installs it.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from pocketbert import debian_packages

#: with their recommends, as each tool installs them: the browser (web_demo/tools/ensure_chromium.py), QEMU and
#: the aarch64 cross compiler (tests/test_arm64.py: its libc headers are a recommend), valgrind (the AVX2
#: instruction count), JUnit 5 (android_demo/core/run_tests.sh), the Kotlin compile check and the APK's tools
#: (android_demo/app/compile_check.py, android_demo/webview/build_apk.py, tests/test_android_apk.py)
WITH_RECOMMENDS = ("chromium", "qemu-user-static", "gcc-aarch64-linux-gnu", "valgrind", "junit5",
                   "openjdk-17-jdk-headless", "kotlin", "aapt", "android-framework-res", "zipalign", "apksigner",
                   "dexdump")
#: without: androguard recommends a Qt GUI (tests/test_android_apk.py)
WITHOUT_RECOMMENDS = ("androguard",)
LOG = Path(tempfile.gettempdir()) / "pocketbert-debian-prefetch.log"


def start() -> subprocess.Popen | None:
    """This module run in a process of its own, when apt-get may install; its output goes to :data:`LOG`."""
    if not debian_packages.can_install():
        return None
    repo = Path(__file__).resolve().parents[1]
    with open(LOG, "w") as log:
        return subprocess.Popen([sys.executable, "-m", "tests.debian_prefetch"], cwd=repo, stdout=log,
                                stderr=subprocess.STDOUT)


def main() -> int:
    failed = [debian_packages.install_missing(list(WITH_RECOMMENDS)),
              debian_packages.install_missing(list(WITHOUT_RECOMMENDS), recommends=False)]
    for message in filter(None, failed):  # the tools' own installs try again and report
        print(message)
    return 0


if __name__ == "__main__":
    sys.exit(main())
