"""``factor-embeddings``: a checkpoint whose word-embedding table is a narrow table and a projection.

The table of a small BERT is the bulk of a phone-sized file (converter.weights.factored_table).  This command
optionally trims the vocabulary first (``--vocab-size``: levers.vocab_trim, exact on text made of kept pieces),
factors the table at ``--rank`` from the row-weighted SVD (each row weighted by how often the task's training
text uses its piece), then distils the factored model on that text from the same model with its table whole
(trimmed, if asked: trimming is exact on text made of kept pieces, so teacher and student read the same pieces),
matching the logits and every layer's hidden states at every real token, and training only the two factors.
Every other weight stays exactly the checkpoint's, so ``--share-body`` can store the factors alone and take the
rest from the checkpoint at load (converter.weights.shared_body).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

import torch

from ..checks import accuracy_gate
from ..checkpoints import loading
from ..weights import shared_body
from ..checkpoints.checkpoint_inputs import refuse_as_output, vocabulary_size
from ..errors import ConverterInputError
from ..weights.factored_table import factor
from ..training import checkpoint_job as job
from ..training.evaluate import evaluate
from ..training.finetune import eval_length
from ..training.loop import TrainLog, parse_budget, weights_copy
from . import Lever, budget_text, register
from ..training.teacher import distil_every_token
from .vocab_trim import piece_counts, trim

#: what the re-tuning minimises, for records and model cards
LOSS = ("logit KL (T=1) + every layer's hidden-state MSE at every real token, from the same model with its table "
        "whole; only the two factors trained")


@dataclass
class FactorOptions(job.CheckpointJobOptions):
    rank: int
    vocab_size: int | None = None  # trim the vocabulary to this many pieces first
    retune: str | None = "10m"  # distillation budget for the factors; None or "0steps": the SVD alone
    lr: float = 1e-3  # the factors start from an SVD and are new parameters: a larger step than fine-tuning's
    share_body: bool = False  # store the factors only; the loader takes the rest from the checkpoint
    fp16: bool = False


def factor_checkpoint(checkpoint: str, task: str, out: Path, options: FactorOptions, log=print,
                      dev: str | None = None, source_scores: dict | None = None) -> tuple[Path, dict]:
    """Trim (optionally), factor and re-tune ``checkpoint``'s word embeddings; write the checkpoint.  ``dev``: the dev
    file, when ``task`` is a training file; ``source_scores``: the checkpoint's dev scores on it, when known."""
    refuse_as_output(out, source=checkpoint)
    if options.vocab_size:
        check_vocab_size(checkpoint, options.vocab_size)
    job.begin(out, options.overwrite, options.threads)
    budget = parse_budget(options.retune) if options.retune else None
    if budget is not None and budget.steps == 0:
        budget = None
    train, dev = job.splits(task, options.data_dir, options.train_limit, dev)
    student = loading.load(checkpoint)
    metric, length = train.metric, eval_length(student)
    scores = {"dev_before": source_scores or _score(student, student.tokenizer, dev, length)}
    report, tokenizer = {}, student.tokenizer
    if options.vocab_size:
        tokenizer, report["vocab_trim"] = trim(student.model, student.tokenizer, train.texts, options.vocab_size,
                                               check_texts=dev.texts)
    whole = copy.deepcopy(student.model) if budget else None  # the teacher: trimmed (exact on its text), not factored
    report["weighted_relative_error"] = factor(student.model, options.rank,
                                               _row_weights(student.model, tokenizer, train.texts))
    scores["dev_factored"] = after = _score(student, tokenizer, dev, length)
    log(f"word embeddings {'trimmed to ' + str(options.vocab_size) + ' pieces and ' if options.vocab_size else ''}"
        f"factored at rank {options.rank} (weighted relative error {report['weighted_relative_error']:.3f}): dev "
        f"{metric} {scores['dev_before'][metric]:.2f} -> {after[metric]:.2f}")
    if budget:
        factored = weights_copy(student.model.get_input_embeddings())
        run = _retune(whole, student, train.encode(tokenizer, 128, student.labels), budget=budget, lr=options.lr)
        report["retune"] = {"budget": budget.to_json(), "lr": options.lr, "steps": run.steps,
                            "seconds": round(run.seconds, 1), "loss": LOSS}
        after = _score(student, tokenizer, dev, length)
        log(f"factors re-tuned by distillation ({run.steps} steps, {run.seconds:.0f} s): dev {metric} "
            f"{scores['dev_factored'][metric]:.2f} -> {after[metric]:.2f}")
        if after[metric] < scores["dev_factored"][metric]:  # the re-tuning lost on the dev set: the SVD's factors ship
            student.model.get_input_embeddings().load_state_dict(factored)
            after = report["retune"]["shipped"] = scores["dev_factored"]
            log(f"dev {metric}: the factors as the SVD gave them score higher; they ship")
    if options.fp16:  # a shared body is the source's, bit for bit: only the factors are rounded
        job.round_to_fp16(student.model, keep=lambda name: options.share_body and not shared_body.is_own_key(name))
        after = _score(student, tokenizer, dev, length)
        log(f"dev {metric} with the weights rounded to float16: {after[metric]:.2f}")
    accuracy_gate.check("factor-embeddings", metric, scores["dev_before"], after, allow=options.allow_accuracy_loss,
                        max_drop=options.max_accuracy_drop, log=log)
    body = shared_body.reference(student.model, checkpoint) if options.share_body else None
    record = _record(student, train, dev, options=options,
                     report={**report, **scores, "dev_after": after, "base_weights": body})
    path = job.write(student.model, tokenizer, out, overwrite=options.overwrite, record=record, fp16=options.fp16,
                     transforms=job.saved_transforms(student.model.config), base_weights=body)
    return path, record


