"""The skeleton every checkpoint -> checkpoint command shares (finetune, recover, trim-vocab,
share-embeddings): check the output before any work, set the threads, read the task's splits, score the
weights exactly as they will ship, extend the input's training record, and write the checkpoint with
its model card through :func:`~pocketbert.converter.training.save.save_trained` (staged, never partial).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from ..checkpoints.loading import SAVED_TRANSFORMS_KEY
from ..checks import accuracy_gate
from ..data import load_task
from ..data.tasks import TASKS
from ..errors import ConverterInputError
from .card import model_card
from .evaluate import evaluate
from .save import check_output, save_trained


@dataclass(kw_only=True)
class CheckpointJobOptions:
    """The settings every checkpoint -> checkpoint lever's options share (keyword-only, so that a lever's own
    fields, with or without defaults, may come first)."""
    threads: int | None = None
    train_limit: int | None = None
    data_dir: str | None = None
    overwrite: bool = False
    allow_accuracy_loss: bool = False  # write a result that loses more than max_accuracy_drop against the input
    max_accuracy_drop: float = accuracy_gate.MAX_DROP


def begin(out: Path, overwrite: bool, threads: int | None) -> None:
    """Before any work: an output we may not write fails now, not after an hour of training."""
    check_output(out, overwrite)
    if threads:
        torch.set_num_threads(threads)


def splits(task: str, data_dir, train_limit: int | None = None, dev: str | None = None):
    """The task's training and dev splits; ``dev``: the dev file beside a training file, required with one (the
    file would be its own "dev split", and its training score would be recorded as the task's dev score, which
    the one command then takes for the teacher's)."""
    if dev is None and task.lower() not in TASKS:
        raise ConverterInputError(f"--task {task} is a training file and no dev file was given: the dev scores "
                                  "would be taken on the training text and recorded as the task's dev scores",
                                  "add --dev DEV_FILE, the task's held-out dev file")
    if dev is not None and Path(dev).resolve() == Path(task).resolve():
        raise ConverterInputError(f"--dev {dev} is the training file: its scores would not be dev scores",
                                  "give the task's held-out dev file to --dev")
    return load_task(task, "train", data_dir, limit=train_limit), load_task(dev or task, "dev", data_dir)


def rounded(scores: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 3) for k, v in scores.items()}


def round_to_fp16(model: torch.nn.Module, keep: Callable[[str], bool] = lambda name: False) -> None:
    """The weights as ``--fp16`` ships them (rounded to float16; the loader computes in float32), so that
    the recorded score is the shipped model's.  ``keep(name)``: a tensor left as it is."""
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            if tensor.is_floating_point() and not keep(name):
                tensor.copy_(tensor.half().float())


def score(loaded, dev, length: int) -> dict[str, float]:
    """``loaded``'s dev scores, its weights as they are (the shipped ones, once rounded or packed)."""
    features = dev.encode(loaded.tokenizer, length, loaded.labels)
    return evaluate(loaded.model, features, input_names=loaded.family.input_names)


def input_record(checkpoint: Path, kind: str, train, dev) -> dict:
    """The input checkpoint's training.json (its history carries on), or a fresh record of ``kind``."""
    path = Path(checkpoint) / "training.json"
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    return {"kind": kind, "task": train.name, "train_examples": len(train), "dev_examples": len(dev),
            "recipe": {}, "training": {"steps": 0, "seconds": 0, "stopped_by": "n/a"}, "dev_scores": {}}


def record_shipped(record: dict, name: str, scores: dict[str, float]) -> None:
    """The shipped model's dev scores: a row beside a recovered model's, or the record's own scores."""
    if "recovered" in record.get("dev_scores", {}):
        record["dev_scores"]["shipped"] = scores
        record.setdefault("comparison", {}).setdefault("rows", []).append({"name": name, "scores": scores})
    else:
        record["dev_scores"] = scores


def saved_transforms(config) -> list[str]:
    """The structural transforms a checkpoint's config.json records (re-applied when it is loaded)."""
    return (getattr(config, SAVED_TRANSFORMS_KEY, None) or {}).get("transforms", [])


def write(model, tokenizer, out: Path, *, overwrite: bool, record: dict, fp16: bool = False,
          transforms: list[str] | None = None, **extra) -> Path:
    """The checkpoint, its training.json and its model card."""
    factored = record.get("factored_embeddings") or {}
    if factored.get("base_weights") and not extra.get("base_weights"):
        factored["base_weights"] = None  # every weight is stored now: the record must not say they are taken
    return save_trained(model, tokenizer, out, overwrite=overwrite, record=record, card=model_card(record),
                        transforms=transforms or [], dtype=torch.float16 if fp16 else None, **extra)
