"""Write a directory beside its destination and swap it into place only when it is complete.

Names beside DEST, all hidden and all carrying the writer's process id and a random token:

    .DEST.partial-PID-TOKEN   being written
    .DEST.ready-PID-TOKEN     complete: renamed so once everything is written, then swapped in
    .DEST.old-PID-TOKEN       the previous DEST, during a swap by two renames

A name is no proof of who made a directory (a user may keep a ``.DEST.old-1234`` of their own), so each
of these holds a marker file (output/leftovers.py) naming DEST, the pid and the token; the previous
DEST gets one just before it is swapped away.  A later run only touches a directory whose marker matches
its name and whose process is gone, and removes the marker again from whatever it puts in place.

The swap is one atomic rename(2) when DEST is missing, and renameat2(RENAME_EXCHANGE) when it exists
(Linux; the previous DEST then sits at the ready name until it is removed).  Where the file system
cannot exchange, DEST is renamed aside and the ready directory renamed in.  A run killed at any point
leaves either DEST or a ready/old directory, and the next Staging for DEST (constructed by every
command before its slow work) puts the complete one in place and removes dead runs' leftovers.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import secrets
import shutil
import sys
from pathlib import Path

from ..errors import OutputError, output_error_for_disk
from .leftovers import mark, recover_interrupted, unmark
from .owned import BUNDLE, why_not_replaceable
from .termination import SigtermAsInterrupt

AT_FDCWD = -100
RENAME_EXCHANGE = 2
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV}


def _rename(src: Path, dst: Path) -> None:
    os.rename(src, dst)


@functools.cache
def _renameat2():
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # glibc before 2.28, musl
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


def _exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths atomically; False where the system or file system cannot."""
    function = _renameat2()
    if function is None:
        return False
    if function(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), str(a), None, str(b))


# --- what --out may never be -------------------------------------------------------------------

def refuse_overlap(source: Path, out: Path, what: str = "source checkpoint", flag: str = "--out") -> None:
    """--out must lie outside ``source`` (what the command reads) and not hold it, symlinks resolved: even with
    --overwrite, replacing it would destroy the input the command was given."""
    source, dest = Path(source).expanduser().resolve(), Path(out).expanduser().resolve()
    where = "is" if dest == source else "is inside" if source in dest.parents else "holds" \
        if dest in source.parents else None
    if where:
        raise OutputError(f"{flag} {str(out)!r} {where} the {what} {str(source)!r}, which this command reads and "
                          "never replaces (not even with --overwrite)",
                          f"give {flag} a path outside the {what}, e.g. {flag} "
                          f"{str(source.parent / (source.name + '-new'))!r}")


# --- file modes ----------------------------------------------------------------------------------

def _umask() -> int:
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)  # no /proc: read it the only other way there is
    os.umask(mask)
    return mask


def follow_umask(root: Path) -> None:
    """Give ``root`` and everything in it the modes a new file of the user's gets (mkdtemp makes 0700/0600)."""
    mask = _umask()
    for directory, _, files in os.walk(root):
        os.chmod(directory, 0o777 & ~mask)
        for name in files:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                os.chmod(path, 0o666 & ~mask)


def _home() -> Path | None:
    try:
        return Path.home().resolve()
    except (OSError, RuntimeError):  # no home directory: nothing to protect
        return None


def _cwd() -> Path | None:
    try:
        return Path.cwd().resolve()
    except OSError:  # the working directory was removed
        return None


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def _tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


# --- the staging directory -----------------------------------------------------------------------

