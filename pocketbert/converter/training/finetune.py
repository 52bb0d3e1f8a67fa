"""``pocketbert-convert finetune CHECKPOINT --task glue:sst2``: fine-tune an encoder on a task.

Base distilled checkpoints (all-MiniLM-L6-v2, TinyBERT general distillation) have no task head; this
trains one together with the encoder (Devlin et al. 2019 recipe: AdamW, linear warm-up and decay,
dynamic padding), evaluates on the dev split with GLUE's metric (or seqeval F1) and writes a Hugging
Face checkpoint with a training record and a model card.  Deterministic for a seed; resumable.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..checkpoints import loading
from ..data import TaskData, load_task
from ..data.features import label_index
from ..errors import ConverterInputError
from ..weights.factored_table import whole_table
from . import chance, loop
from . import checkpoint_job as job
from .evaluate import evaluate


@dataclass
class FinetuneOptions:
    checkpoint: str
    task: str  # short name (glue:sst2, conll2003) or a training file
    out: Path
    budget: loop.Budget
    dev: str | None = None  # dev file when ``task`` is a path; short names use their dev split
    lr: float = 5e-5
    batch_size: int = 32
    max_length: int = 128
    warmup: float = 0.1
    weight_decay: float = 0.01
    seed: int = 0
    threads: int = 2
    data_dir: Path | None = None
    train_limit: int | None = None
    dev_limit: int | None = None
    overwrite: bool = False
    resume: bool = False
    # train everything but the word-embedding table: the model then shares the base's table and can ship
    # without it (pocketbert-convert share-embeddings)
    freeze_word_embeddings: bool = False
    progress: bool = True


@dataclass
class FinetuneResult:
    out: Path
    scores: dict[str, float]
    log: loop.TrainLog
    record: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def model_task(data: TaskData) -> str:
    return "ner" if data.kind == "ner" else "classification"


def load_splits(task: str, dev: str | None, data_dir, train_limit=None, dev_limit=None) -> tuple[TaskData, TaskData]:
    train = load_task(task, "train", data_dir, limit=train_limit)
    if train.labels is None:
        raise ConverterInputError(f"{str(train.path)!r} has no labels to train on", "give a labelled training file")
    dev_data = load_task(dev, "dev", data_dir, limit=dev_limit) if dev else (
        load_task(task, "dev", data_dir, limit=dev_limit) if ":" in task or task.lower() == "conll2003" else None)
    if dev_data is None:
        raise ConverterInputError("no dev data to evaluate on", "pass --dev FILE when the task is given as a file")
    if dev and Path(dev).resolve() == Path(task).resolve():
        raise ConverterInputError(f"--dev {dev} is the training file: its scores would not be dev scores",
                                  "give the task's held-out dev file to --dev")
    if dev_data.kind != train.kind:
        raise ConverterInputError(f"dev data is {dev_data.kind} but training data is {train.kind}",
                                  "give the same task's files")
    return train, dev_data


def load_for_task(checkpoint: str, data: TaskData, seed: int) -> loading.Loaded:
    loaded = loading.load(checkpoint, task=model_task(data), labels=head_labels(checkpoint, data), seed=seed)
    if data.kind == "regression":
        loaded.model.config.problem_type = "regression"
    elif data.kind == "classification":
        loaded.model.config.problem_type = "single_label_classification"
    return loaded


def head_labels(checkpoint: str, data: TaskData) -> list[str]:
    """The labels the fine-tuned head gets, in id order, as config.json will record them.  Label names in the file
    keep the order the checkpoint's id2label already gives every one of them: numbering them in sorted order would
    swap what a trained head has learnt.  Otherwise the data's own order (for names, sorted: no order exists yet)."""
    if data.named_labels:
        saved = _saved_labels(checkpoint)
        if len(label_index(data.label_names, saved)) == len(data.label_names):
            return saved
    return list(data.label_names)


