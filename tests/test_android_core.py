"""The Android demo's Java core (android_demo/core) held to the Python runtime.

``android_demo/core/run_tests.sh`` compiles the core and its JUnit 5 tests with javac and runs them:
every golden vector (tokenization, NER decoding with every aggregation, classification), thousands of
random texts tokenized by this runtime and by Java, manifests and pipelines of bundles converted here
with their LiteRT outputs replayed. This test runs it so that the project's test command (and CI)
covers the Java code; a missing JDK or JUnit is a failure, not a skip.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORE = REPO / "android_demo" / "core"
#: the suite holds ~700 tests (one per golden record and aggregation); far fewer means tests went missing
MIN_PASSED = 600


def test_unicode_tables_match_the_runtime_tokenizer():
    """The Java tokenizer's Unicode tables are probed from `tokenizers`; an upgrade that changes them must be seen."""
    done = subprocess.run([sys.executable, str(CORE / "tools" / "make_unicode_tables.py"), "--check"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr


def test_java_core_passes_its_tests(tmp_path):
    missing = [tool for tool in ("java", "javac") if shutil.which(tool) is None]
    assert not missing, (f"{' and '.join(missing)} not found: the Android core's tests need a JDK 17 "
                         "(Debian: apt-get install -y openjdk-17-jdk-headless)")
    env = {**os.environ, "POCKETBERT_PYTHON": sys.executable}
    done = subprocess.run([str(CORE / "run_tests.sh"), "--work-dir", str(tmp_path)], capture_output=True, text=True,
                          env=env, timeout=1800)
    lines = done.stdout.strip().splitlines()
    summary = re.fullmatch(r"(\d+) passed, (\d+) failed", lines[-1]) if lines else None
    log = "\n".join((done.stdout + "\n" + done.stderr).strip().splitlines()[-60:])
    assert summary, f"run_tests.sh did not run the tests (exit code {done.returncode}):\n{log}"
    passed, failed = map(int, summary.groups())
    assert failed == 0 and done.returncode == 0, f"{failed} Java test(s) failed:\n{log}"
    assert passed >= MIN_PASSED, f"only {passed} Java tests ran (expected at least {MIN_PASSED}):\n{log}"
