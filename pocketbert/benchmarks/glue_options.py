"""What ``pocketbert-bench glue`` runs: its tasks, recipes, budgets and cache, from the command line's options."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pocketbert.converter.training.defaults import RECOVERY_BUDGET

BENCHMARK_TASKS = ("glue:sst2", "glue:mrpc", "glue:cola", "glue:stsb", "conll2003")
EXTRA_SPLITS = {"conll2003": ("test",)}  # labelled test sets (GLUE's are not)
RECIPES = ("onnx:fp32", "onnx:int8-dynamic", "onnx:int8-static", "tflite:fp32", "tflite:int8-dynamic",
           "tflite:int8-static")
CHANGING = ["nonorm", "relu"]
FAST_BASE = "tiny-bert"


def default_cache() -> Path:
    from pocketbert.locations import cache_dir

    return cache_dir() / "glue"


@dataclass
class GlueOptions:
    tasks: tuple[str, ...] = BENCHMARK_TASKS
    base: str = "minilm"
    cache: Path = field(default_factory=default_cache)
    finetune_budget: str = "3epochs,30m"
    recover_budget: str = RECOVERY_BUDGET  # the converter's own default
    recipes: tuple[str, ...] = RECIPES
    buckets: tuple[int, ...] = (128,)
    calibration_samples: int = 128
    verify_samples: int = 300
    threads: int = 1
    data_dir: Path | None = None
    train_limit: int | None = None
    # as the demo models: the word-embedding table stays the base's (half the weights out of the optimiser)
    freeze_word_embeddings: bool = True
    fast: bool = False

    def settings(self) -> dict:
        return {"base": self.base, "tasks": list(self.tasks), "finetune_budget": self.finetune_budget,
                "recover_budget": self.recover_budget, "recipes": list(self.recipes), "buckets": list(self.buckets),
                "calibration_samples": self.calibration_samples, "verify_samples": self.verify_samples,
                "threads": self.threads, "train_limit": self.train_limit, "cache": str(self.cache),
                "freeze_word_embeddings": self.freeze_word_embeddings}


def task_dir(options: GlueOptions, task: str) -> Path:
    return options.cache / options.base / task.replace(":", "-")


def parse_options(fast: bool, tasks: str | None, recipes: str | None, **kwargs) -> GlueOptions:
    from pocketbert.converter.data.tasks import TASKS as KNOWN
    from pocketbert.converter.errors import ConverterInputError

    names = tuple(t.strip().lower() for t in (tasks or ",".join(BENCHMARK_TASKS)).split(",") if t.strip())
    wanted = tuple(r.strip().lower() for r in (recipes or ",".join(RECIPES)).split(",") if r.strip())
    if not names or any(t not in KNOWN for t in names):
        raise ConverterInputError(f"--tasks {tasks!r}: not a list of known tasks",
                                  f"use some of {', '.join(BENCHMARK_TASKS)}")
    if not wanted or any(r not in RECIPES for r in wanted):
        raise ConverterInputError(f"--recipes {recipes!r}: not a list of recipes", f"use some of {', '.join(RECIPES)}")
    options = GlueOptions(tasks=names, recipes=wanted, fast=fast, **{k: v for k, v in kwargs.items() if v is not None})
    if fast:  # a tiny random model, budgets of a few steps, one small bucket: tests the harness, not a result
        options.base, options.buckets = FAST_BASE, (32,)
        options.calibration_samples, options.verify_samples = 32, 32
        if kwargs.get("finetune_budget") is None:
            options.finetune_budget = "30steps"
        if kwargs.get("recover_budget") is None:
            options.recover_budget = "20steps"
    return options
