"""Labelled task data: GLUE-format TSV and CoNLL NER files, their features and their metrics.

    from pocketbert.converter.data import load_task
    task = load_task("glue:sst2", "train")          # short name, resolved against the data directory
    task = load_task("my/train.tsv", "train")        # or a file a user gives
    features = task.encode(tokenizer, max_length=128)

One module per idea: :mod:`.tasks` (short names, loading), :mod:`.glue` and :mod:`.conll` (readers),
:mod:`.features` (the :class:`TaskData` container, tokenisation, NER label alignment, batching) and
:mod:`.metrics` (GLUE's metric per task, seqeval entity F1).
"""

from .features import TaskData
from .tasks import TASK_NAMES, load_task, resolve_task

__all__ = ["TASK_NAMES", "TaskData", "load_task", "resolve_task"]
