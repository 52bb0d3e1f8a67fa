"""What a checkpoint command can tell about the checkpoints it reads before it loads them: that --out is none of
them (even with --overwrite, replacing one would destroy the command's own input), and the vocabulary size."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import ConverterInputError
from .loading import resolve
from ..output.staging import refuse_overlap


def refuse_as_output(out: Path, **inputs: str | None) -> None:
    """Before any work: ``out`` must not be, hold or lie inside a checkpoint the command reads (``inputs``: role ->
    path or built-in name, e.g. source=CHECKPOINT, teacher=--teacher), whatever --overwrite says."""
    for role, spec in inputs.items():
        if not spec:
            continue
        try:
            path, builtin = resolve(spec)
        except ConverterInputError:
            continue  # a built-in model that is not installed: loading it says so
        refuse_overlap(path, out, f"{'built-in model' if builtin else role + ' checkpoint'}")


def vocabulary_size(spec: str) -> int | None:
    """The word-embedding rows config.json records, read without loading anything (None: unreadable, which
    loading the checkpoint then reports)."""
    try:
        raw = json.loads((resolve(spec)[0] / "config.json").read_text(encoding="utf-8"))
    except (ConverterInputError, OSError, ValueError):
        return None
    size = raw.get("vocab_size") if isinstance(raw, dict) else None
    return size if _whole(size) and size > 0 else None


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
