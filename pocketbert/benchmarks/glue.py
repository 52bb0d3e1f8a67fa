"""``python -m benchmarks glue``: GLUE and CoNLL-2003 deltas of every shipped artifact, from one command.

For each task (SST-2, MRPC, CoLA, STS-B, CoNLL-2003), with the converter's own Python APIs:

1. fine-tune the teacher from the built-in base (``finetune``; the word embeddings stay the base's, as in
   the demo models);
2. apply nonorm,relu and recover by distillation from the teacher (``recover``), which scores the teacher,
   the transformed model without recovery and the recovered one in PyTorch on the dev split;
3. convert the recovered checkpoint with ``--opt nonorm,relu,fold`` and every recipe (ONNX and TFLite ×
   fp32, int8-dynamic, int8-static; one bundle per backend, so a recipe the converter refuses costs only
   itself), and the teacher itself to plain fp32 (the speed-up reference and the teacher as the runtime
   runs it);
4. score every artifact through the runtime (:func:`benchmarks.accuracy.evaluate`) on the full dev split,
   and CoNLL-2003 test too, against the teacher (≤ 1.0 point) and, for int8, against the float export of
   the same backend (≤ 0.5 point): the gates of :mod:`benchmarks.gates`.

Checkpoints, bundles and scores are cached under ``~/.cache/pocketbert/glue`` (``--cache``, or
``$POCKETBERT_CACHE/glue``), one directory per base model and task: a re-run skips every finished step and
resumes an interrupted fine-tuning.  ``--fast`` runs the same steps on a tiny random BERT with budgets of a
few steps, to test the harness (its figures are not results).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import schema
from .gates import INT8_EXTRA, MAX_DROP

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
    recover_budget: str = "20m"
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


def _task_dir(options: GlueOptions, task: str) -> Path:
    return options.cache / options.base / task.replace(":", "-")


def base_checkpoint(options: GlueOptions) -> str:
    """The built-in base, or (fast mode) a tiny random bare BERT saved once in the cache."""
    if not options.fast:
        return options.base
    directory = options.cache / "tiny-bert-base"
    if not (directory / "config.json").is_file():
        import torch
        from transformers import AutoModel, AutoTokenizer

        from pocketbert.converter.builtin import BUILTIN
        from pocketbert.converter.families import families

        config = next(f for f in families() if f.name == "bert").tiny_config(vocab_size=30522)
        torch.manual_seed(0)
        AutoModel.from_config(config).eval().save_pretrained(directory)
        AutoTokenizer.from_pretrained(BUILTIN["minilm"].path()).save_pretrained(directory)
    return str(directory)


def teacher(options: GlueOptions, task: str, log) -> Path:
    from pocketbert.converter.training.finetune import FinetuneOptions, finetune
    from pocketbert.converter.training.loop import parse_budget

    out = _task_dir(options, task) / "teacher"
    if (out / "training.json").is_file():
        log(f"{task}: teacher cached ({out})")
        return out
    state = out.parent / f".{out.name}.training"
    finetune(FinetuneOptions(checkpoint=base_checkpoint(options), task=task, out=out,
                             budget=parse_budget(options.finetune_budget), threads=options.threads,
                             data_dir=options.data_dir, train_limit=options.train_limit, overwrite=True,
                             freeze_word_embeddings=options.freeze_word_embeddings,
                             resume=state.exists(), progress=False), log=log)
    return out


def recovered(options: GlueOptions, task: str, teacher_dir: Path, log) -> Path:
    from pocketbert.converter.training.loop import parse_budget
    from pocketbert.converter.training.recovery import RecoverOptions, recover_checkpoint

    out = _task_dir(options, task) / "recovered"
    if (out / "training.json").is_file():
        log(f"{task}: recovered checkpoint cached ({out})")
        return out
    job = RecoverOptions(task=task, budget=parse_budget(options.recover_budget), data_dir=options.data_dir,
                         train_limit=options.train_limit, progress=False,
                         freeze_word_embeddings=options.freeze_word_embeddings)
    recover_checkpoint(str(teacher_dir), CHANGING, job, out, overwrite=True, threads=options.threads, log=log)
    return out


def _convert_options(options: GlueOptions, checkpoint: Path, out: Path, recipes: list[str], opts: str | None,
                     calibration: Path | None):
    from pocketbert.converter.pipeline import ConvertOptions

    tflite = any(r.startswith("tflite:") for r in recipes)
    int8 = any(":int8" in r for r in recipes)
    return ConvertOptions(checkpoint=str(checkpoint), out=out, opts=opts, recipes=",".join(recipes),
                          buckets=list(options.buckets) if tflite else None, calibration=calibration if int8 else None,
                          calibration_samples=options.calibration_samples, verify_samples=options.verify_samples,
                          data_dir=options.data_dir, threads=options.threads, overwrite=True, measure_latency=True)


def convert_recipes(options: GlueOptions, checkpoint: Path, out: Path, recipes: list[str], opts: str | None,
                    calibration: Path | None, log) -> tuple[Path, dict[str, str]]:
    """One bundle of ``recipes``; a recipe the converter refuses is dropped (and said why), the rest kept.
    The refusals are kept beside the bundle (``NAME.refused.json``), never inside it."""
    from pocketbert.converter.errors import VerificationError
    from pocketbert.converter.pipeline import convert
    from pocketbert.converter.quiet import silenced

    record = out.parent / f"{out.name}.refused.json"
    if (out / "manifest.json").is_file() and record.is_file():
        return out, json.loads(record.read_text())
    refused: dict[str, str] = {}
    while recipes:
        try:
            with silenced():  # the exporters' C++ logs
                convert(_convert_options(options, checkpoint, out, recipes, opts, calibration))
            break
        except VerificationError as exc:
            failed = [r for r in recipes if f"{r}:" in exc.problem and not r.endswith(":fp32")]
            if not failed:
                raise
            for recipe in failed:
                refused[recipe] = exc.problem.split(f"{recipe}:", 1)[1].split(";")[0].strip()
                log(f"  {recipe} refused by the converter: {refused[recipe]}")
            recipes = [r for r in recipes if r not in failed]
    record.write_text(json.dumps(refused, indent=1) + "\n", encoding="utf-8")
    return out, refused


def bundles(options: GlueOptions, task: str, teacher_dir: Path, recovered_dir: Path, log) -> tuple[dict, dict]:
    """{"teacher": path, "onnx": path, "tflite": path} and {recipe: why refused}."""
    from pocketbert.converter.data import resolve_task

    _, train_file = resolve_task(task, "train", options.data_dir)
    root = _task_dir(options, task) / "bundles"
    made, refused = {}, {}
    floats = [r for r in ("onnx:fp32", "tflite:fp32") if r in options.recipes] or ["onnx:fp32"]
    log(f"{task}: converting the teacher ({', '.join(floats)})")
    made["teacher"], _ = convert_recipes(options, teacher_dir, root / "teacher", floats, None, None, log)
    for backend in ("onnx", "tflite"):
        recipes = [r for r in options.recipes if r.startswith(backend + ":")]
        if not recipes:
            continue
        log(f"{task}: converting the recovered model ({', '.join(recipes)})")
        made[backend], why = convert_recipes(options, recovered_dir, root / f"recovered-{backend}", recipes,
                                             "nonorm,relu,fold", train_file, log)
        refused.update(why)
    return made, refused


def pytorch_scores(teacher_dir: Path, recovered_dir: Path, task: str, split: str, data_dir, threads: int) -> dict:
    """Teacher, nonorm/relu without recovery and recovered, scored in PyTorch on ``split`` (the recovery record
    holds them for dev only)."""
    import copy

    import torch

    from pocketbert.converter import loading
    from pocketbert.converter.data import load_task
    from pocketbert.converter.training.evaluate import evaluate
    from pocketbert.converter.training.finetune import eval_length
    from pocketbert.converter.transforms import OPTS

    torch.set_num_threads(threads)
    data = load_task(task, split, data_dir)
    out = {}
    for stage, directory in (("teacher", teacher_dir), ("recovered", recovered_dir)):
        loaded = loading.load(str(directory))
        features = data.encode(loaded.tokenizer, eval_length(loaded), loaded.labels)
        out[stage] = evaluate(loaded.model, features, input_names=loaded.family.input_names)
        if stage == "teacher":
            student = copy.deepcopy(loaded.model)
            for name in CHANGING:
                OPTS[name].apply(student, loaded.family)
            out["without_recovery"] = evaluate(student, features, input_names=loaded.family.input_names)
    return out


def _latency(bundle: Path) -> dict[str, float]:
    manifest = json.loads((bundle / "manifest.json").read_text())
    return {a["recipe"]: a["latency_ms"]["median"] for a in manifest["artifacts"] if a.get("latency_ms")}


def _sizes(bundle: Path) -> dict[str, int]:
    manifest = json.loads((bundle / "manifest.json").read_text())
    return {a["recipe"]: (bundle / a["file"]).stat().st_size for a in manifest["artifacts"]}


def torch_rows(options: GlueOptions, task: str, split: str, teacher_dir: Path, recovered_dir: Path) -> list[dict]:
    """Teacher, without recovery and recovered in PyTorch: from the recovery record (dev), else measured."""
    record = json.loads((recovered_dir / "training.json").read_text())
    metric = record["metric"]
    torch_scores = record["dev_scores"] if split == "dev" else pytorch_scores(
        teacher_dir, recovered_dir, task, split, options.data_dir, options.threads)
    model = f"{Path(options.base).name}-{task.replace(':', '-')}"
    return [{"model": model, "task": task, "split": split, "metric": metric, "stage": stage, "runner": "pytorch:fp32",
             "opts": "" if stage == "teacher" else "nonorm,relu", "score": scores[metric], "scores": scores}
            for stage, scores in torch_scores.items()]


def _teacher_row(options: GlueOptions, task: str, teacher_dir: Path) -> dict:
    """The teacher's dev score from its fine-tuning record: what a run stopped during recovery keeps."""
    record = json.loads((teacher_dir / "training.json").read_text())
    metric = record["metric"]
    return {"model": f"{Path(options.base).name}-{task.replace(':', '-')}", "task": task, "split": "dev",
            "metric": metric, "stage": "teacher", "runner": "pytorch:fp32", "opts": "",
            "score": record["dev_scores"][metric], "scores": record["dev_scores"],
            "training": {"finetune": _stage_summary(record)}}


