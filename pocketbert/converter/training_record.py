"""training.json: how a PocketBERT-trained checkpoint was made (finetune, recover, trim-vocab), as the
converter copies it into a bundle's manifest and reads its task for default calibration text."""

from __future__ import annotations

import json
from pathlib import Path


def training_record(checkpoint: Path) -> dict | None:
    path = Path(checkpoint) / "training.json"
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    record.pop("distillation", None)  # per-stage losses: in the checkpoint's own training.json
    return record
