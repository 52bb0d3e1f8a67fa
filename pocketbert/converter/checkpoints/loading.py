"""Stage 1, load: a local Hugging Face checkpoint directory -> model, tokenizer, family, labels.

Everything that can be wrong with a checkpoint is checked here, before any slow work, and turned
into an :class:`~converter.errors.ConverterInputError` that says what to do.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

import torch
from transformers import (
    AutoConfig,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerFast,
)

from .. import builtin
from ..weights import factored_table, int4_packing, shared_body
from ..builtin import BUILTIN, PREFIX, hidden_builtin
from ..errors import ConverterInputError
from ..weights.factored_table import KEY as FACTORED_KEY
from ..families import Family, family_for, supported_summary
from ..opts import structural_names
from ..backends.recipes import TASKS
from ..weights.shared_body import KEY as BASE_WEIGHTS_KEY
from ..weights.shared_table import KEY as SHARED_TABLE_KEY
from ..weights.shared_table import is_table_key, restore
from ..transforms import OPTS

_AUTO_CLASS = {"classification": AutoModelForSequenceClassification, "ner": AutoModelForTokenClassification}
_HEAD_SUFFIX = {"classification": "ForSequenceClassification", "ner": "ForTokenClassification"}
_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                 "pytorch_model.bin.index.json")
_TOKENIZER_FILES = ("tokenizer.json", "vocab.txt")


@dataclass
class Loaded:
    checkpoint: Path
    builtin: str | None
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerFast
    family: Family
    task: str
    labels: list[str]
    head_initialized: bool  # True when the converter attached a fresh (untrained) head
    notes: list[str] = field(default_factory=list)

    @property
    def config(self):
        return self.model.config


def resolve(spec: str) -> tuple[Path, str | None]:
    """A path, or the name of a built-in model (``builtin:NAME`` even where a folder NAME exists) ->
    (checkpoint directory, builtin name or None)."""
    name = builtin.builtin_name(spec)
    if name is not None:
        return BUILTIN[name].path(), name
    return Path(spec).expanduser(), None


def _check_directory(path: Path) -> dict:
    names = ", ".join(BUILTIN)
    if not path.exists():
        raise ConverterInputError(f"checkpoint {str(path)!r} does not exist",
                                  f"give a local Hugging Face model directory, or a built-in model name ({names})")
    if not path.is_dir():
        raise ConverterInputError(f"checkpoint {str(path)!r} is a file, not a directory",
                                  "give the directory that holds config.json, the weights and the tokenizer files")
    config_file = path / "config.json"
    if not config_file.is_file():
        raise ConverterInputError(f"{str(path)!r} has no config.json, so it is not a Hugging Face checkpoint",
                                  "point at the directory written by `save_pretrained` (config.json, weights, "
                                  "tokenizer)")
    try:
        raw = json.loads(config_file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConverterInputError(f"{config_file} is not valid JSON ({exc})",
                                  "re-save or re-download the checkpoint") from exc
    if not isinstance(raw, dict):
        raise ConverterInputError(f"{config_file} does not hold a JSON object", "re-save or re-download the checkpoint")
    _check_config_fields(raw, config_file)
    if not any((path / name).is_file() for name in _WEIGHT_FILES):
        raise ConverterInputError(f"{str(path)!r} has no weights ({' or '.join(_WEIGHT_FILES[::2])})",
                                  "copy the weights file into the checkpoint directory")
    if not any((path / name).is_file() for name in _TOKENIZER_FILES):
        raise ConverterInputError(f"{str(path)!r} has no tokenizer (tokenizer.json or vocab.txt); the bundle must "
                                  "carry it",
                                  "save the tokenizer beside the model: tokenizer.save_pretrained(directory)")
    return raw


def _check_config_fields(raw: dict, config_file: Path) -> None:
    """The config.json fields read before transformers validates the file: their types, so a hand-edited one is
    named here instead of failing as a TypeError deep inside the load."""
    def need(ok: bool, field: str, rule: str, value: object) -> None:
        if not ok:
            shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
            raise ConverterInputError(f"{config_file}: '{field}' must be {rule}, not {shown}",
                                      "fix that field, or re-save the checkpoint with save_pretrained")

    model_type, id2label, num_labels = raw.get("model_type"), raw.get("id2label"), raw.get("num_labels")
    need(model_type is None or isinstance(model_type, str), "model_type", "a string such as 'bert'", model_type)
    need(id2label is None or isinstance(id2label, dict) and all(_is_index(k) and isinstance(v, str)
                                                                for k, v in id2label.items()),
         "id2label", 'an object from label index to name, e.g. {"0": "negative", "1": "positive"}', id2label)
    need(num_labels is None or _whole(num_labels) and num_labels >= 1, "num_labels", "a whole number ≥ 1",
         num_labels)
    saved = raw.get(SAVED_TRANSFORMS_KEY)
    need(saved is None or isinstance(saved, dict), SAVED_TRANSFORMS_KEY,
         'an object such as {"transforms": ["nonorm", "relu"]}', saved)
    transforms, shared = (saved or {}).get("transforms"), (saved or {}).get(SHARED_TABLE_KEY)
    need(transforms is None or isinstance(transforms, list) and all(isinstance(t, str) for t in transforms),
         f"{SAVED_TRANSFORMS_KEY}.transforms", 'a list of transform names, e.g. ["nonorm", "relu"]', transforms)
    need(shared is None or isinstance(shared, dict) and isinstance(shared.get("model"), str)
         and isinstance(shared.get("sha256"), str) and bool(re.fullmatch(r"[0-9a-f]{64}", shared["sha256"])),
         f"{SAVED_TRANSFORMS_KEY}.{SHARED_TABLE_KEY}", '{"model": base model, "sha256": 64 hexadecimal digits}',
         shared)
    body = (saved or {}).get(BASE_WEIGHTS_KEY)
    need(body is None or isinstance(body, dict) and isinstance(body.get("model"), str)
         and isinstance(body.get("sha256"), str) and bool(re.fullmatch(r"[0-9a-f]{64}", body["sha256"]))
         and _whole(body.get("tensors")), f"{SAVED_TRANSFORMS_KEY}.{BASE_WEIGHTS_KEY}",
         '{"model": base model, "sha256": 64 hexadecimal digits, "tensors": count}', body)
    rank = (saved or {}).get(FACTORED_KEY)
    need(rank is None or _whole(rank) and rank >= 1, f"{SAVED_TRANSFORMS_KEY}.{FACTORED_KEY}",
         "a whole number ≥ 1 (the factored word-embedding table's rank)", rank)


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_index(key: object) -> bool:
    """An id2label key: an integer, or its decimal string (JSON object keys are strings)."""
    return _whole(key) and key >= 0 or isinstance(key, str) and key.isdigit() and key.isascii()


def _family(raw: dict) -> Family:
    model_type = raw.get("model_type")
    family = family_for(model_type) if model_type else None
    if family is None:
        arch = ", ".join(raw.get("architectures") or []) or "unknown architecture"
        raise ConverterInputError(f"unsupported architecture: model_type {model_type!r} ({arch})",
                                  f"supported model types: {supported_summary()}")
    return family


def _existing_head(raw: dict) -> str | None:
    """The task of the head the checkpoint was saved with, or None for a bare encoder."""
    for arch in raw.get("architectures") or []:
        for task, suffix in _HEAD_SUFFIX.items():
            if arch.endswith(suffix):
                return task
    return None


def _is_head_key(key: str) -> bool:
    return "classifier" in key or "pooler" in key


def load(spec: str, *, task: str | None = None, labels: list[str] | None = None,
         num_labels: int | None = None, seed: int = 0) -> Loaded:
    path, builtin_name = resolve(spec)
    try:
        raw = _check_directory(path)
    except ConverterInputError as exc:
        raise builtin.hidden_by_folder(spec, exc) from exc
    family = _family(raw)
    notes: list[str] = []
    if hidden_builtin(spec):
        notes.append(f"{spec!r} is the folder {str(Path('.') / spec)!r}, not the built-in model of that name "
                     f"({PREFIX}{spec})")

    head_task = _existing_head(raw)
    task = _task(task, head_task, builtin_name)
    _check_label_options(labels, num_labels)
    final_labels = _head_labels(raw, path, task, head_task, labels=labels, num_labels=num_labels,
                                builtin_name=builtin_name)
    if not head_task:
        notes.append(f"the checkpoint has no {task} head: a freshly initialised one (seed {seed}) was attached, "
                     "so its predictions are untrained")
    tokenizer = _tokenizer(path)
    model, info = _model(path, task, final_labels, seed)
    rank = (raw.get(SAVED_TRANSFORMS_KEY) or {}).get(FACTORED_KEY)
    if rank:  # the word embeddings are two factors (converter.weights.factored_table), not one table
        info["missing_keys"] = factored_table.rebuild(model, rank, path, info.get("missing_keys", []))
        notes.append(f"the word embeddings are factored at rank {rank} (config.json 'pocketbert')")
    packed = (raw.get(SAVED_TRANSFORMS_KEY) or {}).get(int4_packing.KEY)
    if packed:  # weights on the int4 grid stored two to a byte (converter.weights.int4_packing)
        info["missing_keys"] = int4_packing.restore(model, path, packed["tensors"], info.get("missing_keys", []))
        notes.append(f"{packed['tensors']} weights are stored as int4 (config.json 'pocketbert')")
    head_missing = _check_weights(model, info, raw, path, notes=notes)
    if head_task and head_missing:
        notes.append(f"{len(head_missing)} head tensor(s) missing from the checkpoint were initialised "
                     f"(e.g. {head_missing[0]})")

    structural = _saved_transforms(raw)
    if structural:
        _reapply(model, family, structural)
        notes.append(f"the checkpoint was trained with {','.join(structural)} (config.json 'pocketbert'): "
                     "re-applied on load")

    vocab = len(tokenizer)
    if vocab > model.config.vocab_size:
        raise ConverterInputError(f"the tokenizer has {vocab} tokens but the model's embedding has "
                                  f"{model.config.vocab_size}",
                                  "the tokenizer does not belong to this model; copy the matching tokenizer files")
    model.eval()
    return Loaded(checkpoint=path, builtin=builtin_name, model=model, tokenizer=tokenizer, family=family,
                  task=task, labels=final_labels, head_initialized=not head_task or bool(head_missing),
                  notes=notes)


def _task(task: str | None, head_task: str | None, builtin_name: str | None) -> str:
    """--task, else the checkpoint head's task, else the built-in model's, else classification."""
    if task is not None and task not in TASKS:
        raise ConverterInputError(f"unknown task {task!r}", f"use one of: {', '.join(TASKS)}")
    if head_task and task and task != head_task:
        raise ConverterInputError(f"--task {task} contradicts the checkpoint, whose head is for {head_task}",
                                  f"drop --task, or pass --task {head_task}")
    if builtin_name and not task and not head_task:
        task = BUILTIN[builtin_name].default_task
    return task or head_task or "classification"


def _check_label_options(labels: list[str] | None, num_labels: int | None) -> None:
    if labels is not None and num_labels is not None and len(labels) != num_labels:
        raise ConverterInputError(f"--labels names {len(labels)} labels but --num-labels says {num_labels}",
                                  "give only one of them, or make them agree")
    if labels is not None and not labels:
        raise ConverterInputError("--labels is empty", "give at least one label name, e.g. --labels negative,positive")
    if labels is not None and len(set(labels)) != len(labels):
        raise ConverterInputError(f"--labels has duplicates: {','.join(labels)}", "give each label once")


def _head_labels(raw: dict, path: Path, task: str, head_task: str | None, labels: list[str] | None,
                 num_labels: int | None, builtin_name: str | None) -> list[str]:
    """The head's label names: a trained head's (renamed by --labels), else those of the fresh head asked for."""
    if head_task:
        saved = raw.get("id2label") or {}
        saved_labels = [saved[k] for k in sorted(saved, key=int)] if saved else []
        count = len(saved_labels) or raw.get("num_labels")
        wanted = len(labels) if labels is not None else num_labels
        if wanted is not None and count and wanted != count:
            raise ConverterInputError(f"the checkpoint's head has {count} labels, but {wanted} were asked for",
                                      "drop --labels/--num-labels to keep the trained head, or convert the bare "
                                      "encoder")
        final_labels = labels or saved_labels or [f"LABEL_{i}" for i in range(count or 2)]
    else:
        if labels is None and num_labels is None and builtin_name:
            labels = list(BUILTIN[builtin_name].default_labels)
        if labels is None and num_labels is None:
            arch = ", ".join(raw.get("architectures") or []) or "no head"
            raise ConverterInputError(f"checkpoint {str(path)!r} is a bare encoder ({arch}) without a {task} head",
                                      "give --labels a,b,c (or --num-labels N) to attach a freshly initialised head")
        final_labels = labels or [f"LABEL_{i}" for i in range(num_labels)]
    if task == "classification" and len(final_labels) < 1 or task == "ner" and len(final_labels) < 2:
        raise ConverterInputError(f"{len(final_labels)} label(s) is too few for {task}", "give at least two labels")
    return final_labels


def _tokenizer(path: Path) -> PreTrainedTokenizerFast:
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
    except Exception as exc:  # transformers raises many types for broken tokenizer files
        raise ConverterInputError(f"could not load the tokenizer in {str(path)!r}: {exc}",
                                  "re-save it with tokenizer.save_pretrained(directory)") from exc
    if not getattr(tokenizer, "is_fast", False):
        raise ConverterInputError(f"the tokenizer in {str(path)!r} has no fast (Rust) version",
                                  "save a tokenizer.json with a fast tokenizer")
    return tokenizer


def _model(path: Path, task: str, labels: list[str], seed: int) -> tuple[PreTrainedModel, dict]:
    """The model with a ``labels``-sized head, and transformers' loading info (missing/mismatched keys)."""
    head = dict(num_labels=len(labels), id2label=dict(enumerate(labels)),
                label2id={label: i for i, label in enumerate(labels)})
    torch.manual_seed(seed)  # a fresh head is initialised from this seed: conversions are reproducible
    try:
        config = AutoConfig.from_pretrained(path, **head)
    except Exception as exc:
        raise ConverterInputError(f"config.json in {str(path)!r} is invalid: {type(exc).__name__}: {str(exc)[:300]}",
                                  "re-save the checkpoint with save_pretrained") from exc
    try:
        logging.getLogger("transformers").setLevel(logging.ERROR)
        return _AUTO_CLASS[task].from_pretrained(path, config=config, output_loading_info=True,
                                                 dtype=torch.float32)
    except Exception as exc:
        raise ConverterInputError(f"could not build the model from config.json and the weights in {str(path)!r}: "
                                  f"{type(exc).__name__}: {str(exc)[:300]}",
                                  "the weights file is corrupt or truncated, or config.json does not describe a valid "
                                  "model; re-download or re-save the checkpoint") from exc