def score_task(options: GlueOptions, task: str, split: str, made: dict, refused: dict, teacher_dir: Path,
               recovered_dir: Path, log) -> list[dict]:
    """Every artifact on ``split`` through the runtime, with the PyTorch rows and the gates."""
    from .accuracy import evaluate

    rows = torch_rows(options, task, split, teacher_dir, recovered_dir)
    model, metric = rows[0]["model"], rows[0]["metric"]
    teacher_score = next(r["score"] for r in rows if r["stage"] == "teacher")
    reference = _latency(made["teacher"]).get("tflite:fp32")
    for variant, bundle in made.items():
        data = evaluate([bundle], task, split, threads=options.threads, data_dir=options.data_dir,
                        model_name=model, variant=variant if variant == "teacher" else "recovered",
                        fast=options.fast, progress=log)
        latency, sizes = _latency(bundle), _sizes(bundle)
        for r in data["results"]:
            ms = latency.get(r["runner"])
            rows.append({**r, "stage": "teacher-artifact" if variant == "teacher" else "artifact",
                         "teacher_score": teacher_score, "delta_vs_teacher": r["score"] - teacher_score,
                         "size_bytes": sizes.get(r["runner"]), "latency_ms": ms,
                         "speedup_vs_teacher_tflite_fp32": reference / ms if ms and reference else None})
    rows += [{"model": model, "task": task, "split": split, "metric": metric, "stage": "artifact", "runner": recipe,
              "opts": "nonorm,relu,fold", "score": None, "refused": why} for recipe, why in refused.items()]
    return _gates(rows)


