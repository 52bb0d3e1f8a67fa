"""New weights in an exported file without exporting it again.

Static int8 quantises an equalised copy of the model (:mod:`.transforms.equalize`): the same graph, only
its weights rescaled.  Exporting that copy again cost as much as the float export (TFLite: litert-torch traces
and lowers every bucket signature, 30 s for a MiniLM and 205 s for the 24-layer MobileBERT shape).  Instead,
each float constant of the plain export is traced back to the model tensor it was made from, and the same
tensor of the new model is written in its place.  The exporter makes a constant from a tensor as it is (or
reshaped), transposed, as its first rows (a position table cut to a signature's length), or times a constant
factor (attention's 1/√d folded into the query and key projections): exactly those four are recognised.  A
constant that matches none, or matches two tensors that differ in the new model, makes the whole file
underivable (``None``) and the caller exports again; so does a derived file whose logits miss the new model's
(the caller checks: :func:`.quantize.derived_floats.derive`, with its ``float_parity``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np

#: constants this small and traced to nothing are the exporter's own (a softmax mask's -inf, a zero), not weights
OWN_CONSTANT_ELEMENTS = 16


@dataclass(frozen=True)
class Source:
    """How one constant of an exported file is made from a tensor of the model."""

    name: str
    transposed: bool = False
    rows: int | None = None  # the tensor's first rows only
    factor: float | None = None  # times this constant (float32 arithmetic, as the exporter folded it)

    def of(self, tensors: Mapping[str, np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
        value = tensors[self.name]
        value = value.T if self.transposed else value
        value = value[: self.rows] if self.rows is not None else value
        if self.factor is not None:
            value = np.float32(self.factor) * value
        return np.ascontiguousarray(value, dtype=np.float32).reshape(shape)


def sources(constants: Mapping[object, np.ndarray], tensors: Mapping[str, np.ndarray]) -> dict | None:
    """Each float32 constant's :class:`Source` (key -> Source), or None when one cannot be traced.

    ``constants``: the file's float32 constants by the backend's key; ``tensors``: the model's state dict
    (float32 numpy) that was exported."""
    exact = _exact_index(tensors)
    found: dict = {}
    for key, value in constants.items():
        if value.size <= 1:
            continue
        hits = exact.get(value.tobytes()) or _sliced(value, tensors) or _scaled(value, tensors)
        if not hits:
            if value.size <= OWN_CONSTANT_ELEMENTS:
                continue
            return None
        found[key] = hits
    return found


def rewritten(found: Mapping[object, list[Source]], shapes: Mapping[object, tuple[int, ...]],
              tensors: Mapping[str, np.ndarray]) -> dict | None:
    """The constants made from ``tensors`` (the new model's); None when a constant matched several tensors
    of the exported model that differ in the new one, or a tensor the new model lacks."""
    out = {}
    for key, hits in found.items():
        if any(hit.name not in tensors for hit in hits):
            return None
        values = [hit.of(tensors, shapes[key]) for hit in hits]
        if any(not np.array_equal(values[0], v) for v in values[1:]):
            return None
        out[key] = values[0]
    return out


def replaced(constants: Mapping[object, np.ndarray], shapes: Mapping[object, tuple[int, ...]],
             exported: Mapping[str, np.ndarray], new: Mapping[str, np.ndarray]) -> tuple[dict, dict] | None:
    """A file's constants (``constants``, from a model with state dict ``exported``) made from ``new`` instead, and
    where each came from: :func:`rewritten` and :func:`sources`; None when the file cannot be derived."""
    found = sources(constants, exported)
    arrays = rewritten(found, shapes, new) if found else None
    return (arrays, found) if arrays else None


def weights_of(found: Mapping[object, list[Source]], linears: Collection[str]) -> dict:
    """Key -> Linear, for each traced constant (:func:`sources`) that is the weight of one of ``linears`` (named
    as in the state dict, without ``.weight``) and of nothing else."""
    out = {}
    for key, hits in found.items():
        names = {hit.name.removesuffix(".weight") if hit.name.endswith(".weight") else None for hit in hits}
        if len(names) == 1 and (name := names.pop()) in linears:
            out[key] = name
    return out


def float_tensors(model) -> dict[str, np.ndarray]:
    """A torch module's state dict as float32 numpy arrays (other dtypes left out: no constant is made of them
    that a rescaling changes)."""
    import torch

    return {name: t.detach().cpu().numpy() for name, t in model.state_dict().items() if t.dtype == torch.float32}


def _exact_index(tensors: Mapping[str, np.ndarray]) -> dict[bytes, list[Source]]:
    index: dict[bytes, list[Source]] = {}
    for name, value in tensors.items():
        index.setdefault(value.tobytes(), []).append(Source(name))
        if value.ndim == 2:
            index.setdefault(np.ascontiguousarray(value.T).tobytes(), []).append(Source(name, transposed=True))
    return index


def _sliced(value: np.ndarray, tensors: Mapping[str, np.ndarray]) -> list[Source]:
    """A 2-D tensor's first rows (position embeddings cut to a signature's length)."""
    width = value.shape[-1] if value.ndim else 0
    hits = []
    for name, tensor in tensors.items():
        if tensor.ndim != 2 or tensor.shape[1] != width or value.size % width:
            continue
        rows = value.size // width
        if rows < tensor.shape[0] and np.array_equal(value.reshape(rows, width), tensor[:rows]):
            hits.append(Source(name, rows=rows))
    return hits


def _scaled(value: np.ndarray, tensors: Mapping[str, np.ndarray]) -> list[Source]:
    """A tensor (or its transpose) times one constant, to float32 rounding."""
    hits = []
    for name, tensor in tensors.items():
        for transposed, form in ((False, tensor), (True, tensor.T if tensor.ndim == 2 else None)):
            if form is None or form.size != value.size or form.shape != value.shape[-form.ndim:]:
                continue
            form = form.reshape(value.shape)
            peak = int(np.abs(form).argmax())
            if form.flat[peak] == 0:
                continue
            factor = np.float32(value.flat[peak] / form.flat[peak])
            if np.allclose(value, factor * form, rtol=1e-6, atol=0):
                hits.append(Source(name, transposed=transposed, factor=float(factor)))
    return hits
