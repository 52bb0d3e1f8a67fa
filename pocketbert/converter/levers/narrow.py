"""``narrow``: narrower feed-forward blocks, each output projection refitted by least squares.

Two thirds of a BERT block's multiply-adds are its feed-forward block, ``down(act(up(x)))``, and an int4 file
spends most of its time there.  This command keeps ``width`` of each block's hidden units and fits the block's
output projection again so that, on the task's own text, the narrow block reproduces the wide one's output as
closely as least squares can (the "prune, then reconstruct the layer output" of structured-pruning work such as
ZipLM and FLAP, without a search).  Which units: each unit's root-mean-square contribution to the output,
``‖h_i‖ · ‖W_down[:, i]‖`` over the text's real tokens.  The blocks are narrowed in forward order, each measured
on the already narrowed model beneath it, so each refit also corrects what the blocks below it lost.

Refitting is what makes this cheap: the CoNLL-2003 phone model (dev F1 89.06) keeps 88.95 at 1,024 of 1,536
units and 88.15 at 768 before any training, where dropping the same units without it gives 63.37 and 34.17.
``--budget`` then distils the narrow model from the input (or ``--teacher``) on every token; ``int4-tune``
distils it through int4 instead, which is how the phone demo models use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..checkpoints import loading
from ..checkpoints.checkpoint_inputs import refuse_as_output
from ..checks import accuracy_gate
from ..errors import ConverterInputError
from ..families.base import FeedForward
from ..training import checkpoint_job as job
from ..training.distill.pairing import truncated
from ..training.finetune import eval_length
from ..training.loop import Budget, parse_budget
from ..training.teacher import distil_every_token, frozen_teacher
from . import Lever, register

#: ridge added to the refit's normal equations, relative to their mean diagonal: keeps a unit that never fires on
#: the text from making them singular, and moves the fit by far less than int4 rounding does
RIDGE = 1e-4
LOSS = "logit KL (T=1) + every layer's hidden-state MSE at every real token, from the float teacher"


@dataclass
class NarrowOptions(job.CheckpointJobOptions):
    width: int  # hidden units kept in every feed-forward block
    texts: int = 1024  # training texts the unit scores and the refit read
    teacher: str | None = None  # what --budget distils from; None: the input checkpoint as it was
    budget: Budget = field(default_factory=lambda: parse_budget("0steps"))
    lr: float = 5e-5


def narrow_checkpoint(checkpoint: str, task: str, out: Path, options: NarrowOptions, log=print,
                      dev: str | None = None, source_scores: dict | None = None) -> tuple[Path, dict]:
    """Keep ``options.width`` units of every feed-forward block of ``checkpoint``, refit each block's output
    projection on ``task``'s training text, optionally distil, and write the result with its record.  ``dev``: the
    dev file, when ``task`` is a training file; ``source_scores``: the checkpoint's dev scores on it, when known."""
    refuse_as_output(out, source=checkpoint, teacher=options.teacher)
    job.begin(out, options.overwrite, options.threads)
    train_split, dev = job.splits(task, options.data_dir, options.train_limit, dev)
    loaded = loading.load(checkpoint)
    family, model = loaded.family, loaded.model
    blocks = family.feed_forwards(model)
    before = _check_width(blocks, options.width)
    distils = options.budget.steps != 0
    teacher = frozen_teacher(options.teacher or checkpoint, loaded, train_split) if distils else None
    metric, length = train_split.metric, eval_length(loaded)
    scores = {"dev_before": source_scores or job.score(loaded, dev, length)}
    batches = _texts(loaded, train_split, options.texts)
    texts = sum(len(batch["input_ids"]) for batch in batches)
    model.eval()
    for index, block in enumerate(blocks, 1):
        log(f"narrowing feed-forward block {index} of {len(blocks)} ({block.path})")
        narrow_block(block, options.width, gram(model, family.layers(model), block, batches))
    setattr(model.config, family.ffn_width_key, options.width)
    scores["dev_narrowed"] = job.score(loaded, dev, length)
    log(f"{len(blocks)} feed-forward blocks {before} -> {options.width} units wide, output projections refitted "
        f"on {texts} texts: dev {metric} {scores['dev_before'][metric]:.2f} -> {scores['dev_narrowed'][metric]:.2f}")
    run = _distil(loaded, teacher, train_split, options) if teacher is not None else None
    scores["dev_after"] = job.score(loaded, dev, length) if run else scores["dev_narrowed"]
    if run:
        log(f"distilled ({run.steps} steps, {run.seconds:.0f} s): dev {metric} {scores['dev_after'][metric]:.2f}")
    accuracy_gate.check("narrow", metric, scores["dev_before"], scores["dev_after"],
                        allow=options.allow_accuracy_loss, max_drop=options.max_accuracy_drop, log=log)
    report = {"width_before": before, "width_after": options.width, "feed_forward_blocks": len(blocks),
              "texts": texts, "ridge": RIDGE, "teacher": (options.teacher or "the input") if run else None,
              "budget": options.budget.to_json(), "lr": options.lr, "steps": run.steps if run else 0,
              "seconds": round(run.seconds, 1) if run else 0, "loss": LOSS if run else None}
    record = _record(loaded, train_split, dev, {**report, **scores})
    path = job.write(model, loaded.tokenizer, out, overwrite=options.overwrite, record=record,
                     transforms=job.saved_transforms(model.config))
    return path, record