class Staging:
    """A staging directory that becomes ``dest`` on :meth:`commit` and vanishes otherwise.

    ``kind`` (owned.BUNDLE or owned.CHECKPOINT) is what an existing ``dest`` must be for ``overwrite``
    to replace it.  Use as a context manager: leaving the block without commit (error, Ctrl-C) removes
    the staging directory; a full or read-only disk inside the block becomes an OutputError.
    """

    def __init__(self, dest: Path, overwrite: bool, kind: str = BUNDLE):
        self.dest = Path(dest).resolve()
        self.overwrite = overwrite
        self.kind = kind
        self.path: Path | None = None
        self.needed: tuple[int, str] | None = None  # estimate given to reserve(), for a disk-full message
        self._created: list[Path] = []  # parent directories we made, removed again on failure
        self._token = secrets.token_hex(8)  # with the pid, names (and marks) this run's directories
        self._sigterm = SigtermAsInterrupt()
        if self.dest.parent.is_dir():
            recover_interrupted(self.dest)
        self._check()

    def _sibling(self, stage: str) -> Path:
        return self.dest.with_name(f".{self.dest.name}.{stage}-{os.getpid()}-{self._token}")

    def _mark(self, directory: Path) -> None:
        mark(directory, self.dest, os.getpid(), self._token)

    def _check(self) -> None:
        dest = self.dest
        if dest.exists() and not dest.is_dir():
            raise OutputError(f"output {str(dest)!r} exists and is a file", "choose another --out path")
        self._check_replaceable()
        self._check_location()
        parent = dest.parent
        while not parent.exists():
            parent = parent.parent
        if not parent.is_dir():
            raise OutputError(f"cannot create {str(dest)!r}: {str(parent)!r} is a file",
                              "choose an --out path inside a directory")
        if hasattr(os, "statvfs") and os.statvfs(parent).f_flag & os.ST_RDONLY:
            raise OutputError(f"cannot write to {str(parent)!r}: read-only file system",
                              "choose an --out path on a writable file system")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise OutputError(f"cannot write to {str(parent)!r} (permission denied)",
                              "choose an --out path in a directory you can write to")

    def _check_replaceable(self) -> None:
        dest = self.dest
        if dest.is_dir() and any(dest.iterdir()):
            if not self.overwrite:
                raise OutputError(f"output directory {str(dest)!r} exists and is not empty",
                                  "pass --overwrite to replace it, or choose another --out path")
            refusal = why_not_replaceable(dest, self.kind)
            if refusal:
                raise OutputError(f"--overwrite refuses to replace {str(dest)!r}: {refusal.reason}",
                                  refusal.fix or f"choose another --out path; --overwrite only replaces a "
                                  f"{self.kind} PocketBERT wrote, holding nothing else")

    def _check_location(self) -> None:
        """Never swap away the root, the home directory, or the directory a shell is working in."""
        dest = self.dest
        if dest == Path(dest.anchor) or dest == _home():
            raise OutputError(f"refusing to write the output over {str(dest)!r}",
                              "choose a new directory for --out, e.g. --out ./bundle")
        cwd = _cwd()
        if cwd is not None and (dest == cwd or dest in cwd.parents):
            raise OutputError(f"refusing to replace {str(dest)!r}: it is (or contains) the current directory",
                              "choose a new directory for --out, e.g. --out ./bundle")

    def __enter__(self) -> Staging:
        self._sigterm.install()  # before the directory exists: no moment where a SIGTERM leaks it
        try:
            missing = [p for p in [self.dest.parent, *self.dest.parent.parents] if not p.exists()]
            self.dest.parent.mkdir(parents=True, exist_ok=True)
            self._created = missing  # deepest first
            path = self._sibling("partial")
            path.mkdir(mode=0o700)
            self.path = path
            self._mark(path)
        except OSError as exc:
            self._sigterm.uninstall()
            raise output_error_for_disk(exc, str(self.dest)) or OutputError(
                f"cannot create the output directory: {exc.strerror}: {exc.filename}",
                "choose an --out path in a directory you can write to") from exc
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._sigterm.hold()
        try:
            if self.path is not None and self.path.exists():
                shutil.rmtree(self.path, ignore_errors=True)
                for directory in self._created:
                    with contextlib.suppress(OSError):
                        directory.rmdir()  # only if still empty
        finally:
            if isinstance(exc, KeyboardInterrupt):
                self._sigterm.held = False  # already unwinding: a SIGTERM held meanwhile adds nothing
            self._sigterm.uninstall()
        if isinstance(exc, Exception) and not isinstance(exc, OutputError):
            needed = None
            if self.needed:
                needed = f"the {self.kind} needs about {_mb(self.needed[0])} ({self.needed[1]})"
            mapped = output_error_for_disk(exc, str(self.dest), needed)
            if mapped is not None:
                raise mapped from exc

    def reserve(self, needed: int, detail: str) -> None:
        """Refuse now, with a clear message, when the disk has less than ``needed`` more bytes free.

        ``detail`` says what ``needed`` was estimated from.  Some exporters end the process on a full
        disk (LLVM's fatal error handler) instead of raising, so waiting for the error is not enough."""
        assert self.path is not None
        written = _tree_bytes(self.path)
        self.needed = (written + needed, f"an estimate: {_mb(needed)} for {detail}, plus {_mb(written)} "
                                         "already written")
        free = shutil.disk_usage(self.path).free
        if free < needed:
            raise OutputError(f"not enough space for the {self.kind} on the disk holding {str(self.dest.parent)!r}: "
                              f"it needs about {_mb(self.needed[0])} ({self.needed[1]}) and {_mb(free)} is free",
                              f"free space on that disk (see: df -h {str(self.dest.parent)!r}), or choose an --out "
                              "path on a disk with more room")

    def commit(self) -> Path:
        """Replace ``dest`` with the staged directory; atomic where the system can exchange directories."""
        assert self.path is not None
        self._check_replaceable()  # again: files may have been put there while this one was being written
        follow_umask(self.path)
        ready = self._sibling("ready")
        _rename(self.path, ready)  # marks it complete for a later run's recovery
        self.path = ready
        if not self.dest.exists():
            _rename(ready, self.dest)
            self.path = None
            unmark(self.dest)
            return self.dest
        # the previous dest, once set aside, must be known as this run's to be removed after a crash
        with contextlib.suppress(OSError):  # a read-only dest: a crash then leaves it beside, untouched
            self._mark(self.dest)
        try:
            exchanged = _exchange(ready, self.dest)
        except BaseException:
            unmark(self.dest)
            raise
        if exchanged:
            self.path = None
            unmark(self.dest)
            shutil.rmtree(ready, ignore_errors=True)  # the previous dest
            return self.dest
        backup = self._sibling("old")
        try:
            _rename(self.dest, backup)
        except BaseException:
            unmark(self.dest)
            raise
        try:
            _rename(ready, self.dest)
        except BaseException:  # includes Ctrl-C between the two renames: put the old one back
            _rename(backup, self.dest)
            unmark(self.dest)
            raise
        self.path = None
        unmark(self.dest)
        shutil.rmtree(backup, ignore_errors=True)
        return self.dest
