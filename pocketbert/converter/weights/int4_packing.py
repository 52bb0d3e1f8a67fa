"""Checkpoint weights stored as int4, two to a byte, for weights already on the int4 grid (``int4-tune --pack``).

A weight on the grid (:mod:`converter.weights.int4_grid`) is its row scales times integers in [-8, 7]: stored so, it takes
a byte per two values and a float32 per row, an eighth of float32.  The CoNLL-2003 phone demo model's weights are
8.0 MB in the repository this way, where float16 would take 29.6 MB.  Each packed weight ``K`` is two safetensors
entries: ``K.int4`` (uint8 ``[rows, columns / 2]``, the even column in the low nibble, two's complement) and
``K.int4_scale`` (float32 ``[rows]``); config.json's ``pocketbert.int4_weights`` counts them.  The loader
(:func:`restore`, and :func:`converter.weights.factored_table.rebuild` through :func:`unpacked`) computes
``integers × scale`` in float32, exactly what :func:`round_trip` gives the model before its score is recorded.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from ..errors import ConverterInputError
from .int4_grid import LEVELS, on_grid, scales

KEY = "int4_weights"  # inside config.json's "pocketbert" entry
VALUES, SCALE = ".int4", ".int4_scale"


def packable(name: str, tensor: torch.Tensor) -> bool:
    """A 2-D float weight with an even number of columns, on its int4 grid."""
    return (name.endswith(".weight") and tensor.dim() == 2 and tensor.shape[1] % 2 == 0
            and tensor.is_floating_point() and on_grid(tensor.detach().float().numpy()))


def pack(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(bytes [rows, columns / 2] uint8, scales [rows] float32)`` of a weight on its grid."""
    scale = scales(weight.float())
    steps = torch.round(weight.float() / scale[:, None]).clamp(-LEVELS - 1, LEVELS).to(torch.int16)
    nibbles = (steps & 0x0F).to(torch.uint8)
    return nibbles[:, 0::2] | (nibbles[:, 1::2] << 4), scale


def unpack(packed: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """The float32 weight of :func:`pack`'s output."""
    nibbles = torch.stack([packed & 0x0F, packed >> 4], dim=2).reshape(packed.shape[0], -1).to(torch.int16)
    steps = torch.where(nibbles > LEVELS, nibbles - 16, nibbles)
    return steps.float() * scale.float()[:, None]


def packed_state(state: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], int]:
    """``state`` with every :func:`packable` weight replaced by its two packed entries; and how many."""
    out, count = {}, 0
    for name, tensor in state.items():
        if packable(name, tensor):
            out[name + VALUES], out[name + SCALE] = pack(tensor)
            count += 1
        else:
            out[name] = tensor
    return out, count


@torch.no_grad()
def round_trip(model: torch.nn.Module) -> int:
    """Give ``model`` the weights its packed checkpoint will load (the scale recomputed from the snapped weight can
    differ from the one that snapped it by a unit in the last place); returns how many were packed."""
    count = 0
    for name, tensor in model.state_dict().items():
        if packable(name, tensor):
            tensor.copy_(unpack(*pack(tensor)))
            count += 1
    return count


def unpacked(entries: Iterable[tuple[str, callable]]) -> dict[str, torch.Tensor]:
    """From ``(key, get_tensor)`` pairs of a weights file: every packed weight, unpacked, under its own key."""
    getters = dict(entries)
    out = {}
    for key, get in getters.items():
        if key.endswith(VALUES):
            name = key.removesuffix(VALUES)
            if name + SCALE not in getters:
                raise ConverterInputError(f"the packed int4 weight {name} has no {SCALE} entry",
                                          "the weights file is damaged; re-save the checkpoint")
            out[name] = unpack(get(), getters[name + SCALE]())
    return out


@torch.no_grad()
def restore(model: torch.nn.Module, checkpoint, expected: int, missing: list[str]) -> list[str]:
    """Load ``checkpoint``'s packed weights into ``model`` (``expected`` of them, as config.json says); returns the
    ``missing`` keys still missing."""
    from safetensors import safe_open  # only for packed checkpoints

    found: dict[str, torch.Tensor] = {}
    for file in sorted(checkpoint.glob("*.safetensors")):
        with safe_open(str(file), framework="pt") as weights:
            found.update(unpacked((k, lambda k=k: weights.get_tensor(k)) for k in weights.keys()))
    state = model.state_dict()
    loaded = [name for name in found if name in state]
    if len(found) != expected or len(loaded) != expected:
        raise ConverterInputError(f"config.json says {expected} weights are stored as int4, the weights file holds "
                                  f"{len(found)} ({len(loaded)} of them this model's)",
                                  "the weights do not belong to this config.json; use the matching pair")
    for name in loaded:
        if state[name].shape != found[name].shape:
            raise ConverterInputError(f"the int4 weight {name} is {tuple(found[name].shape)}, the model's "
                                      f"{tuple(state[name].shape)}", "use the config.json saved with these weights")
        state[name].copy_(found[name])
    return [k for k in missing if k not in found]
