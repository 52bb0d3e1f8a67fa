"""The latency figures are timed with nothing else of the conversion running: after every artifact is verified,
all together in alternating rounds, with no worker of the conversion alive (checked when the timer runs, by a
recording timer: by construction, not by the machine's load)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

from pocketbert.converter.timing import quiet_timing
from pocketbert.converter.events import StageFinished, StageStarted
from pocketbert.converter.pipeline import convert
from pocketbert.converter.stages import STAGES
from pocketbert.converter.stages.quantize import QuantizeStage
from pocketbert.converter.stages.verify import VerifyStage


def test_a_living_worker_thread_or_child_process_is_seen_and_recorded():
    release = threading.Event()
    worker = threading.Thread(target=release.wait, name=f"{quiet_timing.WORKER_PREFIX}-test")
    worker.start()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        busy = quiet_timing.workers()
        assert f"thread {worker.name}" in busy and f"process {child.pid}" in busy
        figures = quiet_timing.timed_quietly({"a": None}, {}, timer=lambda runners, feeds: [[1.0, 3.0]], wait=0.2)
        assert figures["a"]["quiet"] is False and f"process {child.pid}" in figures["a"]["busy"]
    finally:
        release.set()
        child.kill()
        child.wait()
        worker.join()
    assert quiet_timing.workers() == []
    figures = quiet_timing.timed_quietly({"a": None}, {}, timer=lambda runners, feeds: [[1.0, 3.0]], wait=0)
    assert figures["a"] == {"median": 2.0, "rounds_ms": [1.0, 3.0], "quiet": True, "busy": []}


def test_every_artifact_is_timed_together_after_all_work_has_finished(checkpoints, options):
    events, calls = [], []

    def timer(runners, feeds):
        # what is alive and what has happened when the timing starts
        calls.append({"runners": len(runners), "workers": quiet_timing.workers(), "events": list(events)})
        return [[float(i + 1)] * 5 for i in range(len(runners))]

    def int8_twice_as_fast(runners, feeds):  # the int8 files are kept, whatever this CPU makes of a tiny model
        return [[1.0] * 5, [2.0] * 5]

    stages = tuple(VerifyStage(timer=timer) if isinstance(s, VerifyStage) else
                   QuantizeStage(timer=int8_twice_as_fast) if isinstance(s, QuantizeStage) else s for s in STAGES)
    opts = options(checkpoints["bert"]["classification"], formats="onnx,tflite", buckets=[32], opts="int8",
                   verify_samples=20, measure_latency=True, threads=2)
    result = convert(opts, events.append, stages=stages)
    (call,) = calls  # one timing of every artifact, in alternating rounds
    assert call["runners"] == len(result.artifacts) == 4 and call["workers"] == []
    started = [e for e in call["events"] if isinstance(e, StageStarted)]
    finished = [e.description for e in call["events"] if isinstance(e, StageFinished)]
    assert started[-1].description.startswith("Timing 4 artifacts alone") and started[-1].quiet
    assert sum(d.startswith("Verifying") for d in finished) == 4  # every verification had ended
    latency = [a["latency_ms"] for a in json.loads((result.bundle / "manifest.json").read_text())["artifacts"]]
    assert [(t["median"], t["quiet"]) for t in latency] == [(1.0, True), (2.0, True), (3.0, True), (4.0, True)]
