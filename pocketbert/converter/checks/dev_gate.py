"""The int8 dev gate, held at conversion time.

Where the checkpoint records the task it was trained on and that task's labelled dev split is at hand, every
artifact is scored on the whole split as the runtime runs it, as ``pocketbert-bench gates`` scores it (same
examples, length, metric), and an int8 file more than ``INT8_EXTRA`` points below the bundle's best float file is
not shipped: its file is removed and the reason said, as a file that does not pay against fp32 is not shipped
(``timing.speed_rule``).

Why the converter's own judge does not catch it: the int8 ladder judges on the calibration text, the training text
the model has fit, where its predictions are confident.  The SST-2 demo's static int8 file agreed with float on
99.8% of it, on 99.1% of the unlabelled SST-2 test sentences and on 98.9% of the dev sentences, and scored 0.69
points below its float file on dev (Intel Xeon with AMX, 2026-12-04): a dev gate ``benchmarks gates`` then failed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np

from pocketbert.runtime.contract import sha256

INT8_EXTRA = 0.5  # points an int8 file may lose against the bundle's float file (pocketbert-bench gates reads it)
MAX_LENGTH = 128  # the gates score at most this many pieces per example
T = TypeVar("T")


@dataclass
class DevSplit:
    features: object  # data.features.Features, labelled
    metric: str
    source: str  # the dev file, as the manifest names it
    sha256: str = ""  # of the dev file: the gates reuse a recorded score only for the same file
    max_length: int = MAX_LENGTH

    def record(self, score: float) -> dict:
        """An artifact's ``details.dev_score``: what ``pocketbert-bench gates`` needs to know it is its own figure."""
        return {"split": self.source, "sha256": self.sha256, "metric": self.metric, "score": float(score),
                "examples": len(self.features), "max_length": self.max_length}


@dataclass
class DevScores:
    """Files' scores on one dev split, each file scored once (known by its SHA-256): the int8 ladder asks the gate of
    a file that missed its calibration-text target (``quantize.dev_check``), and the verify stage does not score that
    file again when it ships unchanged."""

    split: DevSplit
    input_names: list[str]
    _by_file: dict[str, float] = field(default_factory=dict)

    def carried(self, path: Path, change: Callable[[], T]) -> T:
        """``change()``, which rewrites the file at ``path`` without touching its model (the metadata stage embeds
        labels and vocabulary in a .tflite file: buffers, not arithmetic; verification then checks the new bytes),
        with the file's score, if it had one, kept for its new bytes."""
        before = sha256(path) if self._by_file else None
        result = change()
        if before in self._by_file:
            self._by_file[sha256(path)] = self._by_file[before]
        return result

    def known(self, path: Path) -> bool:
        return sha256(path) in self._by_file

    def of(self, path: Path, runner: Callable[[], Callable]) -> float:
        """``path``'s score, run by ``runner()`` (called only when the file was not scored before)."""
        key = sha256(path)
        if key not in self._by_file:
            self._by_file[key] = score(runner(), self.split, self.input_names)
        return self._by_file[key]


def dev_split(task: str, path: Path, *, data: Path | None, tokenizer, labels: list[str], length: int
              ) -> DevSplit | None:
    """``task``'s labelled dev split (``path``: its file, ``checkpoints.training_record.task_file``), encoded as the
    gates encode it; None when it holds no labels the model has (verification's sentences still check the files)."""
    from ..data import load_task
    from ..data.tasks import TASKS
    from ..errors import ConverterInputError

    try:
        split = load_task(task if task.lower() in TASKS else str(path), "dev", data)
        features = split.encode(tokenizer, max_length=min(MAX_LENGTH, length), label_names=labels)
    except ConverterInputError:
        return None
    if split.labels is None:
        return None
    inside = data is not None and path.resolve().is_relative_to(data.resolve())
    shown = str(path.resolve().relative_to(data.resolve())) if inside else str(path)
    return DevSplit(features, split.metric, shown, sha256=sha256(path), max_length=min(MAX_LENGTH, length))


