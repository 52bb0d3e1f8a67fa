"""Is a ``--dev FILE`` the bundle's own task?  Checked before anything is scored.

Another task's dev file of the same format scores without an error and means nothing: CoLA's dev file for
an SST-2 bundle is read with SST-2's labels (0/1 both), and the score is of sentences about grammar held to
a teacher's score on reviews.  So a dev file must be laid out as the task's own files are (GLUE's layouts
differ per task: CoLA has no header, MRPC and STS-B hold pairs), and its labels must be labels of the
bundle (the names in its manifest, or ids below their count, a score only for a regression head).
"""

from __future__ import annotations

from pathlib import Path

from .accuracy import AccuracyError

FIX = "pass the dev file of the task the bundle was trained on (--dev), or leave --dev out for a built-in task"


def layout(path: Path) -> str:
    """How a data file is laid out, in words: CoNLL, CoLA's header-less four columns, or the header's
    text and label columns."""
    from pocketbert.converter.data import formats, glue

    if formats.detect(path, "dev data") == "conll":
        return "CoNLL (a word and a tag per line)"
    first = glue.read_lines(path, "dev data")[0].split("\t")
    header = [h.strip().lower() for h in first]
    if len(first) == 4 and not {"sentence", "label"} & set(header):
        return "CoLA's (no header; source, label, original label, sentence)"
    texts = next((list(pair) for pair in glue.PAIR_COLUMNS if set(pair) <= set(header)),
                 ["sentence"] if "sentence" in header else [])
    label = next((c for c in glue.LABEL_COLUMNS if c in header), None)
    return f"columns {', '.join(texts)}" + (f" and label column {label}" if label else ", no label column")


def recorded_path(name: str, bundle: str | Path | None) -> Path:
    """A file the bundle's record names: a relative name is read from the bundle folder, never from wherever the
    command runs (from another folder, that folder's ``data/dev.tsv`` would be scored instead)."""
    path = Path(name)
    return path if path.is_absolute() or bundle is None else Path(bundle) / path


def task_file(record: dict, data_dir: str | None, bundle: str | Path | None = None) -> Path | None:
    """A file of the bundle's own task to compare layouts with: the built-in task's dev file, else the
    training file the record names (None when neither is here)."""
    from pocketbert.converter.data.tasks import TASKS, resolve_task
    from pocketbert.converter.errors import ConverterInputError

    task = record["task"]
    if task.lower() in TASKS:
        try:
            return resolve_task(task, "dev", data_dir)[1]
        except ConverterInputError:  # no data directory: the labels are still checked
            return None
    for name in (record.get("dev_file"), record.get("train_file"), task):
        if name and recorded_path(name, bundle).is_file():
            return recorded_path(name, bundle)
    return None


def check(dev: str | Path, record: dict, *, labels: list[str], regression: bool, data_dir: str | None,
          bundle: str | Path | None = None) -> None:
    """Refuse ``dev`` unless it reads as the bundle's task: its layout, and its labels against ``labels``."""
    from pocketbert.converter.data import load_task
    from pocketbert.converter.errors import ConverterInputError

    task, dev = record["task"], Path(dev)
    try:
        own = task_file(record, data_dir, bundle)
        mine, theirs = layout(dev), own and layout(own)
        if theirs and mine != theirs:
            raise AccuracyError(f"the dev file {str(dev)!r} is laid out as {mine}, the bundle's task {task} as "
                                f"{theirs} ({own}): it is another task's file", FIX)
        data = load_task(str(dev), "dev")
    except ConverterInputError as exc:
        raise AccuracyError(exc.problem, exc.fix) from exc
    if data.labels is None:
        raise AccuracyError(f"the dev file {str(dev)!r} has no labels, so nothing can be scored", FIX)
    if regression != (data.kind == "regression"):
        raise AccuracyError(f"the dev file {str(dev)!r} holds {'scores' if data.kind == 'regression' else 'classes'} "
                            f"and the bundle's head {'scores' if regression else 'classifies'} ({task})", FIX)
    if data.kind == "ner":
        return  # its tags are checked against the bundle's labels when encoded
    if not regression:
        _check_classes(dev, data, labels, task)


def _check_classes(dev: Path, data, labels: list[str], task: str) -> None:
    """Label ids must be below the bundle's label count; label names must be the bundle's (in any order)."""
    found = sorted({data.label_names[i] for i in data.labels})
    if all(name.isdigit() for name in found):
        outside = [name for name in found if int(name) >= len(labels)]
        if outside:
            raise AccuracyError(f"the dev file {str(dev)!r} has label id(s) {outside}; the bundle ({task}) has "
                                f"{len(labels)} labels {labels}", FIX)
        return
    unknown = [name for name in found if name not in labels]
    if unknown:
        raise AccuracyError(f"the dev file {str(dev)!r} has labels {unknown} that the bundle ({task}) does not "
                            f"have: its labels are {labels}", FIX)
    # label names need not be in the bundle's order: scoring encodes them through the bundle's labels
