"""What the one command refuses before any training, with the problem and the fix: each of these would otherwise
surface only after the budget was spent, or never."""

from __future__ import annotations

import math
import os
from pathlib import Path

from ..errors import ConverterInputError, OutputError
from .lever_work import work_folder


def check_targets(run) -> None:
    """``--max-size``, ``--max-macs`` and ``--max-latency`` as numbers a plan can compare with: ``nan`` passes every
    range check (each comparison with it is false) and would plan towards "≤ nan%"."""
    given = {"--max-size": (run.max_bytes, None), "--max-macs": (run.max_macs, 1.0),
             "--max-latency": (run.max_latency_ms, None)}
    for flag, (value, top) in given.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or value <= 0 or (top is not None and value > top):
            within = f"a number above 0 and at most {top:g}" if top is not None else "a finite number above 0"
            raise ConverterInputError(f"{flag} {value!r}: it must be {within}",
                                      f"pass e.g. {flag} " + {"--max-size": "8MB", "--max-macs": "0.7",
                                                              "--max-latency": "20"}[flag])


def check_splits(train, dev) -> None:
    """The dev file must be the training text's task: the gate compares scores on it, and a dev file of another
    shape is scored by the model all the same (an MRPC-shaped file by a single-sentence model)."""
    if (train.kind == "ner") != (dev.kind == "ner") or train.pairs != dev.pairs:
        def shape(data) -> str:
            return ("tagged words (CoNLL)" if data.kind == "ner" else "sentence pairs" if data.pairs
                    else "single sentences")
        raise ConverterInputError(f"the dev file {str(dev.path)!r} holds {shape(dev)}, and the training text "
                                  f"{str(train.path)!r} {shape(train)}: the model is trained on one and would be "
                                  "gated on the other",
                                  f"give --dev a dev file of the training text's task ({shape(train)})")
    if train.kind == "classification" and train.labels is not None and len(set(train.labels)) < 2:
        (only,) = set(train.labels) or {None}
        name = train.label_names[only] if only is not None and only < len(train.label_names) else only
        raise ConverterInputError(f"the training text {str(train.path)!r} holds one class only (every row is "
                                  f"{name!r}): distilled on it, the model would learn to answer that class",
                                  "give the task's whole training file, with rows of every class")


def check_budget(made) -> None:
    """One rule for a budget too small to train: every training step of the plan must get at least one step of
    training from its share (shares are by weight; a step budget's share is rounded to whole steps), else nothing
    is trained and the run is refused now, not after the steps that did fit."""
    budget = made.budget
    training = [step for step in made.steps if step.lever.trains]
    if budget is None or not training:
        return
    weights = sum(step.lever.budget_weight for step in training)
    smallest = min(training, key=lambda step: step.lever.budget_weight)
    share = smallest.lever.budget_weight / weights
    if budget.steps is not None and round(budget.steps * share) < 1:
        least = next(n for n in range(1, 10_000) if round(n * share) >= 1)
        what = f"{budget.steps * share:.2f} of a step"
    elif any(value is not None and value <= 0 for value in (budget.seconds, budget.epochs)):
        least, what = None, "nothing"
    else:
        return
    names = ", ".join(step.lever.name for step in training)
    raise ConverterInputError(
        f"--budget {budget.describe()} is too small to train: the plan's {len(training)} training step(s) "
        f"({names}) share it by weight, and {smallest.lever.name}'s share is {what}; nothing was trained",
        (f"give every training step one step at least: --budget {least}steps or more, or a time such as --budget 10m"
         if least else "give a budget above 0, e.g. --budget 10m (or leave --budget out for the demos' minutes)"))


def check_save_checkpoint(save: Path, out: Path) -> None:
    """``--save-checkpoint`` apart from the bundle and the work folder: the copy is written after the bundle, so on
    either (or inside either) it would be refused, or replace what the run just made, only after the training."""
    save = Path(save).expanduser().resolve()
    for flag, place in (("--out", Path(out)), ("the work folder", work_folder(out))):
        target = place.expanduser().resolve()
        where = "is" if save == target else "is inside" if target in save.parents else "holds" \
            if save in target.parents else None
        if where:
            what = "the bundle folder --out" if flag == "--out" else "the one command's work folder"
            raise OutputError(f"--save-checkpoint {str(save)!r} {where} {what} {str(place)!r}: the checkpoint and "
                              "the bundle are written to separate folders",
                              f"give --save-checkpoint a folder beside the bundle, e.g. "
                              f"{str(Path(out).with_name(Path(out).name + '-checkpoint'))!r}")


def warn_if_loaded(threads: int, log, loadavg=os.getloadavg) -> bool:
    """The budget is wall-clock: on cores shared with other work the same minutes buy fewer training steps (each
    step's log says how many it bought).  Warn when the last minute's load average is above the threads asked."""
    try:
        load = loadavg()[0]
    except OSError:  # not every platform reports one
        return False
    if load <= threads:
        return False
    log(f"warning: the load average is {load:.1f} with --threads {threads}: other work shares these cores, so the "
        "budget's minutes will buy fewer training steps than on quiet cores (each step says what it bought); the "
        "plan's scores assume quiet cores")
    return True