def check_vocab_size(checkpoint: str, size: int) -> None:
    """``--vocab-size`` must trim: checked from config.json before the model is loaded or anything trained."""
    rows = vocabulary_size(checkpoint)
    if rows is not None and size >= rows:
        raise ConverterInputError(f"--vocab-size {size} is not smaller than the vocabulary ({rows} pieces), so "
                                  "there is nothing to trim", f"give --vocab-size below {rows}, or leave it out to "
                                  "keep the whole vocabulary")


def _record(student, train, dev, *, options: FactorOptions, report: dict) -> dict:
    """The input's training record, extended with what this command did and the shipped dev scores."""
    record = job.input_record(student.checkpoint, "factor-embeddings", train, dev)
    record["factored_embeddings"] = {
        "rank": options.rank, "rows": student.model.get_input_embeddings().num_embeddings, "texts": train.name,
        "fp16": options.fp16, "retune": None,
        **{k: job.rounded(v) if k.startswith("dev_") else v for k, v in report.items()}}
    record["factored_embeddings"]["weighted_relative_error"] = round(report["weighted_relative_error"], 5)
    retune = report.get("retune") or {}
    record["training"] = {"steps": retune.get("steps", 0), "seconds": retune.get("seconds", 0),
                          "stopped_by": "budget" if retune else "n/a"}
    name = (f"shipped: word embeddings factored at rank {options.rank}" + (", re-tuned" if report.get("retune") else "")
            + (", fp16" if options.fp16 else ""))
    job.record_shipped(record, name, job.rounded(report["dev_after"]))
    return record


def _score(loaded, tokenizer, dev, length: int) -> dict[str, float]:
    features = dev.encode(tokenizer, length, loaded.labels)
    return evaluate(loaded.model, features, input_names=loaded.family.input_names)


def _row_weights(model, tokenizer, texts) -> torch.Tensor:
    """1 + how often the task's text uses each piece: the SVD is best where the text is."""
    weights = torch.ones(model.get_input_embeddings().weight.shape[0])
    for piece, count in piece_counts(tokenizer, texts).items():
        weights[piece] += count
    return weights


def _retune(teacher, student, features, *, budget, lr: float) -> TrainLog:
    """Distil the two factors (nothing else) from ``teacher``, the same model with its table whole: both read the
    same pieces, so every real token's hidden state at every layer is a target, and the logits."""
    teacher.eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    factors = list(student.model.get_input_embeddings().parameters())
    return distil_every_token(student, teacher, features, params=factors, budget=budget, lr=lr,
                              description="re-tune the factored word embeddings")