def _gates(rows: list[dict]) -> list[dict]:
    """Recovered artifacts: float ≤ MAX_DROP below the teacher; int8 ≤ INT8_EXTRA below its backend's fp32."""
    floats = {r["runner"].split(":")[0]: r["score"] for r in rows
              if r["stage"] == "artifact" and r["runner"].endswith(":fp32") and r.get("score") is not None}
    for r in rows:
        if r["stage"] != "artifact" or r.get("score") is None:
            continue
        backend, precision = r["runner"].split(":")
        if precision.startswith("int8") and backend in floats:
            r["delta_vs_float"] = r["score"] - floats[backend]
            r["gate"] = {"rule": f"≤ {INT8_EXTRA:g} below {backend}:fp32",
                         "passed": r["delta_vs_float"] >= -INT8_EXTRA - 1e-9}
        else:
            r["gate"] = {"rule": f"≤ {MAX_DROP:g} below the teacher",
                         "passed": r["delta_vs_teacher"] >= -MAX_DROP - 1e-9}
    return rows


def run_task(options: GlueOptions, task: str, log, save=lambda rows: None) -> list[dict]:
    """Every step of one task, each skipped when its result is cached; scores cached per bundle set.  ``save``
    gets the PyTorch dev rows as soon as recovery is done, so a run stopped while converting keeps them."""
    start = time.perf_counter()
    teacher_dir = teacher(options, task, log)
    save([_teacher_row(options, task, teacher_dir)])
    recovered_dir = recovered(options, task, teacher_dir, log)
    partial = torch_rows(options, task, "dev", teacher_dir, recovered_dir)
    for r in partial:
        r["training"] = _training_summary(teacher_dir, recovered_dir)
    save(partial)
    made, refused = bundles(options, task, teacher_dir, recovered_dir, log)
    cache = _task_dir(options, task) / "scores.json"
    key = {name: _manifest_sha(path) for name, path in made.items()}
    if cache.is_file():
        cached = json.loads(cache.read_text())
        if cached.get("bundles") == key:
            log(f"{task}: scores cached ({cache})")
            return cached["rows"]
    rows = []
    for split in ("dev", *EXTRA_SPLITS.get(task, ())):
        rows += score_task(options, task, split, made, refused, teacher_dir, recovered_dir, log)
    for r in rows:
        r["training"] = _training_summary(teacher_dir, recovered_dir)
        r["task_wall_seconds"] = round(time.perf_counter() - start, 1)
    cache.write_text(json.dumps({"bundles": key, "rows": rows}, indent=1, default=str) + "\n", encoding="utf-8")
    return rows