def _saved_labels(checkpoint: str) -> list[str]:
    config = loading.resolve(checkpoint)[0] / "config.json"
    try:
        id2label = json.loads(config.read_text(encoding="utf-8")).get("id2label") or {}
        return [id2label[k] for k in sorted(id2label, key=int)]
    except (OSError, ValueError, AttributeError):  # no readable config: loading says what is wrong with it
        return []


def eval_length(loaded: loading.Loaded) -> int:
    """Evaluate at the model's full length (up to 512): no dev example is scored truncated."""
    return min(512, loaded.family.max_positions(loaded.config))


def source_name(loaded: loading.Loaded) -> str:
    return loaded.builtin or str(loaded.checkpoint)


def supervised_loss(model):
    def loss_fn(batch):
        batch = {k: v for k, v in batch.items() if k != "index"}
        return model(**batch).loss, {}
    return loss_fn


def finetune(options: FinetuneOptions, log=print) -> FinetuneResult:
    start = time.perf_counter()
    train, dev = load_splits(options.task, options.dev, options.data_dir, options.train_limit,
                             dev_limit=options.dev_limit)
    job.begin(options.out, options.overwrite, options.threads)  # before any training
    loaded = load_for_task(options.checkpoint, train, options.seed)
    names = loaded.family.input_names
    features = train.encode(loaded.tokenizer, options.max_length, loaded.labels)
    dev_features = dev.encode(loaded.tokenizer, eval_length(loaded), loaded.labels)
    batches = features.batches(options.batch_size, shuffle=True, seed=options.seed, input_names=names)
    options.budget.check(len(batches))
    log(f"fine-tuning {options.checkpoint} on {train.name} ({len(train)} examples, {len(batches)} batches/epoch)")
    untrained = evaluate(loaded.model, dev_features, input_names=names)[dev.metric]
    state_dir = options.out.parent / f".{options.out.name}.training"
    params = None
    if options.freeze_word_embeddings:
        table = whole_table(loaded.model, "--freeze-word-embeddings")
        params = [p for p in loaded.model.parameters() if p is not table]
    train_log = loop.train(loaded.model, supervised_loss(loaded.model), batches, params=params, budget=options.budget,
                           lr=options.lr, warmup=options.warmup, weight_decay=options.weight_decay, seed=options.seed,
                           description=f"fine-tune {train.name}", checkpoint_dir=state_dir, resume=options.resume,
                           progress=options.progress)
    scores = evaluate(loaded.model, dev_features, input_names=names)
    log(f"{dev.name} {dev.split}: " + ", ".join(f"{k} {v:.2f}" for k, v in scores.items()))
    warnings = [w for w in [chance.warning(dev, scores[dev.metric], untrained, train_log,
                                           batches_per_epoch=len(batches), budget=options.budget)] if w]
    for w in warnings:
        log(f"warning: {w}")
    record = {
        "kind": "finetune",
        "base_checkpoint": source_name(loaded),
        "task": train.name, "train_file": str(train.path), "train_examples": len(train),
        "dev_file": str(dev.path), "dev_examples": len(dev),
        "labels": loaded.labels, "metric": train.metric,
        "recipe": {"lr": options.lr, "batch_size": options.batch_size, "max_length": options.max_length,
                   "warmup": options.warmup, "weight_decay": options.weight_decay, "seed": options.seed,
                   "budget": options.budget.to_json(), "threads": options.threads, "optimizer": "AdamW",
                   "schedule": "linear warm-up and decay",
                   "word_embeddings": "frozen" if options.freeze_word_embeddings else "trained"},
        "training": train_log.to_json(),
        "dev_scores": {k: round(v, 3) for k, v in scores.items()},
        "dev_without_training": {"constant": round(chance.constant_baseline(dev)[0], 3),
                                 "before_fine_tuning": round(untrained, 3)},
        "warnings": warnings,
        "wall_seconds": round(time.perf_counter() - start, 1),
    }
    out = job.write(loaded.model, loaded.tokenizer, options.out, overwrite=options.overwrite, record=record)
    _remove(state_dir)
    return FinetuneResult(out, scores, train_log, record, warnings=warnings)


def _remove(directory: Path) -> None:
    import shutil

    shutil.rmtree(directory, ignore_errors=True)