@torch.no_grad()
def gram(model, layers, block: FeedForward, batches: list[dict]) -> torch.Tensor:
    """``Σ [h; 1][h; 1]ᵀ`` over every real token of ``batches``, ``h`` the input of ``block.down`` (float64)."""
    total, mask = None, None

    def collect(_module, inputs):
        nonlocal total
        h = inputs[0][mask].double()
        h = torch.cat([h, h.new_ones(len(h), 1)], 1)
        total = h.T @ h if total is None else total + h.T @ h

    with truncated(model, layers, block.block + 1):  # hooked after: entering it runs a warm-up forward
        hook = block.down.register_forward_pre_hook(collect)
        try:
            for batch in batches:
                mask = batch["attention_mask"].bool()
                model(**batch)
        finally:
            hook.remove()
    return total


@torch.no_grad()
def narrow_block(block: FeedForward, width: int, gram_: torch.Tensor) -> torch.Tensor:
    """Keep the ``width`` units of ``block`` that contribute most to its output (``gram_``: :func:`gram`) and
    refit ``block.down`` on them; returns the kept units' indices."""
    down = block.down
    units = down.in_features
    contribution = gram_.diagonal()[:units].clamp_min(0).sqrt() * down.weight.double().norm(dim=0)
    keep = contribution.topk(width).indices.sort().values
    weight, bias = refit(down.weight, down.bias, gram_, keep)
    _set(block.up, block.up.weight[keep], block.up.bias[keep])
    _set(down, weight, bias)
    return keep


