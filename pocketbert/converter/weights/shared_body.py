"""The weights a checkpoint takes from another model instead of storing them: found, checked and put back at load.

``factor-embeddings --share-body`` trains nothing but the word-embedding factors of the model it starts from, so
every other tensor (the blocks, the head, the position and type tables) is that model's, bit for bit.  The
checkpoint then stores the factors and the tokenizer only, and records in config.json which model supplies the
rest and their sha256; the loader (:func:`restore`) puts exactly those numbers back, or refuses.  The phone-sized
SST-2 demo model is 5 MB in the repository this way instead of 28 MB.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch

from . import shared_table
from ..builtin import BUILTIN
from ..errors import ConverterInputError

KEY = "base_weights"  # inside config.json's "pocketbert" entry
_OWN = ".word_embeddings."  # what a shared-body checkpoint stores itself: the (factored) word embeddings


def is_own_key(key: str) -> bool:
    return _OWN in key


def digest(tensors: dict[str, torch.Tensor]) -> str:
    """sha256 over the names and float32 values, in name order."""
    hasher = hashlib.sha256()
    for name in sorted(tensors):
        hasher.update(name.encode("utf-8"))
        hasher.update(tensors[name].detach().to(torch.float32).contiguous().numpy().tobytes())
    return hasher.hexdigest()


def base_tensors(base: str, keys) -> dict[str, torch.Tensor]:
    """``keys`` from ``base``'s weights, as float32; refuses a base that lacks one."""
    wanted = set(keys)
    found = shared_table.base_tensors(base, wanted.__contains__, "this checkpoint's weights")
    absent = sorted(wanted - set(found))
    if absent:
        raise ConverterInputError(f"base model {base!r} has no tensor {absent[0]} ({len(absent)} missing)",
                                  "give the model this checkpoint was made from")
    return found


def reference(model, base: str) -> dict:
    """What to record for ``model`` sharing every tensor but its word embeddings with ``base``: refuses when one of
    them is not the base's exactly (something other than the word embeddings was trained)."""
    base = base if base in BUILTIN else str(Path(base).resolve())  # a path recorded must not depend on the cwd
    state = {k: v for k, v in model.state_dict().items() if not is_own_key(k)}
    theirs = base_tensors(base, [k for k in state if _stored(k)])
    changed = [k for k, v in theirs.items() if not torch.equal(state[k].to(torch.float32), v)]
    if changed:
        raise ConverterInputError(f"{len(changed)} tensor(s) differ from base model {base!r}'s, e.g. {changed[0]}: "
                                  "only the word embeddings may change in a checkpoint that shares the rest",
                                  "drop --share-body to store every weight")
    return {"model": base, "sha256": digest(theirs), "tensors": len(theirs)}


def _stored(key: str) -> bool:
    """Buffers transformers rebuilds from config.json (position ids) are in no weights file."""
    return not key.endswith("position_ids") and not key.endswith("token_type_ids")


def restore(model, shared: dict, missing: list[str]) -> list[str]:
    """Put ``shared["model"]``'s tensors into ``model`` for the ``missing`` keys, checked against the recorded sha256;
    returns the keys still missing."""
    taken = [k for k in missing if not is_own_key(k)]
    tensors = base_tensors(shared["model"], taken)
    if len(tensors) != shared.get("tensors") or digest(tensors) != shared["sha256"]:
        raise ConverterInputError(f"the weights of base model {shared['model']!r} are not the ones this checkpoint was "
                                  "made from (sha256 differs)",
                                  "install the base model version named in config.json (pocketbert.base_weights)")
    state = model.state_dict()
    with torch.no_grad():
        for key, value in tensors.items():
            state[key].copy_(value)
    return [k for k in missing if k not in tensors]
