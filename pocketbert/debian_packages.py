"""Debian packages the benchmarks and test tools need (QEMU, chromium), installed with apt-get when missing.

Only as root and where apt-get exists; the caller says what to do otherwise.  A fresh machine's package
lists can be stale or empty, so a failed install is retried after ``apt-get update``.  Several installs may
run at once (the test suite runs modules in parallel): they take turns on one lock file, and apt itself is
told to wait for dpkg's lock instead of failing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

#: apt's own wait for dpkg's lock, for an apt or dpkg run that is not ours
_WAIT = ("-o", "DPkg::Lock::Timeout=900")


def can_install() -> bool:
    return os.geteuid() == 0 and shutil.which("apt-get") is not None


@contextlib.contextmanager
def _turn():
    """One apt-get of ours at a time, across processes."""
    with open(Path(tempfile.gettempdir()) / "pocketbert-apt.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _apt_get(*command: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(["apt-get", *_WAIT, *command], capture_output=True, text=True, env=env, timeout=1800)


def apt_get(*command: str) -> subprocess.CompletedProcess:
    """``apt-get COMMAND`` in its turn (e.g. ``update``), waiting for dpkg's lock."""
    with _turn():
        return _apt_get(*command)


def install(package: str, installed, log=print, recommends: bool = True) -> str:
    """``apt-get install -y package``, then ``apt-get update`` and again if ``installed()`` is still false.
    ``recommends=False`` leaves out the packages it only recommends (androguard's recommend a Qt GUI: a third of
    its install time, for a tool run from the command line).
    Returns "" once ``installed()`` holds, else the last failure's message (for the caller's error)."""
    return _install([package], installed, log, recommends)


def ensure_command(name: str, package: str, log=print, recommends: bool = True) -> tuple[str | None, str]:
    """The path of command ``name``, Debian's ``package`` installed first when it is missing and we may install;
    returns (the path or None, the install's failure or "" when it did not fail or was not tried)."""
    failed = ""
    if shutil.which(name) is None and can_install():
        failed = install(package, lambda: shutil.which(name) is not None, log=log, recommends=recommends)
    return shutil.which(name), failed


def install_missing(packages: list[str], log=print, recommends: bool = True) -> str:
    """Every package of ``packages`` that dpkg does not list as installed, in one ``apt-get install``: one download
    and one run of dpkg's triggers (man-db's alone takes seconds), where an install each repeats them.  Returns as
    :func:`install` does."""
    missing = [package for package in packages if not is_installed(package)]
    if not missing:
        return ""
    return _install(missing, lambda: all(map(is_installed, missing)), log, recommends)


def is_installed(package: str) -> bool:
    done = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Status}", package], capture_output=True, text=True)
    return done.returncode == 0 and done.stdout == "installed"


def _install(packages: list[str], installed, log, recommends: bool) -> str:
    failed = "apt-get gave no error, yet the package's files are missing"
    log(f"installing Debian's {', '.join(packages)} (apt-get)")
    add = ["install", "-y", "-q", *([] if recommends else ["--no-install-recommends"]), *packages]
    with _turn():
        for command in (add, ["update", "-q"], add):
            if installed():  # another process may have installed it while we waited
                return ""
            done = _apt_get(*command)
            if done.returncode != 0:
                failed = f"apt-get {' '.join(command)}: {done.stderr.strip()[-600:]}"
        return "" if installed() else failed
