"""The glue run's scores: the PyTorch stages (teacher, without recovery, recovered), every artifact through the
runtime with its size and latency, and the gates each artifact is held to."""

from __future__ import annotations

import json
from pathlib import Path

from .gates import INT8_EXTRA, MAX_DROP
from .glue_options import CHANGING, GlueOptions


def pytorch_scores(teacher_dir: Path, recovered_dir: Path, task: str, split: str, data_dir, threads: int) -> dict:
    """Teacher, nonorm/relu without recovery and recovered, scored in PyTorch on ``split`` (the recovery record
    holds them for dev only)."""
    import copy

    import torch

    from pocketbert.converter.checkpoints import loading
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
        teacher_dir, recovered_dir, task, split, data_dir=options.data_dir, threads=options.threads)
    model = f"{Path(options.base).name}-{task.replace(':', '-')}"
    return [{"model": model, "task": task, "split": split, "metric": metric, "stage": stage, "runner": "pytorch:fp32",
             "opts": "" if stage == "teacher" else "nonorm,relu", "score": scores[metric], "scores": scores}
            for stage, scores in torch_scores.items()]


def teacher_row(options: GlueOptions, task: str, teacher_dir: Path) -> dict:
    """The teacher's dev score from its fine-tuning record: what a run stopped during recovery keeps."""
    record = json.loads((teacher_dir / "training.json").read_text())
    metric = record["metric"]
    return {"model": f"{Path(options.base).name}-{task.replace(':', '-')}", "task": task, "split": "dev",
            "metric": metric, "stage": "teacher", "runner": "pytorch:fp32", "opts": "",
            "score": record["dev_scores"][metric], "scores": record["dev_scores"],
            "training": {"finetune": stage_summary(record)}}


def score_task(options: GlueOptions, task: str, split: str, made: dict, refused: dict, teacher_dir: Path,
               recovered_dir: Path, log) -> list[dict]:
    """Every artifact on ``split`` through the runtime, with the PyTorch rows and the gates."""
    from .accuracy import evaluate

    rows = torch_rows(options, task, split, teacher_dir, recovered_dir=recovered_dir)
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


def stage_summary(record: dict) -> dict:
    return {"steps": record["training"]["steps"], "seconds": record["training"]["seconds"],
            "budget": record["recipe"]["budget"], "train_examples": record["train_examples"]}
