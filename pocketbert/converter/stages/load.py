"""Stage 1, load: the checkpoint, its lengths and buckets, the verification inputs, and (with
``--recover``) the task data, checked before any slow work."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import torch

from ..backends.recipes import Recipe
from ..checkpoints import loading
from ..checkpoints.training_record import task_file
from ..checks import verify
from ..conversion import Conversion, Encoder, Inputs, LoadResult, verify_length
from ..errors import ConverterInputError
from ..inputs import texts as textdata
from .base import Stage

if TYPE_CHECKING:
    from ..training.recovery import PreparedRecovery

DEFAULT_BUCKETS = (32, 64, 128, 256)


class LoadStage(Stage):
    name = "load"
    reads = ("options", "plan")
    produces = ("load",)

    def run(self, conversion: Conversion) -> None:
        options = conversion.options
        with conversion.step(self.name, "Loading checkpoint"):
            loaded = loading.load(options.checkpoint, task=options.task, labels=options.labels,
                                  num_labels=options.num_labels, seed=options.seed)
            torch.set_num_threads(max(1, options.threads))
        for note in loaded.notes:
            conversion.note(note, warning=True, keep=True)
        with conversion.step(self.name, "Reading the verification sentences"):
            longest = max_length(loaded, options.max_length)
            lengths = buckets(options.buckets, longest)
            length = verify_length(longest, lengths, conversion.plan)
            encoder = Encoder(loaded.tokenizer, loaded.family.input_names, length,
                              entity_labels=loaded.labels if loaded.task == "ner" else None)
            inputs = _inputs(conversion, loaded, encoder)
        result = LoadResult(loaded=loaded, max_length=longest, buckets=lengths, verify_length=length,
                            encoder=encoder, inputs=inputs)
        if options.recover:
            with conversion.step(self.name, f"Reading the recovery data ({options.recover})"):
                result.recovery = _prepare_recovery(conversion, loaded, longest)
        conversion.load = result


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


def _inputs(conversion: Conversion, loaded: loading.Loaded, encoder: Encoder) -> Inputs:
    options = conversion.options
    data = textdata.data_dir(options.data_dir)
    own = task_file(loaded.checkpoint, "dev", data)
    texts, source = textdata.default_verify_texts(loaded.task, data, own)
    texts = _sorted_by_length(texts[: options.verify_samples])
    if source.startswith("built-in"):
        conversion.note(_builtin_text_note(conversion.plan, data, loaded.task), warning=True, keep=True)
    tokenizer = loaded.tokenizer
    parity = verify.parity_inputs(encoder, texts, max_length=encoder.max_length, vocab_size=len(tokenizer),
                                  special_ids=[tokenizer.cls_token_id, tokenizer.sep_token_id])
    return Inputs(texts=texts, source=source, batches=encoder.batches(texts), parity=parity,
                  entities=encoder.entity_view(texts), data_dir=data, dev_file=own)


def _builtin_text_note(plan, data: Path | None, task: str) -> str:
    """What fell back to the built-in sentences when no task data was found: said, not only recorded, since int8
    files calibrated on generic text lose accuracy a user would otherwise blame on the model."""
    missing = "no data directory found" if data is None else f"{data} has no {textdata.DEFAULT_VERIFY[task]}"
    calibrated = plan.calibration_texts is not None and plan.calibration_source is None
    uses = "verification and int8 calibration use" if calibrated else "verification uses"
    return (f"{missing}: {uses} the built-in English sentences (set --data-dir or $POCKETBERT_DATA for the task's "
            "own text)")


def _prepare_recovery(conversion: Conversion, loaded: loading.Loaded, longest: int) -> PreparedRecovery:
    """--recover: read and check the task data, labels and budget before any slow work."""
    options = conversion.options
    if not conversion.plan.opts.changing:
        raise ConverterInputError("--recover was given but --opt has neither nonorm nor relu: there is nothing to "
                                  "recover", "add nonorm,relu to --opt, or drop --recover")
    if loaded.head_initialized:
        raise ConverterInputError("--recover needs a trained task head to recover towards; this checkpoint's head is "
                                  "fresh",
                                  f"fine-tune it first: pocketbert-convert finetune {options.checkpoint} --task "
                                  f"{options.recover}")
    from ..training import recovery as recovery_job

    settings = dict(options.recover_options)
    settings.setdefault("data_dir", options.data_dir)
    settings.setdefault("budget", recovery_job.DEFAULT_BUDGET)
    settings.setdefault("output", options.out)  # a refused recovery keeps its best state beside it
    settings.setdefault("transforms", tuple(conversion.plan.opts.changing))
    if settings.get("qat") is None:
        settings["qat"] = full_integer_planned(conversion.plan)
    if settings["qat"]:
        conversion.note("quantization-aware recovery: training through a simulation of the full-integer TFLite "
                        "export", keep=True)
    job = recovery_job.RecoverOptions(task=options.recover, **settings)
    return recovery_job.prepare(job, task_kind=loaded.task, tokenizer=loaded.tokenizer, labels=loaded.labels,
                                input_names=loaded.family.input_names, eval_length=min(512, longest),
                                embeddings=loaded.model.get_input_embeddings())


def full_integer_planned(plan) -> bool:
    """Recovery trains through the full-integer simulation (QAT) when a tflite:int8-static file is asked
    for by name (``--recipe``, ``--int8 static``/``all``): the simulation is of that export.  ``--int8 auto``
    is not a request for it, so it recovers in float."""
    return any(isinstance(r, Recipe) and r.name == "tflite:int8-static" for r in plan.recipes)
