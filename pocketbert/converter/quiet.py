"""Silence native libraries' chatter (absl/C++ logs) while Python-level output still flows.

litert-torch, the LiteRT converter and TFLite write straight to file descriptors 1 and 2 from
C++, which Python-level redirection cannot catch.  :func:`silenced` points fds 1 and 2 at
/dev/null and, for its duration, makes ``sys.stdout``/``sys.stderr`` write to duplicates of the
original descriptors: our messages, click's help and errors still reach the terminal.  Libraries'
Python-level narration is caught where it happens (backends wrap those calls).  Set
POCKETBERT_VERBOSE=1 to see everything.

:func:`mute_import_chatter` drops what libraries say while they are imported, before anything of ours:
transformers imports torchao whenever it is installed (its quantizer registry, on the first model class), and
torchao logs a warning for each optional CUDA kernel library it cannot load, then registers enums that torch's
pytree warns about.  The package imports it first (converter/__init__.py), so every entry point has it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys

VERBOSE = os.environ.get("POCKETBERT_VERBOSE") == "1"

#: logger -> the start of the messages it only says on import, about nothing this program uses
IMPORT_CHATTER = {
    "torchao": ("Failed to load ",),  # its optional CUDA kernel libraries (_C_mxfp8…so, _C_cutlass_90a…so)
    "torch.utils._pytree": ("%s is an Enum subclass and is now natively supported",),  # torchao's register_constant
}


class _DropChatter(logging.Filter):
    def __init__(self, prefixes: tuple[str, ...]):
        super().__init__()
        self.prefixes = prefixes

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.prefixes)


def mute_import_chatter() -> None:
    """Filter :data:`IMPORT_CHATTER` out of those loggers (only those messages: a library's other warnings still
    pass).  Idempotent; nothing with POCKETBERT_VERBOSE=1."""
    if VERBOSE:
        return
    for name, prefixes in IMPORT_CHATTER.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DropChatter) for f in logger.filters):
            logger.addFilter(_DropChatter(prefixes))


@contextlib.contextmanager
def silenced():
    if VERBOSE:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    old_python = sys.stdout, sys.stderr
    # Python streams that write to fd 1/2 follow the terminal to its duplicate; streams that are
    # something else already (a test's capture, a file) are left alone.
    streams = [os.fdopen(os.dup(fd), "w", buffering=1, encoding="utf-8", errors="replace")
               if _writes_to(stream, target) else stream
               for fd, stream, target in zip(saved, old_python, (1, 2))]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        sys.stdout, sys.stderr = streams
        with root_handlers_kept():
            yield
    finally:
        for stream in streams:
            stream.flush()
        sys.stdout, sys.stderr = old_python
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)
        for stream, old in zip(streams, old_python):
            if stream is not old:
                stream.close()


def _writes_to(stream, fd: int) -> bool:
    try:
        return stream.fileno() == fd
    except (AttributeError, OSError, ValueError):
        return False


@contextlib.contextmanager
def root_handlers_kept():
    """Drop root-logger handlers added inside the block.

    A library's first ``logging.warning()`` gives the root logger a handler bound to whatever
    ``sys.stderr`` is at that moment; inside a redirection that stream is closed afterwards, and every
    later warning would print a "Logging error" traceback.
    """
    before = list(logging.root.handlers)
    try:
        yield
    finally:
        for handler in [h for h in logging.root.handlers if h not in before]:
            logging.root.removeHandler(handler)
