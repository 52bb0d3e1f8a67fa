"""The int8 ladder asks the dev gate itself, when the task's dev split is at hand.

The ladder's accuracy target (top-1 agreement, and entity F1 for NER, with the float model on the calibration text)
stands in for the gate the file is finally held to: at most ``dev_gate.INT8_EXTRA`` points below the float file on the
task's dev split.  Where that split is here the gate can be asked directly, and a plain int8 file that missed the
target but keeps the task's score ships without the later rungs, which buy agreement the gate does not ask for with
the speed-up: smoothing puts a Mul before each Linear (and stops ONNX Runtime fusing attention), float fallback keeps
Linears in float.  The NER demo's plain ONNX dynamic int8 file (AMD EPYC, AVX2 only, 2026-12-04) agreed with float
on 98.7% of the calibration text's entities, short of the 99.5% target, and scored 89.62 dev F1 against the float
file's 89.86; its ladder spent 98 s smoothing and searching, then shipped that same file.  The ladder asks against its
format's float file; the verify stage holds the file to the bundle's best float file, as ever.  The
scores are kept (``dev_gate.DevScores``), so the verify stage does not score those files again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..checks import dev_gate


@dataclass
class DevCheck:
    """``check(backend, path, precision)``: the int8 file at ``path`` against its format's float file on the dev
    split, as the verify stage will hold it (``dev_gate.judged``'s record, ``passed`` among it); None when the bundle
    has no float file of that format."""

    scores: dev_gate.DevScores
    float_exports: dict[str, Path]  # backend name -> its float file
    threads: int

    def __call__(self, backend, path: Path, precision: str) -> dict | None:
        fp32 = self.float_exports.get(backend.name)
        if fp32 is None:
            return None
        names = self.scores.input_names

        def score(file: Path, kind: str) -> float:
            return self.scores.of(file, lambda: backend.load_for_rows(file, names, kind, threads=self.threads))

        found = {"fp32": score(fp32, "fp32"), precision: score(path, precision)}
        return dev_gate.judged(found, {"fp32": "fp32", precision: precision}, self.scores.split)[precision]
