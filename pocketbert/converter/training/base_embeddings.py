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

from pathlib import Path

import torch

from ..checkpoints import loading
from ..errors import ConverterInputError
from ..weights.factored_table import whole_table
from ..weights.shared_table import KEY, base_table, digest, is_table_key
from . import checkpoint_job as job
from .distill.retokenized import LOSS, distill_retokenized
from .evaluate import evaluate
from .finetune import eval_length
from .loop import parse_budget


def share_checkpoint(checkpoint: str, base: str, task: str, out: Path, *, retune: str, lr: float = 3e-5,
                     fp16: bool = False, threads: int | None = None, train_limit: int | None = None, data_dir=None,
                     overwrite: bool = False, dev: str | None = None, log=print) -> tuple[Path, dict]:
    """``pocketbert-convert share-embeddings``: re-tune ``checkpoint`` with ``base``'s word embeddings
    (frozen) by distillation from itself on ``task``'s training text, and write it without the table.  ``dev``:
    the dev file, when ``task`` is a training file."""
    job.begin(out, overwrite, threads)
    budget = parse_budget(retune)
    table = base_table(base)
    train, dev = job.splits(task, data_dir, train_limit, dev)
    teacher, student = loading.load(checkpoint), loading.load(checkpoint)
    embedding = whole_table(student.model, "share-embeddings")
    if tuple(table.shape) != tuple(embedding.shape):
        raise ConverterInputError(f"base model {base!r} has a {tuple(table.shape)} word-embedding table, "
                                  f"{checkpoint!r} has {tuple(embedding.shape)}",
                                  "give the base model the checkpoint was fine-tuned from")
    dev_features = dev.encode(student.tokenizer, eval_length(student), student.labels)
    scores = {"dev_before": _score(student, dev_features)}
    relative = ((embedding.detach() - table).norm() / table.norm()).item()
    with torch.no_grad():
        embedding.copy_(table)
    swapped = scores["dev_with_base_table"] = _score(student, dev_features) if relative > 0 else scores["dev_before"]
    metric = train.metric
    log(f"word embeddings {relative:.1%} (relative norm) from the base's; dev {metric} "
        f"{scores['dev_before'][metric]:.2f} -> {swapped[metric]:.2f} with the base's table")
    run = _retune(teacher, student, train, budget, lr=lr) if relative > 0 else None  # frozen in training: nothing to do
    after = _score(student, dev_features) if run else swapped
    if fp16:
        job.round_to_fp16(student.model, keep=is_table_key)
        after = _score(student, dev_features)
    log((f"re-tuned by distillation ({run.steps} steps, {run.seconds:.0f} s)" if run else
         "the table is already the base's: no re-tuning") + f": dev {metric} {swapped[metric]:.2f} -> "
        f"{after[metric]:.2f}" + (" (weights rounded to float16)" if fp16 else ""))
    record = job.input_record(teacher.checkpoint, "share-embeddings", train, dev)
    reference = {"model": base, "sha256": digest(table), "shape": list(table.shape)}
    record[KEY] = {**reference, "relative_change": round(relative, 5), "fp16": fp16,
                   **{k: job.rounded(v) for k, v in scores.items()}, "dev_after": job.rounded(after),
                   "retune": {"budget": budget.to_json(), "lr": lr, "steps": run.steps,
                              "seconds": round(run.seconds, 1), "loss": LOSS + "; word embeddings frozen"}
                   if run else None}
    job.record_shipped(record, f"shipped: word embeddings from {base} (not stored)" + (", re-tuned" if run else "")
                       + (", fp16" if fp16 else ""), job.rounded(after))
    path = job.write(student.model, student.tokenizer, out, overwrite=overwrite, record=record, fp16=fp16,
                     transforms=job.saved_transforms(student.model.config), base_embeddings=reference)
    return path, record


def _score(loaded, features) -> dict[str, float]:
    return evaluate(loaded.model, features, input_names=loaded.family.input_names)


def _retune(teacher, student, train, budget, lr: float):
    """Distil every weight but the (frozen) word-embedding table from the fine-tuned model itself."""
    features = train.encode(student.tokenizer, 128, student.labels)
    embedding = student.model.get_input_embeddings().weight
    params = [p for p in student.model.parameters() if p is not embedding]
    names = student.family.input_names
    return distill_retokenized(teacher.model, student.model, features, features, budget=budget, lr=lr,
                               params=params, teacher_inputs=names, student_inputs=names,
                               description="re-tune around the base's word embeddings")
