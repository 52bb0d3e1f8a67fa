"""``pocketbert-bench accuracy``: task scores of every artifact of each bundle, as the runtime runs them.

    pocketbert-bench accuracy BUNDLE… --task glue:sst2 [--split dev] [--limit N] [--model-name NAME]
                                          [--variant NAME] [--backend onnx,tflite]

Data, tokenisation and metrics come from :mod:`converter.data` (GLUE TSV and CoNLL readers, GLUE's metric
per task, seqeval entity F1), so the harness scores exactly as training and fine-tuning do.  The model
runs through the runtime's own backends (``runtime.backends``: ONNX Runtime, or the LiteRT interpreter
with its bucket padding), i.e. what users ship.  Examples are sorted by length and batched with dynamic
padding (LiteRT runs rows one at a time); each example's logits are cut back to its own length.

Records (one per artifact × task × split)::

    {"model", "variant_name", "runner", "opts", "task", "split", "metric", "score", "scores": {...},
     "examples", "truncated", "bundle", "notes"}

Deltas against the original (the model's plain ``onnx:fp32``, equal to PyTorch within 1e-6, else its
plain ``tflite:fp32``; among several plain bundles of one model, the one labelled ``original`` or
``plain-int8``) and the GLUE average over the GLUE tasks present are computed by ``report``,
across every accuracy file, so tasks can be run separately.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from . import schema
from .models import describe_bundle

GLUE_TASKS = ("glue:sst2", "glue:mrpc", "glue:cola", "glue:stsb")
# GLUE tasks with no data in the shared data directory (so no fine-tuned models either)
GLUE_MISSING = "MNLI, QQP, QNLI, RTE and WNLI: no data for them in the shared data directory (only CoLA, MRPC, " \
               "SST-2, STS-B), so no models are trained or scored on them"


class AccuracyError(Exception):
    def __init__(self, problem: str, fix: str):
        super().__init__(f"{problem}; {fix}")
        self.problem, self.fix = problem, fix


def logits_per_example(backend, features, input_names: list[str], batch_size: int = 32,
                       at_once: int = 1) -> list[np.ndarray]:
    """Run every example of ``features`` through a runtime backend; logits cut to each example's length.
    ``at_once``: each batch's rows split over that many concurrent calls (the backend must serve that many
    callers, see :func:`load_artifact`), as the converter's verification runs them.  The batching is the
    converter's dev gate's own (``converter.checks.dev_gate``), so both score alike."""
    from pocketbert.converter.backends.base import Runner
    from pocketbert.converter.checks.dev_gate import logits_per_example as per_example

    return per_example(Runner(backend, parallel=at_once), features, input_names, batch_size=batch_size)


def _at_once(artifact, threads: int | None) -> int:
    """Batches to run at once when scoring a whole split: a fixed-length (LiteRT) file runs a batch's rows one
    at a time, and there one single-threaded interpreter per thread does 1.45-1.9x the rows per second of one
    interpreter on every thread (2 vCPUs, MiniLM, sequence 32-256); ONNX Runtime gains nothing from it."""
    from pocketbert.runtime.backends import BACKENDS
    from pocketbert.runtime.machine import usable_cpus

    return (threads or usable_cpus()) if BACKENDS.get(artifact.backend).fixed_lengths else 1


def open_bundle(path: Path):
    """The runtime's checked Bundle (manifest validated, every named file inside the bundle)."""
    from pocketbert import runtime

    try:
        return runtime.Bundle.open(path)
    except runtime.Error as exc:
        raise AccuracyError(exc.problem, exc.fix or "") from exc


def check_files(bundle, artifacts) -> None:
    """Size and SHA-256 of every file a measurement of ``artifacts`` reads (their model files, the tokenizer,
    labels), before anything is measured: a corrupt last file must not be found after minutes of scoring the
    others, which the results would then hold without it."""
    from pocketbert import runtime

    others = {a.file for a in bundle.artifacts} - {a.file for a in artifacts}
    try:
        for name in sorted(set((bundle.manifest.get("files") or {})) - others):
            bundle.file(name)
    except runtime.Error as exc:
        raise AccuracyError(f"{bundle.path}: {exc.problem}", exc.fix or "") from exc


