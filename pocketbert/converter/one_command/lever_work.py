"""The one command's work folder beside ``--out`` (``OUT.levers``): each step's checkpoint, and ``steps.json``
recording every step done under a digest of its inputs, so that a rerun skips or continues them.

Nothing in the folder is trusted because this command wrote it once: ``steps.json`` is checked entry by entry (a step's
checkpoint must be a folder directly inside the work folder, its budget and score plain numbers), and a step is reused
only while its files still have the SHA-256 recorded when they were written."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

from pocketbert.runtime.contract import sha256

from ..errors import OutputError

STATE = "steps.json"
BUDGET_UNITS = ("steps", "seconds", "epochs")


def work_folder(out: Path) -> Path:
    return Path(out).with_name(Path(out).name + ".levers")


def open_work(out: Path) -> Path:
    """The work folder beside ``out``: created here, or one an earlier run created (it holds steps.json)."""
    work = work_folder(out)
    if work.exists() and not (work / STATE).is_file():
        raise OutputError(f"{work} exists and was not made by this command (it has no {STATE})",
                          "move it away, or give another --out")
    work.mkdir(parents=True, exist_ok=True)
    if not (work / STATE).is_file():
        save_state(work, {})
    return work


def read_record(path: Path, overwrite: bool = False) -> dict:
    """A JSON object the one command keeps in its work folder (``steps.json``, ``latency.json``); one that is not
    valid is refused with the fix, or with ``overwrite`` taken as empty (a new record: the step folders stay)."""
    try:
        record = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        why = None if isinstance(record, dict) else f"it holds a JSON {type(record).__name__}, not an object"
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        why = f"it cannot be read as JSON ({exc})"
    if why is None:
        return record
    if overwrite:
        return {}
    raise invalid(path, why)


def invalid(path: Path, why: str) -> OutputError:
    return OutputError(f"{path} is not a valid record: {why}",
                       f"pass --overwrite to start a new record (the checkpoints in {path.parent} stay, and the "
                       f"steps run again), or delete {path}")


def load_state(work: Path, overwrite: bool = False) -> dict:
    state = read_record(work / STATE, overwrite)
    for key, entry in state.items():
        why = _entry_problem(work, entry)
        if why:
            if overwrite:
                return {}
            raise invalid(work / STATE, f"step {key[:12]}…: {why}")
    return state


def _entry_problem(work: Path, entry) -> str | None:
    """Why one recorded step cannot be what this command wrote; None when it can."""
    if not isinstance(entry, dict):
        return "not an object"
    out = entry.get("out")
    if not isinstance(out, str) or not out or out in (".", "..") or "/" in out or "\\" in out or "\0" in out:
        return f"its checkpoint {out!r} is not a folder name inside the work folder"
    if (work / out).resolve().parent != work.resolve():  # a link out of the folder is followed by resolve()
        return f"its checkpoint {out!r} leads out of the work folder (to {(work / out).resolve()})"
    if not _number(entry.get("score")):
        return f"its score {entry.get('score')!r} is not a number"
    budget = entry.get("budget")
    if budget is not None and (not isinstance(budget, dict) or not budget or set(budget) - set(BUDGET_UNITS)
                               or not all(_number(v) and v >= 0 for v in budget.values())):
        return f"its budget {budget!r} is not a budget spent (steps, seconds or epochs, each ≥ 0)"
    continued = entry.get("continued", 0)
    if isinstance(continued, bool) or not isinstance(continued, int) or continued < 0:
        return f"its count of continuations {continued!r} is not a whole number ≥ 0"
    trained = entry.get("trained")
    if trained is not None and (not isinstance(trained, dict) or set(trained) != {"steps", "seconds"}
                                or isinstance(trained["steps"], bool) or not isinstance(trained["steps"], int)
                                or trained["steps"] < 0 or not _number(trained["seconds"]) or trained["seconds"] < 0):
        return f"what it trained {trained!r} is not a count of steps and seconds, each ≥ 0"
    files = entry.get("files")
    if files is not None and (not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values())):
        return "its files are not a list of names and SHA-256 digests"
    return None


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def save_state(work: Path, state: dict) -> None:
    partial = work / (STATE + ".partial")
    partial.write_text(json.dumps(state, indent=1), encoding="utf-8")
    partial.replace(work / STATE)


def step_files(folder: Path) -> dict[str, str]:
    """Every file of a step's checkpoint (sub-folders too) and its SHA-256: recorded when the step is written."""
    return {str(p.relative_to(folder)): sha256(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def changed_files(folder: Path, recorded: dict | None) -> str | None:
    """Why ``folder`` is not the checkpoint recorded with ``recorded`` files; None when every file matches."""
    if not folder.is_dir():
        return "its folder is gone"
    if not recorded:
        return "its record holds no SHA-256 of its files"
    if any(p.is_symlink() for p in folder.rglob("*")):
        return "it holds a link (this command writes none)"
    now = step_files(folder)
    changed = sorted(set(now) ^ set(recorded) | {name for name in now if recorded.get(name) != now[name]})
    if changed:
        return f"{len(changed)} of its files changed since it was written (e.g. {changed[0]})"
    return None


def fresh(out: Path) -> Path:
    """``out``, or ``out-2``, ``out-3``…: a step run again (its inputs changed) never replaces an earlier one."""
    candidate, number = out, 1
    while candidate.exists():
        number += 1
        candidate = out.with_name(f"{out.name}-{number}")
    return candidate


def digest_inputs(path: Path, train, dev, *, train_limit: int | None, opts: str | None, augment: int = 0) -> str:
    """The checkpoint's files, the training and dev files the steps read (by their content: a task name stands for
    whatever files the data directory holds now), and the options the steps read."""
    hasher = hashlib.sha256()
    for file in sorted(p for p in path.iterdir() if p.is_file()):
        hasher.update(file.name.encode())
        hasher.update(hashlib.sha256(file.read_bytes()).digest())
    for split in (train, dev):
        hasher.update(bytes.fromhex(sha256(Path(split.path))))
        hasher.update(json.dumps([split.kind, list(split.label_names)]).encode())
    # augmentation changes the text every distilling step trains on; without it the digest is as it always was
    hasher.update(json.dumps([train_limit, opts, *([augment] if augment else [])]).encode())
    return hasher.hexdigest()


def digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()
