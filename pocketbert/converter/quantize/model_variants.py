"""The models an int8 ladder quantises besides the plain one, each built on first use and kept for the other ladders:
equalised (static int8 of a NoNorm model: its residual stream's outlier channels divided out, exact and free at run
time), smoothed with its scales folded into the Linears producing the smoothed Linears' inputs (free at run time too),
and smoothed with a Mul before each Linear.  Their statistics come from one forward pass over the calibration text."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..backends import ExportSpec
from ..backends.logits_model import LogitsModel
from ..backends.recipes import Recipe
from ..checkpoints import loading
from ..checks import verify
from ..transforms import equalize
from ..transforms.smoothquant import activation_hooks, forward_all, smooth


@dataclass
class ModelVariants:
    loaded: loading.Loaded
    spec: ExportSpec  # the plain model's
    calibration: list[dict[str, np.ndarray]]
    equalize_alpha: float | None  # None: never equalise
    smooth_alpha: float | None  # None: never smooth
    _equalized: tuple[ExportSpec, dict] | None = None
    _statistics: tuple[dict, list] | None = None
    _smoothed: dict[bool, tuple[ExportSpec, dict]] = field(default_factory=dict)  # equalised base? -> smoothed

    def base(self, recipe: Recipe) -> tuple[ExportSpec, dict | None]:
        """The model a recipe quantises, and its equalisation record: equalised for static int8 when the family
        allows it (else the plain model, None)."""
        model, family = self.loaded.model, self.loaded.family
        if recipe.precision != "int8-static" or self.equalize_alpha is None or not equalize.supported(model, family):
            return self.spec, None
        if self._equalized is None:
            equalized, record = equalize.equalize(model, family, self._maxima()[1], alpha=self.equalize_alpha)
            self._equalized = self.with_model(equalized), record
        return self._equalized

    def smoothed(self, recipe: Recipe) -> tuple[ExportSpec, dict]:
        """Every Linear of the recipe's base model smoothed behind a Mul, and the smoothing record."""
        key = self.base(recipe)[1] is not None
        if key not in self._smoothed:
            base, maxima = self._smoothing_base(recipe)
            smoothed, count = smooth(base.model.model, self.loaded.family, maxima, alpha=self.smooth_alpha)
            self._smoothed[key] = (self.with_model(smoothed),
                                   {"method": "smoothquant", "alpha": self.smooth_alpha, "linears": count})
        return self._smoothed[key]

    def folded(self, recipe: Recipe) -> tuple[ExportSpec, int]:
        """The recipe's base model smoothed where the scales fold into the producing Linears, and how many Linears
        were smoothed (0: none could be)."""
        base, maxima = self._smoothing_base(recipe)
        model, count = smooth(base.model.model, self.loaded.family, maxima, alpha=self.smooth_alpha, folded=True)
        return self.with_model(model), count

    def _smoothing_base(self, recipe: Recipe) -> tuple[ExportSpec, dict]:
        """The model smoothing starts from (the recipe's base, equalised or not) and its Linears' input maxima."""
        base, equalization = self.base(recipe)
        maxima, streams = self._maxima()
        if equalization is not None:  # what the equalised model's Linears read, derived from the plain model's
            factors = equalize.scales(streams, self.equalize_alpha)
            maxima = equalize.reader_maxima(self.spec.model.model, self.loaded.family, maxima, factors)
        return base, maxima

    def _maxima(self) -> tuple[dict, list]:
        """Every Linear's input maxima (smoothing) and, if the model can be equalised, each residual stream's
        (equalisation; else empty): one forward pass over the calibration text for both."""
        if self._statistics is None:
            model, family = self.spec.model.model, self.loaded.family
            linears, streams = {}, []
            handles = activation_hooks(model, family, linears)
            if self.equalize_alpha is not None and equalize.supported(model, family):
                handles += equalize.stream_hooks(model, family, streams)
            # the rows sorted by length and cut to their batch's longest, as ONNX Runtime's calibration reads them:
            # a padding position's activations never reach a real token's output
            forward_all(model, verify.unpadded_batches(self.calibration), handles)
            self._statistics = linears, streams
        return self._statistics

    def with_model(self, model) -> ExportSpec:
        return ExportSpec(**{**self.spec.__dict__, "model": LogitsModel(model, self.spec.input_names).eval()})
