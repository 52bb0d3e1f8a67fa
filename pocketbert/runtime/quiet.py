"""Keep native libraries' chatter out of the user's program: LiteRT's C++ side prints "INFO: Created TensorFlow
Lite XNNPACK delegate for CPU." on file descriptor 2 while an interpreter is built, which Python-level redirection
cannot catch.  :func:`native_stderr_silenced` points fd 2 at /dev/null for that moment only; Python's own
``sys.stderr`` keeps the terminal meanwhile.  POCKETBERT_VERBOSE=1 shows everything.  (The converter has its own,
wider ``converter/quiet.py``; the runtime imports nothing of the converter.)
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

_lock = threading.Lock()
_depth = 0  # blocks open: fd 2 is restored when the last one ends (interpreters may be built on several threads)
_saved: int | None = None
_python_stderr = None


def verbose() -> bool:
    return os.environ.get("POCKETBERT_VERBOSE") == "1"


@contextlib.contextmanager
def native_stderr_silenced():
    if verbose():
        yield
        return
    _enter()
    try:
        yield
    finally:
        _leave()


def _enter() -> None:
    global _depth, _saved, _python_stderr
    with _lock:
        _depth += 1
        if _depth > 1:
            return
        with contextlib.suppress(AttributeError, ValueError, OSError):
            sys.stderr.flush()
        _saved = os.dup(2)
        if _writes_to_fd2(sys.stderr):  # Python's messages meanwhile still reach the terminal
            _python_stderr = sys.stderr
            sys.stderr = os.fdopen(os.dup(_saved), "w", buffering=1, encoding="utf-8", errors="replace")
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)


def _leave() -> None:
    global _depth, _saved, _python_stderr
    with _lock:
        _depth -= 1
        if _depth > 0 or _saved is None:
            return
        os.dup2(_saved, 2)
        os.close(_saved)
        _saved = None
        if _python_stderr is not None:
            sys.stderr.close()
            sys.stderr, _python_stderr = _python_stderr, None


def _writes_to_fd2(stream) -> bool:
    try:
        return stream.fileno() == 2
    except (AttributeError, OSError, ValueError):
        return False
