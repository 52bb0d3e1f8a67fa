"""Stage 2, transform: the ``--opt`` rewrites of the PyTorch model, in registry order.

Function-changing transforms (nonorm, relu) are measured against the untransformed model on real
sentences; the damage is recovered by distillation (``--recover``), accepted (``--allow-accuracy-loss``)
or refused.  Exact rewrites (fold) are checked to change nothing.  The stage ends with the reference
logits every artifact is verified against and the export spec the backends read.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import numpy as np

from .. import backends
from ..checks import verify
from ..conversion import Conversion, Inputs, LoadResult, TransformResult
from ..errors import AccuracyLossRefused, VerificationError
from ..backends.logits_model import LogitsModel
from ..transforms import OPTS, TransformReport
from .base import Stage

#: the latency figure's sequence length (capped at what every artifact takes)
LATENCY_SEQ = 128


class TransformStage(Stage):
    name = "transform"
    reads = ("options", "plan", "load")
    produces = ("transform",)

    def run(self, conversion: Conversion) -> None:
        load = conversion.load
        model = LogitsModel(load.loaded.model, list(load.encoder.input_names)).eval()
        changed = Changed()
        with conversion.step(self.name, "Applying optimisations"):
            original = _change(conversion, model, changed)
        if original is not None:
            if load.recovery is not None:
                _recover(conversion, original, model, changed)
            del original
            _accept(conversion, changed)
        for name in conversion.plan.opts.exact:
            with conversion.step(self.name, OPTS[name].action):
                changed.reports.append(_exact(load, model, name))
        with conversion.step(self.name, "Computing the reference logits"):
            conversion.transform = _reference(conversion, model, changed)


@dataclass
class Changed:
    """What the rewrites did, as the stage goes: their reports, the damage measured, the recovery's record."""

    reports: list[TransformReport] = field(default_factory=list)
    damage: verify.Comparison | None = None
    recovered: dict | None = None


def _reference(conversion: Conversion, model: LogitsModel, changed: Changed) -> TransformResult:
    """The transformed model's logits every artifact is verified against, and the spec the backends export."""
    load = conversion.load
    encoder = load.encoder
    spec = backends.ExportSpec(model=model, family=load.loaded.family, input_names=list(encoder.input_names),
                               output_name="logits", max_length=load.max_length, make_batches=encoder.batches,
                               threads=conversion.options.threads, buckets=load.buckets)
    return TransformResult(model=model, spec=spec, parity_ref=verify.torch_logits(model, load.inputs.parity),
                           verify_ref=verify.torch_logits(model, load.inputs.batches),
                           latency_feeds=_full_row(encoder(["x"], pad_to=min(LATENCY_SEQ, load.verify_length))),
                           reports=changed.reports, damage=changed.damage, recovered=changed.recovered)


def _full_row(feeds: dict) -> dict:
    """A timing input of ``length`` attended tokens: the runtime's dynamic int8 runs each row without its
    padding, so a padded row would time a 3-token input under a 128-token label."""
    return {**feeds, "attention_mask": np.ones_like(feeds["attention_mask"])}


def _change(conversion: Conversion, model: LogitsModel, changed: Changed) -> LogitsModel | None:
    """Apply nonorm/relu; keeps their reports and the damage measured on real sentences, and returns the
    untransformed original (the teacher for recovery) when something changed."""
    names = conversion.plan.opts.changing
    if not names:
        return None
    loaded = conversion.load.loaded
    original = copy.deepcopy(model)
    changed.reports = [OPTS[name].apply(loaded.model, loaded.family) for name in names]
    if all(r.noop for r in changed.reports):
        return None
    changed.damage = _damage(conversion.load.inputs, original, model)
    return original


def _damage(inputs: Inputs, original: LogitsModel, model: LogitsModel) -> verify.Comparison:
    batches = inputs.batches
    return verify.compare(verify.torch_logits(original, batches), verify.torch_logits(model, batches), inputs.masks,
                          inputs.entities)