def logits_per_example(run, features, input_names: list[str], batch_size: int = 32) -> list[np.ndarray]:
    """``run(feeds) -> logits`` on every example of ``features``, sorted by length and batched with dynamic
    padding; each example's logits cut back to its own length (token tasks)."""
    order = sorted(range(len(features)), key=lambda i: len(features.input_ids[i]))
    out: list[np.ndarray | None] = [None] * len(features)
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        width = max(len(features.input_ids[i]) for i in rows)
        feeds = {name: np.zeros((len(rows), width), dtype=np.int64) for name in input_names}
        feeds["input_ids"][:] = features.pad_id
        for r, i in enumerate(rows):
            n = len(features.input_ids[i])
            feeds["input_ids"][r, :n] = features.input_ids[i]
            feeds["attention_mask"][r, :n] = 1
            if "token_type_ids" in feeds:
                feeds["token_type_ids"][r, :n] = features.token_type_ids[i]
        logits = run(feeds)
        for r, i in enumerate(rows):
            out[i] = logits[r, :len(features.input_ids[i])] if logits.ndim == 3 else logits[r]
    return out


def score(run, split: DevSplit, input_names: list[str]) -> float:
    from ..data.metrics import score as task_scores

    return task_scores(split.features, logits_per_example(run, split.features, input_names))[split.metric]


def judged(scores: dict[str, float], precisions: dict[str, str], split: DevSplit, extra: float | None = None) -> dict:
    """Each int8 artifact's gate record from every artifact's dev score (``precisions``: recipe -> fp32,
    int8-dynamic, …): held to the best float score less ``extra`` (default ``INT8_EXTRA``), as the gates hold it.
    An int4 file is not: its gate is the teacher's score, the bar its size is bought against."""
    extra = INT8_EXTRA if extra is None else extra
    floats = [scores[r] for r, precision in precisions.items() if precision in ("fp32", "fp16")]
    if not floats:
        return {}
    reference = max(floats)
    return {recipe: {"split": split.source, "metric": split.metric, "score": float(scores[recipe]),
                     "float": float(reference), "allowed_below": extra,
                     "passed": within(scores[recipe], reference, extra)}
            for recipe, precision in precisions.items() if precision.startswith("int8")}


def within(score: float, reference: float, allowed_below: float) -> bool:
    """The gates' one comparison: ``score`` at most ``allowed_below`` points under ``reference``."""
    return bool(score >= reference - allowed_below - 1e-9)


def refusal(recipe: str, gate: dict, accepted: bool = False, details: dict | None = None) -> str:
    """The note for an int8 file the gate fails: "RECIPE not shipped: WHY", as the speed rule's notes begin, and what
    the ladder's later rungs reached when it took this (plain) file back (``details``: the file's)."""
    why = (f"dev {gate['metric']} {gate['score']:.2f} on {gate['split']} is {gate['float'] - gate['score']:.2f} below "
           f"the float file's {gate['float']:.2f}, more than the {gate['allowed_below']:g} an int8 file may lose")
    later = later_rungs((details or {}).get("smoothed_ladder"))
    if accepted:
        return f"{recipe}: {why}{later}; shipped all the same (--allow-accuracy-loss)"
    return (f"{recipe} not shipped: {why} (the int8 ladder judged it on calibration text, training text the model "
            f"has fit){later}")


def later_rungs(ladder: dict | None) -> str:
    """What the rungs after the plain file reached, from its ``details.smoothed_ladder`` ("" when none ran)."""
    if not ladder:
        return ""
    rungs = []
    folded = ladder.get("folded_attempt")
    if folded:
        rungs.append(f"smoothed with its scales folded in ({folded['linears']} Linears), "
                     + _outcome(folded.get("dev_gate"), folded["meets_bar"]))
    reached = ladder["float_fallback"]
    in_float = f", {reached['linears_in_float']} of {reached['linears']} Linears in float" if reached["roles"] else ""
    rungs.append(f"every Linear smoothed{in_float}, "
                 + _outcome(ladder.get("dev_gate"), reached["accepted"], reached.get("speed")))
    return "; its later rungs: " + "; ".join(rungs)


def _outcome(gate: dict | None, met_bar: bool, speed: dict | None = None) -> str:
    """One rung's outcome: too slow, its dev score, or short of the bar or the target on the calibration text."""
    if speed and not speed["shipped"]:
        timed = speed["tried"][-1]
        return f"{timed['latency_ms']:.1f} ms against fp32's {timed['fp32_latency_ms']:.1f} ms (did not pay)"
    if gate:
        return f"dev {gate['metric']} {gate['score']:.2f} ({'within' if gate['passed'] else 'off'} the gate)"
    return f"short of the int8 {'target' if met_bar else 'bar'} on the calibration text"
