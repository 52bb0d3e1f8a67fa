"""Write a trained model as a Hugging Face checkpoint directory, with its training record and model card.

The directory is staged and renamed into place (converter.bundle.Staging): an error or Ctrl-C leaves
nothing half-written.  Models trained with NoNorm/ReLU record that in config.json (key
``pocketbert``) so that PocketBERT's loader rebuilds the same structure (see converter.loading).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..bundle import Staging
from ..loading import SAVED_TRANSFORMS_KEY, STRUCTURAL_TRANSFORMS


def save_trained(model, tokenizer, out: Path, *, overwrite: bool, record: dict, card: str,
                 transforms: list[str] = (), dtype=None) -> Path:
    """Save ``model`` (optionally cast to ``dtype``, e.g. torch.float16) + tokenizer + training.json + README.md."""
    structural = [t for t in STRUCTURAL_TRANSFORMS if t in transforms]
    with Staging(Path(out), overwrite) as staging:
        if structural:
            setattr(model.config, SAVED_TRANSFORMS_KEY, {"transforms": structural})
        if dtype is not None:
            import copy

            model = copy.deepcopy(model).to(dtype)
        model.save_pretrained(staging.path)
        tokenizer.save_pretrained(staging.path)
        (staging.path / "training.json").write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n",
                                                    encoding="utf-8")
        (staging.path / "README.md").write_text(card, encoding="utf-8")
        return staging.commit()
