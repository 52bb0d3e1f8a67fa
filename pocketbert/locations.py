"""Where PocketBERT reads and writes by default, run from a source checkout or installed from a wheel.

A checkout keeps its data beside the repository (``../shared/data``), the benchmark results inside it
(``pocketbert/benchmarks/results``, committed with ``REPORT.md``) and the demo checkpoints
(``pocketbert/demo_models``, 44 MB: the wheel carries no checkpoints).  An installed package lives in
site-packages, which is nobody's place to write: results then go under the current directory and caches
under the user's cache directory."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "POCKETBERT_CACHE"
_REPOSITORY = Path(__file__).resolve().parents[1]
#: the data directory's default, as --help states it (pocketbert.converter.inputs.texts.data_dir looks it up)
DATA_DIR_DEFAULT = ("$POCKETBERT_DATA, else ../shared/data beside a checkout of the repository; "
                    "an installed package has no default")


def checkout() -> Path | None:
    """The repository root when this package runs from a source checkout, else ``None`` (installed)."""
    return _REPOSITORY if (_REPOSITORY / "pyproject.toml").is_file() else None


def demo_models() -> Path | None:
    """The demo checkpoints' folder (``pocketbert/demo_models``) of a checkout, editable installs included;
    ``None`` when installed from a wheel, which carries no checkpoints."""
    folder = _REPOSITORY / "pocketbert" / "demo_models"
    return folder if checkout() is not None and folder.is_dir() else None


def cache_dir() -> Path:
    """Downloads and intermediate files: ``$POCKETBERT_CACHE``, else ``$XDG_CACHE_HOME/pocketbert``,
    else ``~/.cache/pocketbert``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "pocketbert"
