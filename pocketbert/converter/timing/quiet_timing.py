"""The latency figures (``latency_ms``): every artifact timed once all other work of the conversion has finished.

A figure timed while anything else of the conversion runs (a second process exporting or calibrating, a thread pool
judging rows, another session's threads) says what the machine's load was, not what the file costs.  So the verify
stage times nothing until every artifact is verified and its runners are released, then times all the artifacts
together in alternating rounds (:func:`.candidate_timing.alternating_rounds_ms`: load that comes and goes lands on
every file alike).  Before it times, :func:`quiet_now` checks that none of the conversion's workers is alive: child
processes of this process, and threads the converter names ``WORKER_PREFIX``; the figures record it (``quiet``).
"""

from __future__ import annotations

import gc
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .candidate_timing import alternating_rounds_ms

#: the name every thread the converter starts begins with (``backends.base.Runner``'s row pool)
WORKER_PREFIX = "pocketbert-worker"
#: seconds to wait for a worker still finishing before timing (they are joined where they start: none is expected)
WAIT_SECONDS = 10.0


def child_processes() -> list[int]:
    """Process ids of this process's living children (Linux ``/proc``; elsewhere none can be seen)."""
    me, found = os.getpid(), []
    for entry in Path("/proc").glob("[0-9]*/stat") if Path("/proc/self/stat").exists() else []:
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == me and fields[0] != "Z":
            found.append(int(entry.parent.name))
    return found


def workers() -> list[str]:
    """The conversion's workers alive now, named: child processes and the converter's threads."""
    threads = [t.name for t in threading.enumerate() if t.name.startswith(WORKER_PREFIX) and t.is_alive()]
    return [*(f"process {pid}" for pid in child_processes()), *(f"thread {name}" for name in threads)]


def quiet_now(wait: float = WAIT_SECONDS, clock: Callable[[], float] = time.monotonic) -> list[str]:
    """Released runners collected, then the workers still alive after waiting up to ``wait`` seconds (empty: quiet)."""
    gc.collect()
    end = clock() + wait
    alive = workers()
    while alive and clock() < end:
        time.sleep(0.1)
        alive = workers()
    return alive


def timed_quietly(runners: dict[str, object], feeds: dict[str, np.ndarray], timer=alternating_rounds_ms,
                  wait: float = WAIT_SECONDS) -> dict[str, dict]:
    """recipe -> ``{"median": ms, "rounds_ms": [...], "quiet": bool, "busy": [...]}``: the runners timed together in
    alternating rounds once the conversion's workers have finished (``busy``: those that had not, if any)."""
    busy = quiet_now(wait)
    rounds = timer(list(runners.values()), feeds)
    return {recipe: {"median": float(np.median(r)), "rounds_ms": list(r), "quiet": not busy, "busy": busy}
            for recipe, r in zip(runners, rounds)}