def load_artifact(path: Path, recipe: str, threads: int | None, instances: int = 1):
    """The runtime pipeline of one artifact: ``runtime.load`` checks its size and SHA-256 and probes the model,
    so a benchmark never scores a file the runtime would refuse."""
    from pocketbert import runtime
    from pocketbert.converter.quiet import silenced

    try:
        with silenced():  # LiteRT announces its XNNPACK delegate from C++ (at load or first run)
            return runtime.load(path, recipe=recipe, threads=threads, instances=instances)
    except runtime.Error as exc:
        raise AccuracyError(exc.problem, exc.fix or "") from exc


def bundle_tokenizer(bundle):
    """A fast Hugging Face tokenizer over the bundle's checked tokenizer.json alone: the runtime's file, and no
    other file of the directory (AutoTokenizer would read whatever config files it finds there)."""
    from transformers import PreTrainedTokenizerFast

    from pocketbert import runtime

    settings = bundle.tokenizer_settings
    try:
        path = bundle.file(settings["tokenizer_file"], entry="tokenizer.tokenizer_file")
    except runtime.Error as exc:
        raise AccuracyError(exc.problem, exc.fix or "") from exc
    pad = ((settings.get("special_tokens") or {}).get("pad") or {}).get("token")
    return PreTrainedTokenizerFast(tokenizer_file=str(path), pad_token=pad,
                                   model_input_names=["input_ids", "token_type_ids", "attention_mask"])


def evaluate(bundle_paths: list[Path], task: str, split: str = "dev", limit: int | None = None,
             backends: tuple[str, ...] = ("onnx", "tflite"), model_name: str | None = None,
             variant: str | None = None, threads: int | None = None, data_dir: str | None = None,
             fast: bool = False, progress: Callable[[str], None] = print,
             recorded: dict[str, dict] | None = None) -> dict:
    """``recorded``: recipe -> the converter's ``details.dev_score`` for the same file, split and length
    (``gates.recorded_scores``), taken instead of running that artifact again."""
    from pocketbert.converter.data.metrics import score
    from pocketbert.converter.errors import ConverterInputError
    from pocketbert.converter.quiet import silenced

    data = schema.new_file("accuracy", fast=fast, task=task, split=split, limit=limit)
    examples = _labelled_examples(task, split, data_dir, limit)
    for path in bundle_paths:  # every bundle's files checked before the first is scored
        bundle = open_bundle(path)
        check_files(bundle, [a for a in bundle.artifacts if a.passed and a.backend in backends])
    for path in bundle_paths:
        bundle = open_bundle(path)
        info = describe_bundle(bundle.path, bundle.manifest)
        if (bundle.task == "ner") != (examples.kind == "ner"):
            raise AccuracyError(f"{path} is a {bundle.task} model and {task} is a {examples.kind} task",
                                "give each task the bundles fine-tuned for it")
        tokenizer = bundle_tokenizer(bundle)
        opts = ",".join(o for o in bundle.manifest.get("opts") or [] if o != "int8")
        arts = [a for a in bundle.artifacts if a.passed and a.backend in backends]
        # The bundle's one input length (TFLite: its largest bucket), as every runtime truncates it, so scores
        # differ only by what the artifacts compute, never by truncation.
        max_length = min(128, bundle.input_length)
        try:  # once per bundle: every artifact reads the same rows
            features = examples.encode(tokenizer, max_length=max_length, label_names=bundle.labels)
        except ConverterInputError as exc:
            raise AccuracyError(exc.problem, exc.fix) from exc
        for art in arts:
            given = (recorded or {}).get(art.recipe)
            if given and given["examples"] == len(features) and given["max_length"] == max_length:
                scores = {examples.metric: given["score"]}
            else:
                given, at_once = None, _at_once(art, threads)
                backend = load_artifact(path, art.recipe, 1 if at_once > 1 else threads, instances=at_once).backend
                with silenced():
                    scores = score(features, logits_per_example(backend, features, bundle.input_names,
                                                                at_once=at_once))
            record = {"model": model_name or info["model"], "model_label": info["model_label"],
                      "variant_name": variant or info.get("variant_name"), "runner": art.recipe, "opts": opts,
                      "task": task, "split": split, "metric": examples.metric, "score": scores[examples.metric],
                      "scores": scores, "examples": len(features), "truncated": features.truncated,
                      "max_length": max_length, "bundle": str(bundle.path), "notes": []}
            if given:
                record["notes"].append("the converter's score (details.dev_score): the same file, examples and length")
            if features.truncated:
                record["notes"].append(f"{task} {split}: {features.truncated} of {len(features)} examples cut at "
                                       f"{max_length} tokens")
            if info.get("random_weights"):
                record["notes"].append(f"{record['model']} has random weights: its scores are chance level")
            data["results"].append(record)
            progress(f"  {record['model']} {art.recipe}{' +' + opts if opts else ''} {task} {split}: "
                     f"{examples.metric} {record['score']:.2f} ({len(features)} examples"
                     f"{', scored by the converter' if given else ''})")
    return data


