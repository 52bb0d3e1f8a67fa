"""Errors a user can act on: each names the problem and the fix, and maps to an exit code."""

from __future__ import annotations

# Exit codes, documented in README and `--help`.
EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2  # click's own code for bad command lines
EXIT_INPUT = 3
EXIT_VERIFICATION = 4
EXIT_ACCURACY_LOSS = 5
EXIT_OUTPUT = 6
EXIT_INTERRUPTED = 130


class ConverterError(Exception):
    """A failure with a message for the user: what went wrong and how to fix it."""

    exit_code = EXIT_INPUT

    def __init__(self, problem: str, fix: str | None = None):
        self.problem = problem
        self.fix = fix
        super().__init__(problem if not fix else f"{problem}\n  fix: {fix}")


class InputError(ConverterError):
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
