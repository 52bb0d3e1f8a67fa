"""Float files derived from a plain export instead of exporting a changed model again: the export with an equalised or
smoothed model's weights written in (and smoothing's Mul before each Linear), kept only when every weight traces back
and its logits match the changed model's; and the float files the int8 ladders share (:class:`FloatFiles`)."""

from __future__ import annotations

from dataclasses import dataclass, field
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


@dataclass
class FloatFiles:
    """The float files the int8 ladders quantise besides the plain exports: the equalised model's (static int8) and
    the smoothed models' (one per base model, equalised or not), each made once per backend, derived from a file
    already made where :func:`derive` allows, and kept for the backend's later ladders until :meth:`close` removes
    them.  Exporting one costs as much as the float export (24-layer MobileBERT shape in TFLite: 205 s; the SST-2
    demo's fused static ONNX file: 27 s, profiled on an AVX2-only EPYC, 2026-12-04)."""

    exports: dict[str, Path]  # backend name -> its plain float export, of ``model`` (the export stage's file)
    model: object  # the model the plain exports hold
    _equalized: dict[str, tuple[Path, str]] = field(default_factory=dict)
    #: (backend name, equalised?) -> the smoothed float file and the model it holds
    _smoothed: dict[tuple[str, bool], tuple[Path, object]] = field(default_factory=dict)

    def equalized(self, backend, spec: ExportSpec) -> tuple[Path | None, str]:
        """The equalised model's (``spec.model``'s) float file and how it was made: the plain export with the
        equalised weights written in when every weight traces back and its logits match, else the model exported
        (a fused ONNX file's packed Q/K/V weights trace to no one tensor); None without a plain export."""
        plain = self.exports.get(backend.name)
        if plain is None:
            return None, "the float export"
        if backend.name not in self._equalized:
            derived = plain.with_name(f".equalized-{plain.name}")
            if derive(backend, (plain, self.model), derived, spec):
                self._equalized[backend.name] = derived, "the float export with the equalised weights written in"
            else:
                backend.export(spec, derived)
                self._equalized[backend.name] = derived, "exported again"
        return self._equalized[backend.name]

    def smoothed(self, backend, spec: ExportSpec, equalised: bool) -> tuple[Path | None, str]:
        """The smoothed model's (``spec.model``'s) float file, and how it was made: the backend's earlier ladder's
        (the same model), or that of the other base with this model's weights written in (the same graph), or the
        plain export with a Mul before each Linear and the smoothed weights; None: the backend exports it again (then
        :meth:`keep` takes the file it kept at :meth:`kept_path`)."""
        same, other = (self._smoothed.get((backend.name, key)) for key in (equalised, not equalised))
        if same is not None:
            return same[0], "the smoothed float file of the backend's other int8 ladder"
        sources = [(other, "the other int8 ladder's smoothed float file, with this model's weights written in"),
                   (self.exports.get(backend.name) and (self.exports[backend.name], self.model),
                    "the float export with a Mul before each Linear and the smoothed weights written in")]
        for source, how in sources:
            if source is None:
                continue
            derived = self.kept_path(backend, source[0].parent, equalised)
            if derive(backend, source, derived, spec):
                self._smoothed[(backend.name, equalised)] = derived, spec.model
                return derived, how
        return None, "exported again (smoothing adds an op per Linear)"

    def rewritten(self, backend, source: Path | None, model, spec: ExportSpec) -> Path | None:
        """``source`` (``model``'s float file) with ``spec.model``'s weights written in, when :func:`derive` can (a
        scratch file beside it, the caller's to remove); None: the backend exports ``spec.model`` itself."""
        if source is None:
            return None
        dest = source.with_name(f".rewritten-{source.name}")
        return dest if derive(backend, (source, model), dest, spec) else None

    def keep(self, backend, equalised: bool, path: Path, model) -> None:
        """Keep ``path``, the smoothed ``model``'s float file a quantisation exported, for the backend's next ladder."""
        if path.exists():
            self._smoothed[(backend.name, equalised)] = path, model

    @staticmethod
    def kept_path(backend, directory: Path, equalised: bool) -> Path:
        return directory / f".smoothed-{'equalised' if equalised else 'plain'}-{backend.filename('fp32')}"

    def close(self) -> None:
        """Remove every float file made here (never the plain exports)."""
        for path, _ in [*self._smoothed.values(), *self._equalized.values()]:
            path.unlink(missing_ok=True)
        self._smoothed.clear()
        self._equalized.clear()
