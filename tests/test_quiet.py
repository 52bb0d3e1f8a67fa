"""Silencing the exporters' chatter must not break later logging."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pocketbert.converter.backends.export_cache import ENV as EXPORT_CACHE

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


#: what torchao (imported by transformers whenever it is installed) and torch's pytree said on every start
CHATTER = ("Failed to load", "_C_mxfp8", "_C_cutlass", "register_constant", "_pytree")


def _converter(*args: str):
    # a real export (none from the suite's cache): its libraries are what might print
    env = {k: v for k, v in os.environ.items() if k not in ("POCKETBERT_VERBOSE", EXPORT_CACHE)}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    return subprocess.run([sys.executable, "-m", "pocketbert.converter", *args], capture_output=True, text=True,
                          env=env, timeout=600)


def test_a_conversion_prints_nothing_from_torchao_or_the_pytree(checkpoints, tmp_path):
    proc = _converter(str(checkpoints["bert"]["classification"]), "--out", str(tmp_path / "b"), "--format", "onnx",
                      "--no-latency", "--verify-samples", "10")
    assert proc.returncode == 0, proc.stderr
    assert not [c for c in CHATTER if c in proc.stdout + proc.stderr], proc.stderr


def test_the_filter_drops_only_the_import_chatter():
    """A library's other warnings still pass: only the known import messages are dropped."""
    script = """
import logging
import pocketbert.converter  # noqa: F401
logging.getLogger("torchao").warning("Failed to load /x/_C_mxfp8.so: nope")
logging.getLogger("torchao").warning("something else")
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "POCKETBERT_VERBOSE"})
    assert "something else" in proc.stderr and "Failed to load" not in proc.stderr, proc.stderr