def _recover(conversion: Conversion, original: LogitsModel, model: LogitsModel, changed: Changed) -> None:
    from ..training import recovery as recovery_job

    load = conversion.load
    start = time.perf_counter()  # no spinner: the training loop draws its own progress
    conversion.note(f"Recovering accuracy by distillation on {conversion.options.recover} "
                    f"({load.recovery.options.budget.describe()})")
    changed.recovered = recovery_job.run(load.recovery, original.model, load.loaded.model, load.loaded.family,
                                         log=conversion.note)
    changed.recovered["transform_damage_before_recovery"] = changed.damage.to_json()
    changed.damage = _damage(load.inputs, original, model)
    conversion.timings["recover"] = time.perf_counter() - start


def _accept(conversion: Conversion, changed: Changed) -> None:
    """Refuse a model nonorm/relu degraded, unless recovery won the accuracy back or the loss is accepted."""
    options, recovered = conversion.options, changed.recovered
    message = damage_message(changed.damage, [r for r in changed.reports if not r.noop], recovered)
    passed = bool(recovered) and -recovered["delta_vs_teacher"] <= options.max_accuracy_drop
    kept = _after_gate(conversion, recovered, passed or options.allow_accuracy_loss)
    if passed:
        conversion.note(message)
        return
    if not options.allow_accuracy_loss:
        if recovered:
            message += f": more than --max-accuracy-drop {options.max_accuracy_drop:g} points"
            fix = kept or "recover longer (--recover-budget), or pass --allow-accuracy-loss to accept it"
        else:
            fix = ("recover it by distillation with --recover TASK (e.g. --recover glue:sst2), or pass "
                   "--allow-accuracy-loss to accept it, or drop nonorm/relu")
        raise AccuracyLossRefused(message + "; refusing to write a silently degraded model", fix)
    conversion.note(message + " (accepted: --allow-accuracy-loss)", warning=True)
    conversion.notes.append(message)


def _after_gate(conversion: Conversion, recovered: dict | None, passed: bool) -> str | None:
    """A refused recovery keeps its best state beside the output: how to continue it (None: nothing kept)."""
    if not recovered:
        return None
    from ..training.recovery_resume import after_gate

    return after_gate(conversion.load.recovery, recovered, passed)


def damage_message(comparison: verify.Comparison, changed: list[TransformReport], recovered: dict | None = None) -> str:
    names = ",".join(r.name for r in changed)
    figures = (f"top-1 agreement with the original {comparison.top1_agreement:.1%}, logit cosine "
               f"{comparison.cosine:.4f}, relative logit drift {comparison.rel_drift:.1%}, max |Δlogit| "
               f"{comparison.max_abs:.3g}")
    if comparison.entity_f1 is not None:  # token agreement is mostly "O" tokens: the entities tell the damage
        figures = (f"entity F1 against the original's {comparison.entities} entities {comparison.entity_f1:.1%}, "
                   + figures)
    if recovered is None:
        return f"{names} changed what the model computes: on real sentences, {figures}"
    metric, scores = recovered["metric"], recovered["dev_scores"]
    noise = recovered.get("dev_noise")
    spread = (f", 95% bootstrap interval {noise['delta_interval'][0]:+.2f} to {noise['delta_interval'][1]:+.2f} "
              f"over {noise['dev_examples']} dev {noise['unit']}" if noise else "")
    return (f"{names} after recovery on {recovered['task']}: dev {metric} {scores['recovered'][metric]:.2f} vs "
            f"teacher {scores['teacher'][metric]:.2f} ({recovered['delta_vs_teacher']:+.2f} points{spread}; without "
            f"recovery {scores['without_recovery'][metric]:.2f}); on real sentences, {figures}")


def _exact(load: LoadResult, model: LogitsModel, name: str) -> TransformReport:
    """An exact rewrite (fold: NoNorm γ/β into neighbouring layers), checked on real and fixed inputs."""
    check = load.inputs.parity + load.inputs.batches[:8]
    expect = verify.torch_logits(model, check)  # before the rewrite
    report = OPTS[name].apply(load.loaded.model, load.loaded.family)
    change = verify.compare(expect, verify.torch_logits(model, check), [b["attention_mask"] for b in check])
    tolerance = verify.fp32_tolerance(expect)
    report.details.append(f"{OPTS[name].compared}: max |Δlogit| {change.max_abs:.3g} (tolerance {tolerance:.3g})")
    if change.max_abs > tolerance:
        raise VerificationError(f"{name} changed the model: max |Δlogit| {change.max_abs:.3g} > {tolerance:.3g}",
                                f"report this as a bug; convert without {name}")
    return report