def add_deltas(records: list[dict]) -> list[dict]:
    """Δ against the model's original (plain onnx:fp32, else plain tflite:fp32) per task and split; plus
    one ``glue-average`` record per model variant over the GLUE tasks it has."""
    refs = {}
    # Later wins: onnx over tflite, and a bundle labelled original/plain-int8 over other plain ones (a
    # recovered checkpoint converted without --opt is plain too, but it is not the original).
    for preferred in ("tflite:fp32", "onnx:fp32"):
        for original in (False, True):
            for r in records:
                if (r["runner"] == preferred and not r.get("opts") and r.get("task") != "glue-average"
                        and (r.get("variant_name") in ("original", "plain-int8")) == original):
                    refs[(r["model"], r["task"], r["split"])] = r
    out = []
    for r in records:
        if r.get("task") == "glue-average":
            continue
        ref = refs.get((r["model"], r["task"], r["split"]))
        out.append({**r, "delta": r["score"] - ref["score"] if ref else None,
                    "reference": f"{ref['runner']} (no --opt)" if ref else None})
    groups: dict[tuple, list[dict]] = {}
    for r in out:
        if r["task"] in GLUE_TASKS and r["split"] == "dev":
            groups.setdefault((r["model"], r.get("variant_name"), r["runner"], r.get("opts") or ""), []).append(r)
    for (model, variant, runner, opts), rows in groups.items():
        deltas = [r["delta"] for r in rows if r["delta"] is not None]
        present = sorted(r["task"] for r in rows)
        out.append({"model": model, "variant_name": variant, "runner": runner, "opts": opts, "task": "glue-average",
                    "split": "dev", "metric": "mean of task metrics",
                    "score": float(np.mean([r["score"] for r in rows])),
                    "delta": float(np.mean(deltas)) if len(deltas) == len(rows) else None,
                    "examples": sum(r["examples"] for r in rows),
                    "notes": [f"GLUE average over {', '.join(present)}; missing: {GLUE_MISSING}"]})
    return out


def _labelled_examples(task: str, split: str, data_dir: str | None, limit: int | None):
    """The task's examples of ``split``, which must carry labels to be scored."""
    from pocketbert.converter.data import load_task
    from pocketbert.converter.errors import ConverterInputError

    try:
        examples = load_task(task, split, data_dir, limit=limit)
    except ConverterInputError as exc:
        raise AccuracyError(exc.problem, exc.fix) from exc
    if examples.labels is None:
        raise AccuracyError(f"{examples.path} has no labels (GLUE test files are unlabelled)",
                            "score the dev split (--split dev); CoNLL-2003 test is labelled")
    return examples
