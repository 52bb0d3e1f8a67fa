"""Float files derived from a plain export instead of exporting a changed model again: the export with an equalised or
smoothed model's weights written in (and smoothing's Mul before each Linear), kept only when every weight traces back
and its logits match the changed model's."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..backends import ExportSpec, reweight
from ..checks import verify
from ..transforms.smoothquant import as_unsmoothed

#: texts a float file derived with new weights is checked on against the model it should equal
PARITY_TEXTS = ["a short text", "a somewhat longer text , with a comma and a few more words in it"]


def derive(backend, source: tuple[Path, object], dest: Path, spec: ExportSpec) -> bool:
    """Write ``dest``: the float file ``source[0]`` (exported from the model ``source[1]``) with ``spec.model``'s
    weights written in, and smoothing's Mul before each Linear ``spec.model`` smooths and ``source[1]`` does not
    (:meth:`ExportBackend.with_weights`), if every weight traces back and its logits match ``spec.model``'s
    (:func:`float_parity`); else False, and no file."""
    path, model = source
    (exported, had), (new, scales) = (as_unsmoothed(reweight.float_tensors(m)) for m in (model, spec.model))
    added = {linear: scale for linear, scale in scales.items() if linear not in had}  # Muls the file lacks
    if backend.with_weights(path, dest, exported, new, input_scales=added) and float_parity(backend, dest, spec):
        return True
    dest.unlink(missing_ok=True)
    return False


def float_parity(backend, path: Path, spec: ExportSpec) -> bool:
    """A float file's logits match ``spec.model``'s within the fp32 parity tolerance, at every length it has."""
    runner = backend.load(path, spec.input_names, "fp32", threads=spec.threads)
    for length in spec.buckets if backend.fixed_lengths else [None]:
        batches = spec.make_batches(PARITY_TEXTS, pad_to=length)
        reference = verify.torch_logits(spec.model, batches)
        found = verify.runner_logits(runner, batches)
        if max(float(np.abs(r - f).max()) for r, f in zip(reference, found)) > verify.fp32_tolerance(reference):
            return False
    return True
