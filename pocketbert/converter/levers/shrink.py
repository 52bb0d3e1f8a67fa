"""Depth shrinking: a student with fewer transformer blocks than its checkpoint, distilled from it (or from
the model it was made from).

The student is the checkpoint itself with M of its N blocks kept (embeddings, task head and any
nonorm/relu structure unchanged), then trained to match the N-block model with
:func:`.distill.recover`: logit distillation, hidden-state MSE and attention KL on every student
layer (TinyBERT's task-specific distillation, without its width projection: the widths are equal).

Which blocks: :func:`kept_blocks` keeps block ``m·N//M − 1`` for student block m (6 → 4: blocks
0, 2, 3, 5; 6 → 5: 0, 1, 2, 3, 5).  :func:`.distill.pairing.pair` trains student block m to reproduce
the teacher's hidden state ``m·N//M`` (TinyBERT's uniform map), which is exactly that block's output,
so each kept block starts as the teacher block whose output it must learn, and the last block (whose
output the task head reads) is always the teacher's last.  DistilBERT initialises its 6-layer student
from every other block of BERT-base likewise, first and last included.  Measured on the SST-2 demo
model (6 → 4, dev accuracy before any distillation; the 6-block parent 88.99): this choice [0, 2, 3, 5]
84.98, [1, 3, 4, 5] 80.28, [0, 1, 4, 5] 78.78, the top four [2, 3, 4, 5] 78.56, the bottom four
[0, 1, 2, 3] 49.20.

What it is distilled from: the checkpoint itself, or ``teacher`` (the one command's: the model the checkpoint was
made from by levers that train nothing, such as a narrowing).  TinyBERT distils its student from the full teacher, and
so does this: a student distilled from its narrowed parent learns at best what the parent kept, one distilled from the
teacher can win back what the narrowing lost.  A teacher whose vocabulary the checkpoint's was trimmed from reads the
student's pieces (:func:`..training.teacher.frozen_teacher`).

The record judges the result against the *original* teacher: ``dev_scores.teacher`` is the input
checkpoint's own ``dev_scores.teacher`` when its training.json has one (a recovered model's fine-tuned
teacher), so the accuracy gates (``pocketbert-bench gates``) compare the shrunk model with that
teacher and not with its N-block parent; the parent's score is kept as ``dev_scores.parent``.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from ..checkpoints import loading
from ..checkpoints.checkpoint_inputs import refuse_as_output
from ..checks import accuracy_gate
from ..errors import ConverterInputError
from ..training import checkpoint_job as job
from ..training import loop
from ..training.evaluate import evaluate
from ..training.finetune import eval_length, source_name
from ..training.recovery import RecoverOptions, prepare, run
from ..training.teacher import frozen_teacher
from ..weights.factored_table import whole_table
from ..weights.shared_table import KEY as SHARED_TABLE_KEY
from ..weights.shared_table import digest
from . import Lever, register


def kept_blocks(total: int, keep: int) -> list[int]:
    """The ``keep`` of ``total`` blocks a student keeps: each student block starts as the teacher block
    whose output the TinyBERT layer map trains it to reproduce (the last block always kept)."""
    if not 1 <= keep < total:
        raise ConverterInputError(f"--layers {keep} is not between 1 and {total - 1}: the checkpoint has {total} "
                                  "blocks and the student must have fewer", f"give --layers from 1 to {total - 1}")
    return [m * total // keep - 1 for m in range(1, keep + 1)]


def drop_blocks(model, family, keep: list[int]) -> None:
    """Keep only the blocks ``keep`` of ``model`` (in place, in order) and record the new depth in its config."""
    layers = family.layers(model)
    kept = [layers[i] for i in keep]
    del layers[:]
    layers.extend(kept)
    for index, block in enumerate(kept):
        for module in block.modules():
            if hasattr(module, "layer_idx"):  # attention modules index caches by it: keep it consecutive
                module.layer_idx = index
    model.config.num_hidden_layers = len(keep)


def shrink_checkpoint(checkpoint: str, task: str, layers: int, out: Path, *, budget: loop.Budget | str,
                      lr: float = 1e-4, threads: int | None = None, freeze_word_embeddings: bool = False,
                      data_dir=None, train_limit: int | None = None, dev_limit: int | None = None,
                      batch_size: int = 32, seed: int = 0, overwrite: bool = False, progress: bool = True,
                      allow_accuracy_loss: bool = False, max_accuracy_drop: float = accuracy_gate.MAX_DROP,
                      dev: str | None = None, augment: int = 0, continue_from: str | None = None,
                      teacher: str | None = None, parent_scores: dict | None = None,
                      log=print) -> tuple[Path, dict]:
    """``pocketbert-convert shrink``: keep ``layers`` of the checkpoint's blocks, distil them from the
    checkpoint (or ``teacher``, of its depth and labels) on ``task``'s training text, and write the result with its
    training record.  ``continue_from``: a student an earlier shrink of the same checkpoint to ``layers`` wrote,
    distilled further instead of cut again (a candidate of the checks as it came, so continuing never ships worse).
    ``parent_scores``: the checkpoint's dev scores, when known (scored otherwise, if it is not the teacher)."""
    refuse_as_output(out, source=checkpoint, teacher=teacher)
    job.begin(out, overwrite, threads)  # before any training
    budget = loop.parse_budget(budget) if isinstance(budget, str) else budget
    parent, student = loading.load(checkpoint), loading.load(checkpoint)
    if parent.head_initialized:
        raise ConverterInputError(f"{checkpoint!r} has no trained task head: there is nothing to distil from",
                                  f"fine-tune it first: pocketbert-convert finetune {checkpoint} --task {task}")
    total = parent.family.num_layers(parent.config)
    keep = kept_blocks(total, layers)
    options = RecoverOptions(task=task, budget=budget, lr=lr, init="none", data_dir=data_dir, train_limit=train_limit,
                             dev_limit=dev_limit, batch_size=batch_size, seed=seed, progress=progress,
                             freeze_word_embeddings=freeze_word_embeddings, dev=dev, augment=augment,
                             continue_from=continue_from)
    prepared = prepare(options, task_kind=parent.task, tokenizer=parent.tokenizer, labels=parent.labels,
                       input_names=parent.family.input_names, eval_length=eval_length(parent),
                       embeddings=parent.model.get_input_embeddings())
    teacher = None if teacher is None or _same_checkpoint(teacher, checkpoint) else teacher
    mentor = frozen_teacher(teacher, parent, prepared.train_split) if teacher else parent.model
    if teacher:  # the parent scored on the dev features the teacher and the student are scored on
        parent_scores = parent_scores or evaluate(parent.model, prepared.dev_features, input_names=prepared.input_names)
        log(f"distilling from {teacher}; the blocks kept are {checkpoint}'s")
    if continue_from:
        student = _earlier_student(continue_from, layers)
        log(f"{total} -> {layers} blocks: continuing the student of an earlier run ({continue_from})")
    else:
        drop_blocks(student.model, student.family, keep)
        log(f"{total} -> {layers} blocks: keeping {keep}")
    # init=None: the kept blocks already carry the checkpoint's own (trained) NoNorms, nothing to fit
    record = run(prepared, mentor, student.model, parent.family, log=log)
    record = _judged_against_the_original(record, _input_record(parent.checkpoint), parent, log,
                                          teacher=teacher, parent_scores=parent_scores if teacher else None)
    scores = record["dev_scores"]
    accuracy_gate.check("shrink", record["metric"], scores["parent"], scores["recovered"], allow=allow_accuracy_loss,
                        max_drop=max_accuracy_drop, log=log)
    record["recipe"].update(layers=layers, kept_blocks=keep)
    record["shrink"] = {"layers_before": total, "layers_after": layers, "kept_blocks": keep,
                        "layer_map": [m * total // layers for m in range(layers + 1)]}
    reference = _base_table(parent, student.model) if freeze_word_embeddings else None
    path = job.write(student.model, parent.tokenizer, out, overwrite=overwrite, record=record,
                     transforms=job.saved_transforms(parent.config), base_embeddings=reference)
    return path, record


def _same_checkpoint(spec: str, other: str) -> bool:
    """Whether two specs (paths or built-in names, spelled either way) name the same folder: loaded once then."""
    return loading.resolve(spec)[0].resolve() == loading.resolve(other)[0].resolve()


def _earlier_student(path: str, layers: int):
    student = loading.load(path)
    blocks = student.family.num_layers(student.config)
    if blocks != layers:
        raise ConverterInputError(f"{path!r} has {blocks} blocks, not the {layers} to continue",
                                  "continue a student shrunk to the same number of blocks")
    return student


def _input_record(checkpoint: Path) -> dict:
    path = Path(checkpoint) / "training.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def _judged_against_the_original(record: dict, parent: dict, loaded, log, *, teacher: str | None = None,
                                 parent_scores: dict | None = None) -> dict:
    """The record of the shrunk model with the original teacher's score as ``dev_scores.teacher`` (when the
    input's record has one, for the same task; else the score of the model it was distilled from), the parent's
    beside it, and the parent's history kept.  ``teacher``/``parent_scores``: a teacher other than the parent, and
    the parent's scores then."""
    metric, scores = record["metric"], record["dev_scores"]
    measured = scores["teacher"]  # what recovery.run measured: the model distilled from
    parent_scores = parent_scores or measured
    original = (parent.get("dev_scores") or {}).get("teacher") if parent.get("task") == record["task"] else None
    if not (original and metric in original):
        original = None  # the input is its own teacher (a fine-tuned model)
    judged = original or measured
    scores.update(teacher=judged, parent=parent_scores)
    name = source_name(loaded)
    record.update(kind="shrink", parent=name, base_checkpoint=name, distilled_from=teacher or name,
                  teacher=parent.get("teacher", teacher or name) if original else (teacher or name),
                  delta_vs_teacher=round(scores["recovered"][metric] - judged[metric], 3),
                  delta_without_recovery=round(scores["without_recovery"][metric] - judged[metric], 3),
                  history={k: v for k, v in parent.items() if k != "files"} or None,
                  training={"steps": record["distillation"]["steps"], "seconds": record["distillation"]["seconds"],
                            "stopped_by": "budget"})
    if job.saved_transforms(loaded.config):
        record["transforms"] = job.saved_transforms(loaded.config)
    n = loaded.family.num_layers(loaded.config)
    rows = [{"name": f"teacher ({record['teacher']})", "scores": judged}]
    if original or teacher:
        rows.append({"name": f"parent, {n} blocks ({name})", "scores": parent_scores})
    rows += [{"name": "fewer blocks, before distillation", "scores": scores["without_recovery"]},
             {"name": "fewer blocks, distilled (this model)", "scores": scores["recovered"]}]
    record["comparison"] = {"metrics": list(judged), "rows": rows}
    log(f"dev {metric}: teacher {judged[metric]:.2f}, parent ({n} blocks) {parent_scores[metric]:.2f}, "
        f"before distillation {scores['without_recovery'][metric]:.2f}, distilled {scores['recovered'][metric]:.2f} "
        f"({record['delta_vs_teacher']:+.2f} vs the teacher)")
    return record


def _base_table(loaded, student) -> dict | None:
    """The input's base-embeddings reference when the (frozen) table is still exactly that base's: then the
    result ships without the table as its parent did."""
    reference = (getattr(loaded.config, loading.SAVED_TRANSFORMS_KEY, None) or {}).get(SHARED_TABLE_KEY)
    if not reference:
        return None
    with torch.no_grad():
        same = digest(whole_table(student, "shrink --freeze-word-embeddings")) == reference["sha256"]
    return reference if same else None


def _run_lever(step) -> Path:
    path, _ = shrink_checkpoint(step.source, step.task, step.setting, step.out, budget=step.budget,
                                allow_accuracy_loss=True,  # the plan gates its end against the teacher
                                teacher=step.teacher, parent_scores=step.source_scores,
                                threads=step.threads, data_dir=step.data_dir, train_limit=step.train_limit,
                                overwrite=True, progress=False, dev=step.dev, augment=step.augment,
                                continue_from=step.resume_from, log=step.log)
    return path


def _choose(shape, goal):
    """The most blocks that reach the target; None when width was enough, or when even one block is not (the plan
    then says it cannot reach the target)."""
    if goal.reached(shape):
        return None
    return next((layers for layers in range(shape.layers - 1, 0, -1) if goal.reached(shape.keeping(layers))), None)


register(Lever("shrink", "the transformer blocks: fewer, distilled from the teacher's (TinyBERT's layer map)",
               order=40, trains=True, setting="blocks", budget_weight=15, new_teacher=True, regains=True,
               continues=True,
               reshape=lambda shape, layers: shape.keeping(layers),
               choose=_choose, run=_run_lever))
