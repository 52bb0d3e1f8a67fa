"""Checkpoints that take their word-embedding table from a base model instead of storing it.

In all-MiniLM-L6-v2 the 30,522 × 384 word-embedding table is 11.7M of 22.7M parameters.  A task
model fine-tuned from it moves that table by ~3% (relative norm) and can be re-tuned to work with
the base's table unchanged (:func:`share_checkpoint`: the table frozen at the base's, every other
weight distilled from the fine-tuned model).  The checkpoint then stores everything but the table,
and records in config.json which base supplies it and the table's sha256, so that PocketBERT's
loader (:func:`restore`) puts exactly those numbers back, or refuses.  This is how adapter
checkpoints ship without their base; unlike trimming the vocabulary, no word is segmented
differently, so rare words (names, in NER) lose nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from . import loading
from .data import load_task
from .distill.retokenized import LOSS, distill_retokenized
from .errors import InputError
from .loading import SAVED_TRANSFORMS_KEY
from .shared_table import KEY, base_table, digest, is_table_key
from .training.card import model_card
from .training.evaluate import evaluate
from .training.finetune import eval_length, input_names
from .training.loop import parse_budget
from .training.save import check_output, save_trained


def share_checkpoint(checkpoint: str, base: str, task: str, out: Path, *, retune: str, lr: float = 3e-5,
                     fp16: bool = False, threads: int | None = None, train_limit: int | None = None, data_dir=None,
                     overwrite: bool = False, log=print) -> tuple[Path, dict]:
    """``python -m converter share-embeddings``: re-tune ``checkpoint`` with ``base``'s word embeddings
    (frozen) by distillation from itself on ``task``'s training text, and write it without the table."""
    check_output(out, overwrite)  # before any work
    budget = parse_budget(retune)
    if threads:
        torch.set_num_threads(threads)
    table = base_table(base)
    train = load_task(task, "train", data_dir, limit=train_limit)
    dev = load_task(task, "dev", data_dir)
    teacher = loading.load(checkpoint)
    student = loading.load(checkpoint)
    embedding = student.model.get_input_embeddings().weight
    if tuple(table.shape) != tuple(embedding.shape):
        raise InputError(f"base model {base!r} has a {tuple(table.shape)} word-embedding table, {checkpoint!r} has "
                         f"{tuple(embedding.shape)}", "give the base model the checkpoint was fine-tuned from")
    names, length = input_names(student), eval_length(student)
    dev_features = dev.encode(student.tokenizer, length, student.labels)
    before = evaluate(student.model, dev_features, input_names=names)
    relative = ((embedding.detach() - table).norm() / table.norm()).item()
    with torch.no_grad():
        embedding.copy_(table)
    swapped = evaluate(student.model, dev_features, input_names=names) if relative > 0 else before
    metric = train.metric
    log(f"word embeddings {relative:.1%} (relative norm) from the base's; dev {metric} {before[metric]:.2f} -> "
        f"{swapped[metric]:.2f} with the base's table")
    run = None
    if relative > 0:  # a table frozen through training (--freeze-word-embeddings) needs no re-tuning
        features = train.encode(student.tokenizer, 128, student.labels)
        params = [p for p in student.model.parameters() if p is not embedding]
        run = distill_retokenized(teacher.model, student.model, features, features, budget=budget, lr=lr,
                                  params=params, teacher_inputs=names, student_inputs=names,
                                  description="re-tune around the base's word embeddings")
    after = evaluate(student.model, dev_features, input_names=names) if run else swapped
    if fp16:  # score exactly the weights that ship: rounded to float16 (the loader computes in float32)
        with torch.no_grad():
            for name, tensor in student.model.state_dict().items():
                if tensor.is_floating_point() and not is_table_key(name):
                    tensor.copy_(tensor.half().float())
        after = evaluate(student.model, dev_features, input_names=names)
    log((f"re-tuned by distillation ({run.steps} steps, {run.seconds:.0f} s)" if run else
         "the table is already the base's: no re-tuning") + f": dev {metric} {swapped[metric]:.2f} -> "
        f"{after[metric]:.2f}" + (" (weights rounded to float16)" if fp16 else ""))

    record_path = Path(teacher.checkpoint) / "training.json"
    record = json.loads(record_path.read_text(encoding="utf-8")) if record_path.exists() else {
        "kind": "share-embeddings", "task": train.name, "train_examples": len(train), "dev_examples": len(dev),
        "recipe": {}, "training": {"steps": 0, "seconds": 0, "stopped_by": "n/a"}, "dev_scores": {}}
    rnd = {k: round(v, 3) for k, v in after.items()}
    reference = {"model": base, "sha256": digest(table), "shape": list(table.shape)}
    record[KEY] = {**reference, "relative_change": round(relative, 5), "fp16": fp16,
                   "dev_before": {k: round(v, 3) for k, v in before.items()},
                   "dev_with_base_table": {k: round(v, 3) for k, v in swapped.items()}, "dev_after": rnd,
                   "retune": {"budget": budget.to_json(), "lr": lr, "steps": run.steps,
                              "seconds": round(run.seconds, 1), "loss": LOSS + "; word embeddings frozen"}
                   if run else None}
    if "recovered" in record.get("dev_scores", {}):
        record["dev_scores"]["shipped"] = rnd
        record.setdefault("comparison", {}).setdefault("rows", []).append(
            {"name": f"shipped: word embeddings from {base} (not stored)" + (", re-tuned" if run else "")
             + (", fp16" if fp16 else ""),
             "scores": rnd})
    else:
        record["dev_scores"] = rnd
    transforms = (getattr(student.model.config, SAVED_TRANSFORMS_KEY, None) or {}).get("transforms", [])
    path = save_trained(student.model, student.tokenizer, out, overwrite=overwrite, record=record,
                        card=model_card(record), transforms=transforms, dtype=torch.float16 if fp16 else None,
                        base_embeddings=reference)
    return path, record
