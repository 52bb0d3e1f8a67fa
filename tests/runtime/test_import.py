"""The runtime needs neither torch, transformers nor tensorflow: not to import, not to run a bundle."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import json, sys
from pocketbert import runtime
import pocketbert.runtime.cli
results = [runtime.load(sys.argv[1], backend=b)("Peter Blackburn") for b in ("onnx", "tflite")]
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"torch", "transformers", "tensorflow"})
print(json.dumps({"heavy": heavy, "same": results[0] == results[1]}))
"""


def test_runtime_imports_and_runs_without_heavy_packages(ner_bundle):
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(ner_bundle)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"heavy": [], "same": True}
