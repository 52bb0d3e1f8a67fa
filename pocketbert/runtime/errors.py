"""Errors a caller can act on: each names the problem and the fix.

Every failure the runtime can foresee (a broken bundle, a model file the backend refuses, text it
cannot encode) surfaces as one of these, raised before any data reaches the backend, so a bad input
never turns into a crash or an opaque message from inside ONNX Runtime or LiteRT.
"""

from __future__ import annotations

# CLI exit codes (README): 0 ok, 2 bad command line (click), 3 bundle, 4 model, 5 input, 6 backend missing.
EXIT_BUNDLE = 3
EXIT_MODEL = 4
EXIT_INPUT = 5
EXIT_BACKEND = 6


class Error(Exception):
    """Base class: ``problem`` says what is wrong, ``fix`` what to do about it."""

    exit_code = 1

    def __init__(self, problem: str, fix: str | None = None):
        self.problem = problem
        self.fix = fix
        super().__init__(problem if not fix else f"{problem}\n  fix: {fix}")


class BundleError(Error):
    """The bundle directory or its manifest cannot be used (missing/corrupt file, newer schema, no artifact)."""

    exit_code = EXIT_BUNDLE


class ModelError(Error):
    """The backend refused the model file, or the model does not match the bundle's tokenizer or labels."""

    exit_code = EXIT_MODEL


class InputError(Error, ValueError):
    """A text, or an argument of a call (texts, threads, ignore_labels, …), cannot be used; also a ``ValueError``."""

    exit_code = EXIT_INPUT


class BackendUnavailableError(Error, ImportError):
    """The Python package of the requested backend is not installed on this platform."""

    exit_code = EXIT_BACKEND
