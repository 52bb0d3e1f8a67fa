"""Task short names (``glue:sst2``, ``conll2003``, …), file resolution and loading into a :class:`TaskData`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConverterInputError
from ..inputs.texts import data_dir as default_data_dir
from . import conll, formats, glue
from .features import TaskData


@dataclass(frozen=True)
class TaskSpec:
    name: str
    kind: str  # classification | regression | ner
    directory: str  # relative to the data directory
    files: dict[str, str]  # split -> file name
    label_names: tuple[str, ...] = ()  # in label-id order; GLUE files hold ids "0", "1", …
    metric: str = ""  # the task's headline metric (see metrics.py)
    description: str = ""


SPLITS = ("train", "dev", "test")
_GLUE_FILES = {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}
CONLL_LABELS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")

TASKS: dict[str, TaskSpec] = {spec.name: spec for spec in [
    TaskSpec("glue:sst2", "classification", "glue/SST-2", _GLUE_FILES, label_names=("negative", "positive"),
             metric="accuracy", description="SST-2 movie-review sentiment"),
    TaskSpec("glue:mrpc", "classification", "glue/MRPC", _GLUE_FILES, label_names=("not_equivalent", "equivalent"),
             metric="f1", description="MRPC paraphrase pairs"),
    TaskSpec("glue:cola", "classification", "glue/CoLA", _GLUE_FILES, label_names=("unacceptable", "acceptable"),
             metric="matthews", description="CoLA grammatical acceptability"),
    TaskSpec("glue:stsb", "regression", "glue/STS-B", _GLUE_FILES, label_names=("similarity",), metric="pearson",
             description="STS-B sentence similarity, 0-5"),
    TaskSpec("conll2003", "ner", "conll2003", {"train": "train.txt", "dev": "dev.txt", "test": "test.txt"},
             label_names=CONLL_LABELS, metric="f1", description="CoNLL-2003 English NER (IOB2)"),
]}
TASK_NAMES = tuple(TASKS)


def resolve_task(spec: str, split: str, data_dir: str | os.PathLike | None = None) -> tuple[TaskSpec | None, Path]:
    """A short name (``glue:sst2``) and split -> its file under the data directory; a path -> itself."""
    if split not in SPLITS:
        raise ConverterInputError(f"unknown split {split!r}", f"use one of {', '.join(SPLITS)}")
    key = spec.lower()
    if key in TASKS:
        task = TASKS[key]
        root = default_data_dir(data_dir)
        if root is None:
            raise ConverterInputError(f"task {spec!r} needs a data directory, and none was found",
                                      "pass --data-dir DIR (holding glue/ and conll2003/) or set $POCKETBERT_DATA")
        path = Path(root) / task.directory / task.files[split]
        if not path.is_file():
            raise ConverterInputError(f"task {spec!r}: {str(path)!r} does not exist",
                                      f"check --data-dir / $POCKETBERT_DATA ({root}): it should hold {task.directory}/")
        return task, path
    if ":" in spec and not Path(spec).exists() and not spec.startswith(("/", ".")):
        raise ConverterInputError(f"unknown task {spec!r}",
                                  f"use one of {', '.join(TASK_NAMES)}, or a path to a GLUE-format .tsv or a CoNLL "
                                  "file")
    return None, Path(spec)


def _label_ids(rows: glue.Rows, path: Path, names: tuple[str, ...] | None) -> tuple[list, list[str], str, bool]:
    """The labels as ids, their names, the task kind, and whether the file held names rather than ids."""
    raw = rows.labels or []
    try:
        values = [float(v) for v in raw]
    except ValueError:
        values = None
    if names and len(names) == 1:  # regression
        if values is None:
            raise ConverterInputError(f"{str(path)!r}: non-numeric scores",
                                      "a regression task needs numbers in its score column")
        return values, list(names), "regression", False
    if values is not None and all(v.is_integer() for v in values):
        ids = [int(v) for v in values]
        count = len(names) if names else max(ids) + 1
        bad = [i for i in set(ids) if not 0 <= i < count]
        if bad:
            raise ConverterInputError(f"{str(path)!r}: label id(s) {sorted(bad)} outside 0..{count - 1}",
                                      "fix the labels, or give a file of the right task")
        return ids, list(names) if names else [str(i) for i in range(count)], "classification", False
    if values is not None:  # fractional scores without a declared task: regression
        return values, ["score"], "regression", False
    # label names in the file (e.g. MNLI's entailment/neutral/contradiction): ids in sorted order, which only a new
    # head takes as its own; a model's ids for the names come from its labels (features.class_ids)
    found = sorted(set(raw))
    return [found.index(v) for v in raw], found, "classification", True


def load_task(spec: str, split: str = "train", data_dir: str | os.PathLike | None = None, *,
              scheme: str = "auto", limit: int | None = None) -> TaskData:
    """Read a split of a task: a short name under the data directory, or a user's TSV/CoNLL file."""
    task, path = resolve_task(spec, split, data_dir)
    is_conll = task.kind == "ner" if task else formats.detect(path, f"{split} data") == "conll"
    if is_conll:
        sentences = conll.read_conll(path, scheme=scheme, what=f"{split} data")
        names = list(task.label_names) if task else _conll_labels(sentences.tags)
        unknown = sorted({t for s in sentences.tags for t in s} - set(names))
        if unknown:
            raise ConverterInputError(f"{str(path)!r} has tags {unknown} outside {spec}'s label set {names}",
                                      "give the matching file, or the file as a path so its own tags are used")
        data = TaskData(task.name if task else str(path), "ner", split, path, texts=sentences.words,
                        labels=sentences.tags, label_names=names, metric="f1", details={"scheme": sentences.scheme})
    else:
        rows = glue.read_tsv(path, what=f"{split} data")
        if rows.labels is None:
            labels, names, kind = None, list(task.label_names) if task else [], task.kind if task else "classification"
            named = False
        else:
            labels, names, kind, named = _label_ids(rows, path, task.label_names if task else None)
        metric = task.metric if task else ("pearson" if kind == "regression" else "accuracy")
        data = TaskData(task.name if task else str(path), kind, split, path, texts=rows.texts, labels=labels,
                        label_names=names, metric=metric, named_labels=named)
    return data.subset(limit)


def _conll_labels(tags: list[list[str]]) -> list[str]:
    kinds = sorted({t[2:] for s in tags for t in s if t != "O"})
    return ["O"] + [f"{p}-{k}" for k in kinds for p in ("B", "I")]
