"""The best state of a refused recovery, kept beside the output so ``--resume`` continues from it.

A conversion whose recovery missed the gate writes no bundle; the training it paid for is kept in a hidden
folder beside ``--out`` (``.OUT.recovery``: the program makes it, as it makes its staging folders there, and
never writes inside a folder of the user's).  It holds the loop's training state of the best dev check
(weights, optimiser, step, position in the data, seconds spent, random state) and ``recovery.json``: what
the state is of (the teacher's weights hash, the transforms, the recipe, the data files' hashes), its step
and scores.  ``--resume`` loads it only for that same recovery and refuses any other with what differs.
A later recovery for the same output that passes the gate removes it (it is then in the bundle).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import torch

from pocketbert.runtime.contract import sha256

from ..errors import ConverterInputError, OutputError

STATE = "training_state.pt"
RECORD = "recovery.json"
KIND = "pocketbert-recovery-state"
#: recipe fields a resumed run must share (the budget may grow: that is the point of resuming)
SAME_RECIPE = ("schedule", "lr", "temperature", "hidden_weight", "attention_weight", "hard_weight", "stream_weight",
               "init", "batch_size", "max_length", "seed", "word_embeddings", "qat")


def kept_dir(output: Path) -> Path:
    """Where the kept state of a recovery for ``output`` lives: beside it, hidden, named after it."""
    output = Path(output).absolute()
    return output.with_name(f".{output.name}.recovery")


def teacher_hash(model) -> str:
    """SHA-256 of the teacher's weights in name order (the checkpoint's files may be a built-in's or moved)."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().contiguous().cpu().numpy().tobytes())
    return digest.hexdigest()


def identity(*, teacher: str, transforms: list[str], recipe: dict, train_file: str, dev_file: str) -> dict:
    """What a kept state is of: resuming anything else would continue a different training."""
    return {"teacher_sha256": teacher, "transforms": list(transforms),
            "recipe": {k: recipe.get(k) for k in SAME_RECIPE},
            "train_file": _file(train_file), "dev_file": _file(dev_file)}


def _file(path: str) -> dict:
    return {"name": Path(path).name, "sha256": sha256(Path(path)) if path and Path(path).is_file() else None}


def _ours(directory: Path) -> bool:
    """A folder this module wrote: a regular folder holding its record and nothing but its files."""
    if directory.is_symlink() or not directory.is_dir():
        return False
    try:
        record = json.loads((directory / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    names = {p.name for p in directory.iterdir()}
    return isinstance(record, dict) and record.get("kind") == KIND and names <= {STATE, RECORD}


def keep(output: Path, state: dict, record: dict) -> Path:
    """Write ``state`` and ``record`` to the kept folder of ``output`` (replacing an earlier kept state of ours,
    never anything else); whole or not at all."""
    target = kept_dir(output)
    if os.path.lexists(target) and not _ours(target):
        raise OutputError(f"cannot keep the recovery's state at {str(target)!r}: something else is there",
                          f"move {str(target)!r} away, then run the conversion again")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        torch.save(state, staging / STATE)
        record = {"kind": KIND, **record, "state_sha256": sha256(staging / STATE)}  # a later load checks it whole
        (staging / RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def discard(output: Path) -> bool:
    """Remove the kept state of ``output`` (only a folder this module wrote); True if there was one."""
    target = kept_dir(output)
    if not _ours(target):
        return False
    shutil.rmtree(target, ignore_errors=True)
    return True


def load(output: Path, expected: dict) -> tuple[dict, dict]:
    """The kept state and record for ``output``, refused unless it is of the recovery ``expected`` describes."""
    target = kept_dir(output)
    if not _ours(target) or not (target / STATE).is_file():
        raise ConverterInputError(f"--resume: there is no kept recovery state for --out {str(output)!r} "
                                  f"(looked for {str(target)!r})",
                                  "run without --resume to recover from the start, or give the --out of the "
                                  "refused conversion")
    record = json.loads((target / RECORD).read_text(encoding="utf-8"))
    differences = differing(record.get("identity") or {}, expected)
    if differences:
        raise ConverterInputError(f"--resume: the state kept at {str(target)!r} is of another recovery: "
                                  + "; ".join(differences),
                                  "resume with the same checkpoint, --opt, data files and recovery settings, or "
                                  "run without --resume (a refused run then replaces the kept state)")
    return _read_state(target, record), record


def _read_state(target: Path, record: dict) -> dict:
    """The kept training state, or a clear refusal when it is damaged (a copy cut short, a full disk when it was
    written, an edit): torch's own error would be a RuntimeError traceback about zip archives."""
    damaged = ConverterInputError(f"--resume: the kept training state {str(target / STATE)!r} is damaged (truncated "
                                  "or changed since it was written), so the recovery cannot continue from it",
                                  f"run the same command without --resume to recover from the start (a refused "
                                  f"run then keeps a new state), or delete {str(target)!r}")
    if "state_sha256" in record and sha256(target / STATE) != record["state_sha256"]:
        raise damaged
    try:
        state = torch.load(target / STATE, weights_only=False)
    except Exception as exc:  # RuntimeError (zip), EOFError, UnpicklingError...: what a damaged file raises
        raise damaged from exc
    if not isinstance(state, dict):
        raise damaged
    return state


def differing(kept: dict, expected: dict) -> list[str]:
    """What differs between two identities, said for a user."""
    out = []
    if kept.get("teacher_sha256") != expected["teacher_sha256"]:
        out.append("the checkpoint's weights differ (another teacher)")
    if kept.get("transforms") != expected["transforms"]:
        out.append(f"--opt transforms {','.join(kept.get('transforms') or []) or 'none'} then, "
                   f"{','.join(expected['transforms'])} now")
    for split in ("train_file", "dev_file"):
        then, now = kept.get(split) or {}, expected[split]
        if then.get("sha256") != now["sha256"]:
            out.append(f"the {split.replace('_file', '')} data differs ({then.get('name')} then, {now['name']} now)")
    recipe = kept.get("recipe") or {}
    for key, value in expected["recipe"].items():
        if recipe.get(key) != value:
            out.append(f"recipe {key} {recipe.get(key)!r} then, {value!r} now")
    return out