def _manifest_sha(bundle: Path) -> str:
    from pocketbert.runtime.contract import sha256

    return sha256(bundle / "manifest.json")


def _training_summary(teacher_dir: Path, recovered_dir: Path) -> dict:
    """Steps, seconds and budgets of the teacher's fine-tuning and the recovery (from their training.json)."""
    return {stage: _stage_summary(json.loads((directory / "training.json").read_text()))
            for stage, directory in (("finetune", teacher_dir), ("recover", recovered_dir))}


def _stage_summary(record: dict) -> dict:
    return {"steps": record["training"]["steps"], "seconds": record["training"]["seconds"],
            "budget": record["recipe"]["budget"], "train_examples": record["train_examples"]}


def run(options: GlueOptions, out: Path, log=print) -> dict:
    """Every task; the results file is rewritten after each recovery and each task, so an interrupted run keeps
    what finished (a task stopped while converting: its PyTorch rows)."""
    from pocketbert.runtime import machine

    data = schema.new_file("glue", fast=options.fast, machine=machine.describe(), settings=options.settings())
    start = time.perf_counter()
    finished: list[dict] = []

    def save(partial: list[dict]) -> None:
        data["results"] = finished + partial
        data["wall_seconds"] = round(time.perf_counter() - start, 1)
        schema.write(data, out)

    for task in options.tasks:
        log(f"== {task}")
        finished += run_task(options, task, log, save)
        save([])
    return data


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


def summary(data: dict) -> str:
    """One line per task and split: teacher, recovered, and each artifact's Δ and gate."""
    lines = []
    keyed: dict[tuple, list[dict]] = {}
    for r in data["results"]:
        keyed.setdefault((r["task"], r["split"]), []).append(r)
    for (task, split), rows in keyed.items():
        by_stage = {r["stage"]: r for r in rows if r["runner"] == "pytorch:fp32"}
        head = ", ".join(f"{s} {by_stage[s]['score']:.2f}" for s in ("teacher", "without_recovery", "recovered")
                         if s in by_stage)
        lines.append(f"{task} {split} ({rows[0]['metric']}): {head}")
        for r in rows:
            if r["stage"] != "artifact":
                continue
            if r.get("refused"):
                lines.append(f"  {r['runner']}: refused by the converter ({r['refused']})")
                continue
            gate = r.get("gate") or {}
            lines.append(f"  {r['runner']}: {r['score']:.2f} ({r['delta_vs_teacher']:+.2f} vs teacher) "
                         f"{'pass' if gate.get('passed') else 'FAIL'}: {gate.get('rule', '')}")
    lines.append(f"wall time {data.get('wall_seconds', 0) / 60:.1f} min")
    return "\n".join(lines)
