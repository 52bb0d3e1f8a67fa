"""What earlier runs left beside an output: staging directories (output/staging.py) to finish or remove.

A directory's name is no proof of who made it, so each staging directory holds a marker file
(``contract.STAGING_MARKER``) naming the destination, the run's pid and the random token its name repeats.
Only a marked directory whose run is gone is removed or put in place; a marker left in the destination by a
run killed just after its swap is removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from pocketbert.runtime.contract import STAGING_MARKER


def _rename(src: Path, dst: Path) -> None:
    os.rename(src, dst)


@dataclass(frozen=True)
class Leftover:
    path: Path
    stage: str  # partial, ready or old
    pid: int


def mark(directory: Path, dest: Path, pid: int, token: str) -> None:
    """Write the marker that proves ``directory`` was made by run ``pid``/``token`` for ``dest``."""
    (directory / STAGING_MARKER).write_text(json.dumps({"dest": dest.name, "pid": pid, "token": token}) + "\n",
                                            encoding="utf-8")


def _marker(directory: Path) -> dict | None:
    """The marker in ``directory`` (a regular file, parsed), or None."""
    path = directory / STAGING_MARKER
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 4096:
            return None
        marker = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) else None


def unmark(directory: Path) -> None:
    with contextlib.suppress(OSError):
        (directory / STAGING_MARKER).unlink()


def _leftovers(dest: Path) -> list[Leftover]:
    """Directories beside ``dest`` that a run made: the name's pid and token repeated by the marker inside."""
    pattern = re.compile(re.escape(f".{dest.name}.") + r"(partial|ready|old)-(\d+)-([0-9a-f]{16})")
    found = []
    with contextlib.suppress(OSError), os.scandir(dest.parent) as entries:
        for entry in entries:
            match = pattern.fullmatch(entry.name)
            if not match or not entry.is_dir(follow_symlinks=False):
                continue
            stage, pid, token = match.groups()
            if _marker(Path(entry.path)) == {"dest": dest.name, "pid": int(pid), "token": token}:
                found.append(Leftover(Path(entry.path), stage, int(pid)))
    return found


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # someone else's process, or not a pid: leave its directory alone
        return True
    return True


def recover_interrupted(dest: Path) -> None:
    """Finish or undo a swap that a killed run left half done; remove dead runs' staging directories."""
    stale = [s for s in _leftovers(dest) if not _alive(s.pid)]
    try:
        marker = _marker(dest) if dest.is_dir() and not dest.is_symlink() else None
        if marker and marker.get("dest") == dest.name and isinstance(marker.get("pid"), int) \
                and not _alive(marker["pid"]):
            unmark(dest)  # a run killed between putting dest in place and removing its marker
        if not os.path.lexists(dest):
            # a complete new directory if there is one, else the previous one
            for stage in ("ready", "old"):
                candidates = sorted((s for s in stale if s.stage == stage), key=lambda s: s.path.stat().st_mtime)
                if candidates:
                    _rename(candidates[-1].path, dest)
                    unmark(dest)
                    stale.remove(candidates[-1])
                    break
        for leftover in stale:
            shutil.rmtree(leftover.path, ignore_errors=True)
    except OSError:
        pass  # best effort: the checks that follow report an unwritable location
