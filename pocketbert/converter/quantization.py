"""The quantiser the quantize stage drives: the accuracy ladder for one recipe, and ``--int8 auto``'s
choice of recipe.

Every int8 candidate is judged on the calibration text, so that the verification sentences stay
unseen by every choice made here (equalisation, smoothing, float fallback, which recipe ships).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import backends, loading, verify
from .backends import ExportedArtifact, ExportSpec
from .errors import VerificationError
from .logits_model import LogitsModel
from .recipes import Recipe, RecipeChoice
from .transforms import equalize
from .transforms.smoothquant import activation_maxima, smooth


@dataclass
class Judged:
    """Calibration text padded to one length, with what the int8 judge compares against."""

    batches: list[dict[str, np.ndarray]]
    reference: list[np.ndarray]  # PyTorch logits on them
    entities: verify.EntityView | None = None  # token classification: how to read their entities


@dataclass
class Quantizer:
    loaded: loading.Loaded
    spec: ExportSpec
    calibration: list[dict[str, np.ndarray]]  # fixed-length batches of calibration text
    #: the calibration text at each length the judge compares on: the calibration batches first; a
    #: fixed-shape backend (one TFLite signature per length) is judged on every length, each signature
    #: being its own quantised graph
    judged: list[Judged]
    threads: int
    min_cosine: float
    min_agreement: float
    smooth_alpha: float | None
    target_agreement: float = verify.INT8_TARGET_AGREEMENT
    min_entity_f1: float = verify.INT8_MIN_ENTITY_F1
    #: backend name -> its plain float export, quantised instead of exporting again
    float_exports: dict[str, Path] = field(default_factory=dict)
    equalize_alpha: float | None = equalize.DEFAULT_ALPHA  # None: never equalise
    _equalized: tuple[ExportSpec, dict] | None = None
    _smoothed: dict[bool, tuple[ExportSpec, dict]] = field(default_factory=dict)

    def _load(self, backend, path: Path, precision: str):
        return backend.load(path, self.spec.input_names, precision, threads=self.threads)

    def judge(self, backend, precision: str):
        """accept(path) -> (meets the int8 target on the calibration text?, figures).

        ``figures["meets_bar"]``: good enough to ship (the verification bar) if no attempt of the
        ladder reaches the target; the float-fallback search then keeps the cheapest such attempt.
        """
        lengths = self.judged if backend.fixed_lengths else self.judged[:1]
        bars = verify.integer_bars(precision, self.min_cosine, self.min_agreement, self.target_agreement,
                                   self.min_entity_f1)

        def accept(path: Path) -> tuple[bool, dict]:
            runner = self._load(backend, path, precision)
            found = [verify.compare(j.reference, verify.runner_logits(runner, j.batches),
                                    [b["attention_mask"] for b in j.batches], j.entities) for j in lengths]
            meets_bar = all(c.int8_failure(bars.min_cosine, bars.min_agreement, bars.min_entity_f1) is None
                            for c in found)
            # the target holds for what the task reports: for NER its entities as well as its tokens
            reported = min(c.top1_agreement if c.entity_f1 is None else min(c.top1_agreement, c.entity_f1)
                           for c in found)
            ok = meets_bar and reported >= bars.target_agreement
            # the worst length's figures: a file is as good as its worst signature
            figures = {"cosine": round(min(c.cosine for c in found), 5),
                       "top1_agreement": round(min(c.top1_agreement for c in found), 4)}
            if found[0].entity_f1 is not None:
                figures["entity_f1"] = round(min(c.entity_f1 for c in found), 4)
            return ok, {**figures, "meets_bar": meets_bar}

        return accept

    def plain(self, recipe: Recipe, dest: Path) -> ExportedArtifact:
        """The recipe as the quantiser makes it: no smoothing, no float fallback (static int8 of a nonorm
        model: its residual stream equalised, which is exact and free at run time)."""
        backend = backends.get(recipe.backend)
        accept = self.judge(backend, recipe.precision) if recipe.kind == "int8" else None
        spec, equalization = self._base(recipe)
        float_export = None if equalization else self.float_exports.get(recipe.backend)
        artifact = backend.quantize(spec, recipe.precision, dest, self.calibration, accept,
                                    float_fallback=False, float_export=float_export)
        artifact.details.update(smoothing=None, equalization=equalization)
        return artifact

    def _base(self, recipe: Recipe) -> tuple[ExportSpec, dict | None]:
        """The model a recipe quantises: equalised for static int8 when the family allows it."""
        model, family = self.loaded.model, self.loaded.family
        if recipe.precision != "int8-static" or self.equalize_alpha is None or not equalize.supported(model, family):
            return self.spec, None
        if self._equalized is None:
            maxima = equalize.stream_maxima(model, family, self.calibration)
            equalized, record = equalize.equalize(model, family, maxima, alpha=self.equalize_alpha)
            self._equalized = self._with_model(equalized), record
        return self._equalized

    def _with_model(self, model) -> ExportSpec:
        return ExportSpec(**{**self.spec.__dict__, "model": LogitsModel(model, self.spec.input_names).eval()})

    def build(self, recipe: Recipe, dest: Path, plain: ExportedArtifact | None = None) -> ExportedArtifact:
        """Cheapest first: plain; then with activation smoothing (one extra Mul per Linear, so only
        when plain int8 misses the target); then, smoothed, with the most sensitive Linears in float.
        If the ladder cannot reach the target, its cheapest step that meets the bar ships (or plain,
        when only plain met it)."""
        artifact = plain or self.plain(recipe, dest)
        if recipe.kind != "int8" or artifact.details["float_fallback"]["target_met"] or self.smooth_alpha is None:
            return artifact
        plain_ok = artifact.details["float_fallback"]["accepted"]
        smoothed_spec, smoothing = self._smoothed_spec(recipe)
        unsmoothed = artifact.details["float_fallback"]["search"][0]
        backend = backends.get(recipe.backend)
        laddered = backend.quantize(smoothed_spec, recipe.precision, dest, self.calibration,
                                     self.judge(backend, recipe.precision))
        if plain_ok and not laddered.details["float_fallback"]["target_met"]:
            return self.plain(recipe, dest)  # short of the target, plain is the cheapest step meeting the bar
        laddered.details.update(smoothing=smoothing, unsmoothed_attempt=unsmoothed,
                                equalization=artifact.details["equalization"])
        return laddered

    def _smoothed_spec(self, recipe: Recipe) -> tuple[ExportSpec, dict]:
        """Smoothing on top of the recipe's base model (equalised or not)."""
        base, equalization = self._base(recipe)
        key = equalization is not None
        if key not in self._smoothed:
            model = base.model.model  # the LogitsModel's Hugging Face model
            maxima = activation_maxima(model, self.loaded.family, self.calibration)
            smoothed, count = smooth(model, self.loaded.family, maxima, alpha=self.smooth_alpha)
            self._smoothed[key] = (self._with_model(smoothed),
                                   {"method": "smoothquant", "alpha": self.smooth_alpha, "linears": count})
        return self._smoothed[key]

    def choose(self, choice: RecipeChoice, directory: Path,
               feeds: dict[str, np.ndarray]) -> tuple[Recipe, ExportedArtifact]:
        """``--int8 auto``: the fastest candidate that meets the int8 bar, measured on this machine.

        Every candidate is first built plain and timed.  Then, fastest first, a candidate that failed
        goes through the accuracy ladder (smoothing, float fallback); a candidate whose plain build is
        already slower than the best passing one is skipped, since the ladder only adds work.
        """
        backend = backends.get(choice.candidates[0].backend)
        trials = []
        for recipe in choice.candidates:
            path = directory / f".candidate-{backend.filename(recipe.precision)}"
            artifact = self.plain(recipe, path)
            trials.append({"recipe": recipe, "path": path, "artifact": artifact,
                           "plain_ms": backends.median_latency_ms(self._load(backend, path, recipe.precision), feeds)})
        best = None
        for trial in sorted(trials, key=lambda t: t["plain_ms"]):
            if best is not None and trial["plain_ms"] >= best["ms"]:
                trial["outcome"] = f"skipped: plain build already slower than {best['recipe'].name}"
                continue
            artifact = trial["artifact"]
            if artifact.details["float_fallback"]["target_met"]:
                trial["ms"] = trial["plain_ms"]
            else:
                artifact = trial["artifact"] = self.build(trial["recipe"], trial["path"], plain=artifact)
                if artifact.details["float_fallback"]["accepted"]:
                    runner = self._load(backend, trial["path"], trial["recipe"].precision)
                    trial["ms"] = backends.median_latency_ms(runner, feeds)
            if "ms" not in trial:
                trial["outcome"] = "failed the int8 bar"
            elif best is None or trial["ms"] < best["ms"]:
                best = trial
        for trial in trials:
            if trial is not best:
                trial["path"].unlink(missing_ok=True)
                trial.setdefault("outcome", f"slower than {best['recipe'].name}" if best else "failed the int8 bar")
        record = [{"recipe": t["recipe"].name, "plain_latency_ms": round(t["plain_ms"], 3),
                   "latency_ms": round(t["ms"], 3) if "ms" in t else None,
                   "accepted": t["artifact"].details["float_fallback"]["accepted"],
                   "chosen": t is best, "outcome": t.get("outcome", "chosen"),
                   **t["artifact"].details["float_fallback"]["search"][-1]} for t in trials]
        if best is None:
            raise VerificationError(
                f"no int8 recipe for {backend.name} met the int8 bar on the calibration text: "
                + "; ".join(f"{r['recipe']} cosine {r.get('cosine')}, top-1 {r.get('top1_agreement')}"
                            + (f", entity F1 {r['entity_f1']}" if "entity_f1" in r else "") for r in record),
                "convert without int8, lower --int8-min-cosine/--int8-min-agreement knowingly, or give "
                "--calibration text closer to your inputs")
        dest = directory / backend.filename(best["recipe"].precision)
        best["path"].rename(dest)
        artifact = best["artifact"]
        artifact.path = dest
        artifact.details["selection"] = {
            "rule": "--int8 auto: the fastest int8 recipe meeting the int8 bar on the calibration text "
                    f"(batch 1, sequence {feeds['input_ids'].shape[1]}, {self.threads} threads, this machine)",
            "candidates": record}
        return best["recipe"], artifact
