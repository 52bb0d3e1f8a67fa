"""training.json: how a PocketBERT-trained checkpoint was made (finetune, recover, trim-vocab), as the
converter copies it into a bundle's manifest and reads its task: the model's own text is what its int8
is calibrated on (training split) and its exports are verified on (dev split)."""

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
    record.pop("files", None)  # the checkpoint's own files: nothing a bundle holds
    return record


def shipped_scores(record: dict) -> dict[str, float]:
    """The dev scores of the model a record describes: its shipped row, else its recovered row (a recovery record
    holds teacher / without / recovered rows), else the record's own scores."""
    scores = record.get("dev_scores") or {}
    return scores.get("shipped", scores.get("recovered", scores))


def task_file(checkpoint: Path, split: str, data_dir=None) -> Path | None:
    """The ``split`` ("train" or "dev") file of the task ``checkpoint`` was trained on, when it is known
    and readable.  A short task name resolves against the data directory first (the recorded path may be
    another machine's); a task given as a file has only its recorded files: never the training file for
    "dev"."""
    record = training_record(checkpoint)
    if not record:
        return None
    from ..data.tasks import TASKS, resolve_task
    from ..errors import ConverterInputError

    task = str(record.get("task") or "")
    if task.lower() in TASKS:
        try:
            return resolve_task(task, split, data_dir)[1]
        except ConverterInputError:
            pass
    recorded = record.get(f"{split}_file")
    return Path(recorded) if recorded and Path(recorded).is_file() else None