def _check_weights(model, info: dict, raw: dict, path: Path, notes: list[str]) -> list[str]:
    """Restore shared word embeddings; refuse missing or misshapen encoder tensors; the head keys missing."""
    shared = (raw.get(SAVED_TRANSFORMS_KEY) or {}).get("base_embeddings")
    if shared:  # the word embeddings come from a base model (converter.weights.shared_table), checked by sha256
        info["missing_keys"] = [k for k in info.get("missing_keys", []) if not is_table_key(k)]
        restore(model, shared)
        notes.append(f"the word embeddings come from the base model {shared['model']!r} (sha256 checked)")
    body = (raw.get(SAVED_TRANSFORMS_KEY) or {}).get(BASE_WEIGHTS_KEY)
    if body:  # every tensor but the word embeddings comes from another model (converter.weights.shared_body)
        info["missing_keys"] = shared_body.restore(model, body, info.get("missing_keys", []))
        notes.append(f"the weights other than the word embeddings come from {body['model']!r} (sha256 checked)")
    missing = [k for k in info.get("missing_keys", []) if not _is_head_key(k)]
    if missing:
        raise ConverterInputError(f"the weights in {str(path)!r} lack {len(missing)} encoder tensor(s), e.g. "
                                  f"{missing[0]}",
                                  "the weights do not belong to this config.json; use the matching pair")
    mismatched = info.get("mismatched_keys") or []
    if mismatched:
        raise ConverterInputError(f"{len(mismatched)} tensor(s) have the wrong shape for config.json, e.g. "
                                  f"{mismatched[0][0]}", "use the config.json saved with these weights")
    return [k for k in info.get("missing_keys", []) if _is_head_key(k)]


#: config.json key written by PocketBERT training (converter.training.save): structural transforms
#: the weights were trained with.  transformers builds LayerNorm/GELU from config.json; a model trained
#: with NoNorm/ReLU stores γ/β in the LayerNorm slots and needs the structure put back to compute
#: what it was trained to compute.
SAVED_TRANSFORMS_KEY = "pocketbert"


def _saved_transforms(raw: dict) -> list[str]:
    saved = (raw.get(SAVED_TRANSFORMS_KEY) or {}).get("transforms") or []
    unknown = [t for t in saved if t not in structural_names()]
    if unknown:
        raise ConverterInputError(f"config.json '{SAVED_TRANSFORMS_KEY}' names unknown transform(s) {unknown}",
                                  "the checkpoint was written by a newer PocketBERT; upgrade pocketbert")
    return [t for t in structural_names() if t in saved]


def _reapply(model, family: Family, names: list[str]) -> None:
    for name in names:
        OPTS[name].apply(model, family)
