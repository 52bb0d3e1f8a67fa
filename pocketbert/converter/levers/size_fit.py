"""``--max-size``: the most accurate TFLite recipe whose file fits, or a refusal saying what would fit.

Candidates go most accurate first (fp16, int8-dynamic, int4-dynamic), each through its accuracy ladder; the
first whose file, plus the metadata the next stage embeds, fits and meets its bar ships.  A candidate whose
weights alone (its precision's bytes per float32 weight of the export) exceed the budget is not built, unless
it is the smallest.  When
nothing fits, the refusal names each candidate's size and the levers that need training: a smaller vocabulary
(``trim-vocab``, with the number of pieces that would fit), a factored word-embedding table
(``factor-embeddings``, with the rank that would fit) and fewer layers (``shrink``).
"""

from __future__ import annotations

import math
from pathlib import Path

from .. import backends
from ..backends import ExportedArtifact
from ..errors import VerificationError
from ..backends.recipes import Fit, Recipe

#: bytes per float32 weight byte in each candidate's file (its weights' precision)
WEIGHT_RATIO = {"fp16": 0.5, "int8-dynamic": 0.25, "int4-dynamic": 0.125}
#: an int4 embedding row stores its scale (float32) and zero point (int64) beside its width / 2 bytes
INT4_ROW_EXTRA = 12


def fit(quantizer, choice: Fit, directory: Path, *, reserve: int, float_bytes: int,
        shape: dict) -> tuple[Recipe, ExportedArtifact]:
    """Build ``choice``'s candidates until one fits ``choice.max_bytes - reserve`` (``reserve``: what the metadata
    stage will add); ``float_bytes``: float32 weight bytes of the export; ``shape``: vocab and hidden size."""
    backend = backends.get(choice.candidates[0].backend)
    budget = choice.max_bytes - reserve
    trials, chosen = [], None
    for recipe in choice.candidates:
        predicted = int(float_bytes * WEIGHT_RATIO[recipe.precision])
        # the smallest candidate is always built: a refusal then names its real size and what would fit
        if predicted > budget and recipe != choice.candidates[-1]:
            trials.append({"recipe": recipe.name, "bytes": None, "predicted_weight_bytes": predicted,
                           "outcome": "not built: its weights alone exceed the budget"})
            continue
        path = directory / f".candidate-{backend.filename(recipe.precision)}"
        artifact = quantizer.build(recipe, path)
        size = path.stat().st_size
        passed = (artifact.details.get("float_fallback") or {}).get("accepted", True)
        outcome = "chosen" if passed and size <= budget else "fails its bar" if not passed else "too big"
        trials.append({"recipe": recipe.name, "bytes": size + reserve, "outcome": outcome})
        if outcome == "chosen":
            chosen = recipe, artifact
            break
        path.unlink(missing_ok=True)
    if chosen is None:
        raise _refusal(choice, trials, shape)
    recipe, artifact = chosen
    dest = directory / backend.filename(recipe.precision)
    artifact.path.rename(dest)
    artifact.path = dest
    artifact.details["size_choice"] = {"max_bytes": choice.max_bytes, "candidates": trials,
                                       "rule": "--max-size: the most accurate recipe whose file fits and meets its bar"}
    return recipe, artifact


def _refusal(choice: Fit, trials: list[dict], shape: dict) -> VerificationError:
    sizes = "; ".join(f"{t['recipe']} {t['bytes'] / 1e6:.1f} MB ({t['outcome']})" if t["bytes"] else
                      f"{t['recipe']} ≥ {t['predicted_weight_bytes'] / 1e6:.1f} MB of weights" for t in trials)
    smallest = next((t["bytes"] for t in reversed(trials) if t["bytes"]), None)
    fix = "raise --max-size"
    if smallest and smallest > choice.max_bytes:
        levers = _table_levers(shape, smallest - choice.max_bytes) + _narrow_lever(shape, smallest - choice.max_bytes)
        fix = (f"let the converter plan and train the levers it needs: pocketbert-convert CHECKPOINT --max-size "
               f"{choice.max_bytes / 1e6:g}MB --recover TASK; or by hand: "
               + "; or ".join(levers + ["keep fewer layers (pocketbert-convert shrink CHECKPOINT --task TASK "
                                        "--layers N --out DIR)"]) + "; then convert that checkpoint, or " + fix)
    return VerificationError(f"no TFLite recipe fits --max-size {choice.max_bytes / 1e6:g} MB: {sizes}", fix)


def _table_levers(shape: dict, excess: int) -> list[str]:
    """The word-embedding commands that would take ``excess`` bytes out of the int4 table, with their numbers."""
    vocab, width = shape["vocab_size"], shape["table_width"]
    row = width // 2 + INT4_ROW_EXTRA
    levers = []
    pieces = vocab - math.ceil(excess / row)
    if pieces >= 2000:
        levers.append(f"trim the vocabulary: pocketbert-convert trim-vocab CHECKPOINT --task TASK --size {pieces} "
                      f"--out DIR (about {pieces:,} of {vocab:,} pieces fit at int4)")
    rank = 2 * math.floor((vocab * row - excess) / vocab - INT4_ROW_EXTRA)
    if rank >= max(2, width // 16) and width == shape["hidden_size"]:  # a narrower table is little use
        levers.append(f"factor the word-embedding table: pocketbert-convert factor-embeddings CHECKPOINT --task TASK "
                      f"--rank {rank} --out DIR (rank {rank} of {width} fits; after trim-vocab a larger rank does)")
    return levers


def _narrow_lever(shape: dict, excess: int) -> list[str]:
    """The feed-forward width whose int4 blocks would be ``excess`` bytes smaller: a unit is a row of each block's
    input projection (width / 2 bytes, its scale and zero point, a float32 bias) and a column of its output one."""
    width, blocks, hidden = shape.get("ffn_width"), shape.get("ffn_blocks"), shape.get("ffn_io") or shape["hidden_size"]
    if not width or not blocks:
        return []
    kept = width - math.ceil(excess / (blocks * (hidden + INT4_ROW_EXTRA + 4)))
    kept -= kept % 32  # whole kernel tiles, and an even count for packed int4
    if kept < width // 4:
        return []
    return [f"narrow the feed-forward blocks: pocketbert-convert narrow CHECKPOINT --task TASK --ffn-width {kept} "
            f"--out DIR, then int4-tune it (about {kept} of {width} units fit at int4)"]
