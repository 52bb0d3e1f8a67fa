"""The quantiser the quantize stage drives: the accuracy ladder for one recipe (bounded in time, and never shipping
an int8 file that does not pay against the bundle's fp32 file: ``timing.ladder_budget``, ``timing.speed_rule``),
which ``--int8 auto``'s choice of recipe (``int8_choice``) drives for each candidate.

Every int8 candidate is judged on the calibration text, so that the verification sentences stay
unseen by every choice made here (equalisation, smoothing, float fallback, which recipe ships).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import backends
from ..backends import ExportedArtifact, ExportSpec
from ..backends.recipes import Recipe
from ..checkpoints import loading
from ..checks import verify
from ..timing.candidate_timing import alternating_rounds_ms
from ..timing.ladder_budget import LADDER_SECONDS, LadderBudget
from ..timing.speed_rule import SpeedCheck, Timer, dropped, unpaid_probe
from ..transforms import equalize
from .calibration_judge import CalibrationJudge, Judged
from .derived_floats import FloatFiles
from .dev_check import DevCheck
from .model_variants import ModelVariants


@dataclass(kw_only=True)  # eleven settings: named at every call, never by position
class Quantizer:
    loaded: loading.Loaded
    spec: ExportSpec
    calibration: list[dict[str, np.ndarray]]  # fixed-length batches of calibration text
    #: the calibration text at each length the judge compares on: the calibration batches first, then (only
    #: when a recipe is quantised per length: TFLite int8-static, each signature calibrated on its own) every
    #: other length of a fixed-shape backend (``ExportBackend.judged_per_length``)
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
    #: the latency figure's input: an int8 file is timed on it against the bundle's fp32 file of its format, and is
    #: not shipped if slower (``speed_rule``); None: no such check (``--no-latency``)
    latency_feeds: dict[str, np.ndarray] | None = None
    timer: Timer = alternating_rounds_ms  # how candidates are timed (a test's fake timer decides by construction)
    ladder_seconds: float | None = LADDER_SECONDS  # each float-fallback search's time bound (None: unbounded)
    models: ModelVariants = field(init=False)  # the equalised and smoothed models, built on first use
    floats: FloatFiles = field(init=False)  # the equalised and smoothed models' float files, kept until close()
    #: the dev gate, asked of a plain int8 file that missed the target (``dev_check``; None: no dev split here)
    dev: DevCheck | None = None
    #: recipe -> its probe's timing against fp32, when it paid: the plain file's own (see _unpaid_probe)
    _probed: dict[str, dict] = field(default_factory=dict)
    #: backend -> its plain dynamic int8 figures when they missed the target (see build)
    _dynamic_missed: dict[str, dict] = field(default_factory=dict)

    def __post_init__(self):
        self.models = ModelVariants(self.loaded, self.spec, self.calibration, equalize_alpha=self.equalize_alpha,
                                    smooth_alpha=self.smooth_alpha)
        self.floats = FloatFiles(self.float_exports, self.spec.model)

    def _load(self, backend, path: Path, precision: str):
        return backend.load(path, self.spec.input_names, precision, threads=self.threads)

    def judge(self, backend, precision: str) -> CalibrationJudge:
        """The ladder's judge of a candidate file on the calibration text (see :class:`CalibrationJudge`)."""
        lengths = self.judged if backend.judged_per_length(precision) else self.judged[:1]
        bars = verify.integer_bars(precision, self.min_cosine, self.min_agreement,
                                   target_agreement=self.target_agreement, min_entity_f1=self.min_entity_f1)
        return CalibrationJudge(lambda path: backend.load_for_rows(path, self.spec.input_names, precision,
                                                                   threads=self.threads), lengths, bars,
                                unpadded=not backend.fixed_lengths, speed=self._speed_check(backend, precision),
                                budget=self.ladder_seconds and LadderBudget(self.ladder_seconds))

    def _speed_check(self, backend, precision: str) -> SpeedCheck | None:
        """An int8 file against the bundle's fp32 file of its format, timed together (None: no fp32 file of that
        format in the bundle, or nothing is timed)."""
        fp32 = self.float_exports.get(backend.name)
        if not precision.startswith("int8") or fp32 is None or self.latency_feeds is None:
            return None
        return SpeedCheck(lambda path: [self._load(backend, path, precision), self._load(backend, fp32, "fp32")],
                          self.latency_feeds, self.threads, f"{backend.name}:fp32", timer=self.timer)

    def plain(self, recipe: Recipe, dest: Path, probe: bool = False) -> ExportedArtifact:
        """The recipe as the quantiser makes it: no smoothing, no float fallback (static int8 of a nonorm
        model: its residual stream equalised, which is exact and free at run time).  ``probe``: the same
        file calibrated on the first calibration batch only and not judged, to time it."""
        backend = backends.get(recipe.backend)
        accept = self.judge(backend, recipe.precision) if recipe.kind == "int8" and not probe else None
        if accept is not None and recipe.name in self._probed:  # timed once: a second toss would only add noise
            timed = self._probed.pop(recipe.name)
            accept.speed = lambda path: (True, timed)
        spec, equalization = self.models.base(recipe)
        float_export, how = self._float_file(backend, spec, equalization)
        calibration = self.calibration[:1] if probe else self.calibration
        artifact = backend.quantize(spec, recipe.precision, dest, calibration, accept=accept,
                                    float_fallback=False, float_export=float_export)
        artifact.details.update(smoothing=None, equalization=equalization and {**equalization, "float_file": how})
        return artifact

    def build(self, recipe: Recipe, dest: Path, plain: ExportedArtifact | None = None) -> ExportedArtifact:
        """Cheapest first: plain; then smoothed where the scales fold into the Linears producing the inputs, free at
        run time (:meth:`_folded`); then with every Linear smoothed (one extra Mul each, so only when the earlier
        rungs missed); then, smoothed, with the most sensitive Linears in float.
        If the ladder cannot reach the target, its cheapest step that meets the bar ships (or plain,
        when only plain met it); with the dev split at hand, that step ships when it holds the dev gate, which the
        plain file lost (else plain, the cheaper file, is no worse a fallback).

        Static int8 starts at the smoothed rung when the same backend's plain dynamic int8 file missed the
        target: fixed activation ranges do not recover what per-row ones lost (NER demo, ONNX: dynamic
        entity agreement 99.38%, static 99.21%, target 99.5%), and its plain attempt costs a calibration.  With the
        dev split at hand neither holds: the dev gate decides whether the plain file ships (:meth:`_ships_plain`).
        Static int8 is first timed on a probe (:meth:`_unpaid_probe`)."""
        unpaid = self._unpaid_probe(recipe, dest) if plain is None else None
        if unpaid is not None:
            return unpaid
        predicted = None if plain is not None else self._predicted_miss(recipe)
        artifact = plain if plain is not None or predicted else self.plain(recipe, dest)
        if artifact is not None:
            fallback = artifact.details.get("float_fallback") or {}
            # slower than fp32 all in int8: the later rungs add a Mul per Linear and keep Linears in float
            if recipe.kind != "int8" or self.smooth_alpha is None or dropped(recipe.name, artifact.details) \
                    or self._ships_plain(recipe, artifact):
                return artifact
            if recipe.precision == "int8-dynamic":
                self._dynamic_missed[recipe.backend] = {"recipe": recipe.name, **fallback["search"][0]}
        folded, folded_attempt = self._folded(recipe, dest, artifact)
        if folded is not None:
            return folded
        backend = backends.get(recipe.backend)
        smoothed_spec, smoothing = self.models.smoothed(recipe)
        equalization = self.models.base(recipe)[1]
        float_export, how = self.floats.smoothed(backend, smoothed_spec, equalization is not None)
        keep = None if float_export else self.floats.kept_path(backend, dest.parent, equalization is not None)
        plain_file = _set_aside(artifact, dest)
        try:
            laddered = backend.quantize(smoothed_spec, recipe.precision, dest, self.calibration,
                                        float_export=float_export, accept=self.judge(backend, recipe.precision),
                                        keep_float=keep)
            if keep is not None:
                self.floats.keep(backend, equalization is not None, keep, smoothed_spec.model)
            reached = laddered.details["float_fallback"]
            # short of the target (and of the dev gate, when it can be asked), or slower than fp32
            if not (reached["target_met"] and reached["accepted"]) and not self._held_by_the_gate(recipe, laddered):
                cheapest = self._plain_meeting_the_bar(recipe, dest, artifact, plain_file)
                if cheapest is not None:  # plain is the cheapest step meeting the bar (and it pays)
                    cheapest.details["smoothed_ladder"] = {
                        "smoothing": {**smoothing, "float_file": how}, "float_fallback": reached,
                        "dev_gate": laddered.details.get("ladder_dev_gate"), "folded_attempt": folded_attempt}
                    return cheapest
        finally:
            if plain_file is not None:
                plain_file.unlink(missing_ok=True)
        laddered.details.update(smoothing={**smoothing, "float_file": how}, unsmoothed_attempt=_attempt(artifact),
                                equalization=equalization and {**equalization, "float_file": how},
                                folded_attempt=folded_attempt)
        if predicted:
            laddered.details["plain_skipped"] = {"reason": "the plain dynamic int8 file missed the target",
                                                 "dynamic": predicted}
        return laddered

    def _folded(self, recipe: Recipe, dest: Path,
                plain: ExportedArtifact | None) -> tuple[ExportedArtifact | None, dict | None]:
        """The rung between the plain file and smoothing behind a Mul: smoothing only the Linears whose input another
        Linear produces (attention and ReLU feed-forward outputs), its scales folded into that Linear's rows
        (:func:`.smoothquant.smooth`, ``folded``).  The graph is the plain file's, so is its speed, and ONNX Runtime
        still fuses attention, which a Mul before the Q/K/V Linears stops (SST-2 demo, static ONNX, AVX2-only EPYC,
        2026-12-05: plain dev accuracy 88.19 against float's 88.99, off the gate; folded 88.65 at 1.55x fp32; every
        Linear behind a Mul 88.65 at 1.06-1.28x).  (The file at ``dest``, None) if it ships as a plain file would
        (:meth:`_ships_plain`); else (None, its record), and no file; (None, None): nothing folds."""
        spec, count = self.models.folded(recipe)
        if not count:
            return None, None
        backend, (base, equalization) = backends.get(recipe.backend), self.models.base(recipe)
        scratch = dest.with_name(f".folded-{dest.name}")
        float_export = self.floats.rewritten(backend, self._float_file(backend, base, equalization)[0], base.model,
                                             spec)
        accept, timed = self.judge(backend, recipe.precision), _timing(plain)
        if accept is not None and timed is not None:  # the plain file's graph: timing it again is a second toss
            accept.speed = lambda path: (True, {**timed, "timed": f"{timed.get('timed', 'the plain file')}: one graph"})
        try:
            artifact = backend.quantize(spec, recipe.precision, scratch, self.calibration, accept=accept,
                                        float_fallback=False, float_export=float_export)
        finally:
            if float_export is not None:
                float_export.unlink(missing_ok=True)
        if not self._ships_plain(recipe, artifact):
            scratch.unlink(missing_ok=True)
            return None, {"linears": count, **_attempt(artifact)}
        artifact.path = scratch.replace(dest)
        how = "the float export with these weights written in" if float_export else "exported again"
        artifact.details.update(smoothing={"method": "smoothquant", "alpha": self.smooth_alpha, "linears": count,
                                           "folded": FOLDED, "float_file": how},
                                unsmoothed_attempt=_attempt(plain), equalization=equalization and {**equalization,
                                                                                                   "float_file": how})
        return artifact, None

    def _float_file(self, backend, spec: ExportSpec, equalization: dict | None) -> tuple[Path | None, str]:
        """The float file a plain int8 file (or the static probe, or ``--int8 auto``'s trial) quantises: the plain
        export, or the equalised model's (:meth:`FloatFiles.equalized`), made once per backend."""
        if equalization is None:
            return self.float_exports.get(backend.name), "the float export"
        return self.floats.equalized(backend, spec)  # (None, …) without a plain export

    def close(self) -> None:
        """Remove the float files kept for later ladders."""
        self.floats.close()

    def _predicted_miss(self, recipe: Recipe) -> dict | None:
        """The plain dynamic int8 figures that predict this static recipe's plain file misses the target (not asked
        with the dev gate at hand: the plain file may keep the task's score all the same, and is then the file)."""
        if recipe.precision != "int8-static" or self.smooth_alpha is None or self.dev is not None:
            return None
        return self._dynamic_missed.get(recipe.backend)

    def _ships_plain(self, recipe: Recipe, artifact: ExportedArtifact) -> bool:
        """Whether the plain file is the file: it meets the calibration-text target, or with the dev split at hand
        (``dev_check``) it meets the bar and holds the dev gate, which the target stands in for.  The gate decides
        both ways: short of the target a file within it ships without the later rungs, and a file meeting the target
        that loses the gate goes on up the ladder (the SST-2 demo's static ONNX file, AVX2-only EPYC, 2026-12-04:
        at the target on the calibration text, dev accuracy 88.19 against its float file's 88.99)."""
        held = self._held_by_the_gate(recipe, artifact)
        return artifact.details["float_fallback"]["target_met"] if held is None else held

    def _held_by_the_gate(self, recipe: Recipe, artifact: ExportedArtifact) -> bool | None:
        """Whether an int8 file meeting the bar holds the dev gate, its record kept as ``details.ladder_dev_gate``;
        None when the gate cannot be asked (no dev split here, not int8, short of the bar, no float file of its
        format)."""
        if self.dev is None or not recipe.precision.startswith("int8") or \
                not artifact.details["float_fallback"]["accepted"]:
            return None
        gate = self.dev(backends.get(recipe.backend), artifact.path, recipe.precision)
        if gate is None:
            return None
        artifact.details["ladder_dev_gate"] = gate
        return gate["passed"]

    def _unpaid_probe(self, recipe: Recipe, dest: Path) -> ExportedArtifact | None:
        """Static int8, timed before its calibration: a probe (the plain file calibrated on one batch, not judged:
        its speed does not depend on its ranges) against the bundle's fp32 file.  When even that all-int8 file does
        not pay, no rung of the ladder can (each adds a Mul per Linear or keeps Linears in float), so the probe comes
        back at ``dest``, recorded as dropped (``speed_rule.dropped``), and the full calibration is not run (the SST-2
        demo's ONNX file on an AVX2-only EPYC, 2026-12-04: 33.5 s to calibrate, judge and time it, then 1.0x fp32).
        None: it pays (its timing then stands for the plain file's: timing that file again near 1.1x made shipping
        it two tosses instead of one), or nothing is timed."""
        speed = self._speed_check(backends.get(recipe.backend), recipe.precision) \
            if recipe.precision == "int8-static" else None
        if speed is None:
            return None
        probe = self.plain(recipe, dest.with_name(f".probe-{dest.name}"), probe=True)
        pays, figures = speed(probe.path)
        if pays:
            probe.path.unlink(missing_ok=True)
            self._probed[recipe.name] = {**figures, "timed": "its probe"}
            return None
        probe.path = probe.path.replace(dest)
        probe.details["float_fallback"] = unpaid_probe(probe.details["float_fallback"], figures)
        return probe

    def _plain_meeting_the_bar(self, recipe: Recipe, dest: Path, plain: ExportedArtifact | None,
                               plain_file: Path | None) -> ExportedArtifact | None:
        """The plain file at ``dest`` (from :func:`_set_aside`; built if the ladder skipped it), if it meets the bar."""
        if plain_file is not None:
            plain.path = plain_file.replace(dest)
            return plain
        if plain is None:
            scratch = dest.with_name(f".plain-{dest.name}")
            plain = self.plain(recipe, scratch)
            if plain.details["float_fallback"]["accepted"]:
                plain.path = scratch.replace(dest)
                return plain
            scratch.unlink(missing_ok=True)
            return None
        return self.plain(recipe, dest) if plain.details["float_fallback"]["accepted"] else None



def _attempt(plain: ExportedArtifact | None) -> dict | None:
    """A file's record as the later rungs keep it: its judged attempt with its dev gate (None: no file)."""
    if plain is None:
        return None
    gate = plain.details.get("ladder_dev_gate")
    return {**plain.details["float_fallback"]["search"][0], **({"dev_gate": gate} if gate else {})}


def _timing(plain: ExportedArtifact | None) -> dict | None:
    """The plain file's timing against fp32 (None: no plain file, or not timed)."""
    speed = plain and plain.details["float_fallback"].get("speed")
    return speed["tried"][0] if speed else None


#: how a folded smoothing's scales are applied, for the manifest
FOLDED = "into the rows of the Linear producing each smoothed Linear's input: nothing added at run time"


def _set_aside(plain: ExportedArtifact | None, dest: Path) -> Path | None:
    """Move the plain file at ``dest`` aside, if it met the bar, before the smoothed ladder writes there: it ships as it
    is if that ladder misses the target (24-layer MobileBERT shape: 35 s to build it again, calibration included)."""
    aside = plain is not None and plain.details["float_fallback"]["accepted"] and dest.exists()
    return dest.replace(dest.with_name(f".plain-{dest.name}")) if aside else None
