"""Stage 1, load: the checkpoint, its lengths and buckets, the verification inputs, and (with
``--recover``) the task data, checked before any slow work."""

from __future__ import annotations

import torch

from .. import loading, verify
from .. import texts as textdata
from ..conversion import Conversion, Encoder, Inputs
from ..errors import ConverterInputError
from ..recipes import Recipe
from ..training_record import task_file
from .base import Stage

DEFAULT_BUCKETS = (32, 64, 128, 256)


class LoadStage(Stage):
    name = "load"

    def run(self, c: Conversion) -> None:
        options = c.options
        with c.step(self.name, "Loading checkpoint"):
            c.loaded = loading.load(options.checkpoint, task=options.task, labels=options.labels,
                                    num_labels=options.num_labels, seed=options.seed)
            torch.set_num_threads(max(1, options.threads))
        for note in c.loaded.notes:
            c.note(note, warning=True, keep=True)
        c.max_length = max_length(c.loaded, options.max_length)
        c.buckets = buckets(options.buckets, c.max_length)
        c.encoder = Encoder(c.loaded.tokenizer, c.loaded.family.input_names, c.verify_length)
        c.inputs = _inputs(c)
        c.recovery = _prepare_recovery(c)


def max_length(loaded: loading.Loaded, requested: int | None) -> int:
    positions = loaded.family.max_positions(loaded.config)
    tokenizer_max = loaded.tokenizer.model_max_length
    natural = min(positions, tokenizer_max) if tokenizer_max and tokenizer_max < 1_000_000 else positions
    if requested is None:
        return natural
    if requested < 8 or requested > positions:
        raise ConverterInputError(f"--max-length {requested} is outside 8..{positions} (the model's position "
                                  "embeddings)", f"choose a value between 8 and {positions}")
    return requested


def buckets(requested: list[int] | None, max_length: int) -> list[int]:
    """TFLite sequence-length buckets: the requested ones, else the defaults up to the max length."""
    if requested:
        too_long = [b for b in requested if b > max_length or b < 2]
        if too_long:
            raise ConverterInputError(f"--buckets {','.join(map(str, too_long))} outside 2..{max_length} (the model's "
                                      "maximum sequence length)", f"use buckets up to {max_length}")
        return sorted(set(requested))
    return [b for b in DEFAULT_BUCKETS if b <= max_length] or [max_length]


def _sorted_by_length(items: list) -> list:
    return sorted(items, key=lambda t: len(t) if isinstance(t, str) else len(t[0]) + len(t[1]))


def _inputs(c: Conversion) -> Inputs:
    data = textdata.data_dir(c.options.data_dir)
    own = task_file(c.loaded.checkpoint, "dev", data)
    texts, source = textdata.default_verify_texts(c.loaded.task, data, own)
    texts = _sorted_by_length(texts[: c.options.verify_samples])
    if source.startswith("built-in"):
        c.notes.append("no data directory found: verification used the built-in English sentences "
                       "(set --data-dir or $POCKETBERT_DATA for the task's dev set)")
    tokenizer = c.loaded.tokenizer
    parity = verify.parity_inputs(c.encoder, texts, max_length=c.verify_length, vocab_size=len(tokenizer),
                                  special_ids=[tokenizer.cls_token_id, tokenizer.sep_token_id])
    return Inputs(texts=texts, source=source, batches=c.encoder.batches(texts), parity=parity,
                  entities=c.entity_view(texts))


def _prepare_recovery(c: Conversion):
    """--recover: read and check the task data, labels and budget before any slow work."""
    options, loaded = c.options, c.loaded
    if not options.recover:
        return None
    if not c.plan.opts.changing:
        raise ConverterInputError("--recover was given but --opt has neither nonorm nor relu: there is nothing to "
                                  "recover", "add nonorm,relu to --opt, or drop --recover")
    if loaded.head_initialized:
        raise ConverterInputError("--recover needs a trained task head to recover towards; this checkpoint's head is "
                                  "fresh",
                                  f"fine-tune it first: python -m converter finetune {options.checkpoint} --task "
                                  f"{options.recover}")
    from ..training import recovery as recovery_job

    settings = dict(options.recover_options)
    settings.setdefault("data_dir", options.data_dir)
    settings.setdefault("budget", recovery_job.DEFAULT_BUDGET)
    if settings.get("qat") is None:
        settings["qat"] = full_integer_planned(c.plan)
    if settings["qat"]:
        c.note("quantization-aware recovery: training through a simulation of the full-integer TFLite export",
               keep=True)
    job = recovery_job.RecoverOptions(task=options.recover, **settings)
    return recovery_job.prepare(job, task_kind=loaded.task, tokenizer=loaded.tokenizer, labels=loaded.labels,
                                input_names=loaded.family.input_names, eval_length=min(512, c.max_length))


def full_integer_planned(plan) -> bool:
    """Recovery trains through the full-integer simulation (QAT) when a tflite:int8-static file is asked
    for by name (``--recipe``, ``--int8 static``/``all``): the simulation is of that export.  ``--int8 auto``
    is not a request for it, so it recovers in float."""
    return any(isinstance(r, Recipe) and r.name == "tflite:int8-static" for r in plan.recipes)
