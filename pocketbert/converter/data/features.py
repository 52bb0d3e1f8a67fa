"""Labelled examples (:class:`TaskData`), their tokenised features and batches for training and evaluation.

The examples live here rather than with the task readers (tasks.py) because features keep a reference to
the examples they were made from and examples encode themselves: one module, no import cycle.

NER labels are aligned to word pieces the standard way (Devlin et al. 2019, §5.3): the first piece of
each word carries the word's tag, the other pieces and the special tokens carry -100, which the loss
ignores; predictions are read back from first pieces (``word_ids``).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import torch

from pocketbert.runtime.contract import INPUT_NAMES

from ..errors import ConverterInputError

IGNORE = -100


@dataclass
class TaskData:
    """Labelled examples of one split.  ``labels`` are ids into ``label_names`` (class tasks), floats
    (regression) or per-word IOB2 tag lists (NER); ``texts`` are strings, pairs or word lists (NER).
    ``named_labels``: the file's label column held names, numbered here in sorted order; a model's own ids for them
    come from its label names (:func:`encode`), never from that order."""

    name: str
    kind: str
    split: str
    path: Path
    texts: list
    labels: list | None
    label_names: list[str]
    metric: str = ""
    details: dict = field(default_factory=dict)
    named_labels: bool = False

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def pairs(self) -> bool:
        return bool(self.texts) and isinstance(self.texts[0], tuple)

    def encode(self, tokenizer, max_length: int = 128, label_names: list[str] | None = None) -> Features:
        """Token features for training/evaluation (:func:`encode`)."""
        return encode(self, tokenizer, max_length=max_length, label_names=label_names)

    def subset(self, count: int | None) -> TaskData:
        if count is None or count >= len(self):
            return self
        return TaskData(self.name, self.kind, self.split, self.path, texts=self.texts[:count],
                        labels=None if self.labels is None else self.labels[:count], label_names=self.label_names,
                        metric=self.metric, details=dict(self.details, subset=count), named_labels=self.named_labels)


@dataclass
class Features:
    """Token ids per example (unpadded), with labels in model space and, for NER, the word of each token."""

    task: TaskData
    input_ids: list[list[int]]
    token_type_ids: list[list[int]]
    labels: list | None  # int / float per example, or a list per token (NER, -100 = ignored)
    word_ids: list[list[int | None]] | None  # NER only
    truncated: int  # examples cut at max_length
    pad_id: int
    label_names: list[str]

    def __len__(self) -> int:
        return len(self.input_ids)

    def batches(self, batch_size: int = 32, *, shuffle: bool = False, seed: int = 0,
                input_names: tuple[str, ...] = INPUT_NAMES) -> Batches:
        return Batches(self, batch_size, shuffle, seed, input_names=tuple(input_names))


def encode(task: TaskData, tokenizer, max_length: int = 128, label_names: list[str] | None = None) -> Features:
    """Tokenise ``task``; ``label_names`` (the model's labels) maps the data's labels to model ids."""
    if not getattr(tokenizer, "is_fast", False):
        raise ConverterInputError("the tokenizer has no fast (Rust) version; word alignment needs one",
                                  "save a tokenizer.json with a fast tokenizer")
    model_labels = list(label_names) if label_names is not None else list(task.label_names)
    if task.kind == "ner":
        missing = sorted({t for s in (task.labels or []) for t in s} - set(model_labels))
        if missing:
            raise ConverterInputError(f"the data has tags {missing} that the model's labels {model_labels} lack",
                                      "train a model with these labels (pocketbert-convert finetune), or give "
                                      "matching data")
        enc = tokenizer(task.texts, is_split_into_words=True, truncation=True, max_length=max_length)
        word_ids = [enc.word_ids(i) for i in range(len(task.texts))]
        labels = None
        if task.labels is not None:
            index = {name: i for i, name in enumerate(model_labels)}
            labels = []
            for tags, words in zip(task.labels, word_ids):
                row, previous = [], None
                for w in words:
                    row.append(IGNORE if w is None or w == previous else index[tags[w]])
                    previous = w
                labels.append(row)
        truncated = sum(1 for words, ids in zip(task.texts, word_ids)
                        if len(words) and max((w for w in ids if w is not None), default=-1) < len(words) - 1)
    else:
        if task.pairs:
            first, second = zip(*task.texts)
            enc = tokenizer(list(first), list(second), truncation="longest_first", max_length=max_length)
        else:
            enc = tokenizer(list(task.texts), truncation=True, max_length=max_length)
        word_ids = None
        labels = None
        if task.labels is not None:
            if task.kind == "regression":
                labels = [float(v) for v in task.labels]
            else:
                labels = class_ids(task, model_labels)
        truncated = sum(1 for ids in enc["input_ids"] if len(ids) >= max_length)
    token_types = enc.get("token_type_ids") or [[0] * len(ids) for ids in enc["input_ids"]]
    return Features(task, enc["input_ids"], token_types, labels, word_ids=word_ids, truncated=truncated,
                    pad_id=tokenizer.pad_token_id or 0, label_names=model_labels)


def class_ids(task: TaskData, model_labels: list[str]) -> list[int]:
    """``task``'s class labels as the model's ids: a label id is the model's id; a label name is the model's id
    for that name (its config.json id2label), whatever the order the file's names were numbered in."""
    if not task.named_labels:
        if len(model_labels) != len(task.label_names):
            raise ConverterInputError(f"the data has {len(task.label_names)} labels {task.label_names} but the "
                                      f"model has {len(model_labels)} {model_labels}",
                                      "fine-tune a head for this task first (pocketbert-convert finetune)")
        return [int(v) for v in task.labels]
    index = label_index(task.label_names, model_labels)
    missing = [name for name in task.label_names if name not in index]
    if missing:
        raise ConverterInputError(f"the data's label(s) {missing} are not among the model's labels {model_labels} "
                                  "(config.json id2label)",
                                  "write the labels as the model names them, or as its label ids (0 = "
                                  f"{model_labels[0]!r}, …), or fine-tune a head for these labels "
                                  "(pocketbert-convert finetune)")
    return [index[task.label_names[v]] for v in task.labels]


def label_index(names: list[str], model_labels: list[str]) -> dict[str, int]:
    """Each data label name's id among the model's labels: the same name, else the one name equal but for case
    (``positive`` for ``POSITIVE``); a name the model does not have is left out."""
    exact = {label: i for i, label in enumerate(model_labels)}
    folded: dict[str, list[int]] = {}
    for i, label in enumerate(model_labels):
        folded.setdefault(label.casefold(), []).append(i)
    index = {}
    for name in names:
        matches = [exact[name]] if name in exact else folded.get(name.casefold(), [])
        if len(matches) == 1:
            index[name] = matches[0]
    return index


class Batches:
    """Padded tensor batches over :class:`Features`: dynamic padding to the longest row of each batch.

    Shuffled batches are grouped by length (sorted within windows of 50 batches, then the batch order
    shuffled), which keeps padding low without a fixed order; epoch ``k`` uses seed ``seed + k``.
    """

    def __init__(self, features: Features, batch_size: int, shuffle: bool, seed: int, input_names: tuple[str, ...]):
        if batch_size < 1:
            raise ConverterInputError(f"batch size {batch_size} is below 1", "use a batch size of at least 1")
        self.features = features
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = seed
        self.input_names = input_names

    def __len__(self) -> int:
        return -(-len(self.features) // self.batch_size)

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        return self.epoch(0)

    def order(self, epoch: int) -> list[list[int]]:
        n = len(self.features)
        if not self.shuffle:
            return [list(range(i, min(n, i + self.batch_size))) for i in range(0, n, self.batch_size)]
        rng = random.Random(self.seed + epoch)
        index = list(range(n))
        rng.shuffle(index)
        window = self.batch_size * 50
        groups = []
        for start in range(0, n, window):
            chunk = sorted(index[start:start + window], key=lambda i: len(self.features.input_ids[i]))
            groups += [chunk[i:i + self.batch_size] for i in range(0, len(chunk), self.batch_size)]
        rng.shuffle(groups)
        return groups

    def epoch(self, epoch: int) -> Iterator[dict[str, torch.Tensor]]:
        for rows in self.order(epoch):
            yield self.collate(rows)

    def collate(self, rows: list[int]) -> dict[str, torch.Tensor]:
        f = self.features
        width = max(len(f.input_ids[i]) for i in rows)
        ids = torch.full((len(rows), width), f.pad_id, dtype=torch.long)
        types = torch.zeros((len(rows), width), dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for r, i in enumerate(rows):
            n = len(f.input_ids[i])
            ids[r, :n] = torch.tensor(f.input_ids[i])
            types[r, :n] = torch.tensor(f.token_type_ids[i])
            mask[r, :n] = 1
        batch = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        batch = {k: v for k, v in batch.items() if k in self.input_names}
        if f.labels is not None:
            if f.word_ids is not None:
                labels = torch.full((len(rows), width), IGNORE, dtype=torch.long)
                for r, i in enumerate(rows):
                    labels[r, :len(f.labels[i])] = torch.tensor(f.labels[i])
            elif f.task.kind == "regression":
                labels = torch.tensor([f.labels[i] for i in rows], dtype=torch.float32)
            else:
                labels = torch.tensor([f.labels[i] for i in rows], dtype=torch.long)
            batch["labels"] = labels
        batch["index"] = torch.tensor(rows)  # which examples these are (evaluation reads logits back)
        return batch
