"""Stage 2, transform: the ``--opt`` rewrites of the PyTorch model, in registry order.

Function-changing transforms (nonorm, relu) are measured against the untransformed model on real
sentences; the damage is recovered by distillation (``--recover``), accepted (``--allow-accuracy-loss``)
or refused.  Exact rewrites (fold) are checked to change nothing.  The stage ends with the reference
logits every artifact is verified against and the export spec the backends read.
"""

from __future__ import annotations

import copy
import time

import numpy as np

from .. import backends, verify
from ..conversion import Conversion
from ..errors import AccuracyLossRefused, VerificationError
from ..logits_model import LogitsModel
from ..transforms import OPTS, TransformReport
from .base import Stage

#: the latency figure's sequence length (capped at what every artifact takes)
LATENCY_SEQ = 128


class TransformStage(Stage):
    name = "transform"

    def run(self, c: Conversion) -> None:
        c.model = LogitsModel(c.loaded.model, list(c.encoder.input_names)).eval()
        with c.step(self.name, "Applying optimisations"):
            original = _change(c)
        if original is not None:
            if c.recovery is not None:
                _recover(c, original)
            del original
            _accept(c)
        for name in c.plan.opts.exact:
            with c.step(self.name, OPTS[name].action):
                c.reports.append(_exact(c, name))
        c.parity_ref = verify.torch_logits(c.model, c.inputs.parity)
        c.verify_ref = verify.torch_logits(c.model, c.inputs.batches)
        c.spec = backends.ExportSpec(model=c.model, family=c.loaded.family, input_names=list(c.encoder.input_names),
                                     output_name="logits", max_length=c.max_length, make_batches=c.encoder.batches,
                                     threads=c.options.threads, buckets=c.buckets)
        c.latency_feeds = _full_row(c.encoder(["x"], pad_to=min(LATENCY_SEQ, c.verify_length)))


def _full_row(feeds: dict) -> dict:
    """A timing input of ``length`` attended tokens: the runtime's dynamic int8 runs each row without its
    padding, so a padded row would time a 3-token input under a 128-token label."""
    return {**feeds, "attention_mask": np.ones_like(feeds["attention_mask"])}


def _change(c: Conversion) -> LogitsModel | None:
    """Apply nonorm/relu; keeps their reports and the damage measured on real sentences, and returns the
    untransformed original (the teacher for recovery) when something changed."""
    changing = c.plan.opts.changing
    if not changing:
        return None
    original = copy.deepcopy(c.model)
    c.reports = [OPTS[name].apply(c.loaded.model, c.loaded.family) for name in changing]
    if all(r.noop for r in c.reports):
        return None
    c.damage = _damage(c, original)
    return original


def _damage(c: Conversion, original: LogitsModel) -> verify.Comparison:
    batches = c.inputs.batches
    return verify.compare(verify.torch_logits(original, batches), verify.torch_logits(c.model, batches), c.inputs.masks,
                          c.inputs.entities)


def _recover(c: Conversion, original: LogitsModel) -> None:
    from ..training import recovery as recovery_job

    start = time.perf_counter()  # no spinner: the training loop draws its own progress
    c.note(f"Recovering accuracy by distillation on {c.options.recover} ({c.recovery.options.budget.describe()})")
    c.recovered = recovery_job.run(c.recovery, original.model, c.loaded.model, c.loaded.family, log=c.note)
    c.recovered["transform_damage_before_recovery"] = c.damage.to_json()
    c.damage = _damage(c, original)
    c.timings["recover"] = time.perf_counter() - start


def _accept(c: Conversion) -> None:
    """Refuse a model nonorm/relu degraded, unless recovery won the accuracy back or the loss is accepted."""
    options, recovered = c.options, c.recovered
    message = damage_message(c.damage, [r for r in c.reports if not r.noop], recovered)
    if recovered and -recovered["delta_vs_teacher"] <= options.max_accuracy_drop:
        c.note(message)
        return
    if not options.allow_accuracy_loss:
        if recovered:
            message += f": more than --max-accuracy-drop {options.max_accuracy_drop:g} points"
            fix = "recover longer (--recover-budget), or pass --allow-accuracy-loss to accept it"
        else:
            fix = ("recover it by distillation with --recover TASK (e.g. --recover glue:sst2), or pass "
                   "--allow-accuracy-loss to accept it, or drop nonorm/relu")
        raise AccuracyLossRefused(message + "; refusing to write a silently degraded model", fix)
    c.note(message + " (accepted: --allow-accuracy-loss)", warning=True)
    c.notes.append(message)


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
    return (f"{names} after recovery on {recovered['task']}: dev {metric} {scores['recovered'][metric]:.2f} vs "
            f"teacher {scores['teacher'][metric]:.2f} ({recovered['delta_vs_teacher']:+.2f} points; without "
            f"recovery {scores['without_recovery'][metric]:.2f}); on real sentences, {figures}")


def _exact(c: Conversion, name: str) -> TransformReport:
    """An exact rewrite (fold: NoNorm γ/β into neighbouring layers), checked on real and fixed inputs."""
    check = c.inputs.parity + c.inputs.batches[:8]
    expect = verify.torch_logits(c.model, check)  # before the rewrite
    report = OPTS[name].apply(c.loaded.model, c.loaded.family)
    change = verify.compare(expect, verify.torch_logits(c.model, check), [b["attention_mask"] for b in check])
    tolerance = verify.fp32_tolerance(expect)
    report.details.append(f"{OPTS[name].compared}: max |Δlogit| {change.max_abs:.3g} (tolerance {tolerance:.3g})")
    if change.max_abs > tolerance:
        raise VerificationError(f"{name} changed the model: max |Δlogit| {change.max_abs:.3g} > {tolerance:.3g}",
                                f"report this as a bug; convert without {name}")
    return report
