"""``pocketbert-bench glue``: GLUE and CoNLL-2003 deltas of every shipped artifact, from one command.

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

glue_options.py holds what a run does (tasks, recipes, budgets); glue_scoring.py how its models are scored;
glue_report.py renders the results (the report section and the command's summary).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from . import schema
from .glue_options import CHANGING, EXTRA_SPLITS, GlueOptions, task_dir
from .glue_scoring import score_task, stage_summary, teacher_row, torch_rows


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

    out = task_dir(options, task) / "teacher"
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

    out = task_dir(options, task) / "recovered"
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
                convert(_convert_options(options, checkpoint, out, recipes, opts=opts, calibration=calibration))
            break
        except VerificationError as exc:
            failed = [r for r in recipes if f"{r}:" in exc.problem and not r.endswith(":fp32")]
            if not failed:
                raise
            for recipe in failed:
                refused[recipe] = exc.problem.split(f"{recipe}:", 1)[1].split(";")[0].strip()
                log(f"  {recipe} refused by the converter: {refused[recipe]}")
            recipes = [r for r in recipes if r not in failed]
    refused.update(_not_shipped(out, recipes))
    record.write_text(json.dumps(refused, indent=1) + "\n", encoding="utf-8")
    return out, refused


def _not_shipped(bundle: Path, recipes: list[str]) -> dict[str, str]:
    """Recipes converted but left out of the bundle (an int8 file that does not pay against fp32 down to its ladder's
    cheapest step meeting the bar, or fails the dev gate), with the manifest's note on why: a row of the table, as a
    refusal is."""
    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    shipped = {a["recipe"] for a in manifest["artifacts"]}
    notes = manifest.get("notes") or []
    return {recipe: next((n.split(" not shipped: ", 1)[1] for n in notes if n.startswith(f"{recipe} not shipped: ")),
                         "converted, not shipped")
            for recipe in recipes if recipe not in shipped}


def bundles(options: GlueOptions, task: str, teacher_dir: Path, recovered_dir: Path, log) -> tuple[dict, dict]:
    """{"teacher": path, "onnx": path, "tflite": path} and {recipe: why refused}."""
    from pocketbert.converter.data import resolve_task

    _, train_file = resolve_task(task, "train", options.data_dir)
    root = task_dir(options, task) / "bundles"
    made, refused = {}, {}
    floats = [r for r in ("onnx:fp32", "tflite:fp32") if r in options.recipes] or ["onnx:fp32"]
    log(f"{task}: converting the teacher ({', '.join(floats)})")
    made["teacher"], _ = convert_recipes(options, teacher_dir, root / "teacher", floats, opts=None, calibration=None,
                                         log=log)
    for backend in ("onnx", "tflite"):
        recipes = [r for r in options.recipes if r.startswith(backend + ":")]
        if not recipes:
            continue
        log(f"{task}: converting the recovered model ({', '.join(recipes)})")
        made[backend], why = convert_recipes(options, recovered_dir, root / f"recovered-{backend}", recipes,
                                             opts="nonorm,relu,fold", calibration=train_file, log=log)
        refused.update(why)
    return made, refused


def run_task(options: GlueOptions, task: str, log, save=lambda rows: None) -> list[dict]:
    """Every step of one task, each skipped when its result is cached; scores cached per bundle set.  ``save``
    gets the PyTorch dev rows as soon as recovery is done, so a run stopped while converting keeps them."""
    start = time.perf_counter()
    teacher_dir = teacher(options, task, log)
    save([teacher_row(options, task, teacher_dir)])
    recovered_dir = recovered(options, task, teacher_dir, log)
    partial = torch_rows(options, task, "dev", teacher_dir, recovered_dir=recovered_dir)
    for r in partial:
        r["training"] = _training_summary(teacher_dir, recovered_dir)
    save(partial)
    made, refused = bundles(options, task, teacher_dir, recovered_dir, log=log)
    cache = task_dir(options, task) / "scores.json"
    key = {name: _manifest_sha(path) for name, path in made.items()}
    if cache.is_file():
        cached = json.loads(cache.read_text())
        if cached.get("bundles") == key:
            log(f"{task}: scores cached ({cache})")
            return cached["rows"]
    rows = []
    for split in ("dev", *EXTRA_SPLITS.get(task, ())):
        rows += score_task(options, task, split, made, refused=refused, teacher_dir=teacher_dir,
                           recovered_dir=recovered_dir, log=log)
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
    return {stage: stage_summary(json.loads((directory / "training.json").read_text()))
            for stage, directory in (("finetune", teacher_dir), ("recover", recovered_dir))}


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
