"""Build expensive test inputs (converted bundles, trained checkpoints) once per test session.

With pytest-xdist each worker is a process with its own session fixtures; a bundle built in a fixture
would be converted once per worker.  ``once`` builds it in the directory every worker of the session
shares (the parent of each worker's base temp), under a file lock: the first worker to ask builds it,
the others wait and reuse it.  Without xdist it is an ordinary session-scoped build.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock


def worker_threads() -> int:
    """The cores each xdist worker has to itself (all of them without xdist): the threads a test's conversion
    and PyTorch use, so that the workers do not oversubscribe the machine."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return max(1, (os.cpu_count() or 1) // workers)


def shared_root(tmp_path_factory) -> Path:
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared"
    root.mkdir(exist_ok=True)
    return root


def once(tmp_path_factory, name: str, build: Callable[[Path], object]):
    """``build(directory)``'s result, computed by one process of the session; it must be JSON-serialisable
    (paths are returned as strings, as ``Path`` where ``build`` returned one).  ``directory`` is empty and
    belongs to ``name`` alone.  A failed build is not remembered: the next worker asking tries again and
    fails with its own error."""
    root = shared_root(tmp_path_factory)
    done = root / f"{name}.json"
    with FileLock(str(root / f"{name}.lock")):
        if not done.exists():
            work = root / name
            if work.exists():  # left by a build that failed in another worker
                shutil.rmtree(work)
            work.mkdir()
            result = build(work)
            done.write_text(json.dumps(_encode(result)), encoding="utf-8")
    return _decode(json.loads(done.read_text(encoding="utf-8")))


def _encode(value):
    if isinstance(value, Path):
        return {"__path__": str(value)}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    return value


def _decode(value):
    if isinstance(value, dict):
        return Path(value["__path__"]) if set(value) == {"__path__"} else {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def tiny_bench_bundle(tmp_path_factory) -> Path:
    """The benchmarks' fast-mode bundle (tiny random BERT: onnx and tflite, fp32 and int8-dynamic, bucket 32), built
    once for the session in the work directory the benchmark commands under test reuse."""
    from pocketbert.benchmarks import models

    root = once(tmp_path_factory, "bench", lambda work: work)

    def build(_):
        [bundle] = models.build_bundles(["tiny-bert"], ["plain-int8"], root, [32], log=lambda m: None,
                                        verify_samples=32)
        return bundle
    return once(tmp_path_factory, "bench-tiny", build)
