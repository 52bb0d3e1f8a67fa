"""Errors a user can act on: each names the problem and the fix, and maps to an exit code.

They extend the runtime's :class:`~pocketbert.runtime.errors.Error` (one problem/fix base for the
package); the converter's exit codes are its own, documented in README and ``--help``."""

from __future__ import annotations

import contextlib
import errno
import os

from pocketbert.runtime.errors import Error

# Exit codes, documented in README and `--help`.
EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2  # click's own code for bad command lines
EXIT_INPUT = 3
EXIT_VERIFICATION = 4
EXIT_ACCURACY_LOSS = 5
EXIT_OUTPUT = 6
EXIT_INTERRUPTED = 130


class ConverterError(Error):
    """A conversion failure with a message for the user: what went wrong and how to fix it."""

    exit_code = EXIT_INPUT


class ConverterInputError(ConverterError):
    """The checkpoint, options or data given cannot be used."""

    exit_code = EXIT_INPUT


class OutputError(ConverterError):
    """The output location cannot be written."""

    exit_code = EXIT_OUTPUT


class VerificationError(ConverterError):
    """An exported model does not compute what the PyTorch model computes."""

    exit_code = EXIT_VERIFICATION


class AccuracyLossRefused(ConverterError):
    """nonorm/relu changed the model's outputs and the user did not accept the loss."""

    exit_code = EXIT_ACCURACY_LOSS


DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


def _disk_cause(exc: BaseException | None) -> OSError | None:
    """The full-disk or read-only-disk OSError behind ``exc`` (itself, its cause or its context)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in (*DISK_FULL, errno.EROFS):
            return exc
        if os.strerror(errno.ENOSPC) in str(exc):  # a library that reports the OS error only in its message
            return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        exc = exc.__cause__ or exc.__context__
    return None


def output_error_for_disk(exc: BaseException, where: str | None = None,
                          needed: str | None = None) -> OutputError | None:
    """An OutputError naming a full or read-only disk, when that is what ``exc`` comes from; else None.

    ``where``: the output being written; ``needed``: how much room it takes, when known."""
    cause = _disk_cause(exc)
    if cause is None:
        return None
    where = where or cause.filename
    place = f" {str(where)!r}" if where else " the output"
    if cause.errno == errno.EROFS:
        return OutputError(f"cannot write{place}: read-only file system",
                           "choose an --out path on a writable file system")
    problem = f"writing{place} failed: {cause.strerror or os.strerror(cause.errno)}"
    if needed:
        problem += f"; {needed}"
    disk = f" (see: df -h {os.path.dirname(str(where))!r})" if where else ""
    return OutputError(problem, f"free space on that disk{disk}, or choose an --out path on a disk with more room")


@contextlib.contextmanager
def disk_errors_as_output_errors():
    """Report a full or read-only disk met anywhere (training checkpoints, caches) as an OutputError."""
    try:
        yield
    except ConverterError:
        raise
    except Exception as exc:
        mapped = output_error_for_disk(exc)
        if mapped is None:
            raise
        raise mapped from exc
