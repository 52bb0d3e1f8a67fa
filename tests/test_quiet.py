"""Silencing the exporters' chatter must not break later logging."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import logging
from pocketbert.converter.quiet import silenced
with silenced():
    logging.warning("inside: a library's first warning, root logger not configured yet")
logging.warning("after the block")
"""


def test_a_warning_inside_silenced_leaves_no_handler_on_a_closed_stream():
    # a real interpreter: silenced() works on file descriptors 1 and 2, which pytest's capture replaces
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Logging error" not in proc.stderr and "closed file" not in proc.stderr, proc.stderr
    assert "after the block" in proc.stderr