def refit(weight: torch.Tensor, bias: torch.Tensor, gram_: torch.Tensor, keep: torch.Tensor,
          ridge: float = RIDGE) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``W'``, ``b'`` minimising ``Σ ‖W'h_keep + b' − (Wh + b)‖²`` over the tokens ``gram_`` was summed on
    (plus ``ridge`` × the mean diagonal on the diagonal): the normal equations, solved in float64."""
    units = weight.shape[1]
    columns = torch.cat([keep, torch.tensor([units])])  # the kept units and the constant
    full = torch.cat([weight, bias[:, None]], 1).double()
    normal = gram_[columns][:, columns]
    normal = normal + ridge * normal.diagonal().mean() * torch.eye(len(columns), dtype=normal.dtype)
    fitted = torch.linalg.solve(normal, (full @ gram_[:, columns]).T).T
    return fitted[:, :-1].to(weight.dtype), fitted[:, -1].to(bias.dtype)


def _set(linear: torch.nn.Linear, weight: torch.Tensor, bias: torch.Tensor) -> None:
    linear.weight = torch.nn.Parameter(weight.contiguous().clone())
    linear.bias = torch.nn.Parameter(bias.contiguous().clone())
    linear.out_features, linear.in_features = weight.shape


def _check_width(blocks: list[FeedForward], width: int) -> int:
    widths = {block.up.out_features for block in blocks}
    if len(widths) != 1:
        raise ConverterInputError(f"the feed-forward blocks have different widths ({sorted(widths)})",
                                  "narrow a checkpoint whose blocks share one width, as its config says")
    (before,) = widths
    if not 1 <= width < before:
        raise ConverterInputError(f"--ffn-width {width} does not narrow blocks {before} units wide",
                                  f"give --ffn-width from 1 to {before - 1} (e.g. {before // 2})")
    return before


def _texts(loaded, train_split, count: int) -> list[dict]:
    """The first ``count`` training texts, as model inputs (what the unit scores and the refit read)."""
    features = train_split.encode(loaded.tokenizer, 128, loaded.labels)
    batches = []
    for batch in features.batches(32, input_names=loaded.family.input_names):
        batch.pop("index")
        batch.pop("labels", None)
        batches.append(batch)
        if 32 * len(batches) >= count:
            break
    return batches


def _distil(student, teacher, train_split, options: NarrowOptions):
    features = train_split.encode(student.tokenizer, 128, student.labels)
    return distil_every_token(student, teacher, features, budget=options.budget, lr=options.lr,
                              description="distil the narrow model")


def _record(loaded, train_split, dev, report: dict) -> dict:
    record = job.input_record(loaded.checkpoint, "narrow", train_split, dev)
    record["narrow"] = {k: job.rounded(v) if k.startswith("dev_") else v for k, v in report.items()}
    name = f"shipped: feed-forward blocks narrowed to {report['width_after']} units"
    job.record_shipped(record, name + (", distilled" if report["steps"] else ""), job.rounded(report["dev_after"]))
    return record


def _run_lever(step) -> Path:
    # a step of a plan may lose accuracy that a later step wins back: the plan gates its end against the teacher
    options = NarrowOptions(width=step.setting, allow_accuracy_loss=True, threads=step.threads,
                            train_limit=step.train_limit, data_dir=step.data_dir, overwrite=True)
    path, _ = narrow_checkpoint(step.source, step.task, step.out, options, log=step.log, dev=step.dev,
                                source_scores=step.source_scores)
    return path


def _choose(shape, goal):
    """The widest blocks, in whole tiles, down to a quarter of the width, that reach the target; half the width (the
    phone demos' 768 of 1,536, nearly free after the refit) when none does: fewer blocks must do the rest."""
    width = shape.ffn_width
    if goal.reached(shape) or not width:
        return None
    step = 128 if width >= 512 else 8
    for units in range((width - 1) // step * step, max(step, width // 4) - 1, -step):
        if goal.reached(shape.narrowed(units)):
            return units
    return max(step, width // 2 // step * step)


def _gentler(shape, goal, units):
    """No narrowing, then the wider blocks, widest first: when fewer blocks must do the rest anyway, the blocks they
    keep stay as wide as the target allows (CoNLL-2003 at 40% of the multiply-adds: 3 blocks of 1,024 units rather
    than of the 768 that half the width gives)."""
    width = shape.ffn_width
    step = 128 if width >= 512 else 8
    return (None, *range((width - 1) // step * step, units, -step))


register(Lever("narrow", "every feed-forward block's hidden units, each output projection refitted by least squares",
               order=30, trains=False, records_score=True, setting="units",
               reshape=lambda shape, width: shape.narrowed(width), choose=_choose, gentler=_gentler, run=_run_lever))
