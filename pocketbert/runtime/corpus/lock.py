"""One run at a time per output: an OS lock (flock) on ``OUT.lock``, which names the run holding it.

The lock file is published complete and already locked (written under a temporary name, locked, then
hard-linked into place), so a lock file seen by another run always names its holder.  The OS drops the
lock when its holder dies, even by SIGKILL; the file it leaves is taken over by the next run (it is ours:
it names this schema) and removed when that run ends.  A file of that name that is not such a record is
someone else's: it is refused, never deleted.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import tempfile
from pathlib import Path

from .formats import OutputExistsError
from .partial import write_error

LOCK_SCHEMA = "pocketbert-corpus-lock/1"


def lock_path(output: Path) -> Path:
    return Path(output).with_name(Path(output).name + ".lock")


def _holder(fd: int) -> dict | None:
    """The record in an open lock file, or None when it is not one of ours."""
    try:
        record = json.loads(os.pread(fd, 4096, 0).decode("utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("schema") == LOCK_SCHEMA else None


def _record() -> bytes:
    return json.dumps({"schema": LOCK_SCHEMA, "pid": os.getpid(), "host": socket.gethostname()}).encode() + b"\n"


def _busy(output: Path, fd: int) -> OutputExistsError:
    record = _holder(fd) or {}
    who = f"process {record.get('pid', '?')} on {record.get('host', '?')}"
    return OutputExistsError(f"another run is writing {output} ({who} holds {lock_path(output).name})",
                             "wait for that run to finish (or stop it, then add --resume), or choose another --output")


def _foreign(output: Path) -> OutputExistsError:
    path = lock_path(output)
    return OutputExistsError(f"{path} exists and is not a lock of this program", "move it away, or choose another "
                             "--output")


class OutputLock:
    """Held from :meth:`acquire` until :meth:`release`; a context manager."""

    def __init__(self, output: Path):
        self.output = Path(output)
        self.path = lock_path(output)
        self.fd: int | None = None

    def __enter__(self) -> OutputLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def acquire(self) -> None:
        try:
            while self.fd is None:
                if not self._publish():
                    self._take_over()
        except OSError as exc:  # a read-only or full folder: nothing of this run is written yet
            raise write_error(self.output, exc, None) from None

    def _publish(self) -> bool:
        """Create the lock file, complete and locked; False when one is there already."""
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.write(fd, _record())
            os.link(tmp, self.path)
        except FileExistsError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        finally:
            os.unlink(tmp)
        self.fd = fd
        return True

    def _take_over(self) -> None:
        """Lock the file there; when its holder is gone (and it is ours), it is this run's."""
        try:
            fd = os.open(self.path, os.O_RDWR)
        except FileNotFoundError:
            return  # released meanwhile: publish again
        except OSError:  # a directory, or a file we may not write: not our lock
            raise _foreign(self.output) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            error = _busy(self.output, fd) if exc.errno in (errno.EWOULDBLOCK, errno.EACCES) else exc
            os.close(fd)
            raise error from None
        if not _same_file(fd, self.path):  # released and removed between our open and our lock: try again
            os.close(fd)
            return
        if _holder(fd) is None:
            os.close(fd)
            raise _foreign(self.output)
        os.ftruncate(fd, 0)
        os.pwrite(fd, _record(), 0)
        self.fd = fd

    def release(self) -> None:
        """Remove the lock file (while still holding it: a run waiting on it then sees it is gone)."""
        if self.fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            if _same_file(self.fd, self.path):
                self.path.unlink()
        os.close(self.fd)
        self.fd = None


def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def check_free(output: Path) -> None:
    """Refuse now when another run holds the output's lock (before the bundle loads); takes nothing."""
    try:
        fd = os.open(lock_path(output), os.O_RDONLY)
    except OSError:
        return  # no lock file (or unreadable: acquire will say)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EACCES):
            raise _busy(output, fd) from None
    finally:
        os.close(fd)