def retune_further(checkpoint: str, whole: str, task: str, out: Path, options: FactorOptions, log=print,
                   dev: str | None = None, scores: dict | None = None) -> Path:
    """Continue re-tuning the factors of ``checkpoint`` (which this command made from ``whole``, the teacher of
    its re-tuning) for ``options.retune`` more.  ``scores``: its dev scores, when known.  The state that scores
    higher on the dev set ships: continuing never ships worse than where it started."""
    refuse_as_output(out, source=checkpoint, teacher=whole)
    job.begin(out, options.overwrite, options.threads)
    budget = parse_budget(options.retune)
    train, dev = job.splits(task, options.data_dir, options.train_limit, dev)
    student, teacher = loading.load(checkpoint), loading.load(whole)
    if student.model.get_input_embeddings().num_embeddings != teacher.model.get_input_embeddings().num_embeddings:
        raise ConverterInputError(f"{checkpoint} was not factored from {whole}: their vocabularies differ",
                                  "factor the table again from the start")
    metric, length = train.metric, eval_length(student)
    before = scores or _score(student, student.tokenizer, dev, length)
    start = weights_copy(student.model)
    run = _retune(teacher.model, student, train.encode(student.tokenizer, 128, student.labels), budget=budget,
                  lr=options.lr)
    after = _score(student, student.tokenizer, dev, length)
    shipped = after if after[metric] >= before[metric] else before
    log(f"factors re-tuned further ({run.steps} steps, {run.seconds:.0f} s): dev {metric} {before[metric]:.2f} -> "
        f"{after[metric]:.2f}" + ("" if shipped is after else f"; the state it started from ({before[metric]:.2f}) "
                                  "ships"))
    if shipped is before:
        student.model.load_state_dict(start)
    record = job.input_record(student.checkpoint, "factor-embeddings", train, dev)
    retuned = (record.get("factored_embeddings") or {}).setdefault("further", [])
    retuned.append({"budget": budget.to_json(), "steps": run.steps, "seconds": round(run.seconds, 1),
                    "dev_before": job.rounded(before), "dev_after": job.rounded(after)})
    record["training"] = {"steps": run.steps, "seconds": round(run.seconds, 1), "stopped_by": "budget"}
    job.record_shipped(record, "shipped: word embeddings factored, re-tuned further", job.rounded(shipped))
    return job.write(student.model, student.tokenizer, out, overwrite=options.overwrite, record=record,
                     transforms=job.saved_transforms(student.model.config))


def _run_lever(step) -> Path:
    options = FactorOptions(rank=step.setting, allow_accuracy_loss=True, retune=budget_text(step.budget),
                            threads=step.threads, train_limit=step.train_limit, data_dir=step.data_dir, overwrite=True)
    if step.resume_from:
        return retune_further(step.resume_from, whole=step.source, task=step.task, out=step.out, options=options,
                              log=step.log, dev=step.dev, scores=step.resume_scores)
    path, _ = factor_checkpoint(step.source, step.task, step.out, options, log=step.log, dev=step.dev,
                                source_scores=step.source_scores)
    return path


def _choose(shape, goal):
    """The largest rank up to 5/12 of the table's width (the SST-2 demo's 160 of 384, which kept the teacher's
    score after 8 minutes of re-tuning) whose file fits; that one when none does (the levers after it must then)."""
    if goal.small_enough(shape) or shape.rank:
        return None
    step, top = _ranks(shape)
    if top < step:
        return None
    return next((rank for rank in range(top, 0, -step) if goal.small_enough(shape.factored(rank))), top)


def _ranks(shape) -> tuple[int, int]:
    """The step between the ranks tried and the largest one (5/12 of the table's width, in whole steps)."""
    step = 32 if shape.table_width >= 192 else 8
    return step, shape.table_width * 5 // 12 // step * step


def _gentler(shape, goal, rank):
    """No factoring, then the larger ranks up to 3/4 of the width: when the levers after it (narrower blocks for
    speed) free room, the table keeps more of itself (MRPC at 8 MB: rank 96 alone, no factoring with the narrowing
    the plan makes anyway)."""
    step, _ = _ranks(shape)
    return (None, *range(shape.table_width * 3 // 4 // step * step, rank, -step))


register(Lever("factor-embeddings", "the word table: a narrow table and a projection, the factors re-tuned by "
               "distillation", order=20, trains=True, records_score=True, continues=True, setting="rank",
               budget_weight=8,
               reshape=lambda shape, rank: shape.factored(rank), choose=_choose, gentler=_gentler, run=_run_lever))
