"""Write a trained model as a Hugging Face checkpoint directory, with its training record and model card.

The directory is staged and renamed into place (converter.output.staging.Staging): an error or Ctrl-C leaves
nothing half-written.  Models trained with NoNorm/ReLU record that in config.json (key
``pocketbert``) so that PocketBERT's loader rebuilds the same structure (see converter.checkpoints.loading).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from .. import __version__
from ..weights import int4_packing
from ..weights.factored_table import KEY as FACTORED_KEY
from ..weights.factored_table import rank_of
from ..checkpoints.loading import SAVED_TRANSFORMS_KEY
from ..opts import structural_names
from ..output.owned import CHECKPOINT, TRAINING_RECORD, record_files
from ..weights.shared_body import KEY as BASE_WEIGHTS_KEY
from ..weights.shared_body import is_own_key
from ..weights.shared_table import is_table_key
from ..output.staging import Staging


def check_output(out: Path, overwrite: bool) -> None:
    """Refuse an unusable --out before any training: not writable, or (with overwrite) not our checkpoint."""
    Staging(Path(out), overwrite, kind=CHECKPOINT)


def save_trained(model, tokenizer, out: Path, *, overwrite: bool, record: dict, card: str,
                 transforms: list[str] = (), dtype=None, base_embeddings: dict | None = None,
                 base_weights: dict | None = None, int4: bool = False) -> Path:
    """Save ``model`` (optionally cast to ``dtype``, e.g. torch.float16) + tokenizer + README.md + training.json,
    which records the size and SHA-256 of the others (owned.py: what --overwrite may replace).

    ``base_embeddings`` ({"model", "sha256", "shape"}): leave the word-embedding table out, recording
    which base model supplies it (converter.training.base_embeddings).  Factored word embeddings
    (converter.weights.factored_table) are recorded with their rank, from which the loader rebuilds them.
    ``base_weights`` ({"model", "sha256", "tensors"}): store the word embeddings only, recording which model supplies
    every other tensor (converter.weights.shared_body).  ``int4``: store the weights on the int4 grid two to a byte
    (converter.weights.int4_packing), every other one cast to ``dtype``."""
    structural = [t for t in structural_names() if t in transforms]
    with Staging(Path(out), overwrite, kind=CHECKPOINT) as staging:
        entry = {}
        if structural:
            entry["transforms"] = structural
        if base_embeddings:
            entry["base_embeddings"] = base_embeddings
        if rank_of(model):
            entry[FACTORED_KEY] = rank_of(model)
        if base_weights:
            entry[BASE_WEIGHTS_KEY] = base_weights
        packed = int4_packing.packed_state(model.state_dict()) if int4 else None  # before any cast: on the grid
        if packed:
            entry[int4_packing.KEY] = {"tensors": packed[1]}
        if entry:
            setattr(model.config, SAVED_TRANSFORMS_KEY, entry)
        elif hasattr(model.config, SAVED_TRANSFORMS_KEY):  # the input's record would describe other weights
            delattr(model.config, SAVED_TRANSFORMS_KEY)
        if dtype is not None:
            import copy

            model = copy.deepcopy(model).to(dtype)
        state = None
        if base_embeddings:
            state = {k: v for k, v in model.state_dict().items() if not is_table_key(k)}
        if base_weights:
            state = {k: v for k, v in model.state_dict().items() if is_own_key(k)}
        if packed:
            cast = dtype is not None
            state = {k: v.to(dtype) if cast and v.is_floating_point() and not k.endswith(int4_packing.SCALE) else v
                     for k, v in packed[0].items()}
        dtype_bytes = torch.finfo(dtype).bits // 8 if dtype is not None else 4
        staging.reserve(sum(p.numel() for p in model.parameters()) * dtype_bytes, "the weights")
        model.save_pretrained(staging.path, state_dict=state)
        tokenizer.save_pretrained(staging.path)
        (staging.path / "README.md").write_text(card, encoding="utf-8")
        # last, listing what was written: what a later --overwrite checks before it may replace the directory
        record = {**record, "pocketbert_version": __version__, "files": record_files(staging.path)}
        (staging.path / TRAINING_RECORD).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n",
                                                    encoding="utf-8")
        return staging.commit()


def copy_checkpoint(source: Path, out: Path, *, overwrite: bool) -> Path:
    """Copy a checkpoint this program wrote (its files are listed in its training.json) to ``out``, staged."""
    import shutil

    with Staging(Path(out), overwrite, kind=CHECKPOINT) as staging:
        shutil.copytree(source, staging.path, dirs_exist_ok=True)
        return staging.commit()

