"""The one command's work folder beside ``--out`` (``OUT.levers``): each step's checkpoint, and ``steps.json``
recording every step done under a digest of its inputs, so that a rerun skips or continues them.

A step is reused only while its files still have the SHA-256 recorded when they were written."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pocketbert.runtime.contract import sha256

from ..errors import OutputError

STATE = "steps.json"


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


def load_state(work: Path) -> dict:
    return json.loads((work / STATE).read_text(encoding="utf-8"))


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


def digest_inputs(path: Path, train, dev, *, train_limit: int | None, opts: str | None) -> str:
    """The checkpoint's files, the training and dev files the steps read (by their content: a task name stands for
    whatever files the data directory holds now), and the options the steps read."""
    hasher = hashlib.sha256()
    for file in sorted(p for p in path.iterdir() if p.is_file()):
        hasher.update(file.name.encode())
        hasher.update(hashlib.sha256(file.read_bytes()).digest())
    for split in (train, dev):
        hasher.update(bytes.fromhex(sha256(Path(split.path))))
        hasher.update(json.dumps([split.kind, list(split.label_names)]).encode())
    hasher.update(json.dumps([train_limit, opts]).encode())
    return hasher.hexdigest()


def digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()
